// nearstream: the admin / produce / consume command line of a Nearstream broker.
//
//   nearstream --broker 127.0.0.1:7070 create clicks --streamlets 4
//   seq 1 1000 | nearstream --broker 127.0.0.1:7070 produce clicks --round-robin
//   nearstream --broker 127.0.0.1:7070 consume clicks --from earliest --timeout-ms 1000
//
// --broker takes one address or a cluster's bootstrap list (cli_routing.h): produce, consume and
// metadata then send each streamlet's requests to its broker.
//
// Exit codes: 0 success, 1 broker or I/O error (the message names the status), 2 bad usage.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_routing.h"
#include "nearstream/broker/damage_metrics.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/position.h"
#include "nearstream/storage/stream_config.h"
#include "tool_flags.h"

namespace nearstream::tools {
namespace {

using net::Client;
using storage::Position;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr uint32_t kMaxChunkBytes = 1u << 20;

constexpr char kMainUsage[] =
    "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] <command> [options]\n"
    "\n"
    "Commands:\n"
    "  create STREAM     create a stream\n"
    "  delete STREAM     delete a stream and its data\n"
    "  describe STREAM   print a stream's configuration\n"
    "  list              list the streams\n"
    "  cluster           print the cluster's brokers and where each streamlet lives\n"
    "  metadata STREAM   print streamlets, groups, head and tail positions\n"
    "  produce STREAM    append lines of stdin (or a file) as records\n"
    "  consume STREAM    print records, one per line\n"
    "  stats             print the broker's counters\n"
    "  txn SUBCOMMAND    list, abort or commit a stream's open and prepared transactions\n"
    "\n"
    "Options:\n"
    "  --broker HOST:PORT[,HOST:PORT...]\n"
    "                      a broker, or a cluster's bootstrap list (default: $NEARSTREAM_BROKER):\n"
    "                      produce, consume and metadata then go to each streamlet's broker;\n"
    "                      the other commands to the first broker that answers\n"
    "  --help              this text; 'nearstream COMMAND --help' describes a command\n"
    "\n"
    "Exit codes: 0 success, 1 broker or I/O error, 2 bad usage.\n";

// A command parses all its flags first (a usage error exits 2 before any connection is made),
// then returns the runner that talks to the brokers.
using Runner = std::function<Status(BrokerConnections&)>;

// A runner for a command that is not per streamlet: it talks to the first reachable broker.
Runner OnFirstBroker(std::function<Status(Client&)> run) {
  return [run = std::move(run)](BrokerConnections& brokers) {
    ASSIGN_OR_RETURN(Client * client, brokers.First());
    return run(*client);
  };
}

struct Command {
  const char* name;
  const char* usage;
  std::vector<FlagSpec> flags;
  std::function<Result<Runner>(const Flags&)> prepare;
};

// ---- helpers ---------------------------------------------------------------------------------

Result<std::string> OneStreamArgument(const Flags& flags) {
  if (flags.positional().size() != 1) {
    return Status::InvalidArgument("expected exactly one STREAM argument, got " +
                                   std::to_string(flags.positional().size()));
  }
  return flags.positional()[0];
}

Status NoArguments(const Flags& flags) {
  if (!flags.positional().empty()) {
    return Status::InvalidArgument("unexpected argument '" + flags.positional()[0] + "'");
  }
  return Status::Ok();
}

Result<Position> ParsePosition(const std::string& text) {
  Position p;
  unsigned long long g = 0, s = 0;
  unsigned o = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%llu:%llu:%u%c", &g, &s, &o, &tail) != 3) {
    return Status::InvalidArgument(
        "--from expects earliest, latest or GROUP:SEGMENT:OFFSET, got '" + text + "'");
  }
  p.group = g;
  p.segment = s;
  p.offset = o;
  return p;
}

Result<std::vector<uint32_t>> ParseStreamletList(const std::string& text) {
  std::vector<uint32_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    char* end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v > UINT32_MAX) {
      return Status::InvalidArgument(
          "--streamlets expects a comma-separated list of numbers, got '" + text + "'");
    }
    out.push_back(static_cast<uint32_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A non-zero producer id unlikely to collide with another producer's.
uint64_t RandomProducerId() {
  std::random_device rd;
  uint64_t id = (uint64_t{rd()} << 32 | rd()) & 0x7FFFFFFFFFFFFFFFull;
  return id == 0 ? 1 : id;
}

// ---- commands --------------------------------------------------------------------------------

Result<Runner> PrepareCreate(const Flags& flags) {
  storage::StreamConfig c;
  ASSIGN_OR_RETURN(c.name, OneStreamArgument(flags));
  if (!flags.Has("streamlets")) return Status::InvalidArgument("create needs --streamlets N");
  ASSIGN_OR_RETURN(uint64_t streamlets, flags.Unsigned("streamlets", 1, 1, 65536));
  ASSIGN_OR_RETURN(uint64_t segment_bytes, flags.Size("segment-bytes", 0, 0, UINT32_MAX));
  ASSIGN_OR_RETURN(uint64_t per_group, flags.Unsigned("segments-per-group", 0, 0, UINT32_MAX));
  ASSIGN_OR_RETURN(uint64_t active, flags.Unsigned("active-groups", 0, 0, UINT32_MAX));
  if (flags.String("retention-bytes", "-1") == "-1") {
    c.retention_bytes = -1;
  } else {
    ASSIGN_OR_RETURN(uint64_t retention, flags.Size("retention-bytes", 0, 1, INT64_MAX));
    c.retention_bytes = static_cast<int64_t>(retention);
  }
  ASSIGN_OR_RETURN(c.retention_ms, flags.Signed("retention-ms", -1, -1, INT64_MAX));
  ASSIGN_OR_RETURN(uint64_t replication, flags.Unsigned("replication", 1, 1, 3));
  c.replication = static_cast<uint32_t>(replication);
  Result<storage::Durability> durability =
      storage::ParseDurability(flags.String("durability", "none"));
  if (!durability.ok()) return Status::InvalidArgument("--" + durability.status().message());
  c.durability = *durability;
  c.streamlets = static_cast<uint32_t>(streamlets);
  c.segment_bytes = static_cast<uint32_t>(segment_bytes);  // 0 = the broker's default
  c.segments_per_group = static_cast<uint32_t>(per_group);
  c.active_groups = static_cast<uint32_t>(active);
  return OnFirstBroker([c](Client& client) {
    RETURN_IF_ERROR(client.CreateStream(c));
    std::printf("created stream %s with %u streamlets\n", c.name.c_str(), c.streamlets);
    return Status::Ok();
  });
}

Result<Runner> PrepareDelete(const Flags& flags) {
  ASSIGN_OR_RETURN(std::string name, OneStreamArgument(flags));
  return OnFirstBroker([name](Client& client) {
    RETURN_IF_ERROR(client.DeleteStream(name));
    std::printf("deleted stream %s\n", name.c_str());
    return Status::Ok();
  });
}

Status Describe(Client& client, const std::string& name) {
  ASSIGN_OR_RETURN(storage::StreamConfig c, client.DescribeStream(name));
  std::printf("name: %s\n", c.name.c_str());
  std::printf("streamlets: %u\n", c.streamlets);
  std::printf("segment_bytes: %u\n", c.segment_bytes);
  std::printf("segments_per_group: %u\n", c.segments_per_group);
  std::printf("active_groups: %u\n", c.active_groups);
  std::printf("durability: %s\n", storage::DurabilityName(c.durability));
  std::printf("retention_bytes: %lld\n", static_cast<long long>(c.retention_bytes));
  std::printf("retention_ms: %lld\n", static_cast<long long>(c.retention_ms));
  std::printf("replication: %u\n", c.replication);
  // Ranges the broker's recovery found damaged: readers that reach them get DATA_LOSS.
  ASSIGN_OR_RETURN(net::StatsResponse stats, client.Stats());
  std::vector<broker::DamagedRangeSeries> damaged;
  for (const auto& [series, value] : stats.values) {
    auto d = broker::ParseDamagedRangeSeries(series, value);
    if (d.has_value() && d->stream == name) damaged.push_back(std::move(*d));
  }
  std::printf("damaged_ranges: %zu\n", damaged.size());
  for (const auto& d : damaged) {
    std::printf("  streamlet %u: %u bytes from %s to %s (readers get DATA_LOSS)\n", d.streamlet,
                d.range.length, d.range.from.ToString().c_str(), d.range.next().ToString().c_str());
  }
  return Status::Ok();
}

Result<Runner> PrepareDescribe(const Flags& flags) {
  ASSIGN_OR_RETURN(std::string name, OneStreamArgument(flags));
  return OnFirstBroker([name](Client& client) { return Describe(client, name); });
}

Result<Runner> PrepareList(const Flags& flags) {
  RETURN_IF_ERROR(NoArguments(flags));
  return OnFirstBroker([](Client& client) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, client.ListStreams());
    for (const std::string& n : names) std::printf("%s\n", n.c_str());
    return Status::Ok();
  });
}

