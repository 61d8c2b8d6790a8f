package io.nearstream.flink.sink.internal;

import io.nearstream.client.BrokerTxnRef;
import io.nearstream.client.NearstreamClient;
import io.nearstream.client.NearstreamClientException;
import io.nearstream.client.NearstreamTransactionalProducer;
import io.nearstream.flink.source.NearstreamException;
import java.util.Collection;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.connector.sink2.Committer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits the transactions the exactly-once writers prepared, once their checkpoint is complete
 * (TxnCommit with the transaction's own epoch, which a restored writer's TxnInit may have passed):
 * phase two of the commit, one committable per broker a transaction wrote to, each sent to its
 * broker; on a replicated stream one per streamlet, each sent to the broker that leads the
 * streamlet at commit time (which a failover since the checkpoint may have changed).
 *
 * <ul>
 *   <li>OK — also for a transaction committed before (a retried or recovered commit).
 *   <li>{@code TXN_NOT_FOUND}: the broker no longer remembers the outcome (it keeps the last 1024
 *       per id), which for a transaction a checkpoint kept means it was committed long ago: a
 *       warning, and it counts as committed, as Kafka's committer does.
 *   <li>{@code TXN_ABORTED}, {@code TXN_FENCED}: the transaction is gone and its records with it;
 *       logged as an error and signalled as failed with that reason (Flink counts it in {@code
 *       numCommittablesFailure}; retrying cannot bring the records back).
 *   <li>Retriable failures are retried with back-off for up to the request timeout, then handed
 *       back to Flink ({@code retryLater}); Flink retries without a pause, so the back-off is here.
 *   <li>Anything else fails the job.
 * </ul>
 */
@Internal
public final class NearstreamCommitter implements Committer<NearstreamCommittable> {

    private static final Logger LOG = LoggerFactory.getLogger(NearstreamCommitter.class);

    private final ProducerSettings settings;
    @Nullable private NearstreamClient client;

    public NearstreamCommitter(ProducerSettings settings) {
        this.settings = settings;
    }

    @Override
    public void commit(Collection<CommitRequest<NearstreamCommittable>> requests) {
        boolean brokerUnreachable = false;
        for (CommitRequest<NearstreamCommittable> request : requests) {
            if (brokerUnreachable) {
                request.retryLater(); // one wait for a broker that does not answer is enough
                continue;
            }
            BrokerTxnRef ref = request.getCommittable().part();
            try {
                NearstreamTransactionalProducer.commit(
                        client(), ref, settings.retryBackoff(), settings.requestTimeout());
            } catch (NearstreamClientException e) {
                brokerUnreachable = e.isRetriable();
                handle(request, ref, e);
            }
        }
    }

    private void handle(
            CommitRequest<NearstreamCommittable> request,
            BrokerTxnRef ref,
            NearstreamClientException e) {
        switch (e.status()) {
            case TXN_NOT_FOUND -> {
                LOG.warn(
                        "The broker no longer knows transaction {}: its outcome was forgotten,"
                                + " so it was committed long ago; treating it as committed ({})",
                        ref,
                        e.getMessage());
                request.signalAlreadyCommitted();
            }
            case TXN_ABORTED, TXN_FENCED -> {
                String message =
                        "Transaction "
                                + ref
                                + " was aborted before it could be committed: the records it"
                                + " holds are lost ("
                                + e.getMessage()
                                + ")";
                LOG.error(message);
                request.signalFailedWithKnownReason(
                        new NearstreamException(message, e.status(), e));
            }
            default -> {
                if (e.isRetriable()) {
                    LOG.warn(
                            "Commit of {} failed for now, retrying later: {}", ref, e.getMessage());
                    request.retryLater();
                } else {
                    request.signalFailedWithUnknownReason(
                            new NearstreamException(
                                    "Commit of " + ref + " failed: " + e.getMessage(),
                                    e.status(),
                                    e));
                }
            }
        }
    }

    /**
     * The client, connected on first use. A broker that cannot be reached is tried again with
     * back-off for up to the request timeout, as a failing TxnCommit is: Flink retries a {@code
     * retryLater()} at once, so the pause must be the committer's — without it a restored committer
     * meeting a restarting broker used up Flink's commit retries within milliseconds.
     */
    private NearstreamClient client() {
        long deadline = System.nanoTime() + settings.requestTimeout().toNanos();
        while (client == null) {
            try {
                client = NearstreamClient.connect(settings.broker(), settings.clientOptions());
            } catch (NearstreamClientException e) {
                if (!e.isRetriable()
                        || System.nanoTime() + settings.retryBackoff().toNanos() - deadline > 0) {
                    throw e;
                }
                try {
                    Thread.sleep(settings.retryBackoff().toMillis());
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
        return client;
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
