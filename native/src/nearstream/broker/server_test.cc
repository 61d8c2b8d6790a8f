// Loopback tests of the real server (in-process, so they also run under the sanitizers): the
// RPCs end to end, long-poll, idempotent retries, malformed input, many concurrent clients.
#include "nearstream/broker/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_records.h"
#include "nearstream/testing/test_threads.h"

namespace nearstream::broker {
namespace {

using net::Client;
using storage::Position;

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(int workers) {
    store_ = std::make_unique<storage::StreamStore>(storage::StoreOptions{});
    ASSERT_TRUE(store_->Open(0).ok());
    ServerOptions options;
    options.workers = workers;
    options.max_frame_bytes = 1 << 20;
    options.handler.max_frame_bytes = options.max_frame_bytes;
    options.metrics_port = 0;
    server_ = std::make_unique<Server>(options, store_.get());
    ASSERT_TRUE(server_->Start().ok());
  }
  void SetUp() override { StartServer(2); }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  std::string Address() const { return "127.0.0.1:" + std::to_string(server_->port()); }

  Client Connect() {
    auto c = Client::Connect(Address());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }

  void CreateStream(Client& c, const std::string& name, uint32_t streamlets,
                    uint32_t segment_bytes = 0) {
    storage::StreamConfig config;
    config.name = name;
    config.streamlets = streamlets;
    config.segment_bytes = segment_bytes;
    config.segments_per_group = 0;
    config.active_groups = 0;
    Status s = c.CreateStream(config);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  static Bytes MakeChunk(const std::vector<std::string>& records, uint64_t producer, uint64_t seq) {
    storage::ChunkBuilder b;
    for (const auto& r : records) b.Add(r);
    return b.Finish(producer, seq, 1000);
  }

  static net::AppendRequest OneChunk(const std::string& stream, uint32_t streamlet,
                                     const Bytes& chunk) {
    net::AppendRequest req;
    req.stream = stream;
    req.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
    return req;
  }

  static std::vector<std::string> ReadAll(Client& c, const std::string& stream,
                                          uint32_t streamlet) {
    return testing::ReadAllRecords(c, stream, streamlet, 4096);
  }

  std::unique_ptr<storage::StreamStore> store_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, CreateAppendFetchRoundTrip) {
  Client c = Connect();
  auto hs = c.Handshake("test");
  ASSERT_TRUE(hs.ok()) << hs.status().ToString();
  EXPECT_EQ(hs->version, 1);
  CreateStream(c, "events", 3);
  auto desc = c.DescribeStream("events");
  ASSERT_TRUE(desc.ok());
  EXPECT_EQ(desc->streamlets, 3u);
  EXPECT_EQ(desc->segment_bytes, 8u << 20);  // broker default filled in

  Bytes a = MakeChunk({"a1", "a2"}, 0, 0);
  Bytes b = MakeChunk({"b1"}, 0, 0);
  net::AppendRequest req;
  req.stream = "events";
  req.entries.push_back({0, a.data(), static_cast<uint32_t>(a.size())});
  req.entries.push_back({2, b.data(), static_cast<uint32_t>(b.size())});
  auto resp = c.Append(req);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->results.size(), 2u);
  EXPECT_EQ(resp->results[0].status, 0);
  EXPECT_EQ(resp->results[0].position, (Position{1, 1, 0}));

  EXPECT_EQ(ReadAll(c, "events", 0), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_TRUE(ReadAll(c, "events", 1).empty());
  EXPECT_EQ(ReadAll(c, "events", 2), (std::vector<std::string>{"b1"}));

  auto md = c.Metadata("events", {0});
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(md->streamlets[0].head, (Position{1, 1, 0}));
  EXPECT_EQ(md->streamlets[0].tail, (Position{1, 1, static_cast<uint32_t>(a.size())}));

  auto names = c.ListStreams();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"events"});
  EXPECT_TRUE(c.DeleteStream("events").ok());
  EXPECT_EQ(c.DescribeStream("events").status().code(), StatusCode::kStreamNotFound);
}