Result<Runner> PrepareCluster(const Flags& flags) {
  return OnFirstBroker([streams = flags.positional()](Client& client) {
    ASSIGN_OR_RETURN(net::ClusterMetadataResponse m, client.ClusterMetadata(streams));
    std::printf("brokers (as broker %u sees them):\n", m.broker_id);
    for (const net::BrokerInfo& b : m.brokers) {
      std::printf("  %u\t%s\thost %s\n", b.id, b.address.c_str(), b.host.c_str());
    }
    if (m.controller_id == net::kNoController) {
      std::printf("controller: none elected now\n");
    } else {
      std::printf("controller: broker %u\n", m.controller_id);
    }
    std::printf("streams (owner broker of each streamlet, from streamlet 0):\n");
    auto join = [](const std::vector<uint32_t>& ids) {
      std::string text;
      for (uint32_t id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
      return text;
    };
    for (const net::StreamPlacement& s : m.streams) {
      std::printf("  %s\tversion %u\t%s\n", s.name.c_str(), s.version, join(s.owners).c_str());
      // A replicated stream's copies, as Kafka's topic description lists Replicas and Isr.
      for (size_t i = 0; i < s.replicas.size(); ++i) {
        const net::ReplicaSet& set = s.replicas[i];
        if (set.replicas.size() < 2) continue;
        std::printf("    streamlet %zu\tleader %u\tepoch %llu\treplicas %s\tisr %s\n", i,
                    s.owners[i], static_cast<unsigned long long>(set.leader_epoch),
                    join(set.replicas).c_str(), join(set.isr).c_str());
      }
    }
    return Status::Ok();
  });
}

// ---- move, drain ------------------------------------------------------------------------------
// A streamlet moves when the broker that is to own it gets MoveStreamlet (docs/protocol.md,
// "Moving a streamlet"); these commands find that broker and ask it.

// The address of registered broker `id`, or BROKER_UNAVAILABLE.
Result<std::string> AddressOf(const std::vector<net::BrokerInfo>& brokers, uint32_t id) {
  for (const net::BrokerInfo& b : brokers) {
    if (b.id == id) return b.address;
  }
  return Status::BrokerUnavailable("broker " + std::to_string(id) + " is not registered");
}

Status Move(BrokerConnections& brokers, const std::vector<net::BrokerInfo>& registered,
            const std::string& stream, uint32_t streamlet, uint32_t from, uint32_t to) {
  ASSIGN_OR_RETURN(std::string address, AddressOf(registered, to));
  ASSIGN_OR_RETURN(Client * target, brokers.To(address));
  // The target answers once it has copied the streamlet, and waited for the transactions that
  // hold chunks of it to end: far longer than an ordinary request may take.
  const int io_timeout_ms = target->io_timeout_ms();
  target->set_io_timeout_ms(10 * 60 * 1000);
  Status moved = target->MoveStreamlet({stream, streamlet});
  target->set_io_timeout_ms(io_timeout_ms);
  RETURN_IF_ERROR(moved);
  std::printf("moved streamlet %u of stream %s from broker %u to broker %u\n", streamlet,
              stream.c_str(), from, to);
  return Status::Ok();
}

// Moves broker `from`'s replica of a replicated streamlet to broker `to` (ReplicaMove; the
// leadership too when `from` leads it).
Status MoveReplica(BrokerConnections& brokers, const std::vector<net::BrokerInfo>& registered,
                   const std::string& stream, uint32_t streamlet, uint32_t from, uint32_t to) {
  ASSIGN_OR_RETURN(std::string address, AddressOf(registered, to));
  ASSIGN_OR_RETURN(Client * target, brokers.To(address));
  const int io_timeout_ms = target->io_timeout_ms();
  target->set_io_timeout_ms(10 * 60 * 1000);  // the target copies the streamlet first
  Status moved = target->ReplicaMove({stream, streamlet, from});
  target->set_io_timeout_ms(io_timeout_ms);
  RETURN_IF_ERROR(moved);
  std::printf("moved broker %u's replica of streamlet %u of stream %s to broker %u\n", from,
              streamlet, stream.c_str(), to);
  return Status::Ok();
}

Result<Runner> PrepareMove(const Flags& flags) {
  const std::vector<std::string>& args = flags.positional();
  if (args.size() != 2) return Status::InvalidArgument("move expects STREAM STREAMLET");
  if (!flags.Has("to")) return Status::InvalidArgument("move needs --to BROKER_ID");
  uint64_t streamlet = 0;
  try {
    streamlet = std::stoull(args[1]);
  } catch (const std::exception&) {
    return Status::InvalidArgument("STREAMLET must be a number, got '" + args[1] + "'");
  }
  if (streamlet > UINT32_MAX) return Status::InvalidArgument("STREAMLET is too large");
  ASSIGN_OR_RETURN(uint64_t to, flags.Unsigned("to", 0, 0, INT32_MAX));
  std::optional<uint32_t> replica_of;
  if (flags.Has("replica-of")) {
    ASSIGN_OR_RETURN(uint64_t of, flags.Unsigned("replica-of", 0, 0, INT32_MAX));
    replica_of = static_cast<uint32_t>(of);
  }
  return Runner([stream = args[0], streamlet = static_cast<uint32_t>(streamlet),
                 to = static_cast<uint32_t>(to), replica_of](BrokerConnections& brokers) -> Status {
    ASSIGN_OR_RETURN(Client * any, brokers.First());
    ASSIGN_OR_RETURN(net::ClusterMetadataResponse m, any->ClusterMetadata({stream}));
    if (m.streams.empty()) return Status::StreamNotFound("stream '" + stream + "' does not exist");
    const std::vector<uint32_t>& owners = m.streams[0].owners;
    if (streamlet >= owners.size()) {
      return Status::StreamletNotFound("stream '" + stream + "' has " +
                                       std::to_string(owners.size()) + " streamlets");
    }
    if (replica_of.has_value()) {
      return MoveReplica(brokers, m.brokers, stream, streamlet, *replica_of, to);
    }
    return Move(brokers, m.brokers, stream, streamlet, owners[streamlet], to);
  });
}

// Moves every streamlet of broker `id` to the other registered brokers, round-robin, and every
// replica it holds of a replicated streamlet to a registered broker that holds none of it; goes
// on past a streamlet it cannot move and fails at the end. The placement comes from the first
// broker's cache, which learns of moves made by other brokers through a watch: after a round it
// asks again (after a pause) and moves what the drained broker still owns, up to kDrainRounds.
constexpr int kDrainRounds = 3;

Result<Runner> PrepareDrain(const Flags& flags) {
  if (!flags.positional().empty()) return Status::InvalidArgument("drain takes no arguments");
  if (!flags.Has("broker-id")) return Status::InvalidArgument("drain needs --broker-id N");
  ASSIGN_OR_RETURN(uint64_t id, flags.Unsigned("broker-id", 0, 0, INT32_MAX));
  return Runner([id = static_cast<uint32_t>(id)](BrokerConnections& brokers) -> Status {
    size_t next = 0, moved = 0, failed = 0;
    Status first_failure;
    for (int round = 0; round < kDrainRounds; ++round) {
      if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ASSIGN_OR_RETURN(Client * any, brokers.First());
      ASSIGN_OR_RETURN(net::ClusterMetadataResponse m, any->ClusterMetadata());
      std::vector<uint32_t> targets;
      for (const net::BrokerInfo& b : m.brokers) {
        if (b.id != id) targets.push_back(b.id);
      }
      if (targets.empty()) {
        return Status::InvalidArgument("no other broker is registered to take broker " +
                                       std::to_string(id) + "'s streamlets");
      }
      size_t left = 0;
      for (const net::StreamPlacement& p : m.streams) {
        for (uint32_t s = 0; s < p.owners.size(); ++s) {
          const std::vector<uint32_t> replicas =
              s < p.replicas.size() ? p.replicas[s].replicas : std::vector<uint32_t>{};
          Status r;
          if (replicas.size() > 1) {
            if (std::find(replicas.begin(), replicas.end(), id) == replicas.end()) continue;
            ++left;
            std::vector<uint32_t> free;
            for (uint32_t t : targets) {
              if (std::find(replicas.begin(), replicas.end(), t) == replicas.end()) {
                free.push_back(t);
              }
            }
            r = free.empty()
                    ? Status::InvalidArgument("every other registered broker holds a replica of it")
                    : MoveReplica(brokers, m.brokers, p.name, s, id, free[next++ % free.size()]);
          } else {
            if (p.owners[s] != id) continue;
            ++left;
            r = Move(brokers, m.brokers, p.name, s, id, targets[next++ % targets.size()]);
          }
          if (r.ok()) {
            ++moved;
            continue;
          }
          ++failed;
          std::fprintf(stderr, "nearstream drain: streamlet %u of stream %s: %s\n", s,
                       p.name.c_str(), r.ToString().c_str());
          if (first_failure.ok()) first_failure = r;
        }
      }
      if (left == 0 || !first_failure.ok()) break;
    }
    std::printf("drained broker %u: %zu streamlets moved, %zu failed\n", id, moved, failed);
    if (first_failure.ok()) return Status::Ok();
    return Status(first_failure.code(), std::to_string(failed) +
                                            " streamlets could not move; the first: " +
                                            std::string(first_failure.message()));
  });
}

// Asks each broker for its own streamlets and prints them all in streamlet order.
Status PrintMetadata(BrokerConnections& brokers, const std::string& name) {
  ASSIGN_OR_RETURN(auto by_broker, brokers.ByBroker(name, {}));
  std::vector<net::StreamletMetadata> streamlets;
  for (const auto& [address, mine] : by_broker) {
    ASSIGN_OR_RETURN(Client * client, brokers.To(address));
    ASSIGN_OR_RETURN(net::MetadataResponse m, client->Metadata(name, mine));
    for (net::StreamletMetadata& s : m.streamlets) streamlets.push_back(std::move(s));
  }
  std::stable_sort(streamlets.begin(), streamlets.end(),
                   [](const net::StreamletMetadata& a, const net::StreamletMetadata& b) {
                     return a.streamlet < b.streamlet;
                   });
  for (const net::StreamletMetadata& s : streamlets) {
    std::printf("streamlet %u: head %s tail %s, %zu groups\n", s.streamlet,
                s.head.ToString().c_str(), s.tail.ToString().c_str(), s.groups.size());
    for (const net::GroupMetadata& g : s.groups) {
      std::printf("  group %llu %s: segments %llu..%llu, %llu bytes\n",
                  static_cast<unsigned long long>(g.group_id), g.closed ? "closed" : "open",
                  static_cast<unsigned long long>(g.first_segment),
                  static_cast<unsigned long long>(g.first_segment + g.segment_count - 1),
                  static_cast<unsigned long long>(g.bytes));
    }
  }
  return Status::Ok();
}

Result<Runner> PrepareMetadata(const Flags& flags) {
  ASSIGN_OR_RETURN(std::string name, OneStreamArgument(flags));
  return Runner([name](BrokerConnections& brokers) { return PrintMetadata(brokers, name); });
}

// How long `produce` keeps sending a chunk that a streamlet move or a leader's failover refuses.
constexpr int64_t kFollowRetryMs = 60000;

// Appends chunks synchronously, one request per chunk, so per-streamlet order is the input order
// and sequence numbers never race. Each chunk goes to its streamlet's broker, following a move
// and, for a replicated stream, a new leader.
class LineProducer {
 public:
  LineProducer(BrokerConnections& brokers, std::string stream, uint64_t producer_id)
      : brokers_(brokers), stream_(std::move(stream)), producer_id_(producer_id) {}

  Status Append(uint32_t streamlet, storage::ChunkBuilder& builder) {
    if (streamlet >= sequences_.size()) sequences_.resize(streamlet + 1, 0);
    const uint32_t records = builder.record_count();
    Bytes chunk = builder.Finish(producer_id_, sequences_[streamlet], WallNowMs());
    net::AppendRequest request;
    request.stream = stream_;
    request.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
    // A streamlet being moved refuses appends until the move ends (STREAMLET_MOVING), then its
    // old owner names the new one (NOT_OWNER). A replicated streamlet whose leader stopped or
    // crashed gets a new leader once ZooKeeper ends the old one's session: until then the
    // connection fails or the placement names a broker that is not registered
    // (BROKER_UNAVAILABLE). The same chunk goes again, to the broker the refreshed placement
    // names: its sequence number makes a copy that was stored before a duplicate.
    const int64_t deadline = MonotonicNowMs() + kFollowRetryMs;
    for (int attempt = 0;; ++attempt) {
      Result<Client*> client = brokers_.ForStreamlet(stream_, streamlet);
      Result<net::AppendResponse> response =
          client.ok() ? (*client)->Append(request) : Result<net::AppendResponse>(client.status());
      StatusCode code = StatusCode::kOk;
      std::string message;
      if (!response.ok()) {
        code = response.status().code();
        message = response.status().message();
      } else if (response->results.size() != 1) {
        return Status::MalformedRequest("append answered with " +
                                        std::to_string(response->results.size()) +
                                        " results for 1 chunk");
      } else {
        code = static_cast<StatusCode>(response->results[0].status);
        message = response->results[0].message;
      }
      if (code == StatusCode::kOk) break;
      const bool routed = brokers_.routed();
      const bool follow =
          code == StatusCode::kStreamletMoving || code == StatusCode::kClusterUnavailable ||
          (routed && (code == StatusCode::kNotOwner || code == StatusCode::kBrokerUnavailable ||
                      code == StatusCode::kIoError));
      if (!follow || MonotonicNowMs() >= deadline) {
        return Status(code, "append to streamlet " + std::to_string(streamlet) + " failed after " +
                                std::to_string(acknowledged_) +
                                " records were acknowledged: " + message);
      }
      if (code != StatusCode::kStreamletMoving) {
        brokers_.DropBroken();
        brokers_.Forget(stream_);
      }
      // A NOT_OWNER is followed at once; the placement a broker answers may lag the move by a
      // watch, so a second one waits as a refusal does.
      if (code != StatusCode::kNotOwner || attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50 << std::min(attempt, 4)));
      }
    }
    ++sequences_[streamlet];
    acknowledged_ += records;
    ++chunks_;
    return Status::Ok();
  }

  uint64_t acknowledged() const { return acknowledged_; }
  uint64_t chunks() const { return chunks_; }

 private:
  BrokerConnections& brokers_;
  std::string stream_;
  uint64_t producer_id_;
  std::vector<uint64_t> sequences_;  // next sequence per streamlet
  uint64_t acknowledged_ = 0;
  uint64_t chunks_ = 0;
};

