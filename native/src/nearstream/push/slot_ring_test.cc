#include "nearstream/push/slot_ring.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "nearstream/push/futex.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::push {
namespace {

using nearstream::testing::TempDir;
using namespace std::chrono_literals;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kStressSlots = 1'000'000;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr uint64_t kStressSlots = 1'000'000;
#else
constexpr uint64_t kStressSlots = 4'000'000;
#endif
#else
constexpr uint64_t kStressSlots = 4'000'000;
#endif

std::unique_ptr<ShmRegion> MakeRegion(const TempDir& dir, RegionGeometry g,
                                      const std::string& name = "region") {
  ShmRegion::CreateOptions o;
  o.dir = dir.path();
  o.name = name;
  o.geometry = g;
  auto r = ShmRegion::Create(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// A slot's content is a pure function of its position, so the consumer can check every byte.
uint32_t WordsFor(uint64_t position) { return static_cast<uint32_t>(position % 7) + 1; }

SlotLayout FillSlot(uint8_t* payload, uint64_t position) {
  const uint32_t words = WordsFor(position);
  for (uint32_t i = 0; i < words; ++i) {
    const uint64_t v = position * 31 + i;
    std::memcpy(payload + 8 * i, &v, 8);
  }
  SlotLayout l;
  l.row_count = static_cast<uint32_t>(position);
  l.chunk_count = static_cast<uint32_t>(position >> 32) + 1;
  l.data_offset = 0;
  l.data_length = words * 8;
  l.payload_length = words * 8;
  return l;
}

// Returns an empty string when the slot is the one FillSlot wrote for `position`.
std::string CheckSlot(const RingConsumer::Slot& s, uint64_t position) {
  if (s.position != position) {
    return "got position " + std::to_string(s.position) + ", expected " + std::to_string(position);
  }
  const uint32_t words = WordsFor(position);
  if (s.layout.row_count != static_cast<uint32_t>(position) ||
      s.layout.payload_length != words * 8 || s.layout.data_length != words * 8 ||
      s.layout.chunk_count != static_cast<uint32_t>(position >> 32) + 1) {
    return "descriptor of position " + std::to_string(position) + " is wrong";
  }
  for (uint32_t i = 0; i < words; ++i) {
    uint64_t v;
    std::memcpy(&v, s.payload + 8 * i, 8);
    if (v != position * 31 + i) return "payload of position " + std::to_string(position);
  }
  return "";
}

// ---- futex ----

TEST(PushFutexTest, WaitReturnsAtOnceWhenTheValueDiffers) {
  alignas(64) uint32_t word = 5;
  auto r = FutexWait(&word, 4, 1s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, FutexWaitResult::kValueChanged);
}

TEST(PushFutexTest, WaitTimesOut) {
  alignas(64) uint32_t word = 0;
  const auto start = std::chrono::steady_clock::now();
  auto r = FutexWait(&word, 0, 20ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, FutexWaitResult::kTimedOut);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 19ms);
}

TEST(PushFutexTest, WakeWithNobodyWaitingWakesNobody) {
  alignas(64) uint32_t word = 0;
  auto r = FutexWake(&word, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0);
}

TEST(PushFutexTest, DoorbellWakesASleeperAcrossThreads) {
  alignas(64) uint32_t bell = 0;
  alignas(64) uint32_t flag = 0;
  std::atomic<bool> condition{false};
  std::thread sleeper([&] {
    auto out = AwaitDoorbell(
        &bell, &flag, [&] { return condition.load(std::memory_order_acquire); }, 10, 10s);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(out->ready);
  });
  // Let the sleeper get past its spins, announce itself and (almost surely) enter FUTEX_WAIT; a
  // 10 s wait that returns promptly proves the wake-up either way.
  while (std::atomic_ref<uint32_t>(flag).load() == 0) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);
  const auto start = std::chrono::steady_clock::now();
  condition.store(true, std::memory_order_release);
  ASSERT_TRUE(RingDoorbell(&bell, &flag).ok());
  sleeper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(std::atomic_ref<uint32_t>(flag).load(), 0u);
  EXPECT_EQ(std::atomic_ref<uint32_t>(bell).load(), 1u);
}

TEST(PushFutexTest, DoorbellWaitTimesOutWhenNothingHappens) {
  alignas(64) uint32_t bell = 0;
  alignas(64) uint32_t flag = 0;
  auto out = AwaitDoorbell(
      &bell, &flag, [] { return false; }, 10, 20ms);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->ready);
  EXPECT_EQ(flag, 0u);
}

