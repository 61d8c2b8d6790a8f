// nearstream-perf: the load generator of the experiments of the pull-vs-push co-location paper
// (Marcu and Bouvry, "Colocating Real-time Storage and Processing"). Np producer threads append
// chunks of fixed-size records (one chunk per streamlet of the producer's share in each request,
// up to K requests in flight); Nc pull consumer threads fetch their streamlets with long polls and
// count records.
// Every second it prints producer and consumer throughput; at the end the median of the
// per-second figures and a machine-readable RESULT line.
//
//   nearstream-perf --broker 127.0.0.1:7070 --stream bench --create --producers 2
//       --streamlets 4 --chunk-size 64K --record-size 100 --duration-s 10 --consumers 2
//
// MB/s counts record bytes (records x record size), 1 MB = 10^6 bytes. Exit codes: 0 success,
// 1 broker/I/O error or failed --verify, 2 bad usage.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/common/crc32c.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/net/client.h"
#include "nearstream/net/cluster_placement.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/stream_config.h"
#include "tool_flags.h"

namespace nearstream::tools {
namespace {

using Clock = std::chrono::steady_clock;
using net::Client;
using storage::Position;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "Usage: nearstream-perf --broker HOST:PORT[,HOST:PORT...] --stream S [--create]\n"
    "         [--producers Np]\n"
    "         [--streamlets Ns] [--chunk-size CS] [--record-size RS] [--rate R]\n"
    "         [--duration-s D] [--consumers Nc] [--inflight K] [--fetch-bytes B]\n"
    "         [--fetch-wait-ms W] [--durability none|async|sync] [--segment-bytes B]\n"
    "         [--active-groups Q] [--retention-bytes B] [--all-streamlets] [--records N]\n"
    "         [--verify] [--drain-timeout-s T]\n"
    "\n"
    "  --broker           one broker, or a cluster's bootstrap list: each producer and\n"
    "                     consumer then works the streamlets of one broker, over its own\n"
    "                     connection to it (threads go to the brokers in turn)\n"
    "  --create           create the stream first (an existing one is reused); with\n"
    "                     --durability, --segment-bytes, --active-groups, --retention-bytes\n"
    "                     (per streamlet; in-memory streams otherwise keep every record)\n"
    "  --producers Np     producer threads, one connection and producer id each (default 1;\n"
    "                     0 = consume only, from the earliest data)\n"
    "  --streamlets Ns    streamlets to use (default: all of the stream; 1 when creating)\n"
    "  --chunk-size CS    chunk bytes, header included (default 16K; K/M suffixes)\n"
    "  --record-size RS   bytes per record (default 100)\n"
    "  --rate R           records/s over all producers (default 0 = unlimited)\n"
    "  --duration-s D     measured seconds (default 10)\n"
    "  --consumers Nc     pull consumer threads; consumer c reads streamlets s with\n"
    "                     s mod Nc = c (default 0 = produce only)\n"
    "  --inflight K       append requests in flight per producer (default 1 = synchronous)\n"
    "  --fetch-bytes B    max bytes per streamlet per fetch (default 1M)\n"
    "  --fetch-wait-ms W  long-poll wait of a fetch (default 100)\n"
    "  --all-streamlets   every producer writes to every streamlet (KerA's request of one\n"
    "                     chunk per streamlet); default: streamlets shared out\n"
    "  --records N        consume only: stop after N records\n"
    "  --verify           consumers check every chunk of this run (CRC, records, producer\n"
    "                     sequence without gap or duplicate) and read until they have seen\n"
    "                     everything producers got acknowledged; exit 1 on mismatch\n"
    "  --drain-timeout-s  with --verify: give up draining after T s without progress (10)\n"
    "  --txn-chunks N     producers write transactions instead: TxnBegin, N appends of one\n"
    "                     chunk per streamlet (up to --inflight of them in flight, as a\n"
    "                     sink's producer keeps them), TxnPrepare, TxnCommit;\n"
    "                     records count once committed. A replicated stream's transactions\n"
    "                     are per streamlet (one scope each), any other stream's per broker\n";

struct Options {
  std::string broker;
  std::string stream;
  bool create = false;
  uint32_t producers = 1;
  uint32_t streamlets = 0;  // 0 = all of the stream
  uint32_t chunk_size = 16u << 10;
  uint32_t record_size = 100;
  uint64_t rate = 0;
  uint32_t duration_s = 10;
  uint32_t consumers = 0;
  uint32_t inflight = 1;
  uint32_t fetch_bytes = 1u << 20;
  uint32_t fetch_wait_ms = 100;
  storage::Durability durability = storage::Durability::kNone;
  uint32_t segment_bytes = 0;  // 0 = the broker's default
  uint32_t active_groups = 0;
  int64_t retention_bytes = -1;
  bool all_streamlets = false;
  uint64_t records = 0;
  bool verify = false;
  uint32_t drain_timeout_s = 10;
  uint32_t txn_chunks = 0;  // 0 = plain appends
  bool help = false;
};

Result<Options> ParseOptions(int argc, char** argv) {
  const std::vector<FlagSpec> spec = {{"broker"},          {"stream"},
                                      {"create", false},   {"producers"},
                                      {"streamlets"},      {"chunk-size"},
                                      {"record-size"},     {"rate"},
                                      {"duration-s"},      {"consumers"},
                                      {"inflight"},        {"fetch-bytes"},
                                      {"fetch-wait-ms"},   {"durability"},
                                      {"segment-bytes"},   {"active-groups"},
                                      {"retention-bytes"}, {"all-streamlets", false},
                                      {"records"},         {"verify", false},
                                      {"drain-timeout-s"}, {"txn-chunks"},
                                      {"help", false}};
  ASSIGN_OR_RETURN(Flags f, Flags::Parse(std::vector<std::string>(argv + 1, argv + argc), spec));
  Options o;
  if (f.Has("help")) {
    o.help = true;
    return o;
  }
  if (!f.positional().empty())
    return Status::InvalidArgument("unexpected argument '" + f.positional()[0] + "'");
  o.broker = f.String("broker");
  o.stream = f.String("stream");
  if (o.broker.empty()) return Status::InvalidArgument("--broker HOST:PORT is required");
  if (o.stream.empty()) return Status::InvalidArgument("--stream is required");
  o.create = f.Has("create");
  o.all_streamlets = f.Has("all-streamlets");
  o.verify = f.Has("verify");
  auto u32 = [&](const char* name, uint32_t fallback, uint64_t min, uint64_t max,
                 uint32_t* out) -> Status {
    ASSIGN_OR_RETURN(uint64_t v, f.Unsigned(name, fallback, min, max));
    *out = static_cast<uint32_t>(v);
    return Status::Ok();
  };
  RETURN_IF_ERROR(u32("producers", 1, 0, 1024, &o.producers));
  RETURN_IF_ERROR(u32("streamlets", 0, 1, 65536, &o.streamlets));
  RETURN_IF_ERROR(u32("record-size", 100, 1, 64u << 20, &o.record_size));
  RETURN_IF_ERROR(u32("duration-s", 10, 1, 86400, &o.duration_s));
  RETURN_IF_ERROR(u32("consumers", 0, 0, 1024, &o.consumers));
  RETURN_IF_ERROR(u32("inflight", 1, 1, 4096, &o.inflight));
  RETURN_IF_ERROR(u32("fetch-wait-ms", 100, 0, 60000, &o.fetch_wait_ms));
  RETURN_IF_ERROR(u32("active-groups", 0, 0, 1024, &o.active_groups));
  RETURN_IF_ERROR(u32("drain-timeout-s", 10, 1, 3600, &o.drain_timeout_s));
  RETURN_IF_ERROR(u32("txn-chunks", 0, 1, 1u << 20, &o.txn_chunks));
  ASSIGN_OR_RETURN(uint64_t chunk_size, f.Size("chunk-size", 16u << 10, 64, 1u << 30));
  ASSIGN_OR_RETURN(uint64_t fetch_bytes, f.Size("fetch-bytes", 1u << 20, 1, 1u << 30));
  ASSIGN_OR_RETURN(uint64_t segment_bytes, f.Size("segment-bytes", 0, 0, 1u << 30));
  ASSIGN_OR_RETURN(o.rate, f.Unsigned("rate", 0, 0, UINT64_MAX));
  ASSIGN_OR_RETURN(uint64_t retention, f.Size("retention-bytes", 0, 1, INT64_MAX));
  if (retention > 0) o.retention_bytes = static_cast<int64_t>(retention);
  ASSIGN_OR_RETURN(o.records, f.Unsigned("records", 0, 0, UINT64_MAX));
  o.chunk_size = static_cast<uint32_t>(chunk_size);
  o.fetch_bytes = static_cast<uint32_t>(fetch_bytes);
  o.segment_bytes = static_cast<uint32_t>(segment_bytes);
  if (f.Has("durability")) {
    Result<storage::Durability> d = storage::ParseDurability(f.String("durability"));
    if (!d.ok()) return Status::InvalidArgument("--" + d.status().message());
    o.durability = *d;
  }
  if (o.producers == 0 && o.consumers == 0) {
    return Status::InvalidArgument("nothing to do: --producers and --consumers are both 0");
  }
  if (o.txn_chunks > 0 && (o.rate > 0 || o.verify)) {
    return Status::InvalidArgument(
        "--txn-chunks runs its transactions unthrottled and unverified: leave --rate and "
        "--verify out");
  }
  if (o.records > 0 && o.producers > 0) {
    return Status::InvalidArgument("--records only applies when consuming alone (--producers 0)");
  }
  if (storage::kChunkHeaderSize + storage::kRecordLengthPrefix + o.record_size > o.chunk_size) {
    return Status::InvalidArgument("--chunk-size " + std::to_string(o.chunk_size) +
                                   " cannot hold one record of --record-size " +
                                   std::to_string(o.record_size) +
                                   " (48-byte header, 4-byte length)");
  }
  return o;
}

// The records every producer sends, encoded once: the CRC covers only this payload, so a chunk
// is this payload behind a freshly encoded 48-byte header.
struct Workload {
  Workload(uint32_t chunk_size, uint32_t record_size) : record_size(record_size) {
    records_per_chunk =
        (chunk_size - storage::kChunkHeaderSize) / (storage::kRecordLengthPrefix + record_size);
    ByteWriter w(&payload);
    for (uint32_t r = 0; r < records_per_chunk; ++r) {
      w.U32(record_size);
      for (uint32_t i = 0; i < record_size; ++i) w.U8(static_cast<uint8_t>('a' + (r + i) % 26));
    }
    payload_crc = Crc32c(payload.data(), payload.size());
  }