struct ProduceOptions {
  std::string stream;
  std::string file;  // empty = stdin
  bool round_robin = false;
  uint32_t streamlet = 0;
  uint32_t batch_records = 100;
  uint64_t producer_id = 0;
};

Status Produce(BrokerConnections& brokers, const ProduceOptions& o) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (!o.file.empty()) {
    file.open(o.file, std::ios::binary);
    if (!file) return Status::FromErrno(StatusCode::kIoError, "cannot open " + o.file, errno);
    in = &file;
  }
  // The stream's shape bounds the streamlets and the chunk size.
  ASSIGN_OR_RETURN(Client * first, brokers.First());
  ASSIGN_OR_RETURN(storage::StreamConfig config, first->DescribeStream(o.stream));
  if (!o.round_robin && o.streamlet >= config.streamlets) {
    return Status::StreamletNotFound("--streamlet " + std::to_string(o.streamlet) + " but stream " +
                                     o.stream + " has " + std::to_string(config.streamlets) +
                                     " streamlets");
  }
  // The first chunk's broker, before any input is read: an unreachable one fails at once. Not
  // with a bootstrap list: the streamlet may be changing leader, which the appends follow.
  if (!brokers.routed()) RETURN_IF_ERROR(brokers.ForStreamlet(o.stream, o.streamlet).status());
  uint32_t max_chunk = kMaxChunkBytes;
  if (config.segment_bytes != 0 && config.segment_bytes < max_chunk) {
    max_chunk = config.segment_bytes;
  }

  LineProducer producer(brokers, o.stream, o.producer_id);
  storage::ChunkBuilder builder;
  uint32_t streamlet = o.streamlet;
  auto flush = [&]() -> Status {
    if (builder.record_count() == 0) return Status::Ok();
    RETURN_IF_ERROR(producer.Append(streamlet, builder));
    if (o.round_robin) streamlet = (streamlet + 1) % config.streamlets;
    return Status::Ok();
  };
  std::string line;
  while (std::getline(*in, line)) {
    if (storage::kChunkHeaderSize + storage::kRecordLengthPrefix + line.size() > max_chunk) {
      return Status::InvalidArgument("a line of " + std::to_string(line.size()) +
                                     " bytes does not fit in one chunk (limit " +
                                     std::to_string(max_chunk) + " bytes)");
    }
    if (builder.size() + storage::kRecordLengthPrefix + line.size() > max_chunk) {
      RETURN_IF_ERROR(flush());
    }
    builder.Add(line);
    if (builder.record_count() >= o.batch_records) RETURN_IF_ERROR(flush());
  }
  if (in->bad()) return Status::FromErrno(StatusCode::kIoError, "reading input", errno);
  RETURN_IF_ERROR(flush());
  std::printf("acknowledged %llu records in %llu chunks (producer id %llu)\n",
              static_cast<unsigned long long>(producer.acknowledged()),
              static_cast<unsigned long long>(producer.chunks()),
              static_cast<unsigned long long>(o.producer_id));
  return Status::Ok();
}

