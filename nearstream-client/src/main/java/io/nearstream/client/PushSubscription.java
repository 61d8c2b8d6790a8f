package io.nearstream.client;

/**
 * The broker's answer to a PushSubscribe: the subscription's id, the broker epoch, and the shared
 * memory region ({@code /dev/shm} file) it pushes into. The subscription belongs to the connection
 * that created it: when that connection closes, the broker ends it and unlinks the region.
 */
public record PushSubscription(
        long subscriptionId, long brokerEpoch, String regionPath, long regionBytes) {}
