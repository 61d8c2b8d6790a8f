// nearstreamd: the Nearstream broker process. Parses flags, recovers the data directory, starts
// the server and runs until SIGINT/SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "nearstream/broker/server.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/common/version.h"
#include "nearstream/net/socket_util.h"
#include "tool_flags.h"

namespace nearstream {
namespace {

constexpr const char kUsage[] = R"(Usage: nearstreamd [flags]
The Nearstream broker: KerA-style streams (streamlets -> groups -> fixed-size segments) served
over a binary TCP protocol (docs/protocol.md).

  --listen HOST:PORT          address to serve on (default 127.0.0.1:7420; port 0 = any free)
  --port-file FILE            write the bound port to FILE once listening (for port 0)
  --data-dir DIR              where durable streams live; recovered on start (default: none,
                              only durability=none streams can be created)
  --workers N                 worker threads executing requests (default 2, at least 1)
  --metrics-port P            Prometheus text endpoint on the listen host (-1 = off, default)
  --max-frame-bytes B         largest request frame accepted (default 64M)
  --max-inflight N            requests in flight per connection before reading pauses (256)
  --flush-interval-ms MS      fsync interval of async streams (default 200)
  --segment-bytes B           default segment size of new streams (default 8M)
  --segments-per-group P      default P of new streams (default 16)
  --active-groups Q           default Q of new streams (default 1)
  --group-idle-close-ms MS    close an idle active group when Q > 1 (default 1000)
  --txn-timeout-ms MS         abort an open transaction idle this long (default 900000);
                              a prepared transaction never expires
  --txn-files-awaiting-sync N committed transaction files (async streams) that may wait for
                              the flusher to fsync and rename them, broker-wide, each holding a
                              descriptor; past it a commit does that for its own files before
                              it answers (default 2048, 0 = always)
  --push-threads N            threads filling push subscriptions' shared-memory rings
                              (default 1, at least 1; a subscription is served by id mod N)
  --push-dir DIR              where push regions are created (default /dev/shm)
  --push-linger-us US         after publishing only part-filled slots (the consumers are at the
                              tail), wait US before the next pass so slots carry more records
                              (default 1000, 0 = publish every append at once, at most 1000000)
  --push-nice N               nice value of the push threads (default 0, up to 19): on a broker
                              short of CPU, appends go first and delivery takes what is left
  --push-segment-files WHEN   when stream segments live in files of --push-dir that view
                              subscriptions point into: on-view (default: a stream's new
                              segments, from its first binary_view subscription on) or always
                              (every segment; segment memory then counts against that tmpfs)
  --version                   print the version and exit

Cluster (docs/cluster.md; without --zookeeper the broker is standalone and owns every stream):
  --zookeeper HOST:PORT[,...][/ROOT]  join the cluster kept in this ZooKeeper ensemble (root
                              default /nearstream)
  --broker-id N               this broker's id in the cluster, 0-2147483647 (required with
                              --zookeeper)
  --advertised-address H:P    where clients reach this broker (default: the listen address)
  --host NAME                 the machine's name for push placement (default: the host name)
  --zookeeper-session-ms MS   ZooKeeper session timeout (default 6000)
  --zookeeper-timeout-ms MS   give up starting when ZooKeeper stays unreachable (default 30000)
  --catch-up HOW              how a follower that is out of sync catches up: epoch (default:
                              keep what its leader's epoch history proves equal, copy the rest)
                              or whole (copy the whole streamlet every time)
  --follower-reads            as a leader, tell the in-sync followers what its readers see, so
                              that they serve replica reads from their copy (off by default:
                              followers then keep their copies in memory too)
)";

Status WritePortFile(const std::string& path, uint16_t port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (!out) return Status::IoError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(StatusCode::kIoError, "rename " + tmp, errno);
  }
  return Status::Ok();
}

// The machine's name: brokers and readers on one machine report the same one.
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

