package io.nearstream.client;

import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a {@link NettyNearstreamClient}: timeouts, the largest response frame accepted, and
 * the event loop (an own one with {@code eventLoopThreads} threads, or a shared one).
 *
 * <pre>{@code
 * NearstreamClientOptions options =
 *         NearstreamClientOptions.builder()
 *                 .requestTimeout(Duration.ofSeconds(10))
 *                 .eventLoopGroup(sharedGroup) // many clients, one I/O thread pool
 *                 .build();
 * NearstreamClient client = NettyNearstreamClient.connect("10.0.0.7:7420", options);
 * }</pre>
 */
public final class NearstreamClientOptions {

    /** Defaults: 10 s connect, 30 s request timeout, 64 MiB + 1 MiB frames, one I/O thread. */
    public static final NearstreamClientOptions DEFAULTS = builder().build();

    private final Duration connectTimeout;
    private final Duration requestTimeout;
    private final int maxFrameBytes;
    private final int eventLoopThreads;
    private final EventLoopGroup eventLoopGroup;
    private final String clientName;

    private NearstreamClientOptions(Builder b) {
        this.connectTimeout = b.connectTimeout;
        this.requestTimeout = b.requestTimeout;
        this.maxFrameBytes = b.maxFrameBytes;
        this.eventLoopThreads = b.eventLoopThreads;
        this.eventLoopGroup = b.eventLoopGroup;
        this.clientName = b.clientName;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these settings, to derive others from them. */
    Builder toBuilder() {
        Builder b = new Builder();
        b.connectTimeout = connectTimeout;
        b.requestTimeout = requestTimeout;
        b.maxFrameBytes = maxFrameBytes;
        b.eventLoopThreads = eventLoopThreads;
        b.eventLoopGroup = eventLoopGroup;
        b.clientName = clientName;
        return b;
    }

    public Duration connectTimeout() {
        return connectTimeout;
    }

    /**
     * How long a request waits for its response; a long-poll fetch waits its {@code maxWaitMs} plus
     * this.
     */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /**
     * The largest frame (bytes after the length prefix) accepted from the broker; a larger one
     * closes the connection. Requests are not limited by it but by the broker's own limit.
     */
    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    /** Threads of the client's own event loop; ignored when a shared group is given. */
    public int eventLoopThreads() {
        return eventLoopThreads;
    }

    /** A shared event loop group (not shut down by the client), or {@code null}. */
    public EventLoopGroup eventLoopGroup() {
        return eventLoopGroup;
    }

    /** The name sent in handshakes. */
    public String clientName() {
        return clientName;
    }

    /** Builder of {@link NearstreamClientOptions}. */
    public static final class Builder {
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration requestTimeout = Duration.ofSeconds(30);
        // The broker's default request limit plus room for a fetch's per-block overhead: fetches
        // are sized by max_bytes, which callers keep well below this.
        private int maxFrameBytes = 64 * 1024 * 1024 + 1024 * 1024;
        private int eventLoopThreads = 1;
        private EventLoopGroup eventLoopGroup;
        private String clientName = "nearstream-java/0.1";

        private Builder() {}

        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = positive(timeout, "connectTimeout");
            return this;
        }

        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "requestTimeout");
            return this;
        }

        public Builder maxFrameBytes(int bytes) {
            if (bytes < 1024) {
                throw new IllegalArgumentException("maxFrameBytes must be >= 1024, got " + bytes);
            }
            this.maxFrameBytes = bytes;
            return this;
        }

        public Builder eventLoopThreads(int threads) {
            if (threads < 1) {
                throw new IllegalArgumentException("eventLoopThreads must be >= 1, got " + threads);
            }
            this.eventLoopThreads = threads;
            return this;
        }

        /** Runs the client on a group owned by the caller (it must use the NIO transport). */
        public Builder eventLoopGroup(EventLoopGroup group) {
            this.eventLoopGroup = group;
            return this;
        }

        public Builder clientName(String name) {
            this.clientName = Objects.requireNonNull(name, "clientName");
            return this;
        }

        public NearstreamClientOptions build() {
            return new NearstreamClientOptions(this);
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, got " + d);
            }
            return d;
        }
    }
}