Result<Runner> PrepareProduce(const Flags& flags) {
  ProduceOptions o;
  ASSIGN_OR_RETURN(o.stream, OneStreamArgument(flags));
  if (flags.Has("streamlet") && flags.Has("round-robin")) {
    return Status::InvalidArgument("--streamlet and --round-robin exclude each other");
  }
  ASSIGN_OR_RETURN(uint64_t streamlet, flags.Unsigned("streamlet", 0, 0, UINT32_MAX));
  ASSIGN_OR_RETURN(uint64_t batch, flags.Unsigned("batch-records", 100, 1, 1u << 20));
  ASSIGN_OR_RETURN(o.producer_id, flags.Unsigned("producer-id", RandomProducerId(), 0, UINT64_MAX));
  o.streamlet = static_cast<uint32_t>(streamlet);
  o.batch_records = static_cast<uint32_t>(batch);
  o.round_robin = flags.Has("round-robin");
  o.file = flags.String("file");
  if (flags.Has("file") && o.file.empty())
    return Status::InvalidArgument("--file needs a file name");
  return Runner([o](BrokerConnections& brokers) { return Produce(brokers, o); });
}

struct ConsumeOptions {
  std::string stream;
  enum class From { kEarliest, kLatest, kPosition } from = From::kEarliest;
  Position position;                 // for kPosition
  std::vector<uint32_t> streamlets;  // empty = all
  uint64_t max_records = 0;          // 0 = unlimited
  int64_t timeout_ms = -1;           // -1 = never stop for lack of data
  uint32_t fetch_bytes = 1u << 20;
};

