// FetchWaiters on real streams: an append wakes only the fetches parked on the streamlets it
// appended to, Park refuses after a missed append to one of its own streamlets only, deletion
// wakes everyone, and the index stays consistent when waiters leave in any order.
#include "nearstream/broker/fetch_waiters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "nearstream/storage/env.h"

namespace nearstream::broker {
namespace {

using Watched = FetchWaiters::Watched;

class FetchWaitersTest : public ::testing::Test {
 protected:
  FetchWaitersTest() : waiters_([this](Request r) { requeued_.push_back(Id(r)); }) {}

  static std::shared_ptr<storage::Stream> MakeStream(const std::string& name, uint32_t streamlets) {
    storage::StreamConfig config;
    config.name = name;
    config.streamlets = streamlets;
    return std::make_shared<storage::Stream>(config, storage::Env::Default(), "");
  }

  static Request MakeRequest(uint64_t id) {
    Request r;
    r.frame.header.request_id = id;
    return r;
  }
  static uint64_t Id(const Request& r) { return r.frame.header.request_id; }

  // What Fetch does: read the generations of the entries' streamlets, then park.
  bool Park(uint64_t id, const std::shared_ptr<storage::Stream>& stream,
            const std::vector<uint32_t>& streamlets) {
    std::vector<Watched> watched;
    for (uint32_t s : streamlets) watched.push_back({s, stream->streamlet_generation(s)});
    Request r = MakeRequest(id);
    return waiters_.Park(r, stream, std::move(watched));
  }

  // What Append does after storing chunks in `streamlets`.
  void Append(const std::shared_ptr<storage::Stream>& stream, std::vector<uint32_t> streamlets) {
    for (uint32_t s : streamlets) stream->NoteAppended(s);
    waiters_.Wake(stream.get(), streamlets);
  }

  std::set<uint64_t> TakeRequeued() {
    std::set<uint64_t> out(requeued_.begin(), requeued_.end());
    EXPECT_EQ(out.size(), requeued_.size()) << "a request was re-queued twice";
    requeued_.clear();
    return out;
  }

