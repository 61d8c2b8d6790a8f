# The Nearstream broker image: nearstreamd plus the nearstream CLI and the nearstream-perf load
# generator. Build from the repository root (docker/README.md):
#
#   docker build -f docker/broker.Dockerfile -t nearstream-broker:dev .

# ---- build: only the three binaries, never the GoogleTest binary ------------------------------
FROM debian:bookworm AS build

# libgtest-dev only because native/CMakeLists.txt finds GTest unconditionally at configure time;
# the test target itself is not built below. libzookeeper-mt-dev: ZooKeeper's C client, through
# which a broker started with --zookeeper joins a cluster (docs/cluster.md).
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake ninja-build g++ libgtest-dev \
        libzookeeper-mt-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY native/ native/
# The default preset (RelWithDebInfo, warnings as errors) as CI builds it; --target keeps the
# build to the shipped binaries.
RUN cd native \
    && rm -rf build \
    && cmake --preset default \
    && cmake --build --preset default --target nearstreamd nearstream nearstream-perf \
    && build/default/nearstreamd --version

# ---- runtime ------------------------------------------------------------------------------------
FROM debian:bookworm-slim

# Push regions are /dev/shm files of mode 0600 owned by the broker's user, and the Flink
# TaskManager maps them read-write: both must run as the same uid. 9999 is the "flink" user of the
# official Flink images; change both together.
ARG NEARSTREAM_UID=9999
ARG NEARSTREAM_GID=9999

RUN apt-get update \
    && apt-get install -y --no-install-recommends libstdc++6 libzookeeper-mt2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid "${NEARSTREAM_GID}" nearstream \
    && useradd --system --uid "${NEARSTREAM_UID}" --gid nearstream --home-dir /var/lib/nearstream \
        --no-create-home --shell /usr/sbin/nologin nearstream \
    && install -d -o nearstream -g nearstream -m 0750 /var/lib/nearstream

COPY --from=build /src/native/build/default/nearstreamd \
                  /src/native/build/default/nearstream \
                  /src/native/build/default/nearstream-perf \
                  /usr/local/bin/

USER nearstream
WORKDIR /var/lib/nearstream

# Durable streams (durability async/sync) live here; a fresh named volume takes this directory's
# owner, so the non-root broker can write to it.
VOLUME ["/var/lib/nearstream"]

# 7420: the binary protocol (docs/protocol.md); 9464: Prometheus text (--metrics-port).
EXPOSE 7420 9464

# The CLI and the tools read the broker address from here, so `docker exec ... nearstream list`
# works without --broker.
ENV NEARSTREAM_BROKER=127.0.0.1:7420

# "list" is a full RPC round trip: it fails while the broker recovers its data directory or when
# its workers hang, not just when the port is closed.
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["nearstream", "--broker", "127.0.0.1:7420", "list"]

# Listen on every interface of the container (the compose network reaches it by service name);
# push regions go to /dev/shm, which the TaskManager shares (docker/README.md, "Shared memory").
ENTRYPOINT ["nearstreamd"]
CMD ["--listen", "0.0.0.0:7420", "--data-dir", "/var/lib/nearstream", "--push-dir", "/dev/shm", \
     "--metrics-port", "9464"]
