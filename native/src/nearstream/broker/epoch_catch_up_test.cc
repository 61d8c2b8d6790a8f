// Catching up by leader epoch over real processes (docs/protocol.md, "Catching up by leader
// epoch"): a follower that comes back keeps the part of its copy it can prove equal to the
// leader's and copies only the rest; a deposed leader's groups whose ids its successor reused,
// and bytes past the leader's end, are dropped. Each test ends by killing the leader and reading
// every record from the follower that caught up: exactly the records written, once, in order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nearstream/storage/streamlet.h"
#include "nearstream/testing/replicated_cluster.h"

namespace nearstream::testing {
namespace {

using EpochCatchUpTest = ReplicatedCluster;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(EpochCatchUpTest, AFollowerBackFromACrashCopiesOnlyWhatItMissed) {
  ProcessResult r = Cli(List(), {"create", "logs", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "logs");
  const uint32_t leader = before.owners[0];
  const uint32_t follower = before.replicas[0].replicas[1];
  r = Cli(List(), {"produce", "logs", "--batch-records", "20"}, Numbered(0, 2000));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  Broker(follower).Kill();
  r = Cli(List({leader}), {"produce", "logs", "--batch-records", "20"}, Numbered(2000, 2500));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ASSERT_TRUE(Broker(follower).Restart().ok());
  AwaitIsr(leader, "logs", 0, {leader, follower});

  // Its 2000 records stayed (checked chunk by chunk); only the last 500 crossed the network.
  const uint64_t kept = Stat(follower, "nearstream_catch_up_kept_bytes_total");
  const uint64_t copied = Stat(follower, "nearstream_catch_up_copied_bytes_total");
  EXPECT_GT(kept, 3 * copied) << "kept " << kept << " bytes, copied " << copied;
  EXPECT_GT(copied, 0u);

  r = Cli(List({leader}), {"produce", "logs", "--batch-records", "20"}, Numbered(2500, 2600));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Broker(leader).Kill();
  AwaitNewLeader(follower, "logs", 0, leader);
  r = Cli(List({follower}), {"consume", "logs", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 2600)));
}

TEST_F(EpochCatchUpTest, ADeposedLeaderDropsTheGroupsItsSuccessorReusedAndBytesPastItsEnd) {
  ProcessResult r = Cli(List(), {"create", "audit", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "audit");
  const uint32_t old = before.owners[0];
  const uint32_t heir = before.replicas[0].replicas[1];
  r = Cli(List(), {"produce", "audit", "--batch-records", "10"}, Numbered(0, 300));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // The leader dies; its heir leads at epoch 1 and writes new groups.
  Broker(old).Kill();
  AwaitNewLeader(heir, "audit", 0, old);
  r = Cli(List({heir}), {"produce", "audit", "--batch-records", "10"}, Numbered(300, 600));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // What a deposed leader may hold that nobody acknowledged, made by hand while it is down:
  // its own version of a group the heir created in epoch 1 (same group and segment ids, other
  // chunks: the heir's epoch starts at that group), and a valid chunk past the end of a segment
  // of epoch 0 (the heir's copy of that segment is shorter).
  const std::string old_dir = Broker(old).data_dir() + "/streams/audit/0";
  const std::string heir_dir = Broker(heir).data_dir() + "/streams/audit/0";
  std::vector<std::pair<uint64_t, std::string>> old_files, heir_files;  // group, name
  for (const auto& [dir, out] :
       {std::pair{old_dir, &old_files}, std::pair{heir_dir, &heir_files}}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      uint64_t group = 0, segment = 0;
      const std::string name = entry.path().filename().string();
      if (storage::Streamlet::ParseGroupSegmentName(name, &group, &segment)) {
        out->push_back({group, name});
      }
    }
    std::sort(out->begin(), out->end());
  }
  ASSERT_FALSE(old_files.empty());
  ASSERT_GT(heir_files.back().first, old_files.back().first) << "the heir opened no new group";
  uint64_t epoch0_bytes = 0, epoch1_bytes = 0;
  for (const auto& [group, name] : heir_files) {
    (group > old_files.back().first ? epoch1_bytes : epoch0_bytes) +=
        std::filesystem::file_size(std::filesystem::path(heir_dir) / name);
  }
  const std::string epoch0 = ReadAll(old_dir + "/" + old_files.back().second);
  ASSERT_GE(epoch0.size(), 64u);
  std::ofstream(old_dir + "/" + heir_files.back().second, std::ios::binary) << epoch0;
  std::ofstream(old_dir + "/" + old_files.back().second, std::ios::binary | std::ios::app)
      << epoch0;

  // Back, it catches up from the heir keeping its epoch 0 files, and joins the in-sync set.
  ASSERT_TRUE(Broker(old).Restart().ok());
  AwaitIsr(heir, "audit", 0, {heir, old});
  // In one go: it kept exactly the epoch 0 segments and copied exactly the heir's epoch.
  EXPECT_EQ(Stat(old, "nearstream_catch_up_kept_bytes_total"), epoch0_bytes);
  EXPECT_EQ(Stat(old, "nearstream_catch_up_copied_bytes_total"), epoch1_bytes);

  // Its copy is the heir's: led by it, every record once, in order.
  Broker(heir).Kill();
  const uint32_t asked = old;
  AwaitNewLeader(asked, "audit", 0, heir);
  r = Cli(List({old}), {"consume", "audit", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 600)));
}

}  // namespace
}  // namespace nearstream::testing
