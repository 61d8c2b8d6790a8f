// A follower's copy in memory (streamlet_mirror.cc): after each view its readers see exactly
// what the leader's readers saw when the view was taken.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/storage/held_appends.h"
#include "nearstream/storage/streamlet.h"
#include "nearstream/testing/forwarding_env.h"
#include "nearstream/testing/test_chunks.h"

namespace nearstream::storage {

namespace {

constexpr uint32_t kSegmentBytes = 4096;

// Every chunk a reader from the earliest position gets, in reads of `max_bytes`, and where it
// then waits.
std::vector<ReadChunk> ReadAll(const Streamlet& s, uint32_t max_bytes, Position* end) {
  return storage::ReadAll(s, Position{}, max_bytes, end);
}

class StreamletMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream_mirror_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    config_.name = "mirrored";
    config_.segment_bytes = kSegmentBytes;
    config_.segments_per_group = 2;
    config_.active_groups = 3;
    config_.durability = Durability::kNone;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  void MakeStreamlets(const std::string& follower_dir = "") {
    leader_ = std::make_unique<Streamlet>(0, &config_, Env::Default(), "");
    follower_ = std::make_unique<Streamlet>(0, &config_, Env::Default(), follower_dir);
    follower_->SetMirror(true);
  }

  // Appends on the leader (published at once) and gives the follower the chunk, as the leader's
  // ReplicaAppend would: to the follower's segment file first (when it has a directory).
  Position Append(uint64_t producer, uint32_t size) {
    const Bytes chunk = MakeChunk(producer, ++sequences_[producer], size);
    auto h = ValidateChunk(chunk.data(), chunk.size());
    EXPECT_TRUE(h.ok());
    auto r = leader_->Append(chunk.data(), *h, now_ms_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!follower_->dir().empty()) {
      std::ofstream f(follower_->GroupSegmentPath(r->position.group, r->position.segment),
                      std::ios::binary | std::ios::app);
      f.write(reinterpret_cast<const char*>(chunk.data()), size);
    }
    Status m = follower_->MirrorChunk(r->position, chunk.data(), size, now_ms_);
    EXPECT_TRUE(m.ok()) << m.ToString();
    return r->position;
  }

  // The follower's broker restarts: its mirror starts empty, with the files it wrote.
  void RestartFollower(Env* env = Env::Default()) {
    follower_ = std::make_unique<Streamlet>(0, &config_, env, follower_->dir());
    follower_->SetMirror(true);
    told_ = 0;
  }

  // The view since the last one, applied; then both are read whole from the earliest position.
  void ApplyAndCompare(uint32_t max_bytes) {
    const PublishedView view = leader_->PublishedSince(told_);
    // As the follower's broker does: segments read ahead from files, then the view applied (a
    // first view is whole).
    Streamlet::MirrorLoads loaded = follower_->LoadMirrorSegments(view, told_ == 0, now_ms_);
    told_ = view.version;
    Status st = follower_->ApplyPublished(view, now_ms_, &loaded);
    ASSERT_TRUE(st.ok()) << st.ToString();
    Position leader_end, follower_end;
    const std::vector<ReadChunk> want = ReadAll(*leader_, max_bytes, &leader_end);
    const std::vector<ReadChunk> got = ReadAll(*follower_, max_bytes, &follower_end);
    ASSERT_EQ(got, want);
    EXPECT_EQ(follower_end, leader_end);
    EXPECT_EQ(follower_->tail(), leader_->tail());
  }