// ---- the ring, one thread ----

TEST(SlotRingTest, FullRingIsReportedNotWaitedOn) {
  TempDir dir;
  auto region = MakeRegion(dir, {1, 4, 64});
  RingProducer producer(region.get(), 0);
  producer.Activate(3, MonotonicNowNs());
  auto consumer = RingConsumer::Attach(region.get(), 0, MonotonicNowNs());
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  EXPECT_EQ(region->ring(0)->subtask_index, 3u);
  EXPECT_FALSE(consumer->TryNext().has_value());

  for (uint64_t p = 0; p < 4; ++p) {
    uint8_t* payload = producer.TryClaim();
    ASSERT_NE(payload, nullptr);
    EXPECT_EQ(producer.TryClaim(), payload);  // claiming again returns the same slot
    ASSERT_TRUE(producer.Publish(FillSlot(payload, p)).ok());
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(producer.TryClaim(), nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(region->ring(0)->published, 4u);
  EXPECT_EQ(region->ring(0)->data_doorbell, 4u);

  // Reading does not free a slot; releasing does.
  auto s0 = consumer->TryNext();
  ASSERT_TRUE(s0.has_value());
  EXPECT_EQ(CheckSlot(*s0, 0), "");
  EXPECT_EQ(producer.TryClaim(), nullptr);
  ASSERT_TRUE(consumer->Release(s0->position).ok());
  EXPECT_EQ(region->header()->release_doorbell, 1u);
  EXPECT_EQ(region->ring(0)->released, 1u);
  EXPECT_EQ(region->descriptor(0, 0)->sequence, 4u);
  EXPECT_NE(producer.TryClaim(), nullptr);
}

TEST(SlotRingTest, SequenceWordsFollowTheProtocolOverLaps) {
  TempDir dir;
  constexpr uint32_t kSlots = 3;
  auto region = MakeRegion(dir, {2, kSlots, 128});
  RingProducer producer(region.get(), 1);
  producer.Activate(0, MonotonicNowNs());
  auto consumer = RingConsumer::Attach(region.get(), 1, MonotonicNowNs());
  ASSERT_TRUE(consumer.ok());
  for (uint64_t p = 0; p < 10 * kSlots; ++p) {
    const uint32_t slot = p % kSlots;
    EXPECT_EQ(region->descriptor(1, slot)->sequence, p);  // free for p
    ASSERT_TRUE(producer.Publish(FillSlot(producer.TryClaim(), p)).ok());
    EXPECT_EQ(region->descriptor(1, slot)->sequence, p + 1);  // published
    auto s = consumer->TryNext();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(CheckSlot(*s, p), "");
    ASSERT_TRUE(consumer->Release(s->position).ok());
    EXPECT_EQ(region->descriptor(1, slot)->sequence, p + kSlots);  // released
  }
  // Ring 0 was never touched.
  EXPECT_EQ(region->descriptor(0, 0)->sequence, 0u);
}

TEST(SlotRingTest, SlotsMayBeReleasedOutOfOrder) {
  TempDir dir;
  auto region = MakeRegion(dir, {1, 4, 64});
  RingProducer producer(region.get(), 0);
  producer.Activate(0, MonotonicNowNs());
  auto consumer = RingConsumer::Attach(region.get(), 0, MonotonicNowNs());
  ASSERT_TRUE(consumer.ok());
  for (uint64_t p = 0; p < 4; ++p)
    ASSERT_TRUE(producer.Publish(FillSlot(producer.TryClaim(), p)).ok());
  std::vector<RingConsumer::Slot> held;
  while (auto s = consumer->TryNext()) held.push_back(*s);
  ASSERT_EQ(held.size(), 4u);
  ASSERT_TRUE(consumer->Release(held[1].position).ok());
  EXPECT_EQ(producer.TryClaim(), nullptr);  // position 4 needs slot 0, still held
  ASSERT_TRUE(consumer->Release(held[0].position).ok());
  ASSERT_NE(producer.TryClaim(), nullptr);
  ASSERT_TRUE(producer.Publish(FillSlot(producer.TryClaim(), 4)).ok());
  ASSERT_NE(producer.TryClaim(), nullptr);  // position 5 -> slot 1, released first
}

TEST(SlotRingTest, AttachRequiresAnActiveRing) {
  TempDir dir;
  auto region = MakeRegion(dir, {2, 2, 64});
  EXPECT_FALSE(RingConsumer::Attach(region.get(), 0, 1).ok());
  EXPECT_FALSE(RingConsumer::Attach(region.get(), 2, 1).ok());
}

// ---- the ring, two threads ----

// Millions of slots through an 8-slot ring: every slot arrives once, in order, intact. The
// consumer holds up to 3 slots and releases them newest first; both sides sleep on the doorbells
// when they outrun each other (the machine has 2 shared cores), so wake-ups are exercised too.
TEST(SlotRingTest, ProducerAndConsumerThreadsOverManyLaps) {
  TempDir dir;
  auto region = MakeRegion(dir, {1, 8, 64});
  RingProducer producer(region.get(), 0);
  producer.Activate(0, MonotonicNowNs());
  auto attached = RingConsumer::Attach(region.get(), 0, MonotonicNowNs());
  ASSERT_TRUE(attached.ok());
  RingConsumer consumer = std::move(attached).value();

  std::atomic<bool> failed{false};
  uint32_t producer_sleeps = 0;
  std::thread producer_thread([&] {
    for (uint64_t p = 0; p < kStressSlots && !failed.load(std::memory_order_relaxed); ++p) {
      uint8_t* payload;
      while ((payload = producer.TryClaim()) == nullptr) {
        // The push thread's sleep when its rings are full (PushManager::Sleep).
        auto out = AwaitDoorbell(
            &region->header()->release_doorbell, &region->header()->broker_waiting,
            [&] { return producer.TryClaim() != nullptr; }, /*spins=*/200, 1s);
        if (!out.ok()) {
          failed = true;
          return;
        }
        producer_sleeps += out->sleeps;
      }
      if (!producer.Publish(FillSlot(payload, p)).ok()) failed = true;
    }
  });

  std::string error;
  uint32_t consumer_sleeps = 0;
  std::vector<uint64_t> held;
  uint64_t expected = 0;
  while (expected < kStressSlots && error.empty()) {
    auto s = consumer.TryNext();
    if (!s) {
      if (!held.empty()) {  // never sit on slots while waiting
        for (auto it = held.rbegin(); it != held.rend(); ++it) (void)consumer.Release(*it);
        held.clear();
        continue;
      }
      auto out = consumer.Wait(1s, /*spins=*/200);
      if (!out.ok() || (!out->ready && failed.load())) {
        error = "consumer wait failed";
        break;
      }
      consumer_sleeps += out->sleeps;
      continue;
    }
    error = CheckSlot(*s, expected);
    ++expected;
    held.push_back(s->position);
    if (held.size() == 3) {
      for (auto it = held.rbegin(); it != held.rend(); ++it) (void)consumer.Release(*it);
      held.clear();
    }
  }
  for (uint64_t p : held) (void)consumer.Release(p);
  producer_thread.join();
  ASSERT_EQ(error, "");
  ASSERT_FALSE(failed.load());
  EXPECT_EQ(expected, kStressSlots);
  EXPECT_FALSE(consumer.TryNext().has_value());  // nothing duplicated at the end
  EXPECT_EQ(region->ring(0)->published, kStressSlots);
  EXPECT_EQ(region->ring(0)->released, kStressSlots);
  std::printf("%llu slots, producer futex sleeps %u, consumer futex sleeps %u\n",
              static_cast<unsigned long long>(kStressSlots), producer_sleeps, consumer_sleeps);
}

// ---- two processes ----

// Broker in the parent, consumer in a forked child that maps the region by path: both sides go
// to sleep on the shared futexes and are woken by the other process.
TEST(SlotRingTest, FutexWakeAcrossProcesses) {
  TempDir dir;
  auto region = MakeRegion(dir, {1, 2, 64}, "xproc");
  ASSERT_NE(region, nullptr);
  RingProducer producer(region.get(), 0);
  producer.Activate(0, MonotonicNowNs());
  constexpr uint64_t kSlots = 200;
  const std::string path = region->path();

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: no gtest assertions, just an exit code.
    auto mapped = ShmRegion::Open(path);
    if (!mapped.ok()) _exit(10);
    auto consumer = RingConsumer::Attach(mapped->get(), 0, MonotonicNowNs());
    if (!consumer.ok()) _exit(11);
    uint32_t sleeps = 0;
    for (uint64_t p = 0; p < kSlots; ++p) {
      auto out = consumer->Wait(5s, /*spins=*/10);
      if (!out.ok() || !out->ready) _exit(12);
      sleeps += out->sleeps;
      auto s = consumer->TryNext();
      if (!s || !CheckSlot(*s, p).empty()) _exit(13);
      // Dawdle on the first slots so the parent finds the ring full and sleeps too.
      if (p < 4) usleep(30'000);
      if (!consumer->Release(s->position).ok()) _exit(14);
    }
    _exit(sleeps > 0 ? 0 : 15);
  }

  usleep(50'000);  // the child sleeps on the data doorbell before anything is published
  uint32_t parent_sleeps = 0;
  bool ok = true;
  for (uint64_t p = 0; p < kSlots && ok; ++p) {
    // A few more pauses, so the child surely finds nothing published and goes to sleep.
    if (p % 50 == 25) usleep(30'000);
    while (producer.TryClaim() == nullptr) {
      auto out = AwaitDoorbell(
          &region->header()->release_doorbell, &region->header()->broker_waiting,
          [&] { return producer.TryClaim() != nullptr; }, 10, 5s);
      if (!out.ok() || !out->ready) {
        ok = false;
        break;
      }
      parent_sleeps += out->sleeps;
    }
    if (ok) ok = producer.Publish(FillSlot(producer.TryClaim(), p)).ok();
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child failed";
  EXPECT_GT(parent_sleeps, 0u);
  EXPECT_EQ(region->ring(0)->released, kSlots);
}

// ---- liveness ----

TEST(SlotRingTest, StaleConsumerRingIsReclaimedAndReused) {
  TempDir dir;
  constexpr uint32_t kSlots = 4;
  std::string path;
  {
    auto region = MakeRegion(dir, {2, kSlots, 64});
    path = region->path();
    RingProducer producer(region.get(), 0);
    const uint64_t t0 = 1'000'000'000;
    producer.Activate(5, t0);
    EXPECT_EQ(region->ring(0)->generation, 1u);
    auto old = RingConsumer::Attach(region.get(), 0, t0);
    ASSERT_TRUE(old.ok());
    for (uint64_t p = 0; p < 6; ++p) {
      ASSERT_TRUE(producer.Publish(FillSlot(producer.TryClaim(), p)).ok());
      auto s = old->TryNext();
      ASSERT_TRUE(s.has_value());
      if (p < 5) {
        ASSERT_TRUE(old->Release(s->position).ok());  // holds position 5
      }
    }
    old->Heartbeat(t0 + 1'000'000'000);
    EXPECT_FALSE(producer.ConsumerStale(t0 + 2'000'000'000, 3'000'000'000));
    EXPECT_TRUE(producer.ConsumerStale(t0 + 5'000'000'000, 3'000'000'000));

    producer.Reclaim();
    EXPECT_EQ(region->ring(0)->state, NS_SHM_RING_RECLAIMED);
    EXPECT_TRUE(old->Detached());
    EXPECT_FALSE(RingConsumer::Attach(region.get(), 0, t0).ok());
    // The next lap starts on a multiple of N beyond anything the old consumer can store.
    const uint64_t base = region->ring(0)->base_position;
    EXPECT_EQ(base % kSlots, 0u);
    EXPECT_GE(base, 6u + kSlots);
    for (uint32_t s = 0; s < kSlots; ++s) EXPECT_EQ(region->descriptor(0, s)->sequence, base + s);
    EXPECT_EQ(producer.position(), base);

    producer.Activate(6, t0 + 5'000'000'000);
    EXPECT_EQ(region->ring(0)->generation, 2u);
    EXPECT_EQ(region->ring(0)->subtask_index, 6u);
    EXPECT_EQ(region->ring(0)->published, 0u);
    auto fresh = RingConsumer::Attach(region.get(), 0, t0 + 5'000'000'000);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(fresh->position(), base);
    // The old consumer, late, releases the slot it held: no publication is faked.
    ASSERT_TRUE(old->Release(5).ok());
    EXPECT_FALSE(fresh->TryNext().has_value());
    // The release above stored 5 + N into slot 1, which now waits for base + 1: it stays
    // blocked (documented), but slot 0 and every other slot flow lap after lap.
    EXPECT_EQ(region->descriptor(0, 1)->sequence, 5u + kSlots);
    region->descriptor(0, 1)->sequence = base + 1;  // undo, to check the rest of the ring
    for (uint64_t p = base; p < base + 5 * kSlots; ++p) {
      ASSERT_TRUE(producer.Publish(FillSlot(producer.TryClaim(), p)).ok());
      auto s = fresh->TryNext();
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(CheckSlot(*s, p), "");
      ASSERT_TRUE(fresh->Release(s->position).ok());
    }
    EXPECT_FALSE(fresh->Detached());
    // Ring 1 is unaffected.
    EXPECT_EQ(region->ring(1)->state, NS_SHM_RING_FREE);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace nearstream::push