// Operators read threads by name (top -H, perf, /proc): every broker thread carries its role.
TEST_F(ServerTest, EveryBrokerThreadIsNamedByItsRole) {
  std::multiset<std::string> names;
  for (const auto& [name, task] : testing::ThreadsOfThisProcess()) names.insert(name);
  for (const char* role : {"ns-dispatch", "ns-worker-0", "ns-worker-1", "ns-admin", "ns-replica",
                           "ns-view-apply", "ns-maintenance", "ns-metrics", "ns-push-0"}) {
    EXPECT_EQ(names.count(role), 1u) << role;
  }
  EXPECT_EQ(names.count("ns-worker-2"), 0u);  // two workers asked for
}

TEST_F(ServerTest, ErrorsCarryStatusAndMessage) {
  Client c = Connect();
  EXPECT_EQ(c.DescribeStream("missing").status().code(), StatusCode::kStreamNotFound);
  storage::StreamConfig bad;
  bad.name = "../etc";
  Status s = c.CreateStream(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("invalid"), std::string::npos) << s.message();
  CreateStream(c, "s", 1);
  storage::StreamConfig dup;
  dup.name = "s";
  EXPECT_EQ(c.CreateStream(dup).code(), StatusCode::kStreamExists);
  dup.name = "durable";
  dup.durability = storage::Durability::kSync;
  EXPECT_EQ(c.CreateStream(dup).code(), StatusCode::kInvalidArgument);  // no --data-dir

  // Per-entry failures: a corrupt chunk and a missing streamlet, next to a good chunk.
  Bytes good = MakeChunk({"x"}, 0, 0);
  Bytes corrupt = good;
  corrupt.back() ^= 1;
  net::AppendRequest req;
  req.stream = "s";
  req.entries.push_back({0, corrupt.data(), static_cast<uint32_t>(corrupt.size())});
  req.entries.push_back({5, good.data(), static_cast<uint32_t>(good.size())});
  req.entries.push_back({0, good.data(), static_cast<uint32_t>(good.size())});
  auto resp = c.Append(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->results[0].status, static_cast<uint16_t>(StatusCode::kCorruptChunk));
  EXPECT_EQ(resp->results[1].status, static_cast<uint16_t>(StatusCode::kStreamletNotFound));
  EXPECT_EQ(resp->results[2].status, 0);
  EXPECT_EQ(ReadAll(c, "s", 0), std::vector<std::string>{"x"});  // nothing of the corrupt one

  net::FetchRequest fetch;
  fetch.stream = "s";
  fetch.entries.push_back({0, Position{9, 9, 0}, 1024});
  auto reply = c.Fetch(fetch);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->response.results[0].status,
            static_cast<uint16_t>(StatusCode::kPositionOutOfRange));
}

TEST_F(ServerTest, RetriedAppendIsStoredOnce) {
  Client c = Connect();
  CreateStream(c, "idem", 1);
  Bytes first = MakeChunk({"r0"}, 77, 0);
  Bytes second = MakeChunk({"r1"}, 77, 1);
  auto r1 = c.Append(OneChunk("idem", 0, first));
  auto r2 = c.Append(OneChunk("idem", 0, second));
  auto retry = c.Append(OneChunk("idem", 0, first));
  ASSERT_TRUE(r1.ok() && r2.ok() && retry.ok());
  EXPECT_FALSE(r2->results[0].duplicate);
  EXPECT_TRUE(retry->results[0].duplicate);
  EXPECT_EQ(retry->results[0].position, r1->results[0].position);
  Bytes gap = MakeChunk({"r3"}, 77, 3);
  auto g = c.Append(OneChunk("idem", 0, gap));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->results[0].status, static_cast<uint16_t>(StatusCode::kOutOfOrderSequence));
  EXPECT_EQ(ReadAll(c, "idem", 0), (std::vector<std::string>{"r0", "r1"}));
}

