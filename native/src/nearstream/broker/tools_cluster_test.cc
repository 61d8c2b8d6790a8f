// The nearstream CLI against a cluster of three real brokers (docs/cluster.md): a ZooKeeper
// server from the jars the zookeeper-server module assembles, three nearstreamd with
// --zookeeper, and the CLI with a bootstrap list sending each streamlet's requests to its owner.
//
// Maven builds the native module before zookeeper-server, so a clean `mvn verify` runs this
// before the jars exist: the test is skipped then (naming the directory), and runs whenever
// zookeeper-server/target/lib is there (the tsan stage of CI, a developer's tree).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/three_broker_cluster.h"

namespace nearstream::testing {
namespace {

constexpr uint32_t kStreamlets = 6;

class ToolsClusterTest : public ThreeBrokerCluster {};

TEST_F(ToolsClusterTest, CliProducesAndConsumesOverTheStreamletsBrokers) {
  ProcessResult r = Cli(brokers_[0]->address(), {"create", "orders", "--streamlets", "6"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // Where the streamlets went: every broker stores some (6 round-robin over 3).
  auto client = net::Client::Connect(brokers_[0]->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto view = client->ClusterMetadata({"orders"});
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(view->streams.size(), 1u);
  const std::vector<uint32_t> owners = view->streams[0].owners;
  ASSERT_EQ(owners.size(), kStreamlets);
  std::map<uint32_t, std::string> address_of;
  for (const net::BrokerInfo& b : view->brokers) address_of[b.id] = b.address;
  ASSERT_EQ(address_of.size(), 3u);
  for (uint32_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(std::count(owners.begin(), owners.end(), id), 2) << "broker " << id;
    EXPECT_EQ(address_of[id], brokers_[id - 1]->address());
  }

  std::vector<std::string> sent;
  std::string input;
  for (int i = 0; i < 600; ++i) {
    sent.push_back("order " + std::to_string(i));
    input += sent.back() + "\n";
  }
  r = Cli(All(), {"produce", "orders", "--round-robin", "--batch-records", "10"}, input);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("acknowledged 600 records in 60 chunks"), std::string::npos) << r.out;

  r = Cli(All(), {"consume", "orders", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> got = Lines(r.out);
  std::vector<std::string> sorted_sent = sent;
  std::sort(sorted_sent.begin(), sorted_sent.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, sorted_sent);  // every line exactly once

  // One streamlet of broker 2 alone, in the order written: chunk k went to streamlet k mod 6.
  const uint32_t of_2 =
      static_cast<uint32_t>(std::find(owners.begin(), owners.end(), 2u) - owners.begin());
  r = Cli(All(),
          {"consume", "orders", "--streamlets", std::to_string(of_2), "--max-records", "100"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> expected;
  for (size_t i = 0; i < sent.size(); ++i) {
    if ((i / 10) % kStreamlets == of_2) expected.push_back(sent[i]);
  }
  EXPECT_EQ(Lines(r.out), expected);

  // metadata asks each broker for its own streamlets and prints them all, in order.
  r = Cli(All(), {"metadata", "orders"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> heads;
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind("streamlet ", 0) == 0) heads.push_back(line.substr(0, line.find(':')));
  }
  EXPECT_EQ(heads, (std::vector<std::string>{"streamlet 0", "streamlet 1", "streamlet 2",
                                             "streamlet 3", "streamlet 4", "streamlet 5"}))
      << r.out;

  // Commands that are not per streamlet go to the first broker of the list that answers.
  const std::string refused = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  r = Cli(refused + "," + All(), {"list"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), std::vector<std::string>{"orders"});
  r = Cli(refused + "," + All(), {"consume", "orders", "--timeout-ms", "300"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out).size(), sent.size());
  r = Cli(refused, {"list"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find(refused), std::string::npos) << r.err;
}

TEST_F(ToolsClusterTest, OneBrokerAnswersNotOwnerForAnotherBrokersStreamlet) {
  ProcessResult r = Cli(brokers_[0]->address(), {"create", "clicks", "--streamlets", "6"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto client = net::Client::Connect(brokers_[0]->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto view = client->ClusterMetadata({"clicks"});
  ASSERT_TRUE(view.ok() && view->streams.size() == 1) << view.status().ToString();
  const std::vector<uint32_t>& owners = view->streams[0].owners;
  const auto other =
      std::find_if(owners.begin(), owners.end(), [](uint32_t id) { return id != 1; });
  ASSERT_NE(other, owners.end());
  const std::string streamlet = std::to_string(other - owners.begin());
  const std::string owner_address = brokers_[*other - 1]->address();

  r = Cli(brokers_[0]->address(), {"produce", "clicks", "--streamlet", streamlet}, "a\n");
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("NOT_OWNER"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(owner_address), std::string::npos) << r.err;

  r = Cli(brokers_[0]->address(), {"consume", "clicks", "--streamlets", streamlet});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("NOT_OWNER"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(owner_address), std::string::npos) << r.err;

  r = Cli(All(), {"produce", "clicks", "--streamlet", streamlet}, "a\n");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("acknowledged 1 records in 1 chunks"), std::string::npos) << r.out;
  r = Cli(All(), {"consume", "clicks", "--streamlets", streamlet, "--max-records", "1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "a\n");
}

// Transactions are per broker in a cluster: one producer's transaction over every broker is a
// part on each. `txn list` over the bootstrap list asks every broker and names the broker of
// each line, `txn commit` needs --broker-id and commits that broker's part only, and
// `txn abort-all` ends the parts left on every broker.
TEST_F(ToolsClusterTest, TxnCommandsReachEveryBrokersPart) {
  ProcessResult r = Cli(brokers_[0]->address(), {"create", "txns", "--streamlets", "6"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto any = net::Client::Connect(brokers_[0]->address());
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  auto view = any->ClusterMetadata({"txns"});
  ASSERT_TRUE(view.ok() && view->streams.size() == 1) << view.status().ToString();
  const std::vector<uint32_t> owners = view->streams[0].owners;

  // On each broker: TxnInit, TxnBegin and one chunk to one of its own streamlets; brokers 1 and
  // 2 prepare their part, broker 3's stays open.
  std::map<uint32_t, net::TxnRef> parts;
  std::map<uint32_t, uint32_t> streamlet_of;
  for (uint32_t id = 1; id <= 3; ++id) {
    auto client = net::Client::Connect(brokers_[id - 1]->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    auto init = client->TxnInit({"txns", "job-1-0", 0});
    ASSERT_TRUE(init.ok()) << init.status().ToString();
    net::TxnRef ref{"txns", "job-1-0", init->epoch, 0};
    auto serial = client->TxnBegin(ref);
    ASSERT_TRUE(serial.ok()) << serial.status().ToString();
    ref.serial = *serial;
    const auto mine = std::find(owners.begin(), owners.end(), id);
    ASSERT_NE(mine, owners.end()) << "broker " << id << " owns no streamlet";
    streamlet_of[id] = static_cast<uint32_t>(mine - owners.begin());
    storage::ChunkBuilder b;
    b.Add("part of broker " + std::to_string(id));
    const Bytes chunk = b.Finish(7, 0, WallNowMs());
    auto appended = client->TxnAppend(
        {ref, {{streamlet_of[id], chunk.data(), static_cast<uint32_t>(chunk.size())}}});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    ASSERT_EQ(appended->results[0].status, 0) << appended->results[0].message;
    if (id != 3) {
      ASSERT_TRUE(client->TxnPrepare(ref).ok());
    }
    parts[id] = ref;
  }

  r = Cli(All(), {"txn", "list", "txns"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (uint32_t id = 1; id <= 3; ++id) {
    const std::string& line = lines[id - 1];  // brokers in ascending id
    EXPECT_EQ(
        line.rfind("job-1-0\tepoch " + std::to_string(parts[id].epoch) + "\tserial " +
                       std::to_string(parts[id].serial) + "\t" + (id == 3 ? "open" : "prepared"),
                   0),
        0u)
        << line;
    EXPECT_EQ(line.substr(line.rfind('\t') + 1), "broker " + std::to_string(id)) << line;
  }

  const std::vector<std::string> commit_1 = {"txn",      "commit",
                                             "txns",     "job-1-0",
                                             "--epoch",  std::to_string(parts[1].epoch),
                                             "--serial", std::to_string(parts[1].serial)};
  r = Cli(All(), commit_1);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("give --broker-id N"), std::string::npos) << r.err;
  std::vector<std::string> to_nobody = commit_1;
  to_nobody.insert(to_nobody.end(), {"--broker-id", "9"});
  r = Cli(All(), to_nobody);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("broker 9 is not registered"), std::string::npos) << r.err;
  std::vector<std::string> to_1 = commit_1;
  to_1.insert(to_1.end(), {"--broker-id", "1"});
  r = Cli(All(), to_1);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "committed transaction 'job-1-0' serial " + std::to_string(parts[1].serial) +
                       " on broker 1\n");
  r = Cli(All(), {"consume", "txns", "--timeout-ms", "500"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), std::vector<std::string>{"part of broker 1"}) << "only broker 1's part";

  r = Cli(All(), {"txn", "abort-all", "txns", "--prefix", "job-"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("aborted 0 of 0 transactions of stream txns with prefix 'job-' on broker 1"),
            std::string::npos)
      << r.out;
  for (uint32_t id : {2u, 3u}) {
    EXPECT_NE(r.out.find("aborted transaction 'job-1-0' serial " +
                         std::to_string(parts[id].serial) + " on broker " + std::to_string(id)),
              std::string::npos)
        << r.out;
  }
  r = Cli(All(), {"txn", "list", "txns"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "");
  r = Cli(All(), {"consume", "txns", "--timeout-ms", "500"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), std::vector<std::string>{"part of broker 1"});

  // One address: that broker is the one asked, and --broker-id is refused.
  r = Cli(brokers_[0]->address(), to_1);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("leave --broker-id out"), std::string::npos) << r.err;
}

// The owner of streamlet `streamlet` of `stream`, as `broker` sees it.
uint32_t OwnerSeenBy(const std::string& broker, const std::string& stream, uint32_t streamlet) {
  auto client = net::Client::Connect(broker);
  if (!client.ok()) return UINT32_MAX;
  auto view = client->ClusterMetadata({stream});
  if (!view.ok() || view->streams.size() != 1) return UINT32_MAX;
  return view->streams[0].owners.at(streamlet);
}

// The owners of `stream`'s streamlets once every broker's view agrees (each learns of a move
// made by another broker through a ZooKeeper watch); empty when they do not within 10 s.
std::vector<uint32_t> AgreedOwners(const std::vector<std::unique_ptr<TestBroker>>& brokers,
                                   const std::string& stream) {
  const int64_t deadline = MonotonicNowMs() + 10000;
  do {
    std::vector<std::vector<uint32_t>> views;
    for (const auto& b : brokers) {
      auto client = net::Client::Connect(b->address());
      auto view = client.ok() ? client->ClusterMetadata({stream}) : client.status();
      if (view.ok() && view->streams.size() == 1) views.push_back(view->streams[0].owners);
    }
    if (views.size() == brokers.size() &&
        std::all_of(views.begin(), views.end(), [&](const auto& v) { return v == views[0]; })) {
      return views[0];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (MonotonicNowMs() < deadline);
  return {};
}

// A streamlet moved under its records: every record stays, once and in order, at the same
// positions; the old owner answers NOT_OWNER naming the new one; appends after the move go to
// the new owner. Draining a broker moves all its streamlets away the same way.
TEST_F(ToolsClusterTest, MoveAndDrainKeepEveryRecordAtItsPosition) {
  // Small segments: the copy spans many segment files.
  ProcessResult r = Cli(All(), {"create", "moves", "--streamlets", "6", "--durability", "async",
                                "--segment-bytes", "4096"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> sent;
  std::string input;
  for (int i = 0; i < 1200; ++i) {
    sent.push_back("record " + std::to_string(i) + std::string(40, 'x'));
    input += sent.back() + "\n";
  }
  r = Cli(All(), {"produce", "moves", "--round-robin", "--batch-records", "10"}, input);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  const uint32_t moved = 0;
  const uint32_t from = OwnerSeenBy(brokers_[0]->address(), "moves", moved);
  ASSERT_GE(from, 1u);
  ASSERT_LE(from, 3u);
  const uint32_t to = from % 3 + 1;
  const std::string streamlet = std::to_string(moved);
  r = Cli(brokers_[from - 1]->address(), {"metadata", "moves"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::string before = Lines(r.out).at(0);  // "streamlet 0: head ... tail ..., N groups"

  r = Cli(All(), {"move", "moves", streamlet, "--to", std::to_string(to)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "moved streamlet 0 of stream moves from broker " + std::to_string(from) +
                       " to broker " + std::to_string(to) + "\n");
  EXPECT_EQ(OwnerSeenBy(brokers_[to - 1]->address(), "moves", moved), to);
  // The same head, tail and groups on the new owner: positions stay valid.
  r = Cli(brokers_[to - 1]->address(), {"metadata", "moves"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find(before), std::string::npos) << before << "\nnot in\n" << r.out;
  // The old owner learns of the move through its watch, then names the new owner.
  const int64_t deadline = MonotonicNowMs() + 10000;
  do {
    r = Cli(brokers_[from - 1]->address(), {"consume", "moves", "--streamlets", streamlet});
  } while (r.exit_code == 0 && MonotonicNowMs() < deadline);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("NOT_OWNER"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(brokers_[to - 1]->address()), std::string::npos) << r.err;

  // Every record once; streamlet 0 in the order written (chunk k went to streamlet k mod 6).
  r = Cli(All(), {"consume", "moves", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> got = Lines(r.out);
  std::vector<std::string> sorted_sent = sent;
  std::sort(sorted_sent.begin(), sorted_sent.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, sorted_sent);
  r = Cli(All(), {"consume", "moves", "--streamlets", streamlet, "--max-records", "200"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> expected;
  for (size_t i = 0; i < sent.size(); ++i) {
    if ((i / 10) % 6 == moved) expected.push_back(sent[i]);
  }
  EXPECT_EQ(Lines(r.out), expected);

  // Appends go to the new owner; a move to the owner itself is refused.
  r = Cli(All(), {"produce", "moves", "--streamlet", streamlet}, "after the move\n");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(brokers_[to - 1]->address(),
          {"consume", "moves", "--streamlets", streamlet, "--max-records", "201"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out).back(), "after the move");
  r = Cli(All(), {"move", "moves", streamlet, "--to", std::to_string(to)});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("is on broker " + std::to_string(to) + " already"), std::string::npos)
      << r.err;

  // Draining a broker leaves it nothing, and every record is still there once.
  const uint32_t drained = to % 3 + 1;
  std::vector<uint32_t> owners = AgreedOwners(brokers_, "moves");
  ASSERT_EQ(owners.size(), 6u) << "the brokers' views do not agree";
  const size_t its = static_cast<size_t>(std::count(owners.begin(), owners.end(), drained));
  ASSERT_GT(its, 0u);
  r = Cli(All(), {"drain", "--broker-id", std::to_string(drained)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("drained broker " + std::to_string(drained) + ": " + std::to_string(its) +
                       " streamlets moved, 0 failed"),
            std::string::npos)
      << r.out;
  owners = AgreedOwners(brokers_, "moves");
  ASSERT_EQ(owners.size(), 6u) << "the brokers' views do not agree";
  EXPECT_EQ(std::count(owners.begin(), owners.end(), drained), 0) << "broker " << drained;
  r = Cli(All(), {"consume", "moves", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  got = Lines(r.out);
  sorted_sent.emplace_back("after the move");
  std::sort(sorted_sent.begin(), sorted_sent.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, sorted_sent);

  // An open transaction holding a chunk of the streamlet on its owner defers the move (its part
  // could not follow): meanwhile no other transaction starts a part there, while plain appends
  // and the holder's own go on; once the holder commits, the streamlet moves with its records.
  const std::vector<uint32_t> before_txn = AgreedOwners(brokers_, "moves");
  ASSERT_EQ(before_txn.size(), 6u) << "the brokers' views do not agree";
  const uint32_t txn_owner = before_txn[moved];
  const uint32_t txn_target = txn_owner % 3 + 1;
  auto owner_client = net::Client::Connect(brokers_[txn_owner - 1]->address());
  ASSERT_TRUE(owner_client.ok()) << owner_client.status().ToString();
  auto begin = [&](const std::string& id) {
    auto init = owner_client->TxnInit({"moves", id, 0});
    EXPECT_TRUE(init.ok()) << init.status().ToString();
    net::TxnRef ref{"moves", id, init.ok() ? init->epoch : 0, 0};
    auto serial = owner_client->TxnBegin(ref);
    EXPECT_TRUE(serial.ok()) << serial.status().ToString();
    ref.serial = serial.ok() ? *serial : 0;
    return ref;
  };
  auto txn_append = [&](const net::TxnRef& ref, const std::string& record, uint64_t sequence) {
    storage::ChunkBuilder b;
    b.Add(record);
    const Bytes chunk = b.Finish(9, sequence, WallNowMs());
    auto appended = owner_client->TxnAppend(
        {ref, {{moved, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
    return appended.ok() ? static_cast<StatusCode>(appended->results[0].status)
                         : appended.status().code();
  };
  const net::TxnRef holder = begin("job-1-0");
  ASSERT_EQ(txn_append(holder, "in a transaction", 0), StatusCode::kOk);
  ProcessResult moved_out;
  std::thread mover([&] {
    moved_out = Cli(All(), {"move", "moves", streamlet, "--to", std::to_string(txn_target)});
  });
  // New transactions until one is refused: one that got in before the move began is aborted,
  // so that it holds nothing.
  StatusCode refused = StatusCode::kOk;
  for (int k = 0; k < 500 && refused != StatusCode::kStreamletMoving; ++k) {
    const net::TxnRef newcomer = begin("job-2-" + std::to_string(k));
    refused = txn_append(newcomer, "a new transaction", 0);
    if (refused != StatusCode::kStreamletMoving) {
      EXPECT_TRUE(owner_client->TxnAbort(newcomer).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_EQ(refused, StatusCode::kStreamletMoving);
  r = Cli(brokers_[txn_owner - 1]->address(), {"produce", "moves", "--streamlet", streamlet},
          "while the transaction ends\n");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(txn_append(holder, "in a transaction too", 1), StatusCode::kOk);
  EXPECT_TRUE(owner_client->TxnPrepare(holder).ok());
  EXPECT_TRUE(owner_client->TxnCommit(holder).ok());
  mover.join();
  ASSERT_EQ(moved_out.exit_code, 0) << Describe(moved_out);
  const std::vector<uint32_t> after_txn = AgreedOwners(brokers_, "moves");
  ASSERT_EQ(after_txn.size(), 6u) << "the brokers' views do not agree";
  EXPECT_EQ(after_txn[moved], txn_target);
  r = Cli(All(), {"consume", "moves", "--streamlets", streamlet, "--timeout-ms", "500"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<std::string> last = Lines(r.out);
  ASSERT_GE(last.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(last.end() - 3, last.end()),
            (std::vector<std::string>{"while the transaction ends", "in a transaction",
                                      "in a transaction too"}));

  // A memory-only stream's chunks live in its broker's memory alone: it does not move.
  r = Cli(All(), {"create", "in-memory", "--streamlets", "1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const uint32_t memory_owner = OwnerSeenBy(brokers_[0]->address(), "in-memory", 0);
  r = Cli(All(), {"move", "in-memory", "0", "--to", std::to_string(memory_owner % 3 + 1)});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("memory-only"), std::string::npos) << r.err;
}

// The controller every running broker names, once they agree on one other than `gone`
// (kNoController when they do not within 20 s).
uint32_t AgreedController(const std::vector<std::unique_ptr<TestBroker>>& brokers,
                          uint32_t gone = net::kNoController) {
  const int64_t deadline = MonotonicNowMs() + 20000;
  while (MonotonicNowMs() < deadline) {
    std::set<uint32_t> named;
    for (const auto& b : brokers) {
      if (!b->running()) continue;
      auto client = net::Client::Connect(b->address());
      auto view = client.ok() ? client->ClusterMetadata() : client.status();
      named.insert(view.ok() ? view->controller_id : net::kNoController);
    }
    if (named.size() == 1 && *named.begin() != net::kNoController && *named.begin() != gone) {
      return *named.begin();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return net::kNoController;
}

// Who owns the streamlets of `stream`, as broker `address` sees it.
std::vector<uint32_t> OwnersOf(const std::string& address, const std::string& stream) {
  auto client = net::Client::Connect(address);
  auto view = client.ok() ? client->ClusterMetadata({stream}) : client.status();
  if (!view.ok() || view->streams.size() != 1) return {};
  return view->streams[0].owners;
}

// A gauge of broker `address`'s Stats; UINT64_MAX when it has none.
uint64_t StatOf(const std::string& address, const std::string& name) {
  auto client = net::Client::Connect(address);
  auto stats = client.ok() ? client->Stats() : client.status();
  if (!stats.ok()) return UINT64_MAX;
  for (const auto& [key, value] : stats->values) {
    if (key == name) return value;
  }
  return UINT64_MAX;
}

// The streamlets of `owners` that `broker` stores, as "1,4".
std::string StreamletsOf(const std::vector<uint32_t>& owners, uint32_t broker) {
  std::string out;
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] == broker) out += (out.empty() ? "" : ",") + std::to_string(i);
  }
  return out;
}

TEST_F(ToolsClusterTest, TheControllerMakesCreatesAndDeletesAndAnotherTakesOverWhenItGoes) {
  // Broker 1 started first on an empty ZooKeeper: it won the first election.
  const uint32_t first = AgreedController(brokers_);
  ASSERT_EQ(first, 1u);
  EXPECT_NE(brokers_[0]->log().find("broker 1 is the controller (epoch 1)"), std::string::npos);
  ProcessResult r = Cli(brokers_[2]->address(), {"cluster"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("controller: broker 1\n"), std::string::npos) << r.out;
  // Exactly one broker counts itself the controller (as Kafka's ActiveControllerCount).
  for (uint32_t id = 1; id <= 3; ++id) {
    const std::string& at = brokers_[id - 1]->address();
    EXPECT_EQ(StatOf(at, "nearstream_cluster_controller"), id == 1 ? 1u : 0u) << id;
    EXPECT_EQ(StatOf(at, "nearstream_cluster_zookeeper_connected"), 1u) << id;
    EXPECT_EQ(StatOf(at, "nearstream_cluster_brokers"), 3u) << id;
  }

  // A create sent to broker 3 is forwarded to the controller, which places it over all three.
  r = Cli(brokers_[2]->address(), {"create", "c1", "--streamlets", "6"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<uint32_t> owners = OwnersOf(brokers_[2]->address(), "c1");
  ASSERT_EQ(owners.size(), kStreamlets);
  for (uint32_t id = 1; id <= 3; ++id) EXPECT_EQ(std::count(owners.begin(), owners.end(), id), 2);
  const std::string c1_of_1 = StreamletsOf(owners, 1);
  // A forwarded request is never forwarded again: a broker that is not the controller refuses
  // it (retriable), the controller makes it.
  storage::StreamConfig config;
  config.name = "c-forwarded";
  config.streamlets = 3;
  auto to_3 = net::Client::Connect(brokers_[2]->address());
  ASSERT_TRUE(to_3.ok());
  to_3->set_forwarding(true);
  Status refused = to_3->CreateStream(config);
  EXPECT_TRUE(refused.IsClusterUnavailable()) << refused.ToString();
  EXPECT_NE(refused.ToString().find("broker 3 is not the controller (broker 1 is)"),
            std::string::npos)
      << refused.ToString();
  auto to_1 = net::Client::Connect(brokers_[0]->address());
  ASSERT_TRUE(to_1.ok());
  to_1->set_forwarding(true);
  ASSERT_TRUE(to_1->CreateStream(config).ok());
  to_1->Close();
  const std::string forwarded_of_1 = StreamletsOf(OwnersOf(brokers_[0]->address(), config.name), 1);

  // The controller stops (its session closes): another is elected in a new epoch, and creates
  // and deletes through any broker go on, placed over the brokers that remain.
  brokers_[0]->Stop();
  const uint32_t second = AgreedController(brokers_, first);
  ASSERT_TRUE(second == 2 || second == 3) << second;
  EXPECT_NE(brokers_[second - 1]->log().find("broker " + std::to_string(second) +
                                             " is the controller (epoch 2)"),
            std::string::npos)
      << brokers_[second - 1]->log();
  const uint32_t other = second == 2 ? 3 : 2;
  const std::string via = brokers_[other - 1]->address();
  EXPECT_EQ(StatOf(brokers_[second - 1]->address(), "nearstream_cluster_controller"), 1u);
  EXPECT_EQ(StatOf(via, "nearstream_cluster_controller"), 0u);
  r = Cli(via, {"create", "c2", "--streamlets", "6"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  owners = OwnersOf(via, "c2");
  ASSERT_EQ(owners.size(), kStreamlets);
  EXPECT_EQ(std::count(owners.begin(), owners.end(), 2u), 3);
  EXPECT_EQ(std::count(owners.begin(), owners.end(), 3u), 3);
  r = Cli(via, {"delete", "c1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(via, {"list"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{"c-forwarded", "c2"}));
  // The new controller reports what the lost broker took with it (c1 was not deleted yet).
  EXPECT_NE(brokers_[second - 1]->log().find("controller: broker 1 is not registered; 3 "
                                             "streamlets are unavailable until it returns: "
                                             "c-forwarded[" +
                                             forwarded_of_1 + "] c1[" + c1_of_1 + "]"),
            std::string::npos)
      << brokers_[second - 1]->log();

  // Killed, the controller keeps its node until its session times out (2 s): a create meanwhile
  // is refused as retriable, naming it, and succeeds once the last broker took over.
  brokers_[second - 1]->Kill();
  auto client = net::Client::Connect(via);
  ASSERT_TRUE(client.ok());
  config.name = "c3";
  Status created = client->CreateStream(config);
  const int64_t deadline = MonotonicNowMs() + 20000;
  bool named_the_dead_controller = false;
  while (!created.ok() && MonotonicNowMs() < deadline) {
    ASSERT_TRUE(created.IsClusterUnavailable()) << created.ToString();
    if (created.ToString().find("the controller, broker " + std::to_string(second)) !=
        std::string::npos) {
      named_the_dead_controller = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    created = client->CreateStream(config);
  }
  ASSERT_TRUE(created.ok()) << created.ToString();
  EXPECT_TRUE(named_the_dead_controller);
  EXPECT_EQ(AgreedController(brokers_, second), other);
  EXPECT_EQ(OwnersOf(via, "c3"), (std::vector<uint32_t>{other, other, other}));
}

TEST_F(ToolsClusterTest, AControllerWhoseEpochMovedOnChangesNothingAndIsElectedAgain) {
  ASSERT_EQ(AgreedController(brokers_), 1u);
  // Another party writes a newer controller epoch while broker 1 still holds /controller, as a
  // controller elected behind broker 1's back would have.
  zhandle_t* zh = zookeeper_init(("127.0.0.1:" + std::to_string(zookeeper_->port())).c_str(),
                                 nullptr, 10000, nullptr, nullptr, 0);
  ASSERT_NE(zh, nullptr);
  const int64_t connect_deadline = MonotonicNowMs() + 10000;
  while (zoo_state(zh) != ZOO_CONNECTED_STATE && MonotonicNowMs() < connect_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string newer = "format=1\nbroker=99\nepoch=7\n";
  ASSERT_EQ(
      zoo_set(zh, "/nearstream/controller_epoch", newer.data(), static_cast<int>(newer.size()), -1),
      ZOK);
  zookeeper_close(zh);

  // Its next create finds the epoch moved: nothing is created, the client hears a retriable
  // refusal; broker 1 then gives the role up and is elected again in epoch 8.
  auto client = net::Client::Connect(brokers_[0]->address());
  ASSERT_TRUE(client.ok());
  storage::StreamConfig config;
  config.name = "fenced";
  config.streamlets = 3;
  Status refused = client->CreateStream(config);
  EXPECT_TRUE(refused.IsClusterUnavailable()) << refused.ToString();
  EXPECT_NE(refused.ToString().find("broker 1 is no longer the controller"), std::string::npos)
      << refused.ToString();
  ProcessResult r = Cli(brokers_[1]->address(), {"list"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "") << "the fenced create made the stream";

  Status created = client->CreateStream(config);
  const int64_t deadline = MonotonicNowMs() + 20000;
  while (!created.ok() && MonotonicNowMs() < deadline) {
    ASSERT_TRUE(created.IsClusterUnavailable()) << created.ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    created = client->CreateStream(config);
  }
  ASSERT_TRUE(created.ok()) << created.ToString();
  const uint32_t controller = AgreedController(brokers_);
  ASSERT_NE(controller, net::kNoController);
  EXPECT_NE(brokers_[controller - 1]->log().find("is the controller (epoch 8)"), std::string::npos)
      << brokers_[controller - 1]->log();
}

// `nearstream produce` keeps writing a streamlet that moves under it, back and forth: its
// chunks refused with STREAMLET_MOVING or NOT_OWNER go again, to the new owner, and every line
// is stored once, streamlet 0's in the order written.
TEST_F(ToolsClusterTest, ProduceFollowsAStreamletMovedUnderIt) {
  ProcessResult r = Cli(All(), {"create", "follow", "--streamlets", "1", "--durability", "async"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> sent;
  std::string input;
  for (int i = 0; i < 30000; ++i) {
    sent.push_back("line " + std::to_string(i));
    input += sent.back() + "\n";
  }
  std::atomic<bool> done{false};
  ProcessResult produced;
  std::thread producer([&] {
    produced =
        Cli(All(), {"produce", "follow", "--batch-records", "1", "--producer-id", "5"}, input);
    done = true;
  });
  // Once it writes, move the streamlet three times.
  while (!done) {
    r = Cli(All(), {"metadata", "follow"});
    if (r.out.find("0 groups") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int move = 0; move < 3; ++move) {
    const uint32_t from = OwnerSeenBy(brokers_[0]->address(), "follow", 0);
    const uint32_t to = from % 3 + 1;
    r = Cli(All(), {"move", "follow", "0", "--to", std::to_string(to)});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ASSERT_EQ(AgreedOwners(brokers_, "follow"), std::vector<uint32_t>{to});
  }
  const bool overlapped = !done;
  producer.join();
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  ASSERT_TRUE(overlapped) << "produce ended before the third move: give it more lines";
  r = Cli(All(), {"consume", "follow", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), sent);
}

// A second broker with a registered broker's id waits for that registration to go (it may be
// the id's previous process, whose session has not expired) and then refuses to start.
TEST_F(ToolsClusterTest, ABrokerIdThatIsTakenRefusesTheStart) {
  const int64_t started = MonotonicNowMs();
  ProcessResult r = RunProcess({NEARSTREAMD_PATH, "--listen", "127.0.0.1:0", "--zookeeper",
                                "127.0.0.1:" + std::to_string(zookeeper_->port()) + "/nearstream",
                                "--broker-id", "2", "--zookeeper-session-ms", "2000"},
                               "", 60000);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("broker id 2 is registered by another live broker"), std::string::npos)
      << Describe(r);
  EXPECT_GE(MonotonicNowMs() - started, 4000) << "it did not wait two session timeouts";
  // The broker that holds the id still serves.
  EXPECT_EQ(Cli(brokers_[1]->address(), {"list"}).exit_code, 0);
}

}  // namespace
}  // namespace nearstream::testing
