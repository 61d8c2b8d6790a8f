package io.nearstream.client;

/** One streamlet of a Fetch request: where to read from and how many bytes at most. */
public record FetchEntry(int streamlet, Position position, int maxBytes) {}