  uint64_t record_bytes() const { return uint64_t{records_per_chunk} * record_size; }

  uint32_t record_size;
  uint32_t records_per_chunk = 0;
  Bytes payload;
  uint32_t payload_crc = 0;
};

// Counters one thread writes and the reporter reads; padded so threads do not share lines.
struct alignas(64) Counter {
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> run_records{0};  // consumers: records of this run's producers
  // Single writer: a load and a store, no read-modify-write.
  void Add(uint64_t r, uint64_t b, uint64_t run_r = 0) {
    records.store(records.load(std::memory_order_relaxed) + r, std::memory_order_relaxed);
    bytes.store(bytes.load(std::memory_order_relaxed) + b, std::memory_order_relaxed);
    run_records.store(run_records.load(std::memory_order_relaxed) + run_r,
                      std::memory_order_relaxed);
  }
};

struct Totals {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t run_records = 0;
};

Totals Sum(const std::unique_ptr<Counter[]>& counters, uint32_t n) {
  Totals t;
  for (uint32_t i = 0; i < n; ++i) {
    t.records += counters[i].records.load(std::memory_order_relaxed);
    t.bytes += counters[i].bytes.load(std::memory_order_relaxed);
    t.run_records += counters[i].run_records.load(std::memory_order_relaxed);
  }
  return t;
}

// State shared by all threads of a run.
struct RunState {
  RunState(const Options& o, uint32_t streamlets, uint64_t producer_id_base,
           std::optional<net::ClusterPlacement> placement)
      : options(o),
        streamlets(streamlets),
        placement(std::move(placement)),
        producer_id_base(producer_id_base),
        workload(o.chunk_size, o.record_size),
        producer_counters(new Counter[std::max(1u, o.producers)]),
        consumer_counters(new Counter[std::max(1u, o.consumers)]) {}

