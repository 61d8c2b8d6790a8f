#include "nearstream/storage/segment_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "nearstream/storage/segment.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::storage {
namespace {

namespace fs = std::filesystem;

// Maps `path` read-only as a push consumer does.
const uint8_t* MapReadOnly(const std::string& path, size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<const uint8_t*>(p);
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0;
}

TEST(SegmentFilesTest, ASegmentInAFileIsReadableThroughAnotherMapping) {
  testing::TempDir dir("nearstream-segment-files");
  ASSERT_TRUE(dir.ok());
  auto files = std::make_shared<SegmentFiles>(dir.path(), "nearstream-seg-1-");
  Result<std::shared_ptr<Segment>> seg = Segment::Create(9, 8192, 0, files);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  const uint64_t n = (*seg)->file_number();
  ASSERT_EQ(n, 1u);
  const std::string path = files->PathOf(n);
  EXPECT_EQ(path, dir.path() + "/nearstream-seg-1-1");
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(fs::file_size(path), 8192u);

  const uint8_t* view = MapReadOnly(path, 8192);
  ASSERT_NE(view, nullptr);
  std::memcpy((*seg)->mutable_data() + 100, "hello", 5);
  EXPECT_EQ(std::memcmp(view + 100, "hello", 5), 0);  // the same pages
  ::munmap(const_cast<uint8_t*>(view), 8192);
  EXPECT_EQ(files->files_created(), 1u);
}

TEST(SegmentFilesTest, ADroppedSegmentsFileIsReusedUnderItsNameOnlyForTheSameSize) {
  testing::TempDir dir("nearstream-segment-files");
  ASSERT_TRUE(dir.ok());
  auto files = std::make_shared<SegmentFiles>(dir.path(), "p-");
  auto a = Segment::Create(1, 8192, 0, files);
  ASSERT_TRUE(a.ok());
  const uint64_t first = (*a)->file_number();
  a->reset();  // dropped: its file waits for the next segment of its size
  EXPECT_TRUE(fs::exists(files->PathOf(first)));
  auto other_size = Segment::Create(2, 16384, 0, files);
  ASSERT_TRUE(other_size.ok());
  EXPECT_NE((*other_size)->file_number(), first);
  auto b = Segment::Create(3, 8192, 0, files);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->file_number(), first);
  EXPECT_EQ(files->files_created(), 2u);

  // At shutdown every name goes; the mappings stay valid for whoever holds them.
  files->UnlinkAll();
  EXPECT_FALSE(fs::exists(files->PathOf(first)));
  std::memcpy((*b)->mutable_data(), "still mapped", 12);
  EXPECT_EQ(std::memcmp((*b)->data(), "still mapped", 12), 0);
}

TEST(SegmentFilesTest, IdleFilesBeyondTheBoundAreUnlinked) {
  testing::TempDir dir("nearstream-segment-files");
  ASSERT_TRUE(dir.ok());
  constexpr uint32_t kBytes = 8192;
  auto files = std::make_shared<SegmentFiles>(dir.path(), "p-", 4 * kBytes);
  std::vector<std::shared_ptr<Segment>> segs;
  for (uint64_t i = 0; i < 6; ++i) {
    auto s = Segment::Create(i, kBytes, 0, files);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    segs.push_back(*s);
  }
  segs.clear();
  size_t left = 0;
  for (uint64_t n = 1; n <= 6; ++n) left += fs::exists(files->PathOf(n)) ? 1 : 0;
  EXPECT_EQ(left, 4u);
}

TEST(SegmentFilesTest, WithoutAFileASegmentFallsBackToPrivateMemory) {
  // A directory that does not exist stands in for a full or read-only tmpfs.
  auto files = std::make_shared<SegmentFiles>("/nonexistent-nearstream-dir", "p-");
  Result<std::shared_ptr<Segment>> seg = Segment::Create(1, 8192, 0, files);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_EQ((*seg)->file_number(), 0u);
  EXPECT_EQ(files->create_failures(), 1u);
  std::memcpy((*seg)->mutable_data(), "ok", 2);  // usable memory all the same
}

}  // namespace
}  // namespace nearstream::storage
