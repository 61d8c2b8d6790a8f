// A replica whose disk fails, over real processes (docs/cluster.md, "Replication", "Faults"): a
// ZooKeeper server and three nearstreamd, each with testing/disk_faults.h's library preloaded,
// so a test can make one broker's fsyncs fail (EIO) or its disk full (ENOSPC) while it runs.
// A follower's: the leader must take it out of the in-sync set and go on acknowledging alone,
// the follower must not count a copy it could not write or sync, and once its disk is back it
// must copy what it missed, rejoin, and lead with every acknowledged record when the leader dies.
// A leader's: it must acknowledge nothing it could not store, lose nothing it acknowledged, and
// hand the streamlet to its in-sync follower, which takes appends while that disk still fails.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
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