  // Records the first failure (keeping its status code) and stops every thread.
  void Fail(const std::string& who, const Status& s) NS_EXCLUDES(mu) {
    MutexLock lock(&mu);
    if (error.ok()) error = Status(s.code(), who + ": " + s.message());
    failed.store(true);
    stop_producers.store(true);
    stop_consumers.store(true);
  }
  Status first_error() NS_EXCLUDES(mu) {
    MutexLock lock(&mu);
    return error;
  }

  // Waits at the start line so that every thread has connected before the clock starts.
  bool Ready() {
    ready.fetch_add(1);
    while (!go.load() && !failed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return !failed.load();
  }

  const Options& options;
  const uint32_t streamlets;
  // Where each streamlet lives, over a cluster (--broker with several addresses); empty for one
  // broker, which takes everything.
  const std::optional<net::ClusterPlacement> placement;
  const uint64_t producer_id_base;
  const Workload workload;
  std::unique_ptr<Counter[]> producer_counters;
  std::unique_ptr<Counter[]> consumer_counters;
  std::atomic<uint64_t> producer_retries{0};
  std::atomic<uint32_t> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop_producers{false};
  std::atomic<bool> stop_consumers{false};
  std::atomic<bool> failed{false};
  Mutex mu;
  Status error NS_GUARDED_BY(mu);
};

Result<Client> ConnectClient(const std::string& address, const char* name) {
  ASSIGN_OR_RETURN(Client c, Client::Connect(address));
  RETURN_IF_ERROR(c.Handshake(name).status());
  return c;
}

// The streamlets thread `index` of `count` works, and the broker it connects to. With one
// broker: streamlets index, index + count, ... (every streamlet with `all`); with more threads
// than streamlets, one each, shared when `may_share` (producers) and none for the extra threads
// otherwise (a consumer reads each streamlet once). Over a cluster, threads go to the brokers in
// turn (thread i to broker i mod B) and share out that broker's streamlets the same way, so each
// thread keeps one connection.
struct Share {
  std::string address;
  std::vector<uint32_t> streamlets;
};
Share ShareOf(const RunState& run, uint32_t index, uint32_t count, bool all, bool may_share) {
  std::vector<uint32_t> every(run.streamlets);
  for (uint32_t s = 0; s < run.streamlets; ++s) every[s] = s;
  Share share{run.options.broker, every};
  uint32_t slot = index, slots = count;
  if (run.placement) {
    const auto by_broker = run.placement->ByBroker(every);
    const uint32_t brokers = static_cast<uint32_t>(by_broker.size());
    auto group = std::next(by_broker.begin(), index % brokers);
    share = {group->first, group->second};
    slot = index / brokers;
    slots = (count - index % brokers + brokers - 1) / brokers;  // threads on this broker
  }
  if (all) return share;
  const std::vector<uint32_t> mine = std::move(share.streamlets);
  share.streamlets.clear();
  if (slots <= mine.size()) {
    for (size_t i = slot; i < mine.size(); i += slots) share.streamlets.push_back(mine[i]);
  } else if (slot < mine.size() || (may_share && !mine.empty())) {
    share.streamlets.push_back(mine[slot % mine.size()]);  // more threads than streamlets
  }
  return share;
}

// ---- producers -------------------------------------------------------------------------------

// One producer thread: its own connection and producer id; each request carries one chunk for
// every streamlet of its share; up to --inflight requests are pipelined.
class Producer {
 public:
  Producer(RunState& run, uint32_t index)
      : run_(run),
        index_(index),
        counter_(run.producer_counters[index]),
        producer_id_(run.producer_id_base + index) {
    Share share = ShareOf(run, index, run.options.producers, run.options.all_streamlets,
                          /*may_share=*/true);
    address_ = share.address;
    share_ = std::move(share.streamlets);
    const Workload& w = run.workload;
    chunks_.resize(share_.size());
    for (Bytes& c : chunks_) {
      c.resize(storage::kChunkHeaderSize);
      c.insert(c.end(), w.payload.begin(), w.payload.end());
    }
    next_sequence_.assign(share_.size(), 0);
    retries_.resize(share_.size());
  }

