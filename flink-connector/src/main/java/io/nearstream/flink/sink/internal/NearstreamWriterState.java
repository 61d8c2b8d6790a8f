package io.nearstream.flink.sink.internal;

import org.apache.flink.annotation.Internal;

/**
 * What an exactly-once writer checkpoints: its transactional id and the highest serial it has
 * prepared (0: none). A writer restored with it keeps that id's prepared transactions up to the
 * serial, which the committer's restored committables commit, and aborts the later ones.
 */
@Internal
public record NearstreamWriterState(String transactionalId, long lastPreparedSerial) {}