  std::string root_;
  StreamConfig config_;
  std::unique_ptr<Streamlet> leader_;
  std::unique_ptr<Streamlet> follower_;
  uint64_t sequences_[8] = {};
  uint64_t told_ = 0;
  int64_t now_ms_ = 1000;
};

TEST_F(StreamletMirrorTest, ReadersSeeWhatTheLeadersSawAtEveryView) {
  // Three active groups of two segments, idle closes, commits' reserved groups and retention:
  // every change readers can see, in a random order.
  config_.retention_bytes = 40000;
  MakeStreamlets();
  std::mt19937 rng(20261127);
  // Producers come and go in phases, so some active groups go idle and are closed.
  std::vector<uint64_t> producers;
  for (int step = 0; step < 3000; ++step) {
    if (step % 100 == 0) {
      producers.clear();
      for (uint64_t p = 1; p <= 5; ++p) {
        if (rng() % 2 == 0) producers.push_back(p);
      }
      if (producers.empty()) producers.push_back(1 + rng() % 5);
    }
    now_ms_ += 1 + static_cast<int64_t>(rng() % 5);
    switch (rng() % 10) {
      case 0: (void)leader_->Maintain(now_ms_, /*group_idle_close_ms=*/8); break;
      case 1:
        if (rng() % 4 == 0) leader_->DropReserved(leader_->ReserveGroup(now_ms_));
        break;
      case 2:
        if (rng() % 8 == 0) leader_->CloseActiveGroups();
        break;
      default:
        Append(producers[rng() % producers.size()], 100 + static_cast<uint32_t>(rng() % 1900));
    }
    if (rng() % 3 == 0) {
      ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(rng() % 2 == 0 ? 1u << 30 : 2500));
    }
  }
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
  // Retention ran on the leader only; the head reached the follower through the views.
  EXPECT_EQ(follower_->Describe().head, leader_->Describe().head);
  EXPECT_GT(leader_->Describe().head.group, 1u);
  EXPECT_EQ(follower_->bytes(), leader_->bytes());
}

