#include "nearstream/storage/file_syncer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/testing/fault_injection_env.h"

namespace nearstream::storage {
namespace {

class FileSyncerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream_syncer_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A file of `bytes` appended bytes, none synced yet.
  std::unique_ptr<WritableFile> Written(const std::string& name, size_t bytes) {
    auto file = env_.OpenAppendable(dir_ + "/" + name);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    std::vector<uint8_t> data(bytes, 0x5a);
    EXPECT_TRUE((*file)->Append(data.data(), data.size()).ok());
    EXPECT_EQ(env_.SyncedSize(dir_ + "/" + name), 0u);
    return std::move(*file);
  }

  std::string dir_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(FileSyncerTest, DrainReturnsOnceEveryHandedFileIsSynced) {
  FileSyncer syncer("test-sync", 4);
  for (int i = 0; i < 10; ++i) {
    syncer.Hand(Written("f" + std::to_string(i), 100 + i), nullptr);
  }
  syncer.Drain();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(env_.SyncedSize(dir_ + "/f" + std::to_string(i)), 100u + i) << i;
  }
  // A crash now keeps every byte.
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/f9"), 109u);
}

TEST_F(FileSyncerTest, StoppingSyncsWhatWasHanded) {
  {
    FileSyncer syncer("test-sync", 8);
    for (int i = 0; i < 5; ++i) syncer.Hand(Written("f" + std::to_string(i), 64), nullptr);
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(env_.SyncedSize(dir_ + "/f" + std::to_string(i)), 64u);
}

TEST_F(FileSyncerTest, AFailedSyncIsReportedToItsOwnerOnly) {
  FileSyncer syncer("test-sync", 4);
  std::vector<std::string> failures;  // written on the syncer's thread, read after Drain
  std::mutex mu;
  auto report = [&](const std::string& name) {
    return [&, name](const Status& s) {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back(name + ": " + s.ToString());
    };
  };
  env_.SetSyncFailure(true);
  syncer.Hand(Written("bad", 10), report("bad"));
  syncer.Drain();
  env_.SetSyncFailure(false);
  syncer.Hand(Written("good", 10), report("good"));
  syncer.Drain();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].rfind("bad: ", 0), 0u) << failures[0];
  EXPECT_EQ(env_.SyncedSize(dir_ + "/bad"), 0u);
  EXPECT_EQ(env_.SyncedSize(dir_ + "/good"), 10u);
}

// A file whose Sync waits until the test opens its gate: a disk that flushes slowly.
class GatedFile final : public WritableFile {
 public:
  explicit GatedFile(std::atomic<bool>* open) : open_(open) {}
  Status Append(const uint8_t* /*data*/, size_t /*n*/) override { return Status::Ok(); }
  Status Truncate(uint64_t /*size*/) override { return Status::Ok(); }
  Status Sync() override {
    while (!open_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::Ok();
  }
  uint64_t size() const override { return 0; }

 private:
  std::atomic<bool>* open_;
};

TEST_F(FileSyncerTest, HandWaitsWhileMaxPendingFilesWait) {
  std::atomic<bool> gate{false};
  FileSyncer syncer("test-sync", 2);
  syncer.Hand(std::make_unique<GatedFile>(&gate), nullptr);  // being synced
  syncer.Hand(std::make_unique<GatedFile>(&gate), nullptr);  // waiting
  std::atomic<bool> third_handed{false};
  std::thread writer([&] {
    syncer.Hand(std::make_unique<GatedFile>(&gate), nullptr);
    third_handed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(third_handed.load()) << "two files wait: the third must wait for one";
  gate = true;
  writer.join();
  EXPECT_TRUE(third_handed.load());
  syncer.Drain();
}

}  // namespace
}  // namespace nearstream::storage