Status Run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ASSIGN_OR_RETURN(tools::Flags flags, tools::Flags::Parse(args, {{"listen"},
                                                                  {"port-file"},
                                                                  {"data-dir"},
                                                                  {"workers"},
                                                                  {"metrics-port"},
                                                                  {"max-frame-bytes"},
                                                                  {"max-inflight"},
                                                                  {"flush-interval-ms"},
                                                                  {"segment-bytes"},
                                                                  {"segments-per-group"},
                                                                  {"active-groups"},
                                                                  {"group-idle-close-ms"},
                                                                  {"txn-timeout-ms"},
                                                                  {"txn-files-awaiting-sync"},
                                                                  {"push-threads"},
                                                                  {"push-dir"},
                                                                  {"push-linger-us"},
                                                                  {"push-nice"},
                                                                  {"push-segment-files"},
                                                                  {"zookeeper"},
                                                                  {"broker-id"},
                                                                  {"advertised-address"},
                                                                  {"host"},
                                                                  {"zookeeper-session-ms"},
                                                                  {"zookeeper-timeout-ms"},
                                                                  {"catch-up"},
                                                                  {"follower-reads", false},
                                                                  {"help", false},
                                                                  {"version", false}}));
  if (flags.Has("help")) {
    std::cout << kUsage;
    return Status::Ok();
  }
  if (flags.Has("version")) {
    std::cout << "nearstreamd " << kNearstreamVersion << "\n";
    return Status::Ok();
  }
  if (!flags.positional().empty()) {
    return Status::InvalidArgument("unexpected argument '" + flags.positional()[0] + "'");
  }
  broker::ServerOptions options;
  ASSIGN_OR_RETURN(auto listen, net::ParseHostPort(flags.String("listen", "127.0.0.1:7420")));
  options.host = listen.first;
  options.port = listen.second;
  ASSIGN_OR_RETURN(int64_t workers, flags.Signed("workers", 2, 1, 1024));
  options.workers = static_cast<int>(workers);
  ASSIGN_OR_RETURN(int64_t metrics_port, flags.Signed("metrics-port", -1, -1, 65535));
  options.metrics_port = static_cast<int>(metrics_port);
  ASSIGN_OR_RETURN(uint64_t max_frame, flags.Size("max-frame-bytes", 64u << 20, 4096, 1u << 30));
  options.max_frame_bytes = static_cast<uint32_t>(max_frame);
  options.handler.max_frame_bytes = options.max_frame_bytes;
  ASSIGN_OR_RETURN(uint64_t inflight, flags.Unsigned("max-inflight", 256, 1, 1u << 20));
  options.limits.max_inflight = static_cast<uint32_t>(inflight);
  ASSIGN_OR_RETURN(options.flush_interval_ms, flags.Signed("flush-interval-ms", 200, 1, 3600000));
  ASSIGN_OR_RETURN(uint64_t seg, flags.Size("segment-bytes", 8u << 20, 4096, 1u << 30));
  options.handler.default_segment_bytes = static_cast<uint32_t>(seg);
  ASSIGN_OR_RETURN(uint64_t p, flags.Unsigned("segments-per-group", 16, 1, 65536));
  options.handler.default_segments_per_group = static_cast<uint32_t>(p);
  ASSIGN_OR_RETURN(uint64_t q, flags.Unsigned("active-groups", 1, 1, 1024));
  options.handler.default_active_groups = static_cast<uint32_t>(q);
  ASSIGN_OR_RETURN(int64_t push_threads, flags.Signed("push-threads", 1, 1, 1024));
  options.push.threads = static_cast<int>(push_threads);
  ASSIGN_OR_RETURN(uint64_t linger_us, flags.Unsigned("push-linger-us", options.push.linger_us, 0,
                                                      push::kMaxPushLingerUs));
  options.push.linger_us = static_cast<uint32_t>(linger_us);
  ASSIGN_OR_RETURN(uint64_t push_nice, flags.Unsigned("push-nice", 0, 0, push::kMaxPushNice));
  options.push.nice = static_cast<int>(push_nice);
  options.push.dir = flags.String("push-dir", push::kDefaultShmDir);
  const std::string segment_files = flags.String("push-segment-files", "on-view");
  if (segment_files != "on-view" && segment_files != "always") {
    return Status::InvalidArgument("--push-segment-files must be on-view or always, not '" +
                                   segment_files + "'");
  }
  options.push.segment_files_always = segment_files == "always";
  options.handler.broker_epoch =
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  ASSIGN_OR_RETURN(uint64_t broker_id, flags.Unsigned("broker-id", 0, 0, INT32_MAX));
  options.handler.broker_id = static_cast<uint32_t>(broker_id);
  options.handler.address = flags.String("advertised-address");
  options.handler.host = flags.String("host", HostName());
  if (flags.Has("zookeeper") && !flags.Has("broker-id")) {
    return Status::InvalidArgument("--zookeeper needs --broker-id");
  }
  cluster::ClusterOptions cluster_options;
  cluster_options.zookeeper = flags.String("zookeeper");
  cluster_options.broker_id = options.handler.broker_id;
  cluster_options.host = options.handler.host;
  ASSIGN_OR_RETURN(int64_t session_ms, flags.Signed("zookeeper-session-ms", 6000, 1000, 600000));
  cluster_options.session_timeout_ms = static_cast<int>(session_ms);
  ASSIGN_OR_RETURN(int64_t zk_timeout_ms, flags.Signed("zookeeper-timeout-ms", 30000, 1, 3600000));
  cluster_options.connect_timeout_ms = static_cast<int>(zk_timeout_ms);
  const std::string catch_up = flags.String("catch-up", "epoch");
  if (catch_up != "epoch" && catch_up != "whole") {
    return Status::InvalidArgument("--catch-up must be epoch or whole, got '" + catch_up + "'");
  }
  cluster_options.whole_catch_up = catch_up == "whole";
  cluster_options.follower_reads = flags.Has("follower-reads");

  storage::StoreOptions store_options;
  store_options.data_dir = flags.String("data-dir");
  ASSIGN_OR_RETURN(store_options.group_idle_close_ms,
                   flags.Signed("group-idle-close-ms", 1000, 1, 86400000));
  ASSIGN_OR_RETURN(store_options.txn.open_timeout_ms,
                   flags.Signed("txn-timeout-ms", 900000, 1, 7 * 86400000LL));
  ASSIGN_OR_RETURN(store_options.txn.max_files_awaiting_sync,
                   flags.Unsigned("txn-files-awaiting-sync", 2048, 0, 1u << 20));
  storage::StreamStore store(store_options);
  RETURN_IF_ERROR(store.Open(WallNowMs()));

  // Signals are taken synchronously by this thread; every thread started below inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<cluster::ZkCluster> cluster;
  if (!cluster_options.zookeeper.empty()) {
    cluster = std::make_unique<cluster::ZkCluster>(cluster_options, &store);
    options.cluster = cluster.get();
  }
  broker::Server server(options, &store);
  RETURN_IF_ERROR(server.Start());
  if (cluster != nullptr) {
    // Registered only once it listens, so a client that reads the registration can connect.
    Status joined = cluster->Start(options.handler.address.empty()
                                       ? options.host + ":" + std::to_string(server.port())
                                       : options.handler.address);
    if (!joined.ok()) {
      server.Stop();
      return joined;
    }
  }
  NS_LOG(kInfo) << "nearstreamd " << kNearstreamVersion << " listening on " << options.host << ":"
                << server.port() << " with " << options.workers << " workers"
                << (store_options.data_dir.empty() ? std::string(", memory only")
                                                   : ", data in " + store_options.data_dir)
                << (options.metrics_port >= 0
                        ? ", metrics on port " + std::to_string(server.metrics_port())
                        : std::string());
  if (flags.Has("port-file"))
    RETURN_IF_ERROR(WritePortFile(flags.String("port-file"), server.port()));

  int sig = 0;
  sigwait(&stop_signals, &sig);
  NS_LOG(kInfo) << "signal " << sig << " received, shutting down";
  if (cluster != nullptr) cluster->Stop();  // leaves the cluster first: clients look elsewhere
  server.Stop();
  return Status::Ok();
}

}  // namespace
}  // namespace nearstream

int main(int argc, char** argv) {
  nearstream::Status s = nearstream::Run(argc, argv);
  if (!s.ok()) {
    std::cerr << "nearstreamd: " << s.ToString() << "\n";
    return s.IsInvalidArgument() ? 2 : 1;
  }
  return 0;
}
