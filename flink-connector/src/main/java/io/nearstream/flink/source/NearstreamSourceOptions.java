package io.nearstream.flink.source;

import static org.apache.flink.configuration.ConfigOptions.key;

import java.time.Duration;
import org.apache.flink.annotation.PublicEvolving;
import org.apache.flink.configuration.ConfigOption;

/**
 * Tuning options of the Nearstream source. The builder's typed setters write them; {@link
 * NearstreamSourceBuilder#setProperty(String, String)} sets any of them (and Flink's own source
 * reader options such as {@code source.reader.element.queue.capacity}) by key.
 */
@PublicEvolving
public final class NearstreamSourceOptions {

    private NearstreamSourceOptions() {}

    public static final ConfigOption<ReadMode> READ_MODE =
            key("nearstream.source.read-mode")
                    .enumType(ReadMode.class)
                    .defaultValue(ReadMode.PULL)
                    .withDescription(
                            "How readers get data: PULL (fetch RPCs over TCP), PUSH (the broker"
                                    + " fills shared-memory slots on its host) or AUTO (push for"
                                    + " readers on the broker's host, pull for the others).");

    public static final ConfigOption<Integer> FETCH_MAX_BYTES_PER_STREAMLET =
            key("nearstream.source.fetch.max-bytes-per-streamlet")
                    .intType()
                    .defaultValue(1024 * 1024)
                    .withDescription(
                            "Budget of chunk bytes per streamlet in one Fetch RPC. The broker"
                                    + " returns whole chunks only, and at least one when there"
                                    + " is one, so a single chunk may exceed it.");

    public static final ConfigOption<Integer> FETCH_MAX_BYTES =
            key("nearstream.source.fetch.max-bytes")
                    .intType()
                    .defaultValue(32 * 1024 * 1024)
                    .withDescription(
                            "Budget of chunk bytes of one Fetch RPC over all of a reader's"
                                    + " streamlets; each streamlet gets at most its share, so the"
                                    + " response stays well below the client's frame limit.");

    public static final ConfigOption<Duration> FETCH_MAX_WAIT =
            key("nearstream.source.fetch.max-wait")
                    .durationType()
                    .defaultValue(Duration.ofMillis(500))
                    .withDescription(
                            "Long-poll: how long the broker holds a Fetch when none of the"
                                    + " reader's streamlets has new data. 0 answers at once.");

    public static final ConfigOption<Duration> STREAMLET_DISCOVERY_INTERVAL =
            key("nearstream.source.streamlet-discovery.interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(10))
                    .withDescription(
                            "How often an unbounded source looks for the stream and its"
                                    + " streamlets (a stream created after the job started)."
                                    + " A negative or zero interval disables periodic"
                                    + " discovery; bounded sources discover once.");

    public static final ConfigOption<Duration> REQUEST_TIMEOUT =
            key("nearstream.source.request-timeout")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(30))
                    .withDescription(
                            "How long a request may take beyond its long-poll wait before it"
                                    + " counts as a transport failure.");

    public static final ConfigOption<Integer> FETCH_RETRIES =
            key("nearstream.source.fetch.retries")
                    .intType()
                    .defaultValue(3)
                    .withDescription(
                            "Consecutive retriable fetch failures (connection lost, broker"
                                    + " shutting down, storage error) a reader absorbs before it"
                                    + " fails the task and lets Flink restart it.");

    public static final ConfigOption<Duration> FETCH_RETRY_BACKOFF =
            key("nearstream.source.fetch.retry-backoff")
                    .durationType()
                    .defaultValue(Duration.ofMillis(200))
                    .withDescription("Pause before retrying a failed fetch; doubles each time.");

    public static final ConfigOption<Integer> PUSH_SLOTS_PER_RING =
            key("nearstream.source.push.slots-per-ring")
                    .intType()
                    .defaultValue(8)
                    .withDescription(
                            "Push mode: slots of each reader's ring in the shared memory region"
                                    + " (how many batches the broker may push ahead).");

    public static final ConfigOption<Integer> PUSH_SLOT_BYTES =
            key("nearstream.source.push.slot-bytes")
                    .intType()
                    .defaultValue(1024 * 1024)
                    .withDescription(
                            "Push mode: bytes of one slot (one Arrow batch of whole chunks); a"
                                    + " multiple of 64 from 64 KiB to 64 MiB (the broker's"
                                    + " bounds).");

    public static final ConfigOption<Duration> PUSH_CONSUMER_TIMEOUT =
            key("nearstream.source.push.consumer-timeout")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(10))
                    .withDescription(
                            "Push mode: the broker reclaims a ring whose reader has not"
                                    + " heartbeated for this long; a reader also fails when the"
                                    + " broker's heartbeat is this old.");

    public static final ConfigOption<Duration> PUSH_PENDING_REFRESH_INTERVAL =
            key("nearstream.source.push.pending-refresh-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(1))
                    .withDescription(
                            "Push mode: how often a reader asks the broker for the streamlets'"
                                    + " tails (an asynchronous Metadata request, never on the"
                                    + " fetcher thread) to update pendingBytes and pendingRecords;"
                                    + " 0 turns it off. Pull mode takes the tails from its fetch"
                                    + " responses instead.");

    public static final ConfigOption<String> PUSH_SLOT_FORMAT =
            key("nearstream.source.push.slot-format")
                    .stringType()
                    .defaultValue("binary")
                    .withDescription(
                            "Push mode: how slots carry records. binary: the broker's push thread"
                                    + " copies every record into the slot. binary-view: the slot"
                                    + " holds a 16-byte Arrow BinaryView per record, pointing into"
                                    + " the broker's segment files, which the reader maps"
                                    + " read-only and copies each record from (docs/shm-layout.md,"
                                    + " \"View slots\"). Set it with"
                                    + " NearstreamSourceBuilder#setPushSlotFormat.");

    public static final ConfigOption<String> RECORD_FILTER =
            key("nearstream.source.record-filter")
                    .stringType()
                    .defaultValue("none")
                    .withDescription(
                            "Records that fail this filter are never emitted: in push mode the"
                                    + " broker's push thread drops them, in pull mode the reader."
                                    + " Set it with NearstreamSourceBuilder#setRecordFilter; the"
                                    + " value is RecordFilter#toSpec's form (none,"
                                    + " bytes_contain:HEX, json_field_in:HEX:HEX,...).");

    public static final ConfigOption<Boolean> FOLLOWER_READS =
            key("nearstream.source.follower-reads")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Over a broker cluster whose brokers run with --follower-reads: a"
                                    + " streamlet whose leader is on another host is read (pushed,"
                                    + " or fetched in PULL mode) from an in-sync replica on the"
                                    + " reader's host when there is one (docs/cluster.md,"
                                    + " \"Follower reads\"); a fetch that replica does not serve"
                                    + " goes to the leader. false (the default): every streamlet"
                                    + " is read from its leader.");

    public static final ConfigOption<Boolean> SKIP_DAMAGED_DATA =
            key("nearstream.source.skip-damaged-data")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "What a reader does when it reaches stored bytes that the broker's"
                                    + " recovery found damaged (status DATA_LOSS, in pull and push"
                                    + " mode alike): false (the default) fails the job with a"
                                    + " message naming the stream, streamlet and positions; true"
                                    + " logs it, counts it in numDamagedRangesSkipped and goes on"
                                    + " after the damaged range (its records are lost).");
}
