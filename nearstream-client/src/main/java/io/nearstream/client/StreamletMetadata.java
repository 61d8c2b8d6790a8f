package io.nearstream.client;

import java.util.List;

/** Head (first retained chunk) and tail (end of the newest group) of a streamlet, its groups. */
public record StreamletMetadata(
        int streamlet, Position head, Position tail, List<GroupMetadata> groups) {}