  void Run() {
    Status s = Loop();
    if (!s.ok()) run_.Fail("producer " + std::to_string(index_), s);
  }

 private:
  struct Sent {
    size_t slot;  // index into share_
    uint64_t sequence;
  };

  Status Loop() {
    Result<Client> client = ConnectClient(address_, "nearstream-perf-producer");
    if (!client.ok()) {
      run_.ready.fetch_add(1);
      return client.status();
    }
    client_.emplace(std::move(client).value());
    if (!run_.Ready()) return Status::Ok();
    if (run_.options.txn_chunks > 0) return TxnLoop();
    // The first request goes alone: the broker accepts any first sequence of a new producer, so
    // a pipelined second request overtaking the first would be taken as the start.
    RETURN_IF_ERROR(SendRequest(/*retries_only=*/false));
    RETURN_IF_ERROR(ReceiveOne());

    const Options& o = run_.options;
    const double rate = o.rate == 0 ? 0.0 : static_cast<double>(o.rate) / o.producers;
    const uint64_t records_per_request = uint64_t{run_.workload.records_per_chunk} * share_.size();
    const auto start = Clock::now();
    uint64_t sent_records = records_per_request;
    while (!run_.stop_producers.load(std::memory_order_relaxed)) {
      auto due = start;
      if (rate > 0) {
        due += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(static_cast<double>(sent_records) / rate));
      }
      if (client_->in_flight() < o.inflight && Clock::now() >= due) {
        RETURN_IF_ERROR(SendRequest(/*retries_only=*/false));
        sent_records += records_per_request;
      } else if (client_->in_flight() > 0) {
        RETURN_IF_ERROR(ReceiveOne());
      } else {
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(50)));
      }
    }
    // Drain: collect every answer and resend what the broker refused as out of order.
    while (client_->in_flight() > 0 || HasRetries()) {
      if (HasRetries() && client_->in_flight() < o.inflight) {
        RETURN_IF_ERROR(SendRequest(/*retries_only=*/true));
      } else {
        RETURN_IF_ERROR(ReceiveOne());
      }
    }
    return Status::Ok();
  }

  // --txn-chunks: one transaction after another in each scope of the share (the share's
  // streamlets on a replicated stream, else the broker's one scope), as an exactly-once sink's
  // writer and committer go: up to --inflight TxnAppends on their way at once, every other
  // request answered before the next.
  Status TxnLoop() {
    const Options& o = run_.options;
    ASSIGN_OR_RETURN(storage::StreamConfig config, client_->DescribeStream(o.stream));
    std::vector<uint32_t> scopes = {net::kBrokerScope};
    if (config.replication > 1) scopes = share_;
    const std::string id = "nearstream-perf-" + std::to_string(producer_id_);
    std::vector<net::TxnRef> refs;
    for (uint32_t scope : scopes) {
      ASSIGN_OR_RETURN(net::TxnInitResponse init, client_->TxnInit({o.stream, id, 0, scope}));
      refs.push_back({o.stream, id, init.epoch, 0, scope});
    }
    const Workload& w = run_.workload;
    storage::ChunkHeader h;
    h.payload_length = static_cast<uint32_t>(w.payload.size());
    h.payload_crc = w.payload_crc;
    h.producer_id = producer_id_;
    h.record_count = w.records_per_chunk;
    while (!run_.stop_producers.load(std::memory_order_relaxed)) {
      for (net::TxnRef& ref : refs) {
        ASSIGN_OR_RETURN(ref.serial, client_->TxnBegin(ref));
      }
      uint64_t chunks = 0;
      for (uint32_t k = 0; k < o.txn_chunks; ++k) {
        for (const net::TxnRef& ref : refs) {
          net::TxnAppendRequest request{ref, {}};
          h.sequence = k;  // sequences start afresh in every transaction
          h.first_timestamp_ms = WallNowMs();
          for (size_t i = 0; i < share_.size(); ++i) {
            if (ref.scope != net::kBrokerScope && share_[i] != ref.scope) continue;
            EncodeChunkHeader(h, chunks_[i].data());
            request.entries.push_back(
                {share_[i], chunks_[i].data(), static_cast<uint32_t>(chunks_[i].size())});
          }
          Bytes body;
          ByteWriter w(&body);
          net::EncodeTxnAppendRequest(w, request);
          RETURN_IF_ERROR(client_->Send(net::Opcode::kTxnAppend, body).status());
          while (client_->in_flight() >= o.inflight) RETURN_IF_ERROR(ReceiveTxnAppend(&chunks));
        }
      }
      while (client_->in_flight() > 0) RETURN_IF_ERROR(ReceiveTxnAppend(&chunks));
      for (const net::TxnRef& ref : refs) RETURN_IF_ERROR(client_->TxnPrepare(ref));
      for (const net::TxnRef& ref : refs) RETURN_IF_ERROR(client_->TxnCommit(ref));
      counter_.Add(chunks * w.records_per_chunk, chunks * w.record_bytes());
    }
    return Status::Ok();
  }

