// A replica whose disk fails, over real processes (docs/cluster.md, "Replication", "Faults"): a
// ZooKeeper server and three nearstreamd, each with testing/disk_faults.h's library preloaded,
// so a test can make one broker's fsyncs fail (EIO) or its disk full (ENOSPC) while it runs.
// A follower's: the leader must take it out of the in-sync set and go on acknowledging alone,
// the follower must not count a copy it could not write or sync, and once its disk is back it
// must copy what it missed, rejoin, and lead with every acknowledged record when the leader dies.
// A leader's: it must acknowledge nothing it could not store, lose nothing it acknowledged, and
// hand the streamlet to its in-sync follower, which takes appends while that disk still fails,
// and goes on with the transactions open or prepared there.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/disk_faults.h"
#include "nearstream/testing/replicated_cluster.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

// (durability of the stream, fault of a replica's disk)
using FaultCase = std::tuple<std::string, std::string>;

class ReplicaDiskFaultsTest : public ReplicatedCluster,
                              public ::testing::WithParamInterface<FaultCase> {
 protected:
  void SetUp() override {
    for (int id = 1; id <= 3; ++id) broker_env_[id] = faults_[id - 1].BrokerEnv();
    ReplicatedCluster::SetUp();
  }

  DiskFaults& Faults(uint32_t id) { return faults_[id - 1]; }

  // Creates "ledger" (one streamlet, replication 2, the case's durability), waits until both
  // replicas are in sync and appends records 0 to 499; sets its leader and follower.
  void CreateLedger(uint32_t* leader, uint32_t* follower) {
    const std::string durability = std::get<0>(GetParam());
    // A follower of an `async` stream syncs a segment file when the next one starts: segments
    // of 16 KiB, which the records of the tests fill many of. Under `sync` every write is
    // synced: one segment, so that is the only sync there is to fail.
    const std::string segment_bytes = durability == "async" ? "16K" : "1M";
    ProcessResult r =
        Cli(List(), {"create", "ledger", "--streamlets", "1", "--durability", durability,
                     "--replication", "2", "--segment-bytes", segment_bytes});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    const net::StreamPlacement placed = Placement(1, "ledger");
    ASSERT_EQ(placed.owners.size(), 1u);
    *leader = placed.owners[0];
    *follower = placed.replicas[0].replicas[1];
    AwaitIsr(*leader, "ledger", 0, {*leader, *follower});
    r = Cli(List(), {"produce", "ledger", "--batch-records", "20"}, Numbered(0, 500));
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
  }

  // Kills broker `killed`, the leader, and checks that broker `promoted` leads "ledger" then and
  // holds exactly `records`, once each and in order.
  void KillAndExpectHeirWith(uint32_t killed, uint32_t promoted,
                             const std::vector<std::string>& records) {
    Broker(killed).Kill();
    const net::StreamPlacement after = AwaitNewLeader(promoted, "ledger", 0, killed);
    ASSERT_EQ(after.owners.size(), 1u);
    EXPECT_EQ(after.owners[0], promoted);
    ProcessResult r = Cli(List({promoted}), {"consume", "ledger", "--timeout-ms", "1000"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(Lines(r.out), records);
  }

  DiskFaults faults_[3];
};

TEST_P(ReplicaDiskFaultsTest,
       TheLeaderGoesOnAloneAndTheFollowerRejoinsWithEveryRecordOnceItsDiskIsBack) {
  const auto& [durability, fault] = GetParam();
  uint32_t leader = 0, follower = 0;
  ASSERT_NO_FATAL_FAILURE(CreateLedger(&leader, &follower));

  // The follower's disk fails. Every record is still acknowledged: the leader takes the follower
  // out of the in-sync set at the first chunk it cannot take, then goes on alone.
  Faults(follower).Arm(fault.c_str(), true);
  ProcessResult r =
      Cli(List({leader}), {"produce", "ledger", "--batch-records", "20"}, Numbered(500, 3000));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  AwaitIsr(leader, "ledger", 0, {leader});
  EXPECT_GT(Faults(follower).Injected(), 0u) << "the fault never reached broker " << follower;
  EXPECT_EQ(Faults(leader).Injected(), 0u);

  // While its disk fails, its copy counts for nothing: it cannot write what it missed, and under
  // `sync` it cannot sync it either. (Under `async` a copy may rejoin with bytes not yet synced,
  // as the leader acknowledges them, so a failing fsync alone need not keep it out.)
  r = Cli(List({leader}), {"produce", "ledger", "--batch-records", "20"}, Numbered(3000, 3200));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  if (fault == DiskFaults::kDiskFull || durability == "sync") {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const std::vector<uint32_t> isr = Placement(leader, "ledger").replicas[0].isr;
    EXPECT_EQ(isr, std::vector<uint32_t>{leader})
        << "broker " << follower << " rejoined while its disk failed";
  }

  // The disk is back: the follower copies what it missed and is in sync once more...
  Faults(follower).Arm(fault.c_str(), false);
  AwaitIsr(leader, "ledger", 0, {leader, follower});
  r = Cli(List({leader}), {"produce", "ledger", "--batch-records", "20"}, Numbered(3200, 3300));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // ...so it leads with every acknowledged record, once each and in order, when the leader dies.
  KillAndExpectHeirWith(leader, follower, Lines(Numbered(0, 3300)));
}

// The leader's disk fails instead. A chunk it cannot write (or, under `sync`, sync) fails with
// STORAGE_ERROR before any follower holds it (a leader writes before it sends); under `async` it
// acknowledges what it holds in memory until a flush fails, then refuses appends. Either way it
// hands the streamlet over to its in-sync follower, which holds every record it acknowledged
// and takes appends while the old leader's disk still fails; the old leader follows, rejoins
// once its disk is back, and can lead again with every record.
TEST_P(ReplicaDiskFaultsTest,
       ALeaderWhoseDiskFailsHandsTheStreamletToItsFollowerAndLosesNothingItAcknowledged) {
  const auto& [durability, fault] = GetParam();
  uint32_t leader = 0, follower = 0;
  ASSERT_NO_FATAL_FAILURE(CreateLedger(&leader, &follower));
  std::vector<std::string> acknowledged = Lines(Numbered(0, 500));

  // One record per chunk, so what `produce` reports acknowledged is a count of whole lines.
  Faults(leader).Arm(fault.c_str(), true);
  ProcessResult r =
      Cli(List({leader}), {"produce", "ledger", "--batch-records", "1"}, Numbered(500, 1000));
  size_t taken = 500;
  if (r.exit_code != 0) {
    EXPECT_NE(r.err.find("STORAGE_ERROR"), std::string::npos) << Describe(r);
    const size_t at = r.err.find("failed after ");
    ASSERT_NE(at, std::string::npos) << Describe(r);
    taken = std::stoul(r.err.substr(at + 13));
  }
  const std::vector<std::string> tried = Lines(Numbered(500, 1000));
  acknowledged.insert(acknowledged.end(), tried.begin(), tried.begin() + taken);
  if (durability == "async" && fault == DiskFaults::kSyncFails) {
    // Refused once a flush (every 200 ms) met the disk: this append notes it if none did yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    r = Cli(List({leader}), {"produce", "ledger"}, "refused\n");
    if (r.exit_code == 0) acknowledged.emplace_back("refused");
  }

  // The follower leads, and takes appends while the old leader's disk still fails.
  const net::StreamPlacement moved = AwaitNewLeader(leader, "ledger", 0, leader);
  ASSERT_EQ(moved.owners.size(), 1u);
  EXPECT_EQ(moved.owners[0], follower);
  r = Cli(List(), {"produce", "ledger", "--batch-records", "20"}, Numbered(1000, 1200));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<std::string> more = Lines(Numbered(1000, 1200));
  acknowledged.insert(acknowledged.end(), more.begin(), more.end());
  EXPECT_GT(Faults(leader).Injected(), 0u);
  EXPECT_EQ(Faults(follower).Injected(), 0u);
  r = Cli(List({follower}), {"consume", "ledger", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), acknowledged);

  // The old leader's disk is back: it copies what it missed, rejoins, and can lead again.
  Faults(leader).Arm(fault.c_str(), false);
  AwaitIsr(follower, "ledger", 0, {follower, leader});
  KillAndExpectHeirWith(follower, leader, acknowledged);
}

// The same with transactions on the streamlet, as an exactly-once sink keeps them: one prepared
// and one open when the leader's disk fails. The leader refuses the open one's next write
// (under `async` once a flush failed), hands the streamlet over, and the follower leads with
// both as they were acknowledged: the prepared one commits whole, the open one takes more
// chunks (a retried one is a duplicate) and commits. Neither waits for the old leader's disk.
TEST_P(ReplicaDiskFaultsTest, ALeaderWhoseDiskFailsHandsItsOpenAndPreparedTransactionsOver) {
  const auto& [durability, fault] = GetParam();
  uint32_t leader = 0, follower = 0;
  ASSERT_NO_FATAL_FAILURE(CreateLedger(&leader, &follower));
  auto chunk = [](const std::string& text, uint64_t seq) {
    storage::ChunkBuilder b;
    b.Add(text);
    return b.Finish(/*producer_id=*/41, seq, WallNowMs());
  };
  auto append = [&chunk](net::Client& c, const net::TxnRef& ref, const std::string& text,
                         uint64_t seq) -> Result<net::AppendResult> {
    const Bytes bytes = chunk(text, seq);
    auto r = c.TxnAppend({ref, {{0, bytes.data(), static_cast<uint32_t>(bytes.size())}}});
    if (!r.ok()) return r.status();
    return r->results[0];
  };
  auto connect = [this](uint32_t id) {
    auto c = net::Client::Connect(Broker(id).address());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  };

  net::Client a = connect(leader);
  auto init = a.TxnInit({"ledger", "sink-0", 0, 0});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  net::TxnRef t1{"ledger", "sink-0", init->epoch, 0, 0};
  t1.serial = a.TxnBegin(t1).value();
  const std::vector<std::string> t1_records = {"t1-a", "t1-b", "t1-c"};
  for (uint64_t i = 0; i < t1_records.size(); ++i) {
    auto r = append(a, t1, t1_records[i], i + 1);
    ASSERT_TRUE(r.ok() && r->status == 0) << r.status().ToString();
  }
  ASSERT_TRUE(a.TxnPrepare(t1).ok());
  net::TxnRef t2 = t1;
  t2.serial = a.TxnBegin(t2).value();
  std::vector<std::string> t2_records;
  for (uint64_t seq = 1;; ++seq) {
    // Taken until the leader refuses one, on its disk's account: at once, or under `async` with
    // failing fsyncs once a flush (every 200 ms) failed.
    if (seq == 3) Faults(leader).Arm(fault.c_str(), true);
    const std::string text = "t2-" + std::to_string(seq);
    auto r = append(a, t2, text, seq);
    const Status status = !r.ok()          ? r.status()
                          : r->status != 0 ? Status(static_cast<StatusCode>(r->status), r->message)
                                           : Status::Ok();
    if (!status.ok()) {
      ASSERT_TRUE(status.IsStorageError()) << status.ToString();
      break;
    }
    t2_records.push_back(text);
    ASSERT_LT(seq, 500u) << "broker " << leader << " never refused a write";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(t2_records.size(), 2u);

  // The follower leads with both transactions, while the old leader's disk still fails. Asked
  // of the follower itself: its requests below go straight to it, so it must have installed its
  // leadership (the old leader may know first).
  const net::StreamPlacement moved = AwaitNewLeader(follower, "ledger", 0, leader);
  ASSERT_EQ(moved.owners.size(), 1u);
  EXPECT_EQ(moved.owners[0], follower);
  net::Client b = connect(follower);
  auto listed = b.TxnList({"ledger", "", 0});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->transactions.size(), 2u);
  EXPECT_EQ(listed->transactions[0].state, net::TxnState::kPrepared);
  EXPECT_EQ(listed->transactions[1].state, net::TxnState::kOpen);
  EXPECT_EQ(listed->transactions[1].chunks, t2_records.size());
  auto retried = append(b, t2, t2_records.back(), t2_records.size());
  ASSERT_TRUE(retried.ok() && retried->status == 0) << retried.status().ToString();
  EXPECT_TRUE(retried->duplicate);
  auto more = append(b, t2, "t2-last", t2_records.size() + 1);
  ASSERT_TRUE(more.ok() && more->status == 0) << more.status().ToString();
  t2_records.emplace_back("t2-last");
  ASSERT_TRUE(b.TxnCommit(t1).ok());
  ASSERT_TRUE(b.TxnCommit(t2).ok());
  std::vector<std::string> committed = Lines(Numbered(0, 500));
  committed.insert(committed.end(), t1_records.begin(), t1_records.end());
  committed.insert(committed.end(), t2_records.begin(), t2_records.end());
  ProcessResult r = Cli(List({follower}), {"consume", "ledger", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), committed);
  EXPECT_GT(Faults(leader).Injected(), 0u);

  // The old leader's disk is back: it copies the streamlet with its transactions' outcomes,
  // rejoins, and leads with every committed record.
  Faults(leader).Arm(fault.c_str(), false);
  AwaitIsr(follower, "ledger", 0, {follower, leader});
  KillAndExpectHeirWith(follower, leader, committed);
}

INSTANTIATE_TEST_SUITE_P(DurabilityAndFault, ReplicaDiskFaultsTest,
                         ::testing::Values(FaultCase{"sync", DiskFaults::kSyncFails},
                                           FaultCase{"sync", DiskFaults::kDiskFull},
                                           FaultCase{"async", DiskFaults::kSyncFails},
                                           FaultCase{"async", DiskFaults::kDiskFull}),
                         [](const ::testing::TestParamInfo<FaultCase>& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace nearstream::testing
