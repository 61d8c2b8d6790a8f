// Transactions on a replicated stream over real processes (docs/cluster.md, "Replication",
// "Transactions"): a ZooKeeper server and three nearstreamd. Each streamlet's transaction scope
// is kept by its replicas, so a transaction goes on through a failover as last acknowledged:
// prepared ones commit whole on the new leader, open ones take more chunks, epochs still fence,
// and a follower that was down copies the scope's files before it is in sync again.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/replicated_cluster.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

constexpr const char* kStream = "ledger";
constexpr uint32_t kScope = 0;  // the streamlet every transaction here writes
constexpr uint64_t kProducer = 41;

class ReplicatedTxnTest : public ReplicatedCluster {
 protected:
  net::Client Connect(uint32_t id) {
    auto c = net::Client::Connect(Broker(id).address());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }

  // One chunk of one record, `text`, with the producer's transactional sequence `seq`.
  static Bytes Chunk(const std::string& text, uint64_t seq) {
    storage::ChunkBuilder b;
    b.Add(text);
    return b.Finish(kProducer, seq, WallNowMs());
  }

  // Appends `texts` to transaction `ref`, sequences from `first_seq`; every chunk must be stored
  // (or be a duplicate of one that was).
  static void Append(net::Client& c, const net::TxnRef& ref, const std::vector<std::string>& texts,
                     uint64_t first_seq) {
    for (size_t i = 0; i < texts.size(); ++i) {
      const Bytes chunk = Chunk(texts[i], first_seq + i);
      auto r = c.TxnAppend({ref, {{kScope, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->results[0].status, 0) << r->results[0].message;
    }
  }

  // Creates the stream (one streamlet, replication 2, `durability`) and returns its leader and
  // its follower once both are in the in-sync set.
  std::pair<uint32_t, uint32_t> CreateInSync(const std::string& durability) {
    ProcessResult r = Cli(List(), {"create", kStream, "--streamlets", "1", "--durability",
                                   durability, "--replication", "2"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    const net::StreamPlacement p = Placement(1, kStream);
    if (p.owners.empty()) return {0, 0};
    const uint32_t leader = p.owners[0];
    const uint32_t follower = p.replicas[0].replicas[1];
    AwaitIsr(leader, kStream, 0, {leader, follower});
    return {leader, follower};
  }

  // What a reader of streamlet 0 gets from broker `id` (its leader).
  std::vector<std::string> Read(uint32_t id) {
    ProcessResult r = Cli(List({id}), {"consume", kStream, "--timeout-ms", "1000"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return Lines(r.out);
  }

  // The transactions broker `id` lists for the scope, as "serial state" lines.
  std::vector<std::string> Listed(uint32_t id) {
    net::Client c = Connect(id);
    auto listed = c.TxnList({kStream, "", kScope});
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<std::string> out;
    if (!listed.ok()) return out;
    for (const net::TxnInfo& t : listed->transactions) {
      EXPECT_EQ(t.scope, kScope);
      out.push_back(std::to_string(t.serial) + " " + net::TxnStateName(t.state));
    }
    return out;
  }
};

TEST_F(ReplicatedTxnTest, TransactionsGoOnThroughFailoversAsLastAcknowledged) {
  const auto [first, second] = CreateInSync("sync");
  ASSERT_NE(first, 0u);

  // On the first leader: transaction 1 prepared, transaction 2 open, both with chunks.
  net::Client a = Connect(first);
  auto init = a.TxnInit({kStream, "sink-0", 0, kScope});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  EXPECT_EQ(init->epoch, 1u);
  net::TxnRef t1{kStream, "sink-0", init->epoch, 0, kScope};
  t1.serial = a.TxnBegin(t1).value();
  Append(a, t1, {"t1-a", "t1-b", "t1-c"}, 1);
  ASSERT_TRUE(a.TxnPrepare(t1).ok());
  net::TxnRef t2 = t1;
  t2.serial = a.TxnBegin(t2).value();
  EXPECT_EQ(t2.serial, 2u);
  Append(a, t2, {"t2-a", "t2-b"}, 1);
  EXPECT_TRUE(Read(first).empty()) << "a reader saw uncommitted records";

  // The leader dies. Its follower leads with both transactions as they were.
  Broker(first).Kill();
  AwaitNewLeader(second, kStream, 0, first);
  EXPECT_EQ(Listed(second), (std::vector<std::string>{"1 prepared", "2 open"}));
  EXPECT_TRUE(Read(second).empty()) << "a reader saw uncommitted records";
  net::Client b = Connect(second);
  ASSERT_TRUE(b.TxnCommit(t1).ok());
  EXPECT_EQ(Read(second), (std::vector<std::string>{"t1-a", "t1-b", "t1-c"}));
  // The open one takes more chunks; a retried chunk is a duplicate, not a second copy.
  {
    const Bytes again = Chunk("t2-b", 2);
    auto dup = b.TxnAppend({t2, {{kScope, again.data(), static_cast<uint32_t>(again.size())}}});
    ASSERT_TRUE(dup.ok()) << dup.status().ToString();
    EXPECT_TRUE(dup->results[0].duplicate);
  }
  Append(b, t2, {"t2-c"}, 3);
  ASSERT_TRUE(b.TxnCommit(t2).ok());
  EXPECT_TRUE(b.TxnCommit(t1).ok()) << "a retried commit";
  EXPECT_EQ(Read(second),
            (std::vector<std::string>{"t1-a", "t1-b", "t1-c", "t2-a", "t2-b", "t2-c"}));

  // A new producer of the id fences the old one on the new leader: the epoch survived.
  auto again = b.TxnInit({kStream, "sink-0", t2.serial, kScope});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->epoch, 2u);
  net::TxnRef zombie = t2;
  EXPECT_TRUE(b.TxnBegin(zombie).status().IsTxnFenced());
  // While the first broker is down: transaction 3 prepared on the second alone.
  net::TxnRef t3{kStream, "sink-0", again->epoch, 0, kScope};
  t3.serial = b.TxnBegin(t3).value();
  EXPECT_EQ(t3.serial, 3u);
  Append(b, t3, {"t3-a", "t3-b"}, 1);
  ASSERT_TRUE(b.TxnPrepare(t3).ok());

  // Back, the first broker copies the scope's files with the streamlet and is in sync again;
  // then transaction 4, prepared while both are in sync, goes to it as it is made.
  ASSERT_TRUE(Broker(first).Restart().ok());
  AwaitIsr(second, kStream, 0, {first, second});
  net::TxnRef t4 = t3;
  t4.serial = b.TxnBegin(t4).value();
  Append(b, t4, {"t4-a"}, 1);
  ASSERT_TRUE(b.TxnPrepare(t4).ok());

  // The second dies: the first leads with transactions 3 and 4 prepared and 1, 2 committed.
  Broker(second).Kill();
  AwaitNewLeader(first, kStream, 0, second);
  EXPECT_EQ(Listed(first), (std::vector<std::string>{"3 prepared", "4 prepared"}));
  net::Client c = Connect(first);
  EXPECT_TRUE(c.TxnCommit(t2).ok()) << "a retried commit of a transaction committed before";
  ASSERT_TRUE(c.TxnCommit(t4).ok());
  ASSERT_TRUE(c.TxnAbort(t3).ok());
  EXPECT_EQ(Read(first),
            (std::vector<std::string>{"t1-a", "t1-b", "t1-c", "t2-a", "t2-b", "t2-c", "t4-a"}));
  EXPECT_EQ(c.TxnInit({kStream, "sink-0", 0, kScope}).value().epoch, 3u);
}

// Brokers that take frames of 16 MiB at most.
class ReplicatedTxnSmallFrameTest : public ReplicatedTxnTest {
 protected:
  ReplicatedTxnSmallFrameTest() { extra_broker_args_ = {"--max-frame-bytes", "16M"}; }
};

// Open and prepared transactions larger than a frame: a follower that was down copies their parts
// a page of ReplicaTxnFiles at a time, most of them before its leader seals the streamlet, and
// leads with them whole.
TEST_F(ReplicatedTxnSmallFrameTest, AFollowerCopiesTransactionsLargerThanAFrameAndLeadsWithThem) {
  ProcessResult r = Cli(List(), {"create", kStream, "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, kStream);
  const uint32_t leader = p.owners[0];
  const uint32_t follower = p.replicas[0].replicas[1];
  AwaitIsr(leader, kStream, 0, {leader, follower});
  Broker(follower).Kill();

  // 20 chunks of about 1 MB in an open transaction, 4 in a prepared one: 24 MB of parts, more
  // than a frame carries.
  constexpr int kRecordsPerChunk = 1000;
  auto record = [](const std::string& txn, int n) {
    std::string text = txn + "-" + std::to_string(n) + "-";
    text.resize(1000, 'x');
    return text;
  };
  auto append = [&](net::Client& c, const net::TxnRef& ref, const std::string& txn, int chunks) {
    for (int k = 0; k < chunks; ++k) {
      storage::ChunkBuilder b;
      for (int i = 0; i < kRecordsPerChunk; ++i) b.Add(record(txn, k * kRecordsPerChunk + i));
      const Bytes chunk = b.Finish(kProducer, k + 1, WallNowMs());
      auto a = c.TxnAppend({ref, {{kScope, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_EQ(a->results[0].status, 0) << a->results[0].message;
    }
  };
  net::Client a = Connect(leader);
  auto init = a.TxnInit({kStream, "big", 0, kScope});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  net::TxnRef prepared{kStream, "big", init->epoch, 0, kScope};
  prepared.serial = a.TxnBegin(prepared).value();
  ASSERT_NO_FATAL_FAILURE(append(a, prepared, "p", 4));
  ASSERT_TRUE(a.TxnPrepare(prepared).ok());
  net::TxnRef open = prepared;
  open.serial = a.TxnBegin(open).value();
  ASSERT_NO_FATAL_FAILURE(append(a, open, "o", 20));

  ASSERT_TRUE(Broker(follower).Restart().ok());
  AwaitIsr(leader, kStream, 0, {leader, follower});
  const std::string log = Broker(follower).log();
  const size_t at = log.find("transaction files (");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_GT(std::stoull(log.substr(at + 19)), 16ull << 20)
      << "not past two 8 MiB pages: " << log.substr(at, 80);

  Broker(leader).Kill();
  AwaitNewLeader(follower, kStream, 0, leader);
  EXPECT_EQ(Listed(follower), (std::vector<std::string>{"1 prepared", "2 open"}));
  net::Client b = Connect(follower);
  ASSERT_TRUE(b.TxnCommit(prepared).ok());
  ASSERT_TRUE(b.TxnCommit(open).ok());
  std::vector<std::string> expected;
  for (int i = 0; i < 4 * kRecordsPerChunk; ++i) expected.push_back(record("p", i));
  for (int i = 0; i < 20 * kRecordsPerChunk; ++i) expected.push_back(record("o", i));
  const std::vector<std::string> read = Read(follower);
  EXPECT_EQ(read.size(), expected.size());
  EXPECT_TRUE(read == expected) << "the records read are not the transactions' whole and once";
}

// A scope's requests reach its leader only; another broker answers NOT_OWNER naming it, and a
// broker that only follows lists nothing of the scope.
TEST_F(ReplicatedTxnTest, AStreamletScopeIsServedByItsLeaderOnly) {
  ProcessResult r = Cli(List(), {"create", kStream, "--streamlets", "1", "--durability", "async",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, kStream);
  const uint32_t leader = p.owners[0];
  const uint32_t follower = p.replicas[0].replicas[1];
  net::Client l = Connect(leader);
  auto init = l.TxnInit({kStream, "sink-1", 0, kScope});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  net::TxnRef t{kStream, "sink-1", init->epoch, 0, kScope};
  t.serial = l.TxnBegin(t).value();
  Append(l, t, {"x"}, 1);

  net::Client f = Connect(follower);
  auto there = f.TxnInit({kStream, "sink-1", 0, kScope});
  EXPECT_TRUE(there.status().IsNotOwner()) << there.status().ToString();
  EXPECT_TRUE(f.TxnPrepare(t).IsNotOwner());
  auto all = f.TxnList({kStream, "", net::kBrokerScope});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->transactions.empty());
  auto mine = l.TxnList({kStream, "", net::kBrokerScope});
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_EQ(mine->transactions.size(), 1u);
  EXPECT_EQ(mine->transactions[0].scope, kScope);
  ASSERT_TRUE(l.TxnCommit(t).ok());
  EXPECT_EQ(Read(leader), (std::vector<std::string>{"x"}));

  // The operator's view: `txn list` names the streamlet and its leader; `txn abort --streamlet`
  // finds the leader itself.
  t.serial = l.TxnBegin(t).value();
  Append(l, t, {"y"}, 1);
  ASSERT_TRUE(l.TxnPrepare(t).ok());
  r = Cli(List(), {"txn", "list", kStream});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("sink-1\tepoch " + std::to_string(t.epoch) + "\tserial " +
                               std::to_string(t.serial) + "\tprepared",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find("\tstreamlet 0\tbroker " + std::to_string(leader)), std::string::npos)
      << lines[0];
  const std::vector<std::string> abort = {"txn",         "abort",
                                          kStream,       "sink-1",
                                          "--epoch",     std::to_string(t.epoch),
                                          "--serial",    std::to_string(t.serial),
                                          "--streamlet", "0"};
  r = Cli(List(), abort);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("on broker " + std::to_string(leader)), std::string::npos) << r.out;
  EXPECT_TRUE(Listed(leader).empty());
  std::vector<std::string> both = abort;
  both.insert(both.end(), {"--broker-id", std::to_string(leader)});
  r = Cli(List(), both);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("leave --broker-id out"), std::string::npos) << r.err;
  EXPECT_EQ(Read(leader), (std::vector<std::string>{"x"}));
}

// A sink's producer keeps several TxnAppends in flight. The leader's worker sends the writes of
// all it read together to the followers in one round trip and acknowledges each only once its
// followers hold it: a promoted follower then has every acknowledged chunk.
TEST_F(ReplicatedTxnTest, PipelinedAppendsShareARoundTripAndEveryAcknowledgedOneSurvivesItsLeader) {
  const auto [leader, follower] = CreateInSync("sync");
  ASSERT_NE(leader, 0u);
  net::Client c = Connect(leader);
  auto init = c.TxnInit({kStream, "sink-2", 0, kScope});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  net::TxnRef t{kStream, "sink-2", init->epoch, 0, kScope};
  t.serial = c.TxnBegin(t).value();

  constexpr int kAppends = 64;
  const uint64_t sends_before = Stat(leader, "nearstream_txn_append_sends_total");
  std::vector<std::string> texts;
  for (int i = 0; i < kAppends; ++i) {
    texts.push_back("pipelined " + std::to_string(i));
    const Bytes chunk = Chunk(texts.back(), static_cast<uint64_t>(i) + 1);
    Bytes body;
    ByteWriter w(&body);
    net::EncodeTxnAppendRequest(w,
                                {t, {{kScope, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
    ASSERT_TRUE(c.Send(net::Opcode::kTxnAppend, body).ok());
  }
  for (int i = 0; i < kAppends; ++i) {
    auto answer = c.Receive();
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    ASSERT_TRUE(answer->status.ok()) << answer->status.ToString();
    auto appended = net::DecodeAppendResponse(answer->body.data(), answer->body.size());
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    ASSERT_EQ(appended->results.size(), 1u);
    EXPECT_EQ(appended->results[0].status, 0) << appended->results[0].message;
    EXPECT_FALSE(appended->results[0].duplicate);
  }
  const uint64_t sends = Stat(leader, "nearstream_txn_append_sends_total") - sends_before;
  EXPECT_GE(sends, 1u);
  EXPECT_LT(sends, static_cast<uint64_t>(kAppends / 4))
      << "the appends read together should have gone to the follower together";
  ASSERT_TRUE(c.TxnPrepare(t).ok());

  // The leader dies: the follower commits the transaction with every chunk.
  Broker(leader).Kill();
  AwaitNewLeader(follower, kStream, 0, leader);
  net::Client f = Connect(follower);
  ASSERT_TRUE(f.TxnCommit(t).ok());
  EXPECT_EQ(Read(follower), texts);
}

// Faults at random points of transactions' lives: the leader killed, a follower killed, the
// leadership moved to a follower, the leader paused past its ZooKeeper session. Seeded:
// NEARSTREAM_TXN_CHAOS_FAULTS faults (3 by default), NEARSTREAM_TXN_CHAOS_SEED. Durability sync,
// or NEARSTREAM_TXN_CHAOS_DURABILITY: under `async` a commit's files wait for the flusher's fsync
// and rename, and a kill lands in between; NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC sets the
// brokers' bound on those files (--txn-files-awaiting-sync). One writer runs transaction
// after transaction, each begin / 3 appends / prepare / commit sent to whichever broker leads now
// and retried through every failover; each fault is healed (restart, SIGCONT) and the replicas are
// in sync again before the next. Every committed transaction must then be read whole, once, in
// commit order, and nothing else. Replication 2 and 3 (with two followers, one may fail while the
// other holds everything).
class ReplicatedTxnFaultTest : public ReplicatedTxnTest,
                               public ::testing::WithParamInterface<uint32_t> {
 protected:
  ReplicatedTxnFaultTest() {
    // Under `async`, 0 makes every commit sync and rename its own files before it answers.
    if (const char* bound = std::getenv("NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC")) {
      extra_broker_args_ = {"--txn-files-awaiting-sync", bound};
    }
  }
};

TEST_P(ReplicatedTxnFaultTest, CommittedTransactionsSurviveFaultsAtAnyStepWholeAndOnce) {
  const char* faults_env = std::getenv("NEARSTREAM_TXN_CHAOS_FAULTS");
  const char* seed_env = std::getenv("NEARSTREAM_TXN_CHAOS_SEED");
  const char* durability_env = std::getenv("NEARSTREAM_TXN_CHAOS_DURABILITY");
  const std::string durability = durability_env != nullptr ? durability_env : "sync";
  const int faults = faults_env != nullptr ? std::atoi(faults_env) : 3;
  const uint32_t seed = seed_env != nullptr
                            ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10))
                            : static_cast<uint32_t>(WallNowMs());
  SCOPED_TRACE("NEARSTREAM_TXN_CHAOS_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  ProcessResult r = Cli(List(), {"create", kStream, "--streamlets", "1", "--durability", durability,
                                 "--replication", std::to_string(GetParam())});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<uint32_t> replicas = Placement(1, kStream).replicas[0].replicas;
  AwaitIsr(replicas[0], kStream, 0, replicas);

  constexpr int kSteps = 6;  // before begin, after begin, after 1 and 3 appends, prepare, commit
  const int txns = 4 * faults + 2;
  std::set<int> points;  // txn * kSteps + step
  while (static_cast<int>(points.size()) < faults) {
    points.insert(static_cast<int>(rng() % static_cast<uint32_t>(txns * kSteps)));
  }
  uint32_t down = 0;   // a killed broker, restarted at the next fault
  pid_t stopped = -1;  // a paused broker, resumed at the next fault
  uint32_t stopped_id = 0;
  auto leader_now = [&]() -> uint32_t {
    for (uint32_t id : replicas) {
      if (id == down || id == stopped_id || !Broker(id).running()) continue;
      const net::StreamPlacement p = Placement(id, kStream);
      if (!p.owners.empty() && p.owners[0] != down && p.owners[0] != stopped_id) {
        return p.owners[0];
      }
    }
    return 0;
  };
  // Sends `fn` to the leader until it answers OK or fails for good; what a failover brings
  // (refused connections, timeouts, NOT_OWNER, BROKER_UNAVAILABLE, STREAMLET_MOVING) is retried.
  auto retry = [&](const std::string& what, const std::function<Status(net::Client&)>& fn) {
    const int64_t deadline = MonotonicNowMs() + 60000;
    Status last;
    while (MonotonicNowMs() < deadline) {
      const uint32_t leader = leader_now();
      if (leader != 0) {
        auto c = net::Client::Connect(Broker(leader).address(), 2000);
        if (c.ok()) {
          c->set_io_timeout_ms(3000);
          last = fn(*c);
          if (last.ok() ||
              !(last.IsNotOwner() || last.IsBrokerUnavailable() || last.IsStreamletMoving() ||
                last.IsClusterUnavailable() || last.IsIoError() || !c->ok())) {
            return last;
          }
        } else {
          last = c.status();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return Status::Internal(what + " kept failing: " + last.ToString());
  };
  // Ends the last fault and waits until both replicas are in sync again; returns the leader.
  auto heal = [&]() -> uint32_t {
    if (down != 0) {
      EXPECT_TRUE(Broker(down).Restart().ok());
      down = 0;
    }
    if (stopped > 0) {
      kill(stopped, SIGCONT);
      stopped = -1;
      stopped_id = 0;
      paused_ = -1;
    }
    // Both replicas must agree: a broker just resumed still believes what it saw before its
    // pause until its watch fires.
    std::vector<uint32_t> want = replicas;
    std::sort(want.begin(), want.end());
    const int64_t deadline = MonotonicNowMs() + 60000;
    while (MonotonicNowMs() < deadline) {
      uint32_t agreed = 0;
      bool all = true;
      for (uint32_t id : replicas) {
        const net::StreamPlacement p = Placement(id, kStream);
        std::vector<uint32_t> isr =
            p.replicas.empty() ? std::vector<uint32_t>{} : p.replicas[0].isr;
        std::sort(isr.begin(), isr.end());
        if (p.owners.empty() || isr != want || (agreed != 0 && p.owners[0] != agreed)) {
          all = false;
          break;
        }
        agreed = p.owners[0];
      }
      if (all) return agreed;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the replicas never agreed on a leader with both in sync";
    return 0;
  };
  auto fault = [&](int at) {
    if (!points.contains(at)) return;
    const uint32_t leader = heal();
    ASSERT_NE(leader, 0u);
    std::vector<uint32_t> followers;
    for (uint32_t id : replicas) {
      if (id != leader) followers.push_back(id);
    }
    const uint32_t follower = followers[rng() % followers.size()];
    switch (rng() % 4) {
      case 0:
        Broker(leader).Kill();
        down = leader;
        break;
      case 1:
        Broker(follower).Kill();
        down = follower;
        break;
      case 2: {
        // The operator moves the leadership to a follower: the scope's files go with the
        // streamlet's copy, the transaction where it stands.
        const ProcessResult moved =
            Cli(List(), {"move", kStream, "0", "--to", std::to_string(follower)});
        ASSERT_EQ(moved.exit_code, 0) << Describe(moved);
        break;
      }
      default:
        stopped = Broker(leader).pid();
        stopped_id = leader;
        paused_ = stopped;
        kill(stopped, SIGSTOP);
        break;
    }
  };

  const std::string id = "chaos-sink";
  uint32_t epoch = 0;
  ASSERT_TRUE(retry("TxnInit", [&](net::Client& c) {
                auto init = c.TxnInit({kStream, id, 0, kScope});
                if (init.ok()) epoch = init->epoch;
                return init.status();
              }).ok());
  std::vector<std::string> committed;
  for (int t = 0; t < txns; ++t) {
    fault(t * kSteps + 0);
    net::TxnRef ref{kStream, id, epoch, 0, kScope};
    Status s = retry("TxnBegin", [&](net::Client& c) {
      auto serial = c.TxnBegin(ref);
      if (serial.ok()) ref.serial = *serial;
      return serial.status();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    fault(t * kSteps + 1);
    std::vector<std::string> texts;
    for (int k = 0; k < 3; ++k) {
      texts.push_back("txn" + std::to_string(t) + "-" + std::to_string(k));
      const Bytes chunk = Chunk(texts.back(), static_cast<uint64_t>(k) + 1);
      s = retry("TxnAppend", [&](net::Client& c) {
        auto a = c.TxnAppend({ref, {{kScope, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
        if (!a.ok()) return a.status();
        return Status(static_cast<StatusCode>(a->results[0].status), a->results[0].message);
      });
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (k == 0) fault(t * kSteps + 2);
    }
    fault(t * kSteps + 3);
    s = retry("TxnPrepare", [&](net::Client& c) { return c.TxnPrepare(ref); });
    ASSERT_TRUE(s.ok()) << s.ToString();
    fault(t * kSteps + 4);
    s = retry("TxnCommit", [&](net::Client& c) { return c.TxnCommit(ref); });
    ASSERT_TRUE(s.ok()) << s.ToString();
    committed.insert(committed.end(), texts.begin(), texts.end());
    fault(t * kSteps + 5);
  }
  // Healed: every committed transaction, whole, once, in order, on whichever broker leads.
  const uint32_t leader = heal();
  ASSERT_NE(leader, 0u);
  EXPECT_EQ(Read(leader), committed);
  Status fenced = retry("TxnInit", [&](net::Client& c) {
    auto init = c.TxnInit({kStream, id, 0, kScope});
    if (init.ok()) {
      EXPECT_EQ(init->epoch, epoch + 1);
    }
    return init.status();
  });
  EXPECT_TRUE(fenced.ok()) << fenced.ToString();
}

INSTANTIATE_TEST_SUITE_P(Replication, ReplicatedTxnFaultTest, ::testing::Values(2u, 3u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return "R" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace nearstream::testing
