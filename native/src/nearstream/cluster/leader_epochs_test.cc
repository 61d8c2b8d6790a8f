#include "nearstream/cluster/leader_epochs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "nearstream/testing/test_broker_process.h"

namespace nearstream::cluster {
namespace {

TEST(LeaderEpochsTest, AHistoryIsWrittenAndReadBackAndAMissingOneIsEmpty) {
  testing::TempDir dir("leader-epochs");
  storage::Env* env = storage::Env::Default();
  auto none = ReadLeaderEpochs(env, dir.path());
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  const std::vector<LeaderEpoch> history = {{0, 0}, {1, 7}, {4, 7}, {5, 12}};
  ASSERT_TRUE(WriteLeaderEpochs(env, dir.path(), history).ok());
  auto read = ReadLeaderEpochs(env, dir.path());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, history);
}

TEST(LeaderEpochsTest, AFileThatDoesNotParseOrGoesBackIsAnError) {
  testing::TempDir dir("leader-epochs");
  storage::Env* env = storage::Env::Default();
  for (const char* text : {"1 7\nx\n", "1 7\n1 9\n", "2 7\n3 5\n", "1 7 9\n"}) {
    std::ofstream(dir.path() + "/" + kLeaderEpochsFile, std::ios::trunc) << text;
    auto read = ReadLeaderEpochs(env, dir.path());
    EXPECT_FALSE(read.ok()) << text;
  }
}

TEST(LeaderEpochsTest, AFollowerKeepsTheGroupsBeforeTheLeadersNextEpoch) {
  const std::vector<LeaderEpoch> history = {{2, 5}, {3, 9}, {6, 14}};
  EXPECT_EQ(DivergesAt(history, 2).value(), 9u);
  EXPECT_EQ(DivergesAt(history, 3).value(), 14u);
  EXPECT_EQ(DivergesAt(history, 4).value(), 14u);  // an epoch that had no leader of this lineage
  EXPECT_EQ(DivergesAt(history, 6).value(), std::numeric_limits<uint64_t>::max());
  // Before the history's first entry (an epoch whose successors it may not list) or after its
  // last (the follower knows a newer epoch than its leader): the history cannot tell.
  EXPECT_FALSE(DivergesAt(history, 1).ok());
  EXPECT_FALSE(DivergesAt(history, 7).ok());
  EXPECT_FALSE(DivergesAt({}, 0).ok());
}

}  // namespace
}  // namespace nearstream::cluster
