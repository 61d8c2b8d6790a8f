#include "nearstream/push/shm_region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "nearstream/testing/test_broker_process.h"

namespace nearstream::push {
namespace {

using nearstream::testing::TempDir;

bool DirIsEmpty(const std::string& dir) { return std::filesystem::is_empty(dir); }

ShmRegion::CreateOptions Options(const std::string& dir, const std::string& name) {
  ShmRegion::CreateOptions o;
  o.dir = dir;
  o.name = name;
  o.geometry = RegionGeometry{3, 4, 4096};
  o.broker_epoch = 77;
  return o;
}

TEST(ShmRegionTest, CreateInitializesHeaderAndRings) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto region = ShmRegion::Create(Options(dir.path(), "r1"));
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  ShmRegion& r = **region;
  struct stat st;
  ASSERT_EQ(stat(r.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(uint64_t(st.st_size), r.geometry().region_bytes());

  const ns_shm_region_header* h = r.header();
  EXPECT_EQ(h->magic, NS_SHM_MAGIC);
  EXPECT_EQ(h->layout_version, NS_SHM_LAYOUT_VERSION);
  EXPECT_EQ(h->header_bytes, 4096u);
  EXPECT_EQ(h->ring_count, 3u);
  EXPECT_EQ(h->slots_per_ring, 4u);
  EXPECT_EQ(h->slot_bytes, 4096u);
  EXPECT_EQ(h->descriptor_bytes, 128u);
  EXPECT_EQ(h->ring_header_bytes, 256u);
  EXPECT_EQ(h->payload_offset, 4096u);
  EXPECT_EQ(h->ring_stride, 4096u + 4 * 4096u);
  EXPECT_EQ(h->region_bytes, 4096u + 3 * (4096u + 4 * 4096u));
  EXPECT_EQ(h->broker_epoch, 77u);
  EXPECT_GT(h->broker_heartbeat_ns, 0u);
  EXPECT_EQ(h->region_state, NS_SHM_REGION_OPEN);
  EXPECT_EQ(h->release_doorbell, 0u);
  EXPECT_EQ(h->broker_waiting, 0u);
  for (uint32_t ring = 0; ring < 3; ++ring) {
    EXPECT_EQ(r.ring(ring)->ring_id, ring);
    EXPECT_EQ(r.ring(ring)->state, NS_SHM_RING_FREE);
    for (uint32_t s = 0; s < 4; ++s) {
      EXPECT_EQ(r.descriptor(ring, s)->sequence, s);
      // The C helpers and the object agree on every address.
      EXPECT_EQ(reinterpret_cast<uint8_t*>(r.descriptor(ring, s)),
                reinterpret_cast<uint8_t*>(ns_shm_descriptor(r.base(), ring, s)));
      EXPECT_EQ(r.payload(ring, s), ns_shm_slot_payload(r.base(), ring, s));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(r.payload(ring, s)) % 4096, 0u);
    }
    EXPECT_EQ(reinterpret_cast<uint8_t*>(r.ring(ring)),
              reinterpret_cast<uint8_t*>(ns_shm_ring(r.base(), ring)));
  }
  // The last payload ends inside the region.
  EXPECT_LE(r.payload(2, 3) + 4096, r.base() + r.size());
}

TEST(ShmRegionTest, OpenSeesTheSameMemoryAndValidates) {
  TempDir dir;
  auto created = ShmRegion::Create(Options(dir.path(), "r2"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto opened = ShmRegion::Open((*created)->path());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_FALSE((*opened)->owner());
  EXPECT_EQ((*opened)->geometry().ring_count, 3u);
  EXPECT_EQ((*opened)->broker_epoch(), 77u);
  (*created)->payload(1, 2)[17] = 0x5A;
  (*created)->SetBrokerHeartbeat(123456789);
  EXPECT_EQ((*opened)->payload(1, 2)[17], 0x5A);
  EXPECT_EQ((*opened)->broker_heartbeat_ns(), 123456789u);
  (*created)->MarkClosed();
  EXPECT_EQ((*opened)->region_state(), NS_SHM_REGION_CLOSED);
  // A consumer's mapping does not unlink the file.
  opened->reset();
  EXPECT_TRUE(std::filesystem::exists((*created)->path()));
}

TEST(ShmRegionTest, CloseUnlinksAndLeavesNothingBehind) {
  TempDir dir;
  std::string path;
  {
    auto region = ShmRegion::Create(Options(dir.path(), "r3"));
    ASSERT_TRUE(region.ok());
    path = (*region)->path();
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(DirIsEmpty(dir.path()));
}

TEST(ShmRegionTest, UnlinkKeepsTheMappingUsable) {
  TempDir dir;
  auto region = ShmRegion::Create(Options(dir.path(), "r4"));
  ASSERT_TRUE(region.ok());
  auto opened = ShmRegion::Open((*region)->path());
  ASSERT_TRUE(opened.ok());
  ASSERT_TRUE((*region)->Unlink().ok());
  ASSERT_TRUE((*region)->Unlink().ok());  // idempotent
  EXPECT_TRUE(DirIsEmpty(dir.path()));
  (*region)->payload(0, 0)[0] = 9;
  EXPECT_EQ((*opened)->payload(0, 0)[0], 9);
  EXPECT_FALSE(ShmRegion::Open((*region)->path()).ok());
}

TEST(ShmRegionTest, CreateRefusesAnExistingFileAndBadNames) {
  TempDir dir;
  auto first = ShmRegion::Create(Options(dir.path(), "r5"));
  ASSERT_TRUE(first.ok());
  auto second = ShmRegion::Create(Options(dir.path(), "r5"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_NE(second.status().message().find("File exists"), std::string::npos)
      << second.status().ToString();
  // The failed attempt must not have removed the first region's file.
  EXPECT_TRUE(std::filesystem::exists((*first)->path()));
  EXPECT_FALSE(ShmRegion::Create(Options(dir.path(), "")).ok());
  EXPECT_FALSE(ShmRegion::Create(Options(dir.path(), "a/b")).ok());
  auto bad = Options(dir.path(), "r6");
  bad.geometry.slot_bytes = 100;
  EXPECT_EQ(ShmRegion::Create(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/r6"));
  EXPECT_FALSE(ShmRegion::Create(Options(dir.path() + "/missing", "r7")).ok());
}

TEST(ShmRegionTest, OpenRejectsWhatIsNotAValidRegion) {
  TempDir dir;
  EXPECT_EQ(ShmRegion::Open(dir.path() + "/absent").status().code(), StatusCode::kIoError);

  // Too short (a region still being created looks like this).
  const std::string empty = dir.path() + "/empty";
  int fd = open(empty.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_FALSE(ShmRegion::Open(empty).ok());

  auto region = ShmRegion::Create(Options(dir.path(), "r8"));
  ASSERT_TRUE(region.ok());
  ns_shm_region_header* h = (*region)->header();
  auto expect_rejected = [&](StatusCode code) {
    auto opened = ShmRegion::Open((*region)->path());
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), code) << opened.status().ToString();
  };
  h->magic = 0;
  expect_rejected(StatusCode::kInvalidArgument);
  h->magic = NS_SHM_MAGIC;
  h->layout_version = NS_SHM_LAYOUT_VERSION + 1;
  expect_rejected(StatusCode::kUnsupportedVersion);
  h->layout_version = 1;  // before marker slots: a consumer must not read these as batches
  expect_rejected(StatusCode::kUnsupportedVersion);
  h->layout_version = NS_SHM_LAYOUT_VERSION;
  h->ring_count = 4;  // region_bytes and the file size no longer agree
  expect_rejected(StatusCode::kInvalidArgument);
  h->ring_count = 3;
  h->ring_stride += 4096;
  expect_rejected(StatusCode::kInvalidArgument);
  h->ring_stride -= 4096;
  h->descriptor_bytes = 64;
  expect_rejected(StatusCode::kInvalidArgument);
  h->descriptor_bytes = 128;
  EXPECT_TRUE(ShmRegion::Open((*region)->path()).ok());
}

// The production directory, when this machine has a writable one.
TEST(ShmRegionTest, DevShmCreateOpenAndCleanup) {
  if (access(kDefaultShmDir, W_OK) != 0) GTEST_SKIP() << "/dev/shm is not writable here";
  const std::string name = "nearstream-test-" + std::to_string(getpid()) + "-region";
  ShmRegion::CreateOptions o;
  o.name = name;
  o.geometry = RegionGeometry{2, 8, 64 * 1024};
  std::string path;
  {
    auto region = ShmRegion::Create(o);
    ASSERT_TRUE(region.ok()) << region.status().ToString();
    path = (*region)->path();
    EXPECT_EQ(path, std::string(kDefaultShmDir) + "/" + name);
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto opened = ShmRegion::Open(path);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    (*region)->payload(1, 7)[100] = 42;
    EXPECT_EQ((*opened)->payload(1, 7)[100], 42);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace nearstream::push