TEST_F(ServerTest, LongPollWaitsForAnAppend) {
  Client reader = Connect();
  CreateStream(reader, "lp", 1);
  net::FetchRequest req;
  req.stream = "lp";
  req.max_wait_ms = 5000;
  req.entries.push_back({0, Position{}, 1 << 20});
  std::thread writer([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Client w = Connect();
    Bytes chunk = MakeChunk({"late"}, 0, 0);
    EXPECT_TRUE(w.Append(OneChunk("lp", 0, chunk)).ok());
  });
  auto start = std::chrono::steady_clock::now();
  auto reply = reader.Fetch(req);
  auto waited = std::chrono::steady_clock::now() - start;
  writer.join();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->response.results[0].blocks.size(), 1u);
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_LT(waited, std::chrono::milliseconds(4000));

  // Nothing new: the poll ends empty at its deadline.
  req.entries[0].position = reply->response.results[0].next;
  req.max_wait_ms = 300;
  start = std::chrono::steady_clock::now();
  auto empty = reader.Fetch(req);
  waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->response.results[0].blocks.empty());
  EXPECT_GE(waited, std::chrono::milliseconds(250));
}

// ---- malformed input on a raw socket --------------------------------------------------------

class RawSocket {
 public:
  explicit RawSocket(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawSocket() { ::close(fd_); }
  int fd() const { return fd_; }
  void Write(const Bytes& b) {
    ASSERT_EQ(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL), (ssize_t)b.size());
  }
  // Reads one response frame; returns its status code, or -1 on EOF/timeout.
  int ReadStatus(uint64_t* request_id = nullptr) {
    uint8_t head[18];
    if (!ReadExact(head, sizeof(head))) return -1;
    uint32_t len = LoadLe32(head);
    Bytes rest(len - 14);
    if (!ReadExact(rest.data(), rest.size())) return -1;
    if (request_id) *request_id = LoadLe64(head + 8);
    return LoadLe16(head + 16);
  }
  bool AtEof() {
    uint8_t b;
    return ::recv(fd_, &b, 1, 0) == 0;
  }