// Prints the records of one fetch block; false once `max_records` have been printed.
Result<bool> PrintBlock(const net::FetchBlock& block, uint64_t max_records, uint64_t* printed) {
  for (uint32_t at = 0; at < block.size;) {
    ASSIGN_OR_RETURN(storage::ChunkHeader h,
                     storage::DecodeChunkHeader(block.data + at, block.size - at));
    RETURN_IF_ERROR(storage::ValidateChunk(block.data + at, h.total_size()).status());
    storage::RecordIterator it(block.data + at + storage::kChunkHeaderSize, h.payload_length);
    std::string_view record;
    while (it.Next(&record)) {
      std::fwrite(record.data(), 1, record.size(), stdout);
      std::fputc('\n', stdout);
      if (++*printed == max_records) return false;
    }
    at += h.total_size();
  }
  return true;
}

// One broker's part of a consume: its connection and the fetch of its streamlets.
struct BrokerFetch {
  Client* client = nullptr;
  net::FetchRequest request;
};

Status Consume(BrokerConnections& brokers, const ConsumeOptions& o) {
  std::vector<uint32_t> streamlets = o.streamlets;
  if (streamlets.empty()) {
    ASSIGN_OR_RETURN(Client * first, brokers.First());
    ASSIGN_OR_RETURN(storage::StreamConfig config, first->DescribeStream(o.stream));
    for (uint32_t s = 0; s < config.streamlets; ++s) streamlets.push_back(s);
  }
  ASSIGN_OR_RETURN(auto by_broker, brokers.ByBroker(o.stream, streamlets));
  std::vector<BrokerFetch> fetches;
  for (const auto& [address, mine] : by_broker) {
    BrokerFetch& f = fetches.emplace_back();
    ASSIGN_OR_RETURN(f.client, brokers.To(address));
    f.request.stream = o.stream;
    for (uint32_t s : mine) {
      Position start = o.from == ConsumeOptions::From::kPosition ? o.position : Position{};
      f.request.entries.push_back({s, start, o.fetch_bytes});
    }
    if (o.from == ConsumeOptions::From::kLatest) {
      ASSIGN_OR_RETURN(net::MetadataResponse m, f.client->Metadata(o.stream, mine));
      for (net::FetchEntry& e : f.request.entries) {
        for (const net::StreamletMetadata& s : m.streamlets) {
          if (s.streamlet == e.streamlet) e.position = s.tail;
        }
      }
    }
  }

  // Long-poll in slices so that --timeout-ms is honoured; 0 drains what is there and stops. The
  // brokers are asked in turn, each with its share of the slice.
  const int64_t slice = std::max<int64_t>(500 / static_cast<int64_t>(fetches.size()), 100);
  uint64_t printed = 0;
  int64_t last_data_ms = MonotonicNowMs();
  for (;;) {
    const uint64_t printed_before_round = printed;
    for (BrokerFetch& f : fetches) {
      int64_t wait = slice;
      if (o.timeout_ms >= 0) {
        wait = std::clamp<int64_t>(last_data_ms + o.timeout_ms - MonotonicNowMs(), 0, wait);
      }
      f.request.max_wait_ms = static_cast<uint32_t>(wait);
      ASSIGN_OR_RETURN(net::FetchReply reply, f.client->Fetch(f.request));
      const uint64_t printed_before = printed;
      for (const net::FetchResult& r : reply.response.results) {
        if (r.status != 0) {
          return Status(static_cast<StatusCode>(r.status),
                        "fetch from streamlet " + std::to_string(r.streamlet) + ": " + r.message);
        }
        for (const net::FetchBlock& b : r.blocks) {
          ASSIGN_OR_RETURN(bool more, PrintBlock(b, o.max_records, &printed));
          if (!more) {
            std::fflush(stdout);
            std::fprintf(stderr, "consumed %llu records\n",
                         static_cast<unsigned long long>(printed));
            return Status::Ok();
          }
        }
        for (net::FetchEntry& e : f.request.entries) {
          if (e.streamlet == r.streamlet) e.position = r.next;
        }
      }
      std::fflush(stdout);
      if (printed != printed_before) last_data_ms = MonotonicNowMs();
    }
    if (printed == printed_before_round && o.timeout_ms >= 0 &&
        MonotonicNowMs() - last_data_ms >= o.timeout_ms) {
      break;
    }
  }
  std::fprintf(stderr, "consumed %llu records (no new data for %lld ms)\n",
               static_cast<unsigned long long>(printed), static_cast<long long>(o.timeout_ms));
  return Status::Ok();
}

Result<Runner> PrepareConsume(const Flags& flags) {
  ConsumeOptions o;
  ASSIGN_OR_RETURN(o.stream, OneStreamArgument(flags));
  ASSIGN_OR_RETURN(o.max_records, flags.Unsigned("max-records", 0, 0, UINT64_MAX));
  ASSIGN_OR_RETURN(o.timeout_ms, flags.Signed("timeout-ms", -1, -1, INT32_MAX));
  ASSIGN_OR_RETURN(uint64_t fetch_bytes, flags.Size("fetch-bytes", 1u << 20, 1, 1u << 30));
  o.fetch_bytes = static_cast<uint32_t>(fetch_bytes);
  if (flags.Has("streamlets")) {
    ASSIGN_OR_RETURN(o.streamlets, ParseStreamletList(flags.String("streamlets")));
  }
  const std::string from = flags.String("from", "earliest");
  if (from == "latest") {
    o.from = ConsumeOptions::From::kLatest;
  } else if (from != "earliest") {
    o.from = ConsumeOptions::From::kPosition;
    ASSIGN_OR_RETURN(o.position, ParsePosition(from));
  }
  return Runner([o](BrokerConnections& brokers) { return Consume(brokers, o); });
}

