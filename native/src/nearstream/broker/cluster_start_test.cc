// nearstreamd's cluster flags when no cluster can be joined (docs/cluster.md): ZooKeeper out of
// reach at start is a clear error after --zookeeper-timeout-ms, and wrong flags are usage errors.
// No ZooKeeper runs here: nothing listens on the port the broker is given.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "nearstream/common/clock.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

// A port of 127.0.0.1 that nothing listens on (bound, never listened, then closed).
uint16_t UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

TEST(ClusterStartTest, ZooKeeperOutOfReachFailsTheStartWithAClearError) {
  const std::string zk = "127.0.0.1:" + std::to_string(UnusedPort());
  const int64_t started = MonotonicNowMs();
  ProcessResult r = RunProcess({NEARSTREAMD_PATH, "--listen", "127.0.0.1:0", "--zookeeper", zk,
                                "--broker-id", "1", "--zookeeper-timeout-ms", "1500"},
                               "", 30000);
  const int64_t took = MonotonicNowMs() - started;
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("CLUSTER_UNAVAILABLE: cannot reach ZooKeeper at " + zk + " within 1500 ms"),
            std::string::npos)
      << Describe(r);
  EXPECT_GE(took, 1500) << "it gave up before the timeout";
  EXPECT_LT(took, 20000) << "it kept waiting long after the timeout";
}

TEST(ClusterStartTest, WrongClusterFlagsAreUsageErrors) {
  ProcessResult no_id = RunProcess({NEARSTREAMD_PATH, "--zookeeper", "127.0.0.1:2181"});
  EXPECT_EQ(no_id.exit_code, 2) << Describe(no_id);
  EXPECT_NE(no_id.err.find("--zookeeper needs --broker-id"), std::string::npos) << Describe(no_id);
  ProcessResult bad = RunProcess({NEARSTREAMD_PATH, "--listen", "127.0.0.1:0", "--zookeeper",
                                  "/just-a-root", "--broker-id", "1"});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
  EXPECT_NE(bad.err.find("--zookeeper wants host:port"), std::string::npos) << Describe(bad);
}

}  // namespace
}  // namespace nearstream::testing