  // --txn-chunks: the next TxnAppend answer; every chunk must be stored (`*chunks` counts the
  // ones that were not duplicates).
  Status ReceiveTxnAppend(uint64_t* chunks) {
    ASSIGN_OR_RETURN(net::Response answer, client_->Receive());
    RETURN_IF_ERROR(answer.status);
    ASSIGN_OR_RETURN(net::AppendResponse r,
                     net::DecodeAppendResponse(answer.body.data(), answer.body.size()));
    for (const net::AppendResult& result : r.results) {
      if (result.status != 0) {
        return Status(static_cast<StatusCode>(result.status), "transactional append to streamlet " +
                                                                  std::to_string(result.streamlet) +
                                                                  ": " + result.message);
      }
      if (!result.duplicate) ++*chunks;
    }
    return Status::Ok();
  }

  bool HasRetries() const {
    return std::any_of(retries_.begin(), retries_.end(), [](const auto& r) { return !r.empty(); });
  }

  Status SendRequest(bool retries_only) {
    net::AppendRequest request;
    request.stream = run_.options.stream;
    std::vector<Sent> sent;
    const Workload& w = run_.workload;
    storage::ChunkHeader h;
    h.payload_length = static_cast<uint32_t>(w.payload.size());
    h.payload_crc = w.payload_crc;
    h.producer_id = producer_id_;
    h.first_timestamp_ms = WallNowMs();
    h.record_count = w.records_per_chunk;
    for (size_t i = 0; i < share_.size(); ++i) {
      if (!retries_[i].empty()) {
        h.sequence = *retries_[i].begin();
        retries_[i].erase(retries_[i].begin());
      } else if (retries_only) {
        continue;
      } else {
        h.sequence = next_sequence_[i]++;
      }
      EncodeChunkHeader(h, chunks_[i].data());
      request.entries.push_back(
          {share_[i], chunks_[i].data(), static_cast<uint32_t>(chunks_[i].size())});
      sent.push_back({i, h.sequence});
    }
    // The chunks are on the socket when SendAppend returns: their headers may then be reused.
    ASSIGN_OR_RETURN(uint64_t id, client_->SendAppend(request));
    pending_.emplace(id, std::move(sent));
    return Status::Ok();
  }

  Status ReceiveOne() {
    ASSIGN_OR_RETURN(net::Response r, client_->Receive());
    auto it = pending_.find(r.header.request_id);
    if (it == pending_.end()) {
      return Status::Internal("response to unknown request " + std::to_string(r.header.request_id));
    }
    std::vector<Sent> sent = std::move(it->second);
    pending_.erase(it);
    RETURN_IF_ERROR(r.status);
    ASSIGN_OR_RETURN(net::AppendResponse response,
                     net::DecodeAppendResponse(r.body.data(), r.body.size()));
    if (response.results.size() != sent.size()) {
      return Status::Internal("append of " + std::to_string(sent.size()) +
                              " chunks answered with " + std::to_string(response.results.size()) +
                              " results");
    }
    uint64_t chunks = 0;
    for (size_t k = 0; k < sent.size(); ++k) {
      const net::AppendResult& result = response.results[k];
      auto code = static_cast<StatusCode>(result.status);
      if (code == StatusCode::kOk) {
        if (!result.duplicate) ++chunks;
      } else if (code == StatusCode::kOutOfOrderSequence) {
        // An earlier sequence is still on its way (pipelined requests may run out of order):
        // send this one again after it.
        retries_[sent[k].slot].insert(sent[k].sequence);
        run_.producer_retries.fetch_add(1, std::memory_order_relaxed);
      } else {
        return Status(code, "append to streamlet " + std::to_string(result.streamlet) + ": " +
                                result.message);
      }
    }
    counter_.Add(chunks * run_.workload.records_per_chunk, chunks * run_.workload.record_bytes());
    return Status::Ok();
  }

  RunState& run_;
  const uint32_t index_;
  Counter& counter_;
  const uint64_t producer_id_;
  std::optional<Client> client_;
  std::string address_;  // the broker of share_
  std::vector<uint32_t> share_;
  std::vector<Bytes> chunks_;                // per share slot: header + the shared payload
  std::vector<uint64_t> next_sequence_;      // per share slot
  std::vector<std::set<uint64_t>> retries_;  // per share slot, refused as out of order
  std::unordered_map<uint64_t, std::vector<Sent>> pending_;  // by request id
};

