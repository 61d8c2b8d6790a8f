// PosixEnv's DetachFile: the name goes at once, the blocks when the result is destroyed (a
// follower's retention removes files under a lock its replication waits for, and frees them
// after it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "nearstream/storage/env.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::storage {
namespace {

class PosixEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(temp_.ok()); }

  // Descriptors of this process open on `target` (as /proc names it: a removed file's path
  // ends in " (deleted)").
  static int DescriptorsOn(const std::string& target) {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      const std::string read = std::filesystem::read_symlink(entry.path(), ec).string();
      if (!ec && read == target) ++count;
    }
    return count;
  }

  nearstream::testing::TempDir temp_{"posix-env"};
  Env* env_ = Env::Default();
  const std::string dir_ = temp_.path();
};

TEST_F(PosixEnvTest, ADetachedFileLosesItsNameAtOnceAndItsDataWhenReleased) {
  const std::string path = dir_ + "/0-1.seg";
  auto file = env_->OpenAppendable(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const std::vector<uint8_t> data(1 << 20, 0x5a);
  ASSERT_TRUE((*file)->Append(data.data(), data.size()).ok());
  file->reset();

  auto detached = env_->DetachFile(path);
  ASSERT_TRUE(detached.ok()) << detached.status().ToString();
  ASSERT_NE(*detached, nullptr);
  EXPECT_FALSE(env_->Exists(path));
  auto names = env_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
  // The data lives on behind a descriptor until the result goes: that is where the blocks are
  // freed (a plain unlink frees them before it returns).
  EXPECT_EQ(DescriptorsOn(path + " (deleted)"), 1);
  detached->reset();
  EXPECT_EQ(DescriptorsOn(path + " (deleted)"), 0);
}

TEST_F(PosixEnvTest, DetachingAMissingFileSucceedsWithNothingToRelease) {
  auto detached = env_->DetachFile(dir_ + "/absent.seg");
  ASSERT_TRUE(detached.ok()) << detached.status().ToString();
  EXPECT_EQ(*detached, nullptr);
}

TEST_F(PosixEnvTest, DetachingADirectoryFailsWithAStorageErrorThatNamesIt) {
  const std::string sub = dir_ + "/group";
  ASSERT_TRUE(env_->CreateDirs(sub).ok());
  auto detached = env_->DetachFile(sub);
  ASSERT_FALSE(detached.ok());
  EXPECT_EQ(detached.status().code(), StatusCode::kStorageError);
  EXPECT_NE(detached.status().message().find(sub), std::string::npos)
      << detached.status().ToString();
  EXPECT_TRUE(env_->Exists(sub));
  EXPECT_EQ(DescriptorsOn(sub), 0) << "the descriptor opened to detach it stayed open";
}

}  // namespace
}  // namespace nearstream::storage