 private:
  bool ReadExact(uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
};

Bytes Frame(uint8_t version, uint16_t opcode, uint64_t id, const Bytes& body) {
  Bytes out;
  net::FrameHeader h;
  h.version = version;
  h.opcode = opcode;
  h.request_id = id;
  size_t start = net::BeginFrame(&out, h);
  out.insert(out.end(), body.begin(), body.end());
  net::FinishFrame(&out, start);
  return out;
}

TEST_F(ServerTest, UnknownOpcodeAndBadVersionKeepTheConnection) {
  RawSocket s(server_->port());
  s.Write(Frame(1, 999, 5, {}));
  uint64_t id = 0;
  EXPECT_EQ(s.ReadStatus(&id), static_cast<int>(StatusCode::kUnknownOpcode));
  EXPECT_EQ(id, 5u);
  s.Write(Frame(7, 5, 6, {}));
  EXPECT_EQ(s.ReadStatus(), static_cast<int>(StatusCode::kUnsupportedVersion));
  s.Write(Frame(1, static_cast<uint16_t>(net::Opcode::kAppend), 7, {1, 2, 3}));
  EXPECT_EQ(s.ReadStatus(), static_cast<int>(StatusCode::kMalformedRequest));
  s.Write(Frame(1, static_cast<uint16_t>(net::Opcode::kListStreams), 8, {}));
  EXPECT_EQ(s.ReadStatus(), 0);
}

// A connection that carried a ReplicaAppend is read by the ns-replica thread from then on
// (replica_connections.cc). It goes on serving every request in order: replica ones there,
// others on their worker; a broken frame on it is answered and closes it there, and the broker
// serves everyone else. (A standalone broker refuses the ReplicaAppends themselves.)
TEST_F(ServerTest, AConnectionThatCarriedAReplicaAppendIsServedByTheReplicaThread) {
  Client admin = Connect();
  auto metric = [&admin](const std::string& name) {
    auto stats = admin.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    for (const auto& [key, value] : stats->values) {
      if (key == name) return value;
    }
    return uint64_t{0};
  };
  const auto replica_append = static_cast<uint16_t>(net::Opcode::kReplicaAppend);
  RawSocket s(server_->port());
  s.Write(Frame(1, replica_append, 5, {1, 2, 3}));
  uint64_t id = 0;
  EXPECT_EQ(s.ReadStatus(&id), static_cast<int>(StatusCode::kMalformedRequest));
  EXPECT_EQ(id, 5u);
  // A request for a worker, then one the replica thread runs where it read it.
  s.Write(Frame(1, static_cast<uint16_t>(net::Opcode::kListStreams), 6, {}));
  EXPECT_EQ(s.ReadStatus(&id), 0);
  EXPECT_EQ(id, 6u);
  EXPECT_EQ(metric("nearstream_replica_connections_handed_total"), 1u);
  s.Write(Frame(1, replica_append, 7, {4}));
  EXPECT_EQ(s.ReadStatus(&id), static_cast<int>(StatusCode::kMalformedRequest));
  EXPECT_EQ(id, 7u);
  EXPECT_EQ(metric("nearstream_replica_connections_handed_total"), 1u);
  EXPECT_EQ(metric("nearstream_connections_open"), 2u);
  // A frame over the limit: answered, then the connection is closed.
  Bytes head(16, 0);
  StoreLe32(head.data(), 200u << 20);
  head[4] = 1;
  StoreLe16(head.data() + 6, replica_append);
  StoreLe64(head.data() + 8, 8);
  s.Write(head);
  EXPECT_EQ(s.ReadStatus(&id), static_cast<int>(StatusCode::kFrameTooLarge));
  EXPECT_EQ(id, 8u);
  EXPECT_TRUE(s.AtEof());
  // Counted closed by the replica thread right after it shut the socket down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (metric("nearstream_connections_open") != 1u &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(metric("nearstream_connections_open"), 1u);
  Client c = Connect();
  EXPECT_TRUE(c.ListStreams().ok());
}

// A client's request is read, framed and run by its connection's worker (connection id mod N):
// after a connection's first request the dispatcher spends nothing on it (its busy time counts
// the rounds that had an event), and a request wakes one broker thread instead of two.
TEST_F(ServerTest, RequestsAreReadAndRunByTheirConnectionsWorkerNotTheDispatcher) {
  Client a = Connect();  // connection 2: worker 0
  Client b = Connect();  // connection 3: worker 1
  // A connection's first request is the dispatcher's to read (it tells a client's connection
  // from another broker's); from then on its worker reads it.
  CreateStream(a, "events", 2);
  ASSERT_TRUE(b.ListStreams().ok());
  auto metric = [&a](const std::string& name) {
    auto stats = a.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    for (const auto& [key, value] : stats->values) {
      if (key == name) return value;
    }
    ADD_FAILURE() << "no metric " << name;
    return uint64_t{0};
  };
  const std::string dispatcher = "nearstream_thread_busy_ns_total{thread=\"dispatcher\"}";
  const std::string worker0 = "nearstream_thread_busy_ns_total{thread=\"worker-0\"}";
  const std::string worker1 = "nearstream_thread_busy_ns_total{thread=\"worker-1\"}";
  // The dispatcher adds a round's busy time after the round, which may end after the worker
  // answered the request it handed over: wait until it stops changing.
  uint64_t dispatcher_before = metric(dispatcher);
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t again = metric(dispatcher);
    if (again == dispatcher_before) break;
    dispatcher_before = again;
  }
  const uint64_t worker0_before = metric(worker0);
  const uint64_t worker1_before = metric(worker1);
  constexpr int kAppends = 300;
  for (int i = 0; i < kAppends; ++i) {
    Bytes chunk = MakeChunk({"r" + std::to_string(i)}, 0, 0);
    ASSERT_TRUE(a.Append(OneChunk("events", 0, chunk)).ok());
    ASSERT_TRUE(b.Append(OneChunk("events", 1, chunk)).ok());
  }
  EXPECT_EQ(ReadAll(b, "events", 0).size(), static_cast<size_t>(kAppends));
  EXPECT_EQ(ReadAll(a, "events", 1).size(), static_cast<size_t>(kAppends));
  EXPECT_EQ(metric(dispatcher), dispatcher_before);
  EXPECT_GT(metric(worker0), worker0_before);
  EXPECT_GT(metric(worker1), worker1_before);
}