// ---- consumers -------------------------------------------------------------------------------

// One pull consumer thread: owns streamlets s with s mod Nc = index and loops on long-poll
// fetches of all of them, from the earliest data.
class Consumer {
 public:
  Consumer(RunState& run, uint32_t index)
      : run_(run), index_(index), counter_(run.consumer_counters[index]) {
    Share share = ShareOf(run, index, run.options.consumers, /*all=*/false, /*may_share=*/false);
    address_ = share.address;
    streamlets_ = std::move(share.streamlets);
    if (run.options.verify) {
      next_sequence_.assign(uint64_t{run.options.producers} * run.streamlets, 0);
    }
  }

  void Run() {
    Status s = Loop();
    if (!s.ok()) run_.Fail("consumer " + std::to_string(index_), s);
  }

 private:
  Status Loop() {
    Result<Client> client = ConnectClient(address_, "nearstream-perf-consumer");
    if (!client.ok()) {
      run_.ready.fetch_add(1);
      return client.status();
    }
    client_.emplace(std::move(client).value());
    if (!run_.Ready() || streamlets_.empty()) return Status::Ok();
    net::FetchRequest request;
    request.stream = run_.options.stream;
    request.max_wait_ms = run_.options.fetch_wait_ms;
    for (uint32_t s : streamlets_)
      request.entries.push_back({s, Position{}, run_.options.fetch_bytes});
    while (!run_.stop_consumers.load(std::memory_order_relaxed)) {
      ASSIGN_OR_RETURN(net::FetchReply reply, client_->Fetch(request));
      Totals got;
      for (const net::FetchResult& r : reply.response.results) {
        net::FetchEntry* entry = nullptr;
        for (net::FetchEntry& e : request.entries) {
          if (e.streamlet == r.streamlet) entry = &e;
        }
        if (entry == nullptr) {
          return Status::Internal("fetch answered for streamlet " + std::to_string(r.streamlet) +
                                  " which it did not ask for");
        }
        auto code = static_cast<StatusCode>(r.status);
        if (code == StatusCode::kPositionOutOfRange && !run_.options.verify) {
          std::fprintf(stderr,
                       "consumer %u: streamlet %u lost data to retention (%s); "
                       "restarting from the earliest\n",
                       index_, r.streamlet, r.message.c_str());
          entry->position = Position{};
          continue;
        }
        if (code != StatusCode::kOk) {
          return Status(code, "fetch from streamlet " + std::to_string(r.streamlet) + " at " +
                                  entry->position.ToString() + ": " + r.message);
        }
        for (const net::FetchBlock& b : r.blocks) RETURN_IF_ERROR(Count(r.streamlet, b, &got));
        entry->position = r.next;
      }
      counter_.Add(got.records, got.bytes, got.run_records);
    }
    return Status::Ok();
  }

  Status Count(uint32_t streamlet, const net::FetchBlock& block, Totals* got) {
    for (uint32_t at = 0; at < block.size;) {
      const uint8_t* chunk = block.data + at;
      ASSIGN_OR_RETURN(storage::ChunkHeader h, storage::DecodeChunkHeader(chunk, block.size - at));
      got->records += h.record_count;
      got->bytes += h.payload_length - uint64_t{h.record_count} * storage::kRecordLengthPrefix;
      if (run_.options.verify) RETURN_IF_ERROR(Verify(streamlet, chunk, h, got));
      at += h.total_size();
    }
    return Status::Ok();
  }

  // Checks one chunk: CRC and framing always; for this run's producers also the content and
  // that the producer's sequence on this streamlet continues without gap or duplicate.
  Status Verify(uint32_t streamlet, const uint8_t* chunk, const storage::ChunkHeader& h,
                Totals* got) {
    auto where = [&] {
      return "streamlet " + std::to_string(streamlet) + ", producer " +
             std::to_string(h.producer_id) + ", sequence " + std::to_string(h.sequence);
    };
    RETURN_IF_ERROR(storage::ValidateChunk(chunk, h.total_size()).status());
    storage::RecordIterator it(chunk + storage::kChunkHeaderSize, h.payload_length);
    std::string_view record;
    uint32_t count = 0;
    while (it.Next(&record)) ++count;
    if (count != h.record_count) {
      return Status::CorruptChunk(where() + ": iterated " + std::to_string(count) +
                                  " records, header says " + std::to_string(h.record_count));
    }
    const uint64_t base = run_.producer_id_base;
    if (h.producer_id < base || h.producer_id >= base + run_.options.producers) return Status::Ok();
    const Workload& w = run_.workload;
    if (h.payload_length != w.payload.size() ||
        std::memcmp(chunk + storage::kChunkHeaderSize, w.payload.data(), w.payload.size()) != 0) {
      return Status::CorruptChunk(where() + ": records differ from those sent");
    }
    uint64_t& expected = next_sequence_[(h.producer_id - base) * run_.streamlets + streamlet];
    if (h.sequence != expected) {
      return Status::Internal(where() + ": expected sequence " + std::to_string(expected) +
                              (h.sequence < expected ? " (duplicate)" : " (gap)"));
    }
    ++expected;
    got->run_records += count;
    return Status::Ok();
  }

