#include "nearstream/storage/mapping_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <limits>
#include <memory>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/storage/segment.h"

namespace nearstream::storage {
namespace {

constexpr uint32_t kSegmentBytes = 8u << 20;
constexpr int64_t kFarFuture = std::numeric_limits<int64_t>::max() / 2;

long MinorFaultsOfThisThread() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

std::vector<std::shared_ptr<Segment>> CreateAndFill(int count) {
  std::vector<std::shared_ptr<Segment>> segments;
  for (int i = 0; i < count; ++i) {
    auto s = Segment::Create(static_cast<uint64_t>(i), kSegmentBytes, 0);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) break;
    for (uint32_t at = 0; at < kSegmentBytes; at += 4096) (*s)->mutable_data()[at] = 1;
    segments.push_back(std::move(s).value());
  }
  return segments;
}

// Retention may drop a second's worth of segments in one pass (its thread waited for an fsync);
// the segments created next must reuse every one of them, not fault in fresh pages.
TEST(MappingPoolTest, EverySegmentDroppedInOnePassIsReusedWithoutAFault) {
  MappingPool& pool = MappingPool::Get();
  pool.ReleaseIdle(kFarFuture);  // what earlier tests left
  constexpr int kDropped = 48;   // 384 MiB, more than the fixed 256 MiB the pool once kept
  std::vector<std::shared_ptr<Segment>> segments = CreateAndFill(kDropped);
  ASSERT_EQ(segments.size(), kDropped);
  segments.clear();
  EXPECT_EQ(pool.bytes(), size_t{kDropped} * kSegmentBytes);

  const long faults = MinorFaultsOfThisThread();
  segments = CreateAndFill(kDropped);
  // A fresh segment takes 2048 faults; a reused one none (a few come from the test's own heap).
  EXPECT_LT(MinorFaultsOfThisThread() - faults, 512);
  EXPECT_EQ(pool.bytes(), 0u);

  // Nothing taken, given back once idle for kIdleMs, not before.
  const int64_t second_drop = MonotonicNowMs();
  segments.clear();
  EXPECT_EQ(pool.ReleaseIdle(second_drop + MappingPool::kIdleMs - 1), 0u);
  EXPECT_EQ(pool.bytes(), size_t{kDropped} * kSegmentBytes);
  EXPECT_EQ(pool.ReleaseIdle(MonotonicNowMs() + MappingPool::kIdleMs),
            size_t{kDropped} * kSegmentBytes);
  EXPECT_EQ(pool.bytes(), 0u);
}

void* Map(uint32_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// The newest mapping is reused first, so that the ones demand no longer needs are those that age
// out; the pool takes no more than kMaxBytes (the caller unmaps the rest).
TEST(MappingPoolTest, ReusesTheNewestFirstAndKeepsAtMostItsBound) {
  MappingPool& pool = MappingPool::Get();
  pool.ReleaseIdle(kFarFuture);
  void* older = Map(kSegmentBytes);
  void* newer = Map(kSegmentBytes);
  ASSERT_NE(older, nullptr);
  ASSERT_NE(newer, nullptr);
  ASSERT_TRUE(pool.Give(older, kSegmentBytes, 1000));
  ASSERT_TRUE(pool.Give(newer, kSegmentBytes, 2000));
  EXPECT_EQ(pool.Take(kSegmentBytes / 2), nullptr);  // only an exact size fits
  EXPECT_EQ(pool.Take(kSegmentBytes), newer);
  EXPECT_EQ(pool.ReleaseIdle(1000 + MappingPool::kIdleMs), kSegmentBytes);  // `older` aged out
  EXPECT_EQ(pool.Take(kSegmentBytes), nullptr);
  ::munmap(newer, kSegmentBytes);

  // Address space only: nothing is touched.
  size_t given = 0;
  for (;;) {
    void* p = Map(kSegmentBytes);
    ASSERT_NE(p, nullptr);
    if (!pool.Give(p, kSegmentBytes, 5000)) {
      ::munmap(p, kSegmentBytes);
      break;
    }
    given += kSegmentBytes;
  }
  EXPECT_EQ(given, MappingPool::kMaxBytes);
  EXPECT_EQ(pool.bytes(), MappingPool::kMaxBytes);
  EXPECT_EQ(pool.ReleaseIdle(5000 + MappingPool::kIdleMs), MappingPool::kMaxBytes);
}

}  // namespace
}  // namespace nearstream::storage