Result<Runner> PrepareStats(const Flags& flags) {
  RETURN_IF_ERROR(NoArguments(flags));
  return OnFirstBroker([](Client& client) {
    ASSIGN_OR_RETURN(net::StatsResponse stats, client.Stats());
    for (const auto& [name, value] : stats.values) {
      std::printf("%s %llu\n", name.c_str(), static_cast<unsigned long long>(value));
    }
    return Status::Ok();
  });
}

// ---- txn ------------------------------------------------------------------------------------

struct TxnOptions {
  enum class Action { kList, kAbort, kCommit, kAbortAll } action = Action::kList;
  std::string stream;
  std::string id_prefix;              // list, abort-all
  net::TxnRef txn;                    // abort, commit
  std::optional<uint32_t> broker_id;  // abort, commit: the part's broker, over a cluster
  // abort, commit: txn.scope is a streamlet (--streamlet), a replicated stream's part.
  bool streamlet_scope() const { return txn.scope != net::kBrokerScope; }
};

// One line per transaction, tab-separated: a transactional id holds no byte below 0x20, so
// `cut -f1` gives the ids whatever else they contain. A replicated stream's transaction (a
// streamlet scope) says which streamlet: "\tstreamlet N".
// `where` ends the line: empty, or "\tbroker N" over a cluster.
void PrintTxn(const net::TxnInfo& t, int64_t now_ms, const std::string& where) {
  // The broker's clock set started_ms; a client clock behind it would give a negative age.
  const long long age_s = std::max<int64_t>(0, now_ms - t.started_ms) / 1000;
  const std::string scope =
      t.scope == net::kBrokerScope ? std::string() : "\tstreamlet " + std::to_string(t.scope);
  std::printf(
      "%s\tepoch %u\tserial %llu\t%s\t%llu bytes\t%u chunks\t%u streamlets\tage %llds%s%s\n",
      t.transactional_id.c_str(), t.epoch, static_cast<unsigned long long>(t.serial),
      net::TxnStateName(t.state), static_cast<unsigned long long>(t.bytes), t.chunks, t.streamlets,
      age_s, scope.c_str(), where.c_str());
}

std::string TxnName(const std::string& id, uint64_t serial) {
  return "transaction '" + id + "' serial " + std::to_string(serial);
}

// Aborts every listed transaction of the prefix, each with the epoch it was begun in (which is
// what TxnAbort asks for, open or prepared). Goes on past a transaction it cannot abort, so one
// that was committed in the meantime does not leave the others behind, and fails at the end.
// `where` names the broker over a cluster (" on broker N"), else is empty.
Status AbortAll(Client& client, const TxnOptions& o, const std::string& where) {
  ASSIGN_OR_RETURN(net::TxnListResponse list, client.TxnList({o.stream, o.id_prefix}));
  size_t aborted = 0;
  Status first_failure;
  for (const net::TxnInfo& t : list.transactions) {
    Status s = client.TxnAbort({o.stream, t.transactional_id, t.epoch, t.serial, t.scope});
    if (s.ok()) {
      std::printf("aborted %s%s\n", TxnName(t.transactional_id, t.serial).c_str(), where.c_str());
      ++aborted;
      continue;
    }
    if (!client.ok()) return s;  // the connection is gone: every later abort would fail alike
    std::fprintf(stderr, "nearstream txn abort-all: %s%s: %s\n",
                 TxnName(t.transactional_id, t.serial).c_str(), where.c_str(),
                 s.ToString().c_str());
    if (first_failure.ok()) first_failure = s;
  }
  std::printf("aborted %zu of %zu transactions of stream %s with prefix '%s'%s\n", aborted,
              list.transactions.size(), o.stream.c_str(), o.id_prefix.c_str(), where.c_str());
  if (first_failure.ok()) return Status::Ok();
  return Status(first_failure.code(), std::to_string(list.transactions.size() - aborted) +
                                          " transactions could not be aborted; the first: " +
                                          std::string(first_failure.message()));
}

// One broker's transactions; `where` as for PrintTxn and AbortAll.
Status RunTxn(Client& client, const TxnOptions& o, const std::string& where) {
  switch (o.action) {
    case TxnOptions::Action::kList: {
      ASSIGN_OR_RETURN(net::TxnListResponse list, client.TxnList({o.stream, o.id_prefix}));
      const int64_t now_ms = WallNowMs();
      for (const net::TxnInfo& t : list.transactions) PrintTxn(t, now_ms, where);
      return Status::Ok();
    }
    case TxnOptions::Action::kAbort:
      RETURN_IF_ERROR(client.TxnAbort(o.txn));
      std::printf("aborted %s%s\n", TxnName(o.txn.transactional_id, o.txn.serial).c_str(),
                  where.c_str());
      return Status::Ok();
    case TxnOptions::Action::kCommit:
      RETURN_IF_ERROR(client.TxnCommit(o.txn));
      std::printf("committed %s%s\n", TxnName(o.txn.transactional_id, o.txn.serial).c_str(),
                  where.c_str());
      return Status::Ok();
    case TxnOptions::Action::kAbortAll: return AbortAll(client, o, where);
  }
  return Status::Internal("unknown txn action");
}

// Over a cluster each broker keeps its own part of a transaction (docs/cluster.md): list and
// abort-all ask every registered broker and say which broker each line is about; abort and
// commit go to the broker --broker-id names. A broker that fails does not stop the others; the
// first failure is returned at the end.
Status RunTxnOnCluster(BrokerConnections& brokers, const TxnOptions& o) {
  if (o.streamlet_scope()) {
    // A replicated stream's part lives with its streamlet: its leader now answers for it.
    ASSIGN_OR_RETURN(Client * first, brokers.First());
    ASSIGN_OR_RETURN(net::ClusterMetadataResponse m, first->ClusterMetadata({o.stream}));
    const uint32_t streamlet = o.txn.scope;
    if (m.streams.size() != 1 || streamlet >= m.streams[0].owners.size()) {
      return Status::StreamletNotFound("stream '" + o.stream + "' has no streamlet " +
                                       std::to_string(streamlet));
    }
    const uint32_t leader = m.streams[0].owners[streamlet];
    for (const net::BrokerInfo& b : m.brokers) {
      if (b.id != leader) continue;
      ASSIGN_OR_RETURN(Client * client, brokers.To(b.address));
      return RunTxn(*client, o, " on broker " + std::to_string(b.id));
    }
    return Status::BrokerUnavailable("broker " + std::to_string(leader) +
                                     ", the leader of streamlet " + std::to_string(streamlet) +
                                     ", is not registered");
  }
  ASSIGN_OR_RETURN(std::vector<net::BrokerInfo> registered, brokers.Registered(o.stream));
  const bool one_part =
      o.action == TxnOptions::Action::kAbort || o.action == TxnOptions::Action::kCommit;
  if (one_part && !o.broker_id) {
    return Status::InvalidArgument(
        "over a cluster each broker keeps its own part of a transaction: give --broker-id N, "
        "the broker 'txn list' prints at the end of the transaction's line");
  }
  Status first_failure;
  bool found = false;
  for (const net::BrokerInfo& b : registered) {
    if (one_part && b.id != *o.broker_id) continue;
    found = true;
    const std::string where =
        (o.action == TxnOptions::Action::kList ? "\tbroker " : " on broker ") +
        std::to_string(b.id);
    Result<Client*> client = brokers.To(b.address);
    Status s = client.ok() ? RunTxn(**client, o, where) : client.status();
    if (!s.ok()) {
      std::fprintf(stderr, "nearstream txn: broker %u at %s: %s\n", b.id, b.address.c_str(),
                   s.ToString().c_str());
      if (first_failure.ok()) {
        first_failure = Status(s.code(), "broker " + std::to_string(b.id) + " at " + b.address +
                                             ": " + std::string(s.message()));
      }
    }
  }
  if (one_part && !found) {
    return Status::BrokerUnavailable("broker " + std::to_string(*o.broker_id) +
                                     " is not registered in the cluster");
  }
  return first_failure;
}

