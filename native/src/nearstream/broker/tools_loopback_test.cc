// The tools against the real broker: nearstreamd on 127.0.0.1 (port 0, temp data dir), driven
// through the nearstream CLI and nearstream-perf binaries exactly as a user would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

// Parses "key=value" fields of the perf tool's RESULT line.
class ToolsLoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = TestBroker::Start();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    broker_ = std::move(b).value();
  }
  void TearDown() override {
    if (HasFailure() && broker_ != nullptr) {
      std::cerr << "broker log:\n" << broker_->log().substr(0, 8000);
    }
  }

  ProcessResult Cli(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {NEARSTREAM_CLI_PATH, "--broker", broker_->address()});
    return RunProcess(args, input, 60000);
  }

  std::unique_ptr<TestBroker> broker_;
};

TEST_F(ToolsLoopbackTest, CliCreatesProducesAndConsumesRoundTrip) {
  ProcessResult r = Cli({"create", "lines", "--streamlets", "3", "--segment-bytes", "64K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  r = Cli({"list"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), std::vector<std::string>{"lines"});

  r = Cli({"describe", "lines"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("streamlets: 3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("segment_bytes: 65536\n"), std::string::npos) << r.out;

  // 5000 distinct lines (enough to roll several 64 KiB segments), spread over the streamlets.
  std::vector<std::string> sent;
  std::string input;
  for (int i = 0; i < 5000; ++i) {
    sent.push_back("record " + std::to_string(i) + " " + std::string(i % 37, 'x'));
    input += sent.back() + "\n";
  }
  r = Cli({"produce", "lines", "--round-robin", "--batch-records", "17"}, input);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("acknowledged 5000 records"), std::string::npos) << r.out;

  r = Cli({"consume", "lines", "--from", "earliest", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> got = Lines(r.out);
  ASSERT_EQ(got.size(), sent.size());
  std::vector<std::string> sorted_sent = sent, sorted_got = got;
  std::sort(sorted_sent.begin(), sorted_sent.end());
  std::sort(sorted_got.begin(), sorted_got.end());
  EXPECT_EQ(sorted_got, sorted_sent);

  // One streamlet alone comes back in the order it was written: round robin put chunk k (17
  // records) on streamlet k mod 3.
  r = Cli({"consume", "lines", "--streamlets", "1", "--timeout-ms", "500"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> expected;
  for (size_t i = 0; i < sent.size(); ++i) {
    if ((i / 17) % 3 == 1) expected.push_back(sent[i]);
  }
  EXPECT_EQ(Lines(r.out), expected);

  r = Cli({"consume", "lines", "--streamlets", "0", "--max-records", "5"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), std::vector<std::string>(sent.begin(), sent.begin() + 5));

  r = Cli({"consume", "lines", "--from", "latest", "--timeout-ms", "300"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "");

  r = Cli({"metadata", "lines"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("streamlet 2:"), std::string::npos) << r.out;

  r = Cli({"stats"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_FALSE(r.out.empty());

  r = Cli({"delete", "lines"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli({"list"});
  EXPECT_EQ(r.out, "");
}

TEST_F(ToolsLoopbackTest, CliProduceToOneStreamletKeepsOrderFromAFile) {
  ASSERT_EQ(Cli({"create", "ordered", "--streamlets", "2"}).exit_code, 0);
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string file = dir.path() + "/input.txt";
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::to_string(i) + "\n";
  {
    std::ofstream out(file);
    out << text;
  }
  ProcessResult r = Cli({"produce", "ordered", "--file", file, "--streamlet", "1",
                         "--batch-records", "8", "--producer-id", "77"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("acknowledged 300 records in 38 chunks"), std::string::npos) << r.out;
  r = Cli({"consume", "ordered", "--streamlets", "1", "--max-records", "300"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, text);
  r = Cli({"consume", "ordered", "--streamlets", "0", "--timeout-ms", "200"});
  EXPECT_EQ(r.out, "");
}

TEST_F(ToolsLoopbackTest, CliReportsBrokerErrorsAndBadUsage) {
  ProcessResult r = Cli({"describe", "missing"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("STREAM_NOT_FOUND"), std::string::npos) << r.err;

  ASSERT_EQ(Cli({"create", "dup", "--streamlets", "1"}).exit_code, 0);
  r = Cli({"create", "dup", "--streamlets", "1"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("STREAM_EXISTS"), std::string::npos) << r.err;

  r = Cli({"create", "bad name!", "--streamlets", "1"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;

  r = Cli({"produce", "dup", "--streamlet", "5"}, "a\n");
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("STREAMLET_NOT_FOUND"), std::string::npos) << r.err;

  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"create", "x"},                                  // --streamlets missing
           {"create", "x", "--streamlets", "two"},           // not a number
           {"create", "x", "--streamlets", "1", "--bogus"},  // unknown flag
           {"consume", "x", "--from", "1:2"},                // malformed position
           {"produce", "x", "--streamlet", "0", "--round-robin"},
           {"frobnicate"}}) {
    r = Cli(bad);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << ": " << Describe(r);
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
  }
  r = Cli({"produce", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--batch-records"), std::string::npos);
}

// `describe` lists the ranges the broker's recovery found damaged (from its Stats).
TEST_F(ToolsLoopbackTest, CliDescribeListsDamagedRanges) {
  ProcessResult r =
      Cli({"create", "d", "--streamlets", "2", "--segment-bytes", "4096", "--durability", "sync"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli({"describe", "d"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("damaged_ranges: 0\n"), std::string::npos) << r.out;

  // Chunks of ~1 KB to streamlet 1: four 4 KiB segments, so segment 2 is a middle one.
  auto client = net::Client::Connect(broker_->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<storage::Position> at;
  for (int i = 0; i < 12; ++i) {
    storage::ChunkBuilder b;
    b.Add(std::string(1000, static_cast<char>('a' + i)));
    Bytes chunk = b.Finish(0, 0, i);
    net::AppendRequest req;
    req.stream = "d";
    req.entries.push_back({1, chunk.data(), static_cast<uint32_t>(chunk.size())});
    auto a = client->Append(req);
    ASSERT_TRUE(a.ok() && a->results.at(0).status == 0);
    at.push_back(a->results.at(0).position);
  }
  ASSERT_EQ(at[4].segment, 2u);
  ASSERT_GT(at[11].segment, 2u);
  broker_->Kill();
  char name[64];
  std::snprintf(name, sizeof name, "%020llu-%020llu.seg",
                static_cast<unsigned long long>(at[4].group), 2ull);
  const std::string path = broker_->data_dir() + "/streams/d/1/" + name;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open()) << path;
    f.seekp(at[4].offset + 500);
    f.put('!');
  }
  ASSERT_TRUE(broker_->Restart().ok());
  r = Cli({"describe", "d"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("damaged_ranges: 1\n"), std::string::npos) << r.out;
  const std::string line = "  streamlet 1: " + std::to_string(at[5].offset - at[4].offset) +
                           " bytes from " + at[4].ToString() + " to " + at[5].ToString() +
                           " (readers get DATA_LOSS)\n";
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
}

TEST_F(ToolsLoopbackTest, PerfProducersAndConsumerAgreeOnEveryRecord) {
  ProcessResult r = RunProcess(
      {NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "perf",         "--create",
       "--producers",        "2",        "--streamlets",     "4",        "--chunk-size", "16K",
       "--record-size",      "100",      "--duration-s",     "2",        "--consumers",  "1",
       "--inflight",         "4",        "--verify"},
      "", 120000);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::map<std::string, std::string> f = ResultFields(r.out);
  ASSERT_TRUE(f.count("producer_rps")) << r.out;
  EXPECT_GT(std::stod(f["producer_rps"]), 0) << r.out;
  EXPECT_GT(std::stod(f["producer_mbps"]), 0) << r.out;
  EXPECT_GT(std::stod(f["consumer_rps"]), 0) << r.out;
  EXPECT_GT(std::stoull(f["produced"]), 0u) << r.out;
  EXPECT_EQ(f["run_consumed"], f["produced"]) << r.out;
  EXPECT_EQ(f["verify"], "ok") << r.out;

  // A consume-only run reads the same stream back from the earliest data.
  r = RunProcess({NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "perf",
                  "--producers", "0", "--consumers", "2", "--duration-s", "5", "--records", "1000"},
                 "", 60000);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  f = ResultFields(r.out);
  EXPECT_GE(std::stoull(f["consumed"]), 1000u) << r.out;
}

// --txn-chunks: producers write transactions, up to --inflight TxnAppends in flight; what they
// count is committed, so a reader gets at least that much, and nothing stays open or prepared.
TEST_F(ToolsLoopbackTest, PerfTransactionsCommitWhatTheyCount) {
  ProcessResult r = RunProcess(
      {NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "txns",         "--create",
       "--durability",       "async",    "--producers",      "2",        "--streamlets", "2",
       "--chunk-size",       "4K",       "--duration-s",     "2",        "--txn-chunks", "3",
       "--inflight",         "4"},
      "", 120000);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::map<std::string, std::string> f = ResultFields(r.out);
  const uint64_t produced = std::stoull(f["produced"]);
  ASSERT_GT(produced, 0u) << r.out;
  r = RunProcess(
      {NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "txns", "--producers", "0",
       "--consumers", "2", "--duration-s", "5", "--records", std::to_string(produced)},
      "", 60000);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_GE(std::stoull(ResultFields(r.out)["consumed"]), produced) << r.out;
  r = RunProcess({NEARSTREAM_CLI_PATH, "--broker", broker_->address(), "txn", "list", "txns"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "") << "a transaction was left open or prepared";

  r = RunProcess({NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "txns",
                  "--txn-chunks", "3", "--rate", "1000"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("--txn-chunks"), std::string::npos) << r.err;
}

TEST_F(ToolsLoopbackTest, PerfFailsClearlyOnBadUsageAndMissingStream) {
  ProcessResult r = RunProcess({NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream",
                                "nope", "--chunk-size", "40"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  r = RunProcess({NEARSTREAM_PERF_PATH, "--broker", broker_->address(), "--stream", "nope",
                  "--duration-s", "1"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("STREAM_NOT_FOUND"), std::string::npos) << r.err;
}

TEST(TestBrokerTest, StopsAndCleansUpItsDataDirectory) {
  std::string temp_root;
  {
    auto b = TestBroker::Start();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    temp_root = std::filesystem::path((*b)->data_dir()).parent_path();
    auto client = net::Client::Connect((*b)->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    EXPECT_TRUE(client->Handshake("test").ok());
    EXPECT_EQ((*b)->Stop(), 0) << (*b)->log();
    EXPECT_FALSE((*b)->running());
  }
  EXPECT_FALSE(std::filesystem::exists(temp_root));
}

}  // namespace
}  // namespace nearstream::testing