TEST_F(ServerTest, OversizedFrameIsAnsweredThenClosed) {
  RawSocket s(server_->port());
  Bytes head(16, 0);
  StoreLe32(head.data(), 200u << 20);  // 200 MiB declared, limit is 1 MiB
  head[4] = 1;
  StoreLe16(head.data() + 6, static_cast<uint16_t>(net::Opcode::kAppend));
  StoreLe64(head.data() + 8, 42);
  s.Write(head);
  uint64_t id = 0;
  EXPECT_EQ(s.ReadStatus(&id), static_cast<int>(StatusCode::kFrameTooLarge));
  EXPECT_EQ(id, 42u);
  EXPECT_TRUE(s.AtEof());
  // The broker serves everyone else.
  Client c = Connect();
  EXPECT_TRUE(c.ListStreams().ok());
}

TEST_F(ServerTest, TruncatedFrameThenDisconnectAppendsNothing) {
  Client c = Connect();
  CreateStream(c, "t", 1);
  Bytes chunk = MakeChunk({"never"}, 0, 0);
  Bytes body;
  ByteWriter w(&body);
  net::EncodeAppendRequest(w, OneChunk("t", 0, chunk));
  Bytes frame = Frame(1, static_cast<uint16_t>(net::Opcode::kAppend), 1, body);
  {
    RawSocket s(server_->port());
    frame.resize(frame.size() - 3);
    s.Write(frame);
  }
  {
    RawSocket s(server_->port());
    Bytes tiny(4, 0);
    StoreLe32(tiny.data(), 3);  // shorter than a frame header
    s.Write(tiny);
    EXPECT_EQ(s.ReadStatus(), -1);  // closed without a response
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(ReadAll(c, "t", 0).empty());
  auto stats = c.Stats();
  ASSERT_TRUE(stats.ok());
  std::map<std::string, uint64_t> m(stats->values.begin(), stats->values.end());
  EXPECT_EQ(m["nearstream_append_chunks_total"], 0u);
  EXPECT_GE(m["nearstream_protocol_errors_total"], 1u);
}

TEST_F(ServerTest, LookupTimestampFindsTheFirstChunkAtOrAfter) {
  Client c = Connect();
  CreateStream(c, "ts", 2, 4096);  // small segments: the chunks spread over several
  std::vector<Position> at;
  for (int i = 0; i < 60; ++i) {
    storage::ChunkBuilder b;
    b.Add(std::string(100, static_cast<char>('a' + i % 26)));
    Bytes chunk = b.Finish(0, 0, 1000 + 10 * i);  // timestamps 1000, 1010, ...
    auto r = c.Append(OneChunk("ts", 0, chunk));
    ASSERT_TRUE(r.ok() && r->results[0].status == 0);
    at.push_back(r->results[0].position);
  }
  auto lookup = [&](uint32_t streamlet, int64_t ts) {
    net::LookupTimestampRequest req;
    req.stream = "ts";
    req.entries.push_back({streamlet, ts});
    Bytes body;
    ByteWriter w(&body);
    net::EncodeLookupTimestampRequest(w, req);
    auto resp = c.Call(net::Opcode::kLookupTimestamp, body);
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    auto m = net::DecodeLookupTimestampResponse(resp->body.data(), resp->body.size());
    EXPECT_TRUE(m.ok());
    return m->results.at(0);
  };
  EXPECT_EQ(lookup(0, 0).position, at[0]);
  EXPECT_EQ(lookup(0, 1000).position, at[0]);
  EXPECT_EQ(lookup(0, 1001).position, at[1]);
  EXPECT_EQ(lookup(0, 1350).position, at[35]);
  EXPECT_EQ(lookup(0, 1590).position, at[59]);
  auto md = c.Metadata("ts", {0});
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(lookup(0, 99999).position, md->streamlets[0].tail);  // later than everything
  EXPECT_EQ(lookup(1, 5).position, Position{});                  // empty streamlet
  EXPECT_EQ(lookup(7, 5).status, static_cast<uint16_t>(StatusCode::kStreamletNotFound));
}

TEST_F(ServerTest, PrometheusEndpointServesTheCounters) {
  Client c = Connect();
  CreateStream(c, "m", 1);
  Bytes chunk = MakeChunk({"one", "two"}, 0, 0);
  ASSERT_TRUE(c.Append(OneChunk("m", 0, chunk)).ok());
  RawSocket http(server_->metrics_port());
  std::string get = "GET /metrics HTTP/1.0\r\n\r\n";
  http.Write(Bytes(get.begin(), get.end()));
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t r = ::recv(http.fd(), buf, sizeof(buf), 0);
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  EXPECT_EQ(text.rfind("HTTP/1.0 200 OK", 0), 0u) << text;
  EXPECT_NE(text.find("# TYPE nearstream_append_records_total counter"), std::string::npos);
  EXPECT_NE(text.find("\nnearstream_append_records_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("nearstream_thread_busy_ns_total{thread=\"worker-1\"}"), std::string::npos);
  EXPECT_NE(text.find("nearstream_queue_depth{thread=\"worker-0\"}"), std::string::npos);
}

TEST_F(ServerTest, ManyProducersAndConsumersWithOneWorker) {
  server_->Stop();
  StartServer(1);
  Client admin = Connect();
  constexpr int kProducers = 4, kChunks = 200, kPerChunk = 10, kStreamlets = 2;
  CreateStream(admin, "busy", kStreamlets, 64 * 1024);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([this, p] {
      Client c = Connect();
      for (int i = 0; i < kChunks; ++i) {
        std::vector<std::string> recs;
        for (int k = 0; k < kPerChunk; ++k) {
          recs.push_back("p" + std::to_string(p) + "-" + std::to_string(i * kPerChunk + k));
        }
        uint32_t streamlet = static_cast<uint32_t>(i % kStreamlets);
        Bytes chunk = MakeChunk(recs, 100 + p, static_cast<uint64_t>(i / kStreamlets));
        auto r = c.Append(OneChunk("busy", streamlet, chunk));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->results[0].status, 0) << r->results[0].message;
      }
    });
  }
  // Consumers long-poll concurrently and stop once they have every record.
  std::atomic<int> seen{0};
  std::vector<std::vector<std::string>> got(kStreamlets);
  for (int s = 0; s < kStreamlets; ++s) {
    threads.emplace_back([&, s] {
      Client c = Connect();
      Position pos;
      const int want = kProducers * kChunks * kPerChunk / kStreamlets;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (static_cast<int>(got[s].size()) < want &&
             std::chrono::steady_clock::now() < deadline) {
        net::FetchRequest req;
        req.stream = "busy";
        req.max_wait_ms = 200;
        req.entries.push_back({static_cast<uint32_t>(s), pos, 16 * 1024});
        auto reply = c.Fetch(req);
        ASSERT_TRUE(reply.ok()) << reply.status().ToString();
        const auto& r = reply->response.results[0];
        ASSERT_EQ(r.status, 0) << r.message;
        for (const auto& b : r.blocks) ASSERT_TRUE(testing::AppendRecords(b, &got[s]));
        pos = r.next;
      }
      seen += static_cast<int>(got[s].size());
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.load(), kProducers * kChunks * kPerChunk);
  // Exactly once, and each producer's records in order within a streamlet.
  for (int s = 0; s < kStreamlets; ++s) {
    std::map<std::string, int> last;
    std::set<std::string> unique(got[s].begin(), got[s].end());
    EXPECT_EQ(unique.size(), got[s].size());
    for (const auto& rec : got[s]) {
      auto dash = rec.find('-');
      std::string producer = rec.substr(0, dash);
      int n = std::stoi(rec.substr(dash + 1));
      auto it = last.find(producer);
      if (it != last.end()) {
        EXPECT_GT(n, it->second) << rec;
      }
      last[producer] = n;
    }
  }
  auto stats = admin.Stats();
  ASSERT_TRUE(stats.ok());
  int workers = 0;
  for (const auto& [name, v] : stats->values) {
    if (name.rfind("nearstream_thread_busy_ns_total{thread=\"worker-", 0) == 0) ++workers;
  }
  EXPECT_EQ(workers, 1);  // --workers 1 is honoured
}

// Appends wake only the long polls of the streamlets appended to: many polls parked on other
// streamlets are not re-queued (nearstream_fetch_wakeups_total, nearstream_fetch_parked_total),
// while a poll on the appended streamlet is answered at once with the data. Deleting the stream
// still answers every parked poll.
TEST_F(ServerTest, AppendWakesOnlyThePollsOfItsStreamlet) {
  Client admin = Connect();
  constexpr uint32_t kStreamlets = 9;
  constexpr int kParked = 200, kAppends = 20;
  CreateStream(admin, "wk", kStreamlets);
  auto metrics = [&admin] {
    auto stats = admin.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return std::map<std::string, uint64_t>(stats->values.begin(), stats->values.end());
  };
  auto wait_for_waiting = [&](uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (metrics()["nearstream_fetch_waiting"] != n) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "waiting for " << n << " polls";
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  auto send_poll = [](Client& c, uint32_t streamlet) {
    net::FetchRequest req;
    req.stream = "wk";
    req.max_wait_ms = 30000;
    req.entries.push_back({streamlet, Position{}, 1 << 20});
    Bytes body;
    ByteWriter w(&body);
    net::EncodeFetchRequest(w, req);
    auto id = c.Send(net::Opcode::kFetch, body);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  };

  // kParked polls on streamlets 1..8 (pipelined on one connection), then one on streamlet 0.
  Client pollers = Connect();
  for (int i = 0; i < kParked; ++i) send_poll(pollers, 1 + static_cast<uint32_t>(i) % 8);
  wait_for_waiting(kParked);
  Client reader = Connect();
  send_poll(reader, 0);
  wait_for_waiting(kParked + 1);

  auto before = metrics();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kAppends; ++i) {
    Bytes chunk = MakeChunk({"v" + std::to_string(i)}, 0, 0);
    auto r = admin.Append(OneChunk("wk", 0, chunk));
    ASSERT_TRUE(r.ok() && r->results[0].status == 0);
  }
  auto answer = reader.Receive(5000);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_TRUE(answer->status.ok()) << answer->status.ToString();
  auto fetched = net::DecodeFetchResponse(answer->body.data(), answer->body.size());
  ASSERT_TRUE(fetched.ok());
  ASSERT_EQ(fetched->results.size(), 1u);
  EXPECT_FALSE(fetched->results[0].blocks.empty());
  EXPECT_LT(waited, std::chrono::milliseconds(3000));

  wait_for_waiting(kParked);  // the streamlet-0 poll was answered, the others still wait
  auto after = metrics();
  const uint64_t wakeups =
      after["nearstream_fetch_wakeups_total"] - before["nearstream_fetch_wakeups_total"];
  const uint64_t parks =
      after["nearstream_fetch_parked_total"] - before["nearstream_fetch_parked_total"];
  // Only the streamlet-0 poll was woken (once: it found the data). Waking every poll of the
  // stream would be about kParked per append, each one parking again.
  EXPECT_EQ(wakeups, 1u);
  EXPECT_LE(parks, 1u);
  EXPECT_LT(static_cast<double>(wakeups) / kAppends, 0.1);

  // Deleting the stream answers every parked poll, STREAM_NOT_FOUND, and wakes nothing by append.
  ASSERT_TRUE(admin.DeleteStream("wk").ok());
  for (int i = 0; i < kParked; ++i) {
    auto r = pollers.Receive(5000);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status.code(), StatusCode::kStreamNotFound);
  }
  wait_for_waiting(0);
  EXPECT_EQ(metrics()["nearstream_fetch_wakeups_total"], after["nearstream_fetch_wakeups_total"]);
}

}  // namespace
}  // namespace nearstream::broker
