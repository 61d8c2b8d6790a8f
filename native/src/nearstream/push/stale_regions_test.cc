#include "nearstream/push/stale_regions.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nearstream/testing/test_broker_process.h"

namespace nearstream::push {
namespace {

namespace fs = std::filesystem;

// A pid that surely names no process: a child that has exited and been reaped.
long DeadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

void Touch(const fs::path& p) { std::ofstream(p) << "x"; }

TEST(StaleRegionsTest, RemovesOnlyRegionsOfDeadBrokers) {
  char tmpl[] = "/tmp/ns-stale-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const long dead = DeadPid();
  const std::string of_dead = RegionName(dead, 3);
  const std::string of_self = RegionName(::getpid(), 1);
  const std::string of_parent = RegionName(::getppid(), 2);  // alive, not us
  for (const std::string& n : {of_dead, of_self, of_parent, std::string("nearstream-push-x-1"),
                               std::string("other-file")}) {
    Touch(dir / n);
  }

  std::vector<std::string> removed = RemoveRegionsOfDeadBrokers(dir.string());

  EXPECT_EQ(removed, std::vector<std::string>{of_dead});
  EXPECT_FALSE(fs::exists(dir / of_dead));
  EXPECT_TRUE(fs::exists(dir / of_self));
  EXPECT_TRUE(fs::exists(dir / of_parent));
  EXPECT_TRUE(fs::exists(dir / "nearstream-push-x-1"));
  EXPECT_TRUE(fs::exists(dir / "other-file"));
  EXPECT_TRUE(RemoveRegionsOfDeadBrokers((dir / "missing").string()).empty());
  fs::remove_all(dir);
}

TEST(StaleRegionsTest, RemovesTheSegmentFilesOfDeadBrokersToo) {
  testing::TempDir temp("ns-stale");
  ASSERT_TRUE(temp.ok());
  const fs::path dir = temp.path();
  const long dead = DeadPid();
  const std::string of_dead = SegmentFilePrefix(dead) + "17";
  const std::string of_self = SegmentFilePrefix(::getpid()) + "1";
  EXPECT_EQ(of_self, "nearstream-seg-" + std::to_string(::getpid()) + "-1");
  for (const std::string& n : {of_dead, of_self, std::string("nearstream-seg--5")}) {
    Touch(dir / n);
  }

  std::vector<std::string> removed = RemoveRegionsOfDeadBrokers(dir.string());

  EXPECT_EQ(removed, std::vector<std::string>{of_dead});
  EXPECT_TRUE(fs::exists(dir / of_self));
  EXPECT_TRUE(fs::exists(dir / "nearstream-seg--5"));
}

}  // namespace
}  // namespace nearstream::push
