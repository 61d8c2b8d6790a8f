#include "nearstream/push/update_fold.h"

#include <gtest/gtest.h>

namespace nearstream::push {
namespace {

struct TestSplit {
  uint32_t streamlet;
  int pos;
  bool restart = false;
};

TEST(FoldQueuedUpdateTest, ASplitDroppedByTheQueuedUpdateRestartsAtItsStart) {
  // Queued: split 1 paused (dropped). Next: split 1 resumed at 40.
  std::vector<std::vector<TestSplit>> queued = {{{0, 10}}};
  std::vector<std::vector<TestSplit>> next = {{{0, 99}, {1, 40}}};
  FoldQueuedUpdate(queued, &next);
  EXPECT_EQ(next[0][0].pos, 10);  // the queued update's view of split 0
  EXPECT_FALSE(next[0][0].restart);
  EXPECT_EQ(next[0][1].pos, 40);
  EXPECT_TRUE(next[0][1].restart);
}

TEST(FoldQueuedUpdateTest, ASplitTheQueuedUpdateAddedKeepsItsStartAndRestartFlag) {
  std::vector<std::vector<TestSplit>> queued = {{{2, 7, true}}, {{3, 5, false}}};
  std::vector<std::vector<TestSplit>> next = {{{3, 0}}, {{2, 0}}};  // both move rings
  FoldQueuedUpdate(queued, &next);
  EXPECT_EQ(next[0][0].pos, 5);
  EXPECT_FALSE(next[0][0].restart);
  EXPECT_EQ(next[1][0].pos, 7);
  EXPECT_TRUE(next[1][0].restart);
}

}  // namespace
}  // namespace nearstream::push