TEST_F(StreamletMirrorTest, ReadersReadAMirrorWhileItTakesChunksAndViews) {
  // The follower's thread writes chunks past what is published and applies views while readers
  // read (run under TSan in CI): every pass sees each producer's chunks gap-free from its first.
  config_.segments_per_group = 3;
  MakeStreamlets();
  std::atomic<bool> done{false};
  std::atomic<int> passes{0};
  std::thread reader([&] {
    while (!done.load()) {
      Position end;
      std::map<uint64_t, uint64_t> last;
      bool gap = false;
      for (const ReadChunk& c : ReadAll(*follower_, 3000, &end)) {
        auto h = DecodeChunkHeader(c.bytes.data(), c.bytes.size());
        gap = !h.ok() || h->sequence != last[h->producer_id] + 1;
        EXPECT_FALSE(gap) << "at " << c.at.ToString();
        if (gap) break;
        last[h->producer_id] = h->sequence;
      }
      passes.fetch_add(gap ? 1000 : 1);
    }
  });
  std::mt19937 rng(7);
  for (int step = 0; step < 4000; ++step) {
    now_ms_ += 1;
    Append(1 + rng() % 4, 100 + static_cast<uint32_t>(rng() % 900));
    if (step % 7 == 0) {
      const PublishedView view = leader_->PublishedSince(told_);
      told_ = view.version;
      Status st = follower_->ApplyPublished(view, now_ms_);
      if (!st.ok()) {
        ADD_FAILURE() << st.ToString();  // no ASSERT: the reader thread must be joined
        break;
      }
    }
    if (step % 500 == 0) (void)leader_->Maintain(now_ms_, 1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (passes.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  done.store(true);
  reader.join();
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
}

TEST_F(StreamletMirrorTest, ChunksTheLeaderHoldsOrTakesBackNeverShow) {
  config_.active_groups = 1;
  MakeStreamlets();
  const Position first = Append(1, 1000);
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));

  // Written and held on the leader (its followers have not answered yet), copied here.
  HeldAppends held;
  const Bytes chunk = MakeChunk(1, ++sequences_[1], 1000);
  auto h = ValidateChunk(chunk.data(), chunk.size());
  ASSERT_TRUE(h.ok());
  bool flush = false;
  auto r = leader_->AppendHeld(chunk.data(), *h, now_ms_, &held, &flush);
  ASSERT_TRUE(r.ok() && !flush);
  ASSERT_TRUE(follower_->MirrorChunk(r->position, chunk.data(), 1000, now_ms_).ok());
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
  Position end;
  EXPECT_EQ(ReadAll(*follower_, 1u << 30, &end).size(), 1u);
  EXPECT_EQ(end, (Position{first.group, first.segment, 1000}));

  // Taken back (the in-sync set could not be changed): the segment takes no more chunks, and
  // the producer's retry goes to the next one, where readers on both go on.
  held.Discard(leader_.get());
  held.Release();
  --sequences_[1];
  const Position retry = Append(1, 1000);
  EXPECT_NE(retry.segment, first.segment);
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
  EXPECT_EQ(ReadAll(*follower_, 1u << 30, &end).size(), 2u);
}

TEST_F(StreamletMirrorTest, ACommittedTransactionsGroupComesFromItsFiles) {
  const std::string dir = root_ + "/follower";
  std::filesystem::create_directories(dir);
  MakeStreamlets(dir);
  Append(1, 1000);
  // A commit links a transaction's private segment into a reserved group; on the follower, the
  // commit's renames left that segment's file under the group's name.
  const uint64_t group = leader_->ReserveGroup(now_ms_);
  const uint64_t id = leader_->AllocateSegmentId();
  auto seg = Segment::Create(id, kSegmentBytes, now_ms_);
  ASSERT_TRUE(seg.ok());
  const Bytes a = MakeChunk(7, 1, 700), b = MakeChunk(7, 2, 900);
  ASSERT_TRUE((*seg)->WriteChunk(a.data(), 700, false).ok());
  ASSERT_TRUE((*seg)->WriteChunk(b.data(), 900, false).ok());
  (*seg)->Publish(1600);
  leader_->LinkReserved(group, {*seg});
  {
    std::ofstream f(follower_->GroupSegmentPath(group, id), std::ios::binary);
    f.write(reinterpret_cast<const char*>(a.data()), 700);
    f.write(reinterpret_cast<const char*>(b.data()), 900);
  }
  Append(2, 500);
  ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
  Position end;
  EXPECT_EQ(ReadAll(*follower_, 1u << 30, &end).size(), 4u);
}

TEST_F(StreamletMirrorTest, AWholeViewLoadsWhatMemoryLacksFromTheFiles) {
  // A follower that restarted (or caught up) holds the leader's chunks in its files only; the
  // first view after that names every group, and what memory lacks comes from the files, a
  // segment half written before the restart included, which then goes on in memory.
  const std::string dir = root_ + "/follower";
  std::filesystem::create_directories(dir);
  MakeStreamlets(dir);
  std::mt19937 rng(11);
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 40; ++i) Append(1 + rng() % 4, 100 + static_cast<uint32_t>(rng() % 1500));
    ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(1u << 30));
    for (int i = 0; i < 7; ++i) Append(1 + rng() % 4, 100 + static_cast<uint32_t>(rng() % 1500));
    RestartFollower();
    for (int i = 0; i < 7; ++i) Append(1 + rng() % 4, 100 + static_cast<uint32_t>(rng() % 1500));
    ASSERT_NO_FATAL_FAILURE(ApplyAndCompare(2000));
  }
}

// The real file system, with reads that wait until the test opens the gate: a large copy whose
// segments take long to read.
class GatedReadEnv final : public ForwardingEnv {
 public:
  GatedReadEnv() : ForwardingEnv(Env::Default()) {}
  Result<Bytes> ReadFile(const std::string& path) override {
    reads_.fetch_add(1);
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return ForwardingEnv::ReadFile(path);
  }

  void Open() { open_.store(true); }
  int reads() const { return reads_.load(); }

 private:
  std::atomic<bool> open_{false};
  std::atomic<int> reads_{0};
};