  std::vector<uint64_t> requeued_;
  FetchWaiters waiters_;
};

TEST_F(FetchWaitersTest, AppendWakesOnlyTheFetchesOfItsStreamlet) {
  constexpr uint64_t kN = 50;
  auto stream = MakeStream("s", 4);
  constexpr uint32_t kA = 1, kB = 2;
  for (uint64_t i = 0; i < kN; ++i) ASSERT_TRUE(Park(i, stream, {kA}));
  for (uint64_t i = 0; i < kN; ++i) ASSERT_TRUE(Park(100 + i, stream, {kB}));
  EXPECT_EQ(waiters_.size(), 2 * kN);

  Append(stream, {kA});
  std::set<uint64_t> want;
  for (uint64_t i = 0; i < kN; ++i) want.insert(i);
  EXPECT_EQ(TakeRequeued(), want);
  EXPECT_EQ(waiters_.size(), kN);
  EXPECT_EQ(waiters_.woken_total(), kN);

  // Appends to A (nobody left there), to an unwatched streamlet, to another stream: no wake-up.
  Append(stream, {kA});
  Append(stream, {0, 3});
  auto other = MakeStream("other", 4);
  Append(other, {kB});
  EXPECT_TRUE(TakeRequeued().empty());
  EXPECT_EQ(waiters_.woken_total(), kN);
  EXPECT_EQ(waiters_.size(), kN);

  Append(stream, {kB});
  want.clear();
  for (uint64_t i = 0; i < kN; ++i) want.insert(100 + i);
  EXPECT_EQ(TakeRequeued(), want);
  EXPECT_EQ(waiters_.size(), 0u);
  EXPECT_EQ(waiters_.woken_total(), 2 * kN);
  EXPECT_EQ(waiters_.NextDeadline(), -1);
}

TEST_F(FetchWaitersTest, ParkRefusesAfterAMissedAppendToItsOwnStreamletOnly) {
  auto stream = MakeStream("s", 3);
  std::vector<Watched> seen = {{0, stream->streamlet_generation(0)},
                               {2, stream->streamlet_generation(2)}};
  // An append to streamlet 1, which this fetch does not read, between its read and its Park.
  stream->NoteAppended(1);
  Request r = MakeRequest(7);
  EXPECT_TRUE(waiters_.Park(r, stream, seen));
  EXPECT_EQ(waiters_.size(), 1u);
  Append(stream, {1});
  EXPECT_TRUE(TakeRequeued().empty());

  // An append to streamlet 2, which it reads, between its read and its Park: refused, untouched.
  seen = {{0, stream->streamlet_generation(0)}, {2, stream->streamlet_generation(2)}};
  stream->NoteAppended(2);
  Request r2 = MakeRequest(8);
  EXPECT_FALSE(waiters_.Park(r2, stream, seen));
  EXPECT_EQ(Id(r2), 8u);
  EXPECT_EQ(waiters_.size(), 1u);

  // The stream-wide bump (deletion, maintenance) moves every streamlet on.
  seen = {{0, stream->streamlet_generation(0)}};
  stream->NoteAppended();
  Request r3 = MakeRequest(9);
  EXPECT_FALSE(waiters_.Park(r3, stream, seen));

  // The fetch parked on {0, 2} is woken once by an append to 2 and leaves both buckets.
  Append(stream, {2});
  EXPECT_EQ(TakeRequeued(), (std::set<uint64_t>{7}));
  Append(stream, {0});
  EXPECT_TRUE(TakeRequeued().empty());
  EXPECT_EQ(waiters_.size(), 0u);
}

TEST_F(FetchWaitersTest, ADeletedStreamRefusesAndWakeAllWakesEveryStreamlet) {
  auto stream = MakeStream("s", 3);
  auto other = MakeStream("other", 3);
  ASSERT_TRUE(Park(1, stream, {0}));
  ASSERT_TRUE(Park(2, stream, {1, 2}));
  ASSERT_TRUE(Park(3, stream, {}));  // a fetch with no entries waits for its deadline
  ASSERT_TRUE(Park(4, other, {0}));
  std::vector<Watched> seen = {{0, stream->streamlet_generation(0)}};
  stream->MarkDeleted();
  Request late = MakeRequest(5);
  EXPECT_FALSE(waiters_.Park(late, stream, seen));
  waiters_.WakeAll(stream.get());
  EXPECT_EQ(TakeRequeued(), (std::set<uint64_t>{1, 2, 3}));
  EXPECT_EQ(waiters_.size(), 1u);
  EXPECT_EQ(waiters_.woken_total(), 0u);  // deletions are not appends
  Append(other, {0});
  EXPECT_EQ(TakeRequeued(), (std::set<uint64_t>{4}));
}

TEST_F(FetchWaitersTest, OutOfRangeAndRepeatedStreamletsAreHandled) {
  auto stream = MakeStream("s", 2);
  Request r = MakeRequest(1);
  // Streamlet 9 does not exist (Fetch answers it with an error and never parks; ignored here).
  EXPECT_TRUE(waiters_.Park(r, stream, {{1, 0}, {9, 123}, {1, 0}}));
  Append(stream, {1, 1});
  EXPECT_EQ(TakeRequeued(), (std::set<uint64_t>{1}));
  EXPECT_EQ(waiters_.woken_total(), 1u);
}

TEST_F(FetchWaitersTest, ExpiryLeavesTheIndexConsistent) {
  auto stream = MakeStream("s", 2);
  for (uint64_t i = 0; i < 10; ++i) {
    Request r = MakeRequest(i);
    r.deadline_ms = 100 + static_cast<int64_t>(i);
    std::vector<Watched> w = {{static_cast<uint32_t>(i % 2), 0}};
    ASSERT_TRUE(waiters_.Park(r, stream, w));
  }
  EXPECT_EQ(waiters_.NextDeadline(), 100);
  waiters_.ExpireDue(1000);  // every deadline passed (the connections are not looked at)
  EXPECT_EQ(TakeRequeued().size(), 10u);
  EXPECT_EQ(waiters_.expired_total(), 10u);
  EXPECT_EQ(waiters_.NextDeadline(), -1);
  Append(stream, {0, 1});
  EXPECT_TRUE(TakeRequeued().empty());
}

// Waiters on overlapping streamlet sets leave in random order: every one is re-queued exactly
// once, by an append to one of its own streamlets, and none is left behind.
TEST_F(FetchWaitersTest, RandomOverlappingSetsWakeEachWaiterOnceByItsOwnStreamlets) {
  auto stream = MakeStream("s", 8);
  std::mt19937 rng(42);
  std::map<uint64_t, std::set<uint32_t>> sets;
  for (uint64_t i = 0; i < 300; ++i) {
    std::vector<uint32_t> ids;
    for (uint32_t s = 0; s < 8; ++s) {
      if (rng() % 3 == 0) ids.push_back(s);
    }
    if (ids.empty()) ids.push_back(static_cast<uint32_t>(rng() % 8));
    sets[i] = std::set<uint32_t>(ids.begin(), ids.end());
    ASSERT_TRUE(Park(i, stream, ids));
  }
  std::set<uint64_t> left;
  for (const auto& [id, s] : sets) left.insert(id);
  while (!left.empty()) {
    uint32_t s = static_cast<uint32_t>(rng() % 8);
    Append(stream, {s});
    std::set<uint64_t> want;
    for (uint64_t id : left) {
      if (sets[id].contains(s)) want.insert(id);
    }
    EXPECT_EQ(TakeRequeued(), want) << "append to " << s;
    for (uint64_t id : want) left.erase(id);
    EXPECT_EQ(waiters_.size(), left.size());
  }
}

// An append races with a Park that read its generation before the append: afterwards the
// fetch was either refused or re-queued, never left parked (the no-lost-wake-up guarantee).
TEST_F(FetchWaitersTest, AnAppendRacingWithParkNeverLeavesTheFetchParked) {
  auto stream = MakeStream("s", 2);
  std::mutex mu;
  std::set<uint64_t> requeued;
  FetchWaiters waiters([&](Request r) {
    std::lock_guard<std::mutex> lock(mu);
    requeued.insert(Id(r));
  });
  constexpr int kRounds = 3000;
  std::barrier sync(2);
  std::atomic<uint64_t> spins{0};
  std::thread appender([&] {
    const uint32_t ids[] = {0};
    for (int i = 0; i < kRounds; ++i) {
      sync.arrive_and_wait();
      // A different delay each round, so the append lands before, inside and after Park.
      for (int spin = 0; spin < (i * 37) % 1000; ++spin)
        spins.fetch_add(1, std::memory_order_relaxed);
      stream->NoteAppended(0);
      waiters.Wake(stream.get(), ids);
      sync.arrive_and_wait();
    }
  });
  int parked = 0;
  for (int i = 0; i < kRounds; ++i) {
    std::vector<Watched> w = {{0, stream->streamlet_generation(0)}};
    Request r = MakeRequest(static_cast<uint64_t>(i));
    sync.arrive_and_wait();
    bool ok = waiters.Park(r, stream, std::move(w));
    sync.arrive_and_wait();
    if (ok) {
      ++parked;
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(requeued.count(static_cast<uint64_t>(i)), 1u) << "round " << i;
    }
    EXPECT_EQ(waiters.size(), 0u) << "round " << i;
  }
  appender.join();
  EXPECT_EQ(waiters.woken_total(), static_cast<uint64_t>(parked));
}

}  // namespace
}  // namespace nearstream::broker
