package io.nearstream.client;

/**
 * The broker's answer to a TxnInit: the caller's new epoch (every earlier owner of the
 * transactional id is fenced) and the highest serial the id has used (0 = none).
 */
public record TxnInitResult(long epoch, long lastSerial) {}
