// nearstreamd's cluster flags when no cluster can be joined (docs/cluster.md): ZooKeeper out of
// reach at start is a clear error after --zookeeper-timeout-ms, and wrong flags are usage errors.
// No ZooKeeper runs here: nothing listens on the port the broker is given.
#include <gtest/gtest.h>

#include <string>

#include "nearstream/common/clock.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

TEST(ClusterStartTest, ZooKeeperOutOfReachFailsTheStartWithAClearError) {
  const std::string zk = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
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