Result<Runner> PrepareTxn(const Flags& flags) {
  const std::vector<std::string>& args = flags.positional();
  if (args.empty())
    return Status::InvalidArgument("txn needs a subcommand: list, abort, commit or abort-all");
  const std::string& sub = args[0];
  TxnOptions o;
  size_t want_args = 2;  // subcommand, STREAM
  bool wants_txn = false;
  if (sub == "list") {
    o.action = TxnOptions::Action::kList;
  } else if (sub == "abort-all") {
    o.action = TxnOptions::Action::kAbortAll;
  } else if (sub == "abort" || sub == "commit") {
    o.action = sub == "abort" ? TxnOptions::Action::kAbort : TxnOptions::Action::kCommit;
    want_args = 3;  // and ID
    wants_txn = true;
  } else {
    return Status::InvalidArgument("unknown txn subcommand '" + sub + "'");
  }
  if (args.size() != want_args) {
    return Status::InvalidArgument("txn " + sub + " expects " +
                                   (wants_txn ? std::string("STREAM ID") : std::string("STREAM")) +
                                   ", got " + std::to_string(args.size() - 1) + " arguments");
  }
  o.stream = args[1];
  if (wants_txn) {
    if (flags.Has("prefix")) return Status::InvalidArgument("txn " + sub + " takes no --prefix");
    if (!flags.Has("epoch") || !flags.Has("serial")) {
      return Status::InvalidArgument("txn " + sub +
                                     " needs --epoch E and --serial S (see 'txn list')");
    }
    // Epochs and serials start at 1, so 0 names no transaction.
    ASSIGN_OR_RETURN(uint64_t epoch, flags.Unsigned("epoch", 0, 1, UINT32_MAX));
    ASSIGN_OR_RETURN(o.txn.serial, flags.Unsigned("serial", 0, 1, UINT64_MAX));
    o.txn.stream = o.stream;
    o.txn.transactional_id = args[2];
    o.txn.epoch = static_cast<uint32_t>(epoch);
  } else {
    if (flags.Has("epoch") || flags.Has("serial")) {
      return Status::InvalidArgument("txn " + sub + " takes no --epoch or --serial");
    }
    o.id_prefix = flags.String("prefix");
    // An empty prefix matches every transactional id of the stream, other jobs' prepared
    // transactions included: abort-all refuses it rather than let an unset variable do that.
    if (o.action == TxnOptions::Action::kAbortAll && o.id_prefix.empty()) {
      return Status::InvalidArgument("txn abort-all needs a non-empty --prefix P");
    }
  }
  if (flags.Has("broker-id")) {
    if (!wants_txn) return Status::InvalidArgument("txn " + sub + " takes no --broker-id");
    ASSIGN_OR_RETURN(uint64_t id, flags.Unsigned("broker-id", 0, 0, INT32_MAX));
    o.broker_id = static_cast<uint32_t>(id);
  }
  if (flags.Has("streamlet")) {
    if (!wants_txn) return Status::InvalidArgument("txn " + sub + " takes no --streamlet");
    if (o.broker_id) {
      return Status::InvalidArgument(
          "--streamlet names a replicated stream's part, which its streamlet's leader holds: "
          "leave --broker-id out");
    }
    ASSIGN_OR_RETURN(uint64_t streamlet, flags.Unsigned("streamlet", 0, 0, UINT32_MAX - 1));
    o.txn.scope = static_cast<uint32_t>(streamlet);
  }
  return Runner([o](BrokerConnections& brokers) -> Status {
    if (brokers.routed()) return RunTxnOnCluster(brokers, o);
    if (o.broker_id) {
      return Status::InvalidArgument(
          "--broker-id picks a broker of the cluster that --broker lists; with one address, "
          "that broker is the one asked: leave --broker-id out");
    }
    ASSIGN_OR_RETURN(Client * client, brokers.First());
    return RunTxn(*client, o, "");
  });
}