TEST_F(StreamletMirrorTest, AWholeViewReadsItsSegmentsFromFilesHoldingNoLock) {
  // A restarted follower's first view names every retained segment. Reading them from files
  // must hold up neither the chunks its leader sends meanwhile (the replica timeout) nor its
  // readers: LoadMirrorSegments reads them before ApplyPublished takes any lock.
  const std::string dir = root_ + "/follower";
  std::filesystem::create_directories(dir);
  config_.active_groups = 1;
  config_.segments_per_group = 3;
  MakeStreamlets(dir);
  for (int i = 0; i < 40; ++i) Append(1, 1000);  // ten segments: three closed groups and one
  GatedReadEnv env;
  RestartFollower(&env);
  const PublishedView view = leader_->PublishedSince(0);
  Streamlet::MirrorLoads loaded;
  std::thread loader([&] { loaded = follower_->LoadMirrorSegments(view, true, now_ms_); });
  while (env.reads() == 0) std::this_thread::yield();

  // While the loader waits in its first read: a chunk of a new segment comes in, and a reader
  // reads. Each in a thread of its own, so that a lock the loader held would not hang the test.
  std::atomic<bool> mirrored{false}, read{false};
  std::thread writer([&] {
    const Bytes chunk = MakeChunk(2, 1, 700);
    auto h = ValidateChunk(chunk.data(), chunk.size());
    auto r = leader_->Append(chunk.data(), *h, now_ms_);
    EXPECT_TRUE(r.ok());
    {
      std::ofstream f(follower_->GroupSegmentPath(r->position.group, r->position.segment),
                      std::ios::binary | std::ios::app);
      f.write(reinterpret_cast<const char*>(chunk.data()), 700);
    }
    EXPECT_TRUE(follower_->MirrorChunk(r->position, chunk.data(), 700, now_ms_).ok());
    mirrored.store(true);
  });
  std::thread reader([&] {
    Position end;
    EXPECT_TRUE(ReadAll(*follower_, 1u << 20, &end).empty());  // nothing published yet
    read.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(mirrored.load() && read.load()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(mirrored.load()) << "a chunk waited for the segments being read";
  EXPECT_TRUE(read.load()) << "a reader waited for the segments being read";
  env.Open();
  loader.join();
  writer.join();
  reader.join();

  // Every segment of the closed groups was read ahead; the open group's last one, which chunks
  // may still extend, is left to ApplyPublished.
  EXPECT_EQ(loaded.size(), 9u);
  const int ahead = env.reads();
  told_ = 0;
  const PublishedView now = leader_->PublishedSince(0);
  told_ = now.version;
  Status st = follower_->ApplyPublished(now, now_ms_, &loaded);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(env.reads() - ahead, 1);
  Position leader_end, follower_end;
  EXPECT_EQ(ReadAll(*follower_, 1u << 30, &follower_end), ReadAll(*leader_, 1u << 30, &leader_end));
  EXPECT_EQ(follower_end, leader_end);
}

TEST_F(StreamletMirrorTest, AViewBeyondTheCopyOrAChunkOutOfPlaceIsAnError) {
  config_.active_groups = 1;
  MakeStreamlets();
  const Position at = Append(1, 1000);
  // A chunk the follower missed: the next one does not start where its copy ends.
  const Bytes next = MakeChunk(1, 9, 800);
  EXPECT_FALSE(
      follower_->MirrorChunk(Position{at.group, at.segment, 1800}, next.data(), 800, now_ms_).ok());
  // The leader publishes bytes the copy lacks.
  const Bytes lost = MakeChunk(1, ++sequences_[1], 800);
  auto h = ValidateChunk(lost.data(), lost.size());
  ASSERT_TRUE(leader_->Append(lost.data(), *h, now_ms_).ok());
  Status st = follower_->ApplyPublished(leader_->PublishedSince(0), now_ms_);
  EXPECT_TRUE(st.IsStorageError()) << st.ToString();
}

TEST_F(StreamletMirrorTest, AMirrorRunsNoRetentionOrIdleCloseOfItsOwn) {
  config_.retention_bytes = 1;
  MakeStreamlets();
  for (uint64_t p = 1; p <= 3; ++p) Append(p, 3000);
  Append(1, 3000);  // a second segment, so the leader's retention could drop the first
  ASSERT_TRUE(follower_->ApplyPublished(leader_->PublishedSince(0), now_ms_).ok());
  const StreamletInfo before = follower_->Describe();
  EXPECT_TRUE(follower_->Maintain(now_ms_ + 100000, /*group_idle_close_ms=*/1).empty());
  const StreamletInfo after = follower_->Describe();
  ASSERT_EQ(after.groups.size(), before.groups.size());
  for (const GroupInfo& g : after.groups) EXPECT_FALSE(g.closed) << g.id;
  EXPECT_EQ(after.head, before.head);
}

}  // namespace

}  // namespace nearstream::storage
