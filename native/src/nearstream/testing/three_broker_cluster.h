// A test fixture of a broker cluster over real processes: a ZooKeeper server (test_zookeeper_
// process.h) and three nearstreamd with --zookeeper (ids 1, 2, 3; a 2 s session, so a killed
// broker's session ends within seconds), each with a data directory of its own, and the CLI.
// Skips when ZooKeeper's jars are not built yet (see test_zookeeper_process.h).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/test_zookeeper_process.h"

namespace nearstream::testing {

class ThreeBrokerCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string lib = ZooKeeperLib();
    if (!std::filesystem::is_directory(lib)) {
      GTEST_SKIP() << "no ZooKeeper jars in " << lib
                   << " (built by 'mvn -pl zookeeper-server package', after the native module)";
    }
    const std::string java = FindJava();
    if (java.empty())
      GTEST_FAIL() << "the ZooKeeper jars are in " << lib << " but no java is found";
    zookeeper_ = std::make_unique<ZooKeeperProcess>();
    Status zk = zookeeper_->Start(java, lib);
    ASSERT_TRUE(zk.ok()) << zk.ToString();
    for (int id = 1; id <= 3; ++id) {
      TestBroker::Options options;
      options.extra_args = {"--zookeeper",
                            "127.0.0.1:" + std::to_string(zookeeper_->port()) + "/nearstream",
                            "--broker-id",
                            std::to_string(id),
                            "--zookeeper-session-ms",
                            "2000"};
      options.extra_args.insert(options.extra_args.end(), extra_broker_args_.begin(),
                                extra_broker_args_.end());
      if (auto env = broker_env_.find(id); env != broker_env_.end()) options.env = env->second;
      auto b = TestBroker::Start(options);
      ASSERT_TRUE(b.ok()) << "broker " << id << ": " << b.status().ToString();
      brokers_.push_back(std::move(b).value());
    }
    // A broker learns of the others through a ZooKeeper watch, and CreateStream places the
    // streamlets over the brokers it knows: wait until each knows all three.
    for (const auto& b : brokers_) {
      const int64_t deadline = MonotonicNowMs() + 20000;
      size_t known = 0;
      while (known != brokers_.size() && MonotonicNowMs() < deadline) {
        auto client = net::Client::Connect(b->address());
        auto view = client.ok() ? client->ClusterMetadata() : client.status();
        known = view.ok() ? view->brokers.size() : 0;
        if (known != brokers_.size()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ASSERT_EQ(known, brokers_.size()) << b->address() << " does not see every broker";
    }
  }
  void TearDown() override {
    if (HasFailure()) {
      for (size_t i = 0; i < brokers_.size(); ++i) {
        std::cerr << "broker " << i + 1 << " log:\n" << brokers_[i]->log().substr(0, 6000);
      }
    }
    brokers_.clear();  // before ZooKeeper
    zookeeper_.reset();
  }

  // The bootstrap list of every broker.
  std::string All() const {
    std::string out;
    for (const auto& b : brokers_) out += (out.empty() ? "" : ",") + b->address();
    return out;
  }

  static ProcessResult Cli(const std::string& broker, std::vector<std::string> args,
                           const std::string& input = "") {
    args.insert(args.begin(), {NEARSTREAM_CLI_PATH, "--broker", broker});
    return RunProcess(args, input, 90000);
  }

  std::unique_ptr<ZooKeeperProcess> zookeeper_;
  std::vector<std::unique_ptr<TestBroker>> brokers_;
  std::vector<std::string> extra_broker_args_;  // more flags for every broker, set before SetUp
  // Environment entries ("NAME=value") of broker `id`, set before SetUp.
  std::map<int, std::vector<std::string>> broker_env_;
};

}  // namespace nearstream::testing