std::vector<Command> Commands() {
  return {
      {"create",
       "Usage: nearstream --broker HOST:PORT create STREAM --streamlets N [--segment-bytes B]\n"
       "         [--segments-per-group P] [--active-groups Q] [--durability none|async|sync]\n"
       "         [--retention-bytes B] [--retention-ms MS] [--replication R]\n"
       "Creates a stream. Sizes accept K/M/G suffixes; omitted segment and group settings take\n"
       "the broker's defaults; retention -1 (default) = unlimited. --replication 2 or 3 keeps\n"
       "that many copies of each streamlet on different brokers of a cluster (a durable stream).\n",
       {{"streamlets"},
        {"segment-bytes"},
        {"segments-per-group"},
        {"active-groups"},
        {"durability"},
        {"retention-bytes"},
        {"retention-ms"},
        {"replication"}},
       PrepareCreate},
      {"delete", "Usage: nearstream --broker HOST:PORT delete STREAM\n", {}, PrepareDelete},
      {"describe", "Usage: nearstream --broker HOST:PORT describe STREAM\n", {}, PrepareDescribe},
      {"list", "Usage: nearstream --broker HOST:PORT list\n", {}, PrepareList},
      {"cluster",
       "Usage: nearstream --broker HOST:PORT cluster [STREAM...]\n"
       "Prints the brokers of the cluster (id, address, host), the controller, and which broker\n"
       "stores each streamlet of the given streams (default: every stream). A standalone broker\n"
       "is a cluster of one that stores everything (and is its own controller).\n",
       {},
       PrepareCluster},
      {"move",
       "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] move STREAM STREAMLET --to N\n"
       "                                                    [--replica-of M]\n"
       "Moves one streamlet to broker N with all its data (docs/cluster.md, \"Moving and\n"
       "draining\"): positions stay valid, readers and writers follow. Refused while open or\n"
       "prepared transactions hold chunks of the streamlet, and for memory-only streams.\n"
       "Replicated streams: N becomes the leader (a follower already: the old leader follows\n"
       "it); with --replica-of M, N takes broker M's replica instead (and leads if M did).\n",
       {{"to"}, {"replica-of"}},
       PrepareMove},
      {"drain",
       "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] drain --broker-id N\n"
       "Moves every streamlet of broker N to the other registered brokers, round-robin, one at a\n"
       "time (as 'move' does each), and each replica N holds of a replicated streamlet to a\n"
       "broker that holds none of it; goes on past a streamlet that cannot move and then fails.\n",
       {{"broker-id"}},
       PrepareDrain},
      {"metadata",
       "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] metadata STREAM\n"
       "Prints each streamlet's head and tail positions and groups. With a cluster's bootstrap\n"
       "list, each broker is asked for its own streamlets.\n",
       {},
       PrepareMetadata},
      {"produce",
       "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] produce STREAM [--file F]\n"
       "         [--streamlet S | --round-robin] [--batch-records N] [--producer-id ID]\n"
       "Appends each line of stdin (or of F) as one record, in chunks of up to N records\n"
       "(default 100) to streamlet S (default 0) or to the streamlets in turn. Sequence numbers\n"
       "make the appends idempotent; the producer id defaults to a random one (0 = no dedup).\n"
       "Prints how many records the broker acknowledged. With a cluster's bootstrap list, each\n"
       "chunk goes to its streamlet's broker.\n",
       {{"file"}, {"streamlet"}, {"round-robin", false}, {"batch-records"}, {"producer-id"}},
       PrepareProduce},
      {"consume",
       "Usage: nearstream --broker HOST:PORT[,HOST:PORT...] consume STREAM\n"
       "         [--from earliest|latest|G:S:O]\n"
       "         [--streamlets 0,1] [--max-records N] [--timeout-ms T] [--fetch-bytes B]\n"
       "Prints each record on its own line, from the chosen position of every streamlet (default\n"
       "all). Stops after N records, or after T ms without new data (default: never). With a\n"
       "cluster's bootstrap list, each streamlet is fetched from its broker.\n",
       {{"from"}, {"streamlets"}, {"max-records"}, {"timeout-ms"}, {"fetch-bytes"}},
       PrepareConsume},
      {"stats", "Usage: nearstream --broker HOST:PORT stats\n", {}, PrepareStats},
      {"txn",
       "Usage: nearstream --broker HOST:PORT txn list STREAM [--prefix P]\n"
       "       nearstream --broker HOST:PORT txn abort STREAM ID --epoch E --serial S\n"
       "         [--broker-id N | --streamlet S]\n"
       "       nearstream --broker HOST:PORT txn commit STREAM ID --epoch E --serial S\n"
       "         [--broker-id N | --streamlet S]\n"
       "       nearstream --broker HOST:PORT txn abort-all STREAM --prefix P\n"
       "list prints the stream's open and prepared transactions whose transactional id starts\n"
       "with P (default: all), one per line, tab-separated: id, epoch, serial, state (open or\n"
       "prepared), bytes, chunks, streamlets, age (since its TxnBegin).\n"
       "abort and commit end one transaction; E is the epoch it was begun in, as list shows.\n"
       "abort-all aborts every transaction list shows for the prefix (P must not be empty), e.g.\n"
       "what a cancelled job left behind; it goes on past one it cannot abort and then fails.\n"
       "With a cluster's bootstrap list (HOST:PORT,HOST:PORT...) transactions are per broker:\n"
       "list and abort-all ask every registered broker (list ends each line with 'broker N'),\n"
       "abort and commit need --broker-id N, the broker of the transaction's part.\n"
       "A replicated stream's transactions are per streamlet: list adds 'streamlet S' to each\n"
       "line, and abort and commit take --streamlet S instead (sent to its leader).\n",
       {{"prefix"}, {"epoch"}, {"serial"}, {"broker-id"}, {"streamlet"}},
       PrepareTxn},
  };
}

int UsageError(const std::string& message, const std::string& command = "") {
  std::fprintf(stderr, "nearstream: %s\nRun 'nearstream %s--help' for usage.\n", message.c_str(),
               command.empty() ? "" : (command + " ").c_str());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Split at the command: global flags before it, the command's own flags after it.
  size_t command_at = 0;
  while (command_at < args.size() && args[command_at].rfind("--", 0) == 0) {
    bool has_value = args[command_at] == "--broker";
    command_at += has_value ? 2 : 1;
  }
  const std::vector<FlagSpec> global_spec = {{"broker"}, {"help", false}};
  Result<Flags> global = Flags::Parse(
      std::vector<std::string>(args.begin(), args.begin() + std::min(command_at, args.size())),
      global_spec);
  if (!global.ok()) return UsageError(global.status().message());
  if (command_at >= args.size()) {
    if (global->Has("help")) {
      std::fputs(kMainUsage, stdout);
      return kExitOk;
    }
    return UsageError("missing command");
  }
  const std::string name = args[command_at];
  std::vector<Command> commands = Commands();
  const Command* command = nullptr;
  for (const Command& c : commands) {
    if (name == c.name) command = &c;
  }
  if (command == nullptr) return UsageError("unknown command '" + name + "'");

  std::vector<FlagSpec> spec = command->flags;
  spec.push_back({"broker"});
  spec.push_back({"help", false});
  Result<Flags> flags = Flags::Parse(
      std::vector<std::string>(args.begin() + static_cast<long>(command_at) + 1, args.end()), spec);
  if (!flags.ok()) return UsageError(flags.status().message(), name);
  if (global->Has("help") || flags->Has("help")) {
    std::fputs(command->usage, stdout);
    return kExitOk;
  }
  std::string broker = flags->String("broker", global->String("broker"));
  if (broker.empty()) {
    const char* env = std::getenv("NEARSTREAM_BROKER");
    if (env != nullptr) broker = env;
  }
  if (broker.empty()) {
    return UsageError("no broker: pass --broker HOST:PORT or set NEARSTREAM_BROKER", name);
  }
  Result<std::vector<std::string>> addresses = net::ClusterPlacement::SplitBootstrap(broker);
  if (!addresses.ok()) return UsageError(addresses.status().message(), name);
  for (const std::string& a : *addresses) {
    Result<net::BrokerAddress> address = net::ParseBrokerAddress(a);
    if (!address.ok()) return UsageError(address.status().message(), name);
  }
  Result<Runner> runner = command->prepare(*flags);
  if (!runner.ok()) return UsageError(runner.status().message(), name);

  BrokerConnections brokers(std::move(addresses).value(), "nearstream-cli");
  Status status = (*runner)(brokers);
  std::fflush(stdout);
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "nearstream %s: %s\n", name.c_str(), status.ToString().c_str());
  return kExitError;
}

}  // namespace
}  // namespace nearstream::tools

int main(int argc, char** argv) { return nearstream::tools::Main(argc, argv); }
