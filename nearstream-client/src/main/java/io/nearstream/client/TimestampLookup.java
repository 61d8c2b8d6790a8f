package io.nearstream.client;

/**
 * Result of a LookupTimestamp entry: the first chunk (in read order) of the streamlet whose
 * first-record timestamp is at or after the asked time, or the tail when there is none.
 */
public record TimestampLookup(int streamlet, StatusCode status, String message, Position position)
        implements EntryStatus {}