  RunState& run_;
  const uint32_t index_;
  Counter& counter_;
  std::optional<Client> client_;
  std::string address_;  // the broker of streamlets_
  std::vector<uint32_t> streamlets_;
  std::vector<uint64_t> next_sequence_;  // --verify: per (producer, streamlet)
};

// ---- the run ---------------------------------------------------------------------------------

// Creates the stream when asked and returns the number of streamlets the run uses.
Result<uint32_t> PrepareStream(const Options& o) {
  ASSIGN_OR_RETURN(std::vector<std::string> brokers,
                   net::ClusterPlacement::SplitBootstrap(o.broker));
  ASSIGN_OR_RETURN(Client client, ConnectClient(brokers.front(), "nearstream-perf"));
  if (o.create) {
    storage::StreamConfig c;
    c.name = o.stream;
    c.streamlets = o.streamlets == 0 ? 1 : o.streamlets;
    c.segment_bytes = o.segment_bytes;
    c.segments_per_group = 0;
    c.active_groups = o.active_groups;
    c.durability = o.durability;
    c.retention_bytes = o.retention_bytes;
    Status s = client.CreateStream(c);
    if (s.IsStreamExists()) {
      std::printf("stream %s exists; using it\n", o.stream.c_str());
    } else {
      RETURN_IF_ERROR(s);
    }
  }
  ASSIGN_OR_RETURN(storage::StreamConfig config, client.DescribeStream(o.stream));
  if (o.streamlets > config.streamlets) {
    return Status::InvalidArgument("--streamlets " + std::to_string(o.streamlets) + " but stream " +
                                   o.stream + " has " + std::to_string(config.streamlets));
  }
  if (o.producers > 0 && config.segment_bytes != 0 && o.chunk_size > config.segment_bytes) {
    return Status::InvalidArgument("--chunk-size " + std::to_string(o.chunk_size) +
                                   " exceeds the stream's " + std::to_string(config.segment_bytes) +
                                   "-byte segments");
  }
  return o.streamlets == 0 ? config.streamlets : o.streamlets;
}

struct Sample {
  double rps = 0;
  double mbps = 0;
};

// The median of the per-second figures, leaving out the first and last second (ramp-up and
// the partial tail) when there are at least three.
Sample Median(std::vector<Sample> v) {
  if (v.size() >= 3) v = std::vector<Sample>(v.begin() + 1, v.end() - 1);
  if (v.empty()) return {};
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    size_t n = x.size();
    return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
  };
  std::vector<double> rps, mbps;
  for (const Sample& s : v) {
    rps.push_back(s.rps);
    mbps.push_back(s.mbps);
  }
  return {median(rps), median(mbps)};
}

uint64_t RandomProducerIdBase() {
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32 | rd()) & 0x7FFFFFFFFFFF0000ull;
  return r + (1u << 16);  // never 0; room for 65536 producers below the next base
}

