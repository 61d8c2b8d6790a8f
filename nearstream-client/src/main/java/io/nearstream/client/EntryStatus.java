package io.nearstream.client;

/**
 * A per-entry answer that carries its own status (Append, Fetch, LookupTimestamp), so the cluster
 * client's router reads them all alike.
 */
interface EntryStatus {
    StatusCode status();

    String message();
}