Status Execute(const Options& o) {
  ASSIGN_OR_RETURN(uint32_t streamlets, PrepareStream(o));
  std::optional<net::ClusterPlacement> placement;
  if (o.broker.find(',') != std::string::npos) {
    ASSIGN_OR_RETURN(placement, net::ClusterPlacement::Load(o.broker, o.stream));
  }
  RunState run(o, streamlets, RandomProducerIdBase(), std::move(placement));
  const Workload& w = run.workload;
  std::printf(
      "nearstream-perf: stream %s, %u streamlets, %u producers, %u consumers, chunk %u B "
      "(%u records of %u B), inflight %u, rate %s, %u s\n",
      o.stream.c_str(), streamlets, o.producers, o.consumers,
      static_cast<uint32_t>(storage::kChunkHeaderSize + w.payload.size()), w.records_per_chunk,
      w.record_size, o.inflight, o.rate == 0 ? "unlimited" : std::to_string(o.rate).c_str(),
      o.duration_s);
  if (o.consumers > streamlets) {
    std::printf("note: %u consumers for %u streamlets; %u will be idle\n", o.consumers, streamlets,
                o.consumers - streamlets);
  }
  std::fflush(stdout);

  std::vector<std::unique_ptr<Producer>> producers;
  std::vector<std::unique_ptr<Consumer>> consumers;
  std::vector<std::thread> producer_threads, consumer_threads;
  for (uint32_t i = 0; i < o.producers; ++i) {
    producers.push_back(std::make_unique<Producer>(run, i));
    producer_threads.emplace_back(&Producer::Run, producers.back().get());
  }
  for (uint32_t i = 0; i < o.consumers; ++i) {
    consumers.push_back(std::make_unique<Consumer>(run, i));
    consumer_threads.emplace_back(&Consumer::Run, consumers.back().get());
  }
  auto join_all = [&] {
    run.stop_producers.store(true);
    for (std::thread& t : producer_threads) {
      if (t.joinable()) t.join();
    }
    run.stop_consumers.store(true);
    for (std::thread& t : consumer_threads) {
      if (t.joinable()) t.join();
    }
  };
  while (run.ready.load() < o.producers + o.consumers && !run.failed.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // Measure: one line per second for --duration-s seconds.
  const auto t0 = Clock::now();
  run.go.store(true);
  std::vector<Sample> producer_samples, consumer_samples;
  Totals last_p, last_c;
  auto last_t = t0;
  for (uint32_t k = 1; k <= o.duration_s && !run.failed.load(); ++k) {
    const auto next = t0 + std::chrono::seconds(k);
    bool enough = false;
    while (Clock::now() < next && !run.failed.load() && !enough) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      enough = o.records > 0 && Sum(run.consumer_counters, o.consumers).records >= o.records;
    }
    if (enough || run.failed.load()) break;
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_t).count();
    Totals p = Sum(run.producer_counters, o.producers);
    Totals c = Sum(run.consumer_counters, o.consumers);
    Sample ps{(p.records - last_p.records) / dt, (p.bytes - last_p.bytes) / dt / 1e6};
    Sample cs{(c.records - last_c.records) / dt, (c.bytes - last_c.bytes) / dt / 1e6};
    producer_samples.push_back(ps);
    consumer_samples.push_back(cs);
    std::printf("t=%us producers %.0f rec/s %.2f MB/s | consumers %.0f rec/s %.2f MB/s\n", k,
                ps.rps, ps.mbps, cs.rps, cs.mbps);
    std::fflush(stdout);
    last_p = p;
    last_c = c;
    last_t = now;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();

  // Stop producers (they collect their last answers); with --verify, consumers then read until
  // they have seen every acknowledged record of this run.
  run.stop_producers.store(true);
  for (std::thread& t : producer_threads) {
    if (t.joinable()) t.join();
  }
  const uint64_t acked = Sum(run.producer_counters, o.producers).records;
  if (o.verify && o.producers > 0 && o.consumers > 0) {
    uint64_t seen = 0;
    auto progress_at = Clock::now();
    while (!run.failed.load()) {
      uint64_t now_seen = Sum(run.consumer_counters, o.consumers).run_records;
      if (now_seen >= acked) break;
      if (now_seen != seen) {
        seen = now_seen;
        progress_at = Clock::now();
      } else if (Clock::now() - progress_at > std::chrono::seconds(o.drain_timeout_s)) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  join_all();

  const Totals p = Sum(run.producer_counters, o.producers);
  const Totals c = Sum(run.consumer_counters, o.consumers);
  // A run shorter than one second (consume-only with --records) has no per-second figures:
  // report its average instead.
  auto figure = [elapsed](const std::vector<Sample>& samples, const Totals& t) {
    if (!samples.empty() || elapsed <= 0) return Median(samples);
    return Sample{t.records / elapsed, t.bytes / elapsed / 1e6};
  };
  const Sample pm = figure(producer_samples, p);
  const Sample cm = figure(consumer_samples, c);
  std::printf(
      "median per second (first/last second excluded when run >= 3 s): producers %.0f "
      "rec/s %.2f MB/s | consumers %.0f rec/s %.2f MB/s\n",
      pm.rps, pm.mbps, cm.rps, cm.mbps);
  std::printf(
      "totals over %.1f s: produced %llu records (acknowledged), consumed %llu records, "
      "%llu out-of-order retries\n",
      elapsed, static_cast<unsigned long long>(p.records),
      static_cast<unsigned long long>(c.records),
      static_cast<unsigned long long>(run.producer_retries.load()));
  const char* verified = "off";
  if (o.verify && !run.failed.load()) {
    verified = "ok";
    if (o.producers > 0 && o.consumers > 0 && c.run_records != p.records) {
      run.Fail("verify", Status::Internal("consumers read " + std::to_string(c.run_records) +
                                          " records of this run but producers got " +
                                          std::to_string(p.records) + " acknowledged"));
    }
  }
  if (run.failed.load()) verified = o.verify ? "failed" : "off";
  std::printf(
      "RESULT producer_rps=%.0f producer_mbps=%.2f consumer_rps=%.0f consumer_mbps=%.2f "
      "produced=%llu consumed=%llu run_consumed=%llu verify=%s\n",
      pm.rps, pm.mbps, cm.rps, cm.mbps, static_cast<unsigned long long>(p.records),
      static_cast<unsigned long long>(c.records), static_cast<unsigned long long>(c.run_records),
      verified);
  std::fflush(stdout);
  if (run.failed.load()) return run.first_error();
  return Status::Ok();
}

int Main(int argc, char** argv) {
  Result<Options> o = ParseOptions(argc, argv);
  if (!o.ok()) {
    std::fprintf(stderr, "nearstream-perf: %s\nRun 'nearstream-perf --help' for usage.\n",
                 o.status().message().c_str());
    return kExitUsage;
  }
  if (o->help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  Result<std::vector<std::string>> brokers = net::ClusterPlacement::SplitBootstrap(o->broker);
  for (const std::string& broker : brokers.ok() ? *brokers : std::vector<std::string>{""}) {
    Result<net::BrokerAddress> address = net::ParseBrokerAddress(broker);
    if (!address.ok()) {
      std::fprintf(stderr, "nearstream-perf: %s\n", address.status().message().c_str());
      return kExitUsage;
    }
  }
  Status s = Execute(*o);
  if (!s.ok()) {
    std::fprintf(stderr, "nearstream-perf: %s\n", s.ToString().c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace
}  // namespace nearstream::tools

int main(int argc, char** argv) { return nearstream::tools::Main(argc, argv); }
