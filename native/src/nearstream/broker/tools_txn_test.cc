// The `nearstream txn` commands as a user runs them, against the real broker: nearstreamd on
// 127.0.0.1 (port 0, temp data dir), transactions set up with the C++ client as a producer (the
// Flink sink) would, then listed, committed and aborted through the CLI binary, and what became
// readable checked with `consume` and Fetch.
//
// Two cases stay against a scripted broker (FakeBroker) because the real one cannot be made to
// give their answers on demand: an abort that fails in the middle of abort-all (a transaction
// committed between the CLI's list and its abort, a race) and a broker clock far from the CLI's.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/fake_broker.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/test_records.h"

namespace nearstream::testing {
namespace {

using net::Opcode;
using net::TxnInfo;
using net::TxnRef;
using net::TxnState;

constexpr char kStream[] = "s";

ProcessResult RunCli(const std::string& broker, std::vector<std::string> args) {
  args.insert(args.begin(), {NEARSTREAM_CLI_PATH, "--broker", broker});
  return RunProcess(args, "", 60000);
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A transaction the test began, and what it appended.
struct Txn {
  TxnRef ref;
  std::vector<std::string> records;
  uint64_t bytes = 0;
  uint32_t chunks = 0;
};

class CliTxnTest : public ::testing::Test {
 protected:
  // Starts nearstreamd with `broker_args`, creates stream s (2 streamlets, async) and connects
  // the client.
  void Start(std::vector<std::string> broker_args = {}) {
    TestBroker::Options options;
    options.extra_args = std::move(broker_args);
    auto b = TestBroker::Start(std::move(options));
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    broker_ = std::move(b).value();
    auto c = net::Client::Connect(broker_->address());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_.emplace(std::move(c).value());
    storage::StreamConfig config;
    config.name = kStream;
    config.streamlets = 2;
    config.durability = storage::Durability::kAsync;
    ASSERT_TRUE(client_->CreateStream(config).ok());
  }
  void TearDown() override {
    if (HasFailure() && broker_ != nullptr) {
      std::cerr << "broker log:\n" << broker_->log().substr(0, 8000);
    }
  }

  ProcessResult Cli(std::vector<std::string> args) {
    return RunCli(broker_->address(), std::move(args));
  }

  // TxnInit of `id`: the reference its transactions begin from.
  TxnRef Init(const std::string& id) {
    auto init = client_->TxnInit({kStream, id, 0});
    EXPECT_TRUE(init.ok()) << init.status().ToString();
    return {kStream, id, init.ok() ? init->epoch : 0, 0};
  }

  // Begins a transaction of `producer` and appends one chunk of two records to each of
  // `streamlets`.
  Txn BeginAndAppend(const TxnRef& producer, const std::vector<uint32_t>& streamlets) {
    Txn t{producer, {}, 0, 0};
    auto serial = client_->TxnBegin(producer);
    EXPECT_TRUE(serial.ok()) << serial.status().ToString();
    if (!serial.ok()) return t;
    t.ref.serial = *serial;
    std::vector<Bytes> chunks;
    for (uint32_t streamlet : streamlets) {
      storage::ChunkBuilder b;
      for (int k = 0; k < 2; ++k) {
        t.records.push_back(producer.transactional_id + " serial " + std::to_string(*serial) +
                            " streamlet " + std::to_string(streamlet) + " record " +
                            std::to_string(k));
        b.Add(t.records.back());
      }
      chunks.push_back(b.Finish(100 + streamlet, 1, WallNowMs()));
      t.bytes += chunks.back().size();
      ++t.chunks;
    }
    net::TxnAppendRequest req{t.ref, {}};
    for (size_t i = 0; i < streamlets.size(); ++i) {
      req.entries.push_back(
          {streamlets[i], chunks[i].data(), static_cast<uint32_t>(chunks[i].size())});
    }
    auto r = client_->TxnAppend(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) {
      for (const auto& res : r->results) EXPECT_EQ(res.status, 0) << res.message;
    }
    return t;
  }

  // The line `txn list` prints for `t` in `state`, without its age (t has one chunk per
  // streamlet).
  static std::string Line(const Txn& t, const std::string& state) {
    return t.ref.transactional_id + "\tepoch " + std::to_string(t.ref.epoch) + "\tserial " +
           std::to_string(t.ref.serial) + "\t" + state + "\t" + std::to_string(t.bytes) +
           " bytes\t" + std::to_string(t.chunks) + " chunks\t" + std::to_string(t.chunks) +
           " streamlets";
  }

  // `txn list s [--prefix P]`, each line without its age, which must be under a minute (every
  // transaction here began moments ago).
  std::vector<std::string> List(const std::string& prefix = "") {
    std::vector<std::string> args = {"txn", "list", kStream};
    if (!prefix.empty()) args.insert(args.end(), {"--prefix", prefix});
    ProcessResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    std::vector<std::string> lines = Lines(r.out);
    for (std::string& line : lines) {
      const size_t age = line.rfind("\tage ");
      EXPECT_NE(age, std::string::npos) << line;
      if (age == std::string::npos) continue;
      EXPECT_EQ(line.back(), 's') << line;
      EXPECT_LT(std::stoll(line.substr(age + 5)), 60) << line;
      line.resize(age);
    }
    return lines;
  }

  // Every record a reader gets from stream s, sorted: through the CLI's consume when
  // `with_cli`, else through Fetch.
  std::vector<std::string> Readable(bool with_cli = false) {
    std::vector<std::string> got;
    if (with_cli) {
      ProcessResult r = Cli({"consume", kStream, "--from", "earliest", "--timeout-ms", "300"});
      EXPECT_EQ(r.exit_code, 0) << Describe(r);
      got = Lines(r.out);
    } else {
      for (uint32_t s = 0; s < 2; ++s) {
        for (std::string& rec : ReadAllRecords(*client_, kStream, s)) got.push_back(rec);
      }
    }
    return Sorted(got);
  }

  // `txn VERB s ID --epoch=E --serial=S`.
  static std::vector<std::string> End(const std::string& verb, const std::string& id,
                                      uint32_t epoch, uint64_t serial) {
    const std::string epoch_flag = "--epoch=" + std::to_string(epoch);
    return {"txn", verb, kStream, id, epoch_flag, "--serial=" + std::to_string(serial)};
  }
  static std::vector<std::string> End(const std::string& verb, const TxnRef& t) {
    return End(verb, t.transactional_id, t.epoch, t.serial);
  }

  // Expects exit 1 and `status` in what the CLI printed to stderr.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& status) {
    ProcessResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(status + ": "), std::string::npos) << r.err;
  }

  std::unique_ptr<TestBroker> broker_;
  std::optional<net::Client> client_;
};

// What a cancelled Flink job leaves in stream s: job-1.a prepared transaction 1 (the checkpoint
// that completed) and opened transaction 2, job-2.x holds an open one. job-2.x begins before
// job-1.a's second transaction, so the list's order is not the order of the begins.
class CliTxnScenarioTest : public CliTxnTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Start());
    const TxnRef a = Init("job-1.a");
    prepared_ = BeginAndAppend(a, {0, 1});
    ASSERT_TRUE(client_->TxnPrepare(prepared_.ref).ok());
    other_ = BeginAndAppend(Init("job-2.x"), {1});
    open_ = BeginAndAppend(a, {0, 1});
    ASSERT_EQ(prepared_.ref.serial, 1u);
    ASSERT_EQ(open_.ref.serial, 2u);
    ASSERT_EQ(other_.ref.serial, 1u);
    ASSERT_FALSE(HasFailure());
  }

  Txn prepared_, open_, other_;
};

TEST_F(CliTxnScenarioTest, ListCommitAndAbortAllEndWhatAJobLeft) {
  EXPECT_EQ(List(), (std::vector<std::string>{Line(prepared_, "prepared"), Line(open_, "open"),
                                              Line(other_, "open")}));
  EXPECT_EQ(List("job-1."),
            (std::vector<std::string>{Line(prepared_, "prepared"), Line(open_, "open")}));
  EXPECT_EQ(List("job-3."), std::vector<std::string>{});
  EXPECT_EQ(Readable(), std::vector<std::string>{}) << "nothing is committed yet";

  ProcessResult r = Cli(End("commit", prepared_.ref));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "committed transaction 'job-1.a' serial 1\n");
  EXPECT_EQ(Readable(/*with_cli=*/true), Sorted(prepared_.records));
  // A commit retried (the answer was lost) succeeds again and changes nothing.
  r = Cli(End("commit", prepared_.ref));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "committed transaction 'job-1.a' serial 1\n");
  EXPECT_EQ(List(), (std::vector<std::string>{Line(open_, "open"), Line(other_, "open")}));

  r = Cli({"txn", "abort-all", kStream, "--prefix", "job-1."});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "aborted transaction 'job-1.a' serial 2\n"
            "aborted 1 of 1 transactions of stream s with prefix 'job-1.'\n");
  EXPECT_EQ(List(), std::vector<std::string>{Line(other_, "open")});
  // The aborted transaction is gone for its producer too.
  net::TxnAppendRequest late{open_.ref, {}};
  EXPECT_EQ(client_->TxnAppend(late).status().code(), StatusCode::kTxnAborted);

  r = Cli(End("abort", other_.ref));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "aborted transaction 'job-2.x' serial 1\n");
  r = Cli(End("abort", other_.ref));  // retried
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(List(), std::vector<std::string>{});
  r = Cli({"txn", "abort-all", kStream, "--prefix", "job-"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "aborted 0 of 0 transactions of stream s with prefix 'job-'\n");

  // Only the committed transaction was ever readable.
  EXPECT_EQ(Readable(/*with_cli=*/true), Sorted(prepared_.records));
}

TEST_F(CliTxnScenarioTest, RefusalsExitOneWithTheStatusAndChangeNothing) {
  // The epoch must be the one the transaction was begun in.
  ExpectRefused(End("commit", "job-1.a", 2, 1), "TXN_FENCED");
  ExpectRefused(End("abort", "job-1.a", 2, 1), "TXN_FENCED");
  ExpectRefused(End("abort", "job-2.x", 2, 1), "TXN_FENCED");
  // A serial never begun, and an id never initialised.
  ExpectRefused(End("commit", "job-1.a", 1, 99), "TXN_NOT_FOUND");
  ExpectRefused(End("abort", "job-9.z", 1, 1), "TXN_NOT_FOUND");
  ExpectRefused({"txn", "list", "missing"}, "STREAM_NOT_FOUND");
  ExpectRefused({"txn", "abort-all", "missing", "--prefix", "job-"}, "STREAM_NOT_FOUND");
  EXPECT_EQ(List(), (std::vector<std::string>{Line(prepared_, "prepared"), Line(open_, "open"),
                                              Line(other_, "open")}));
  EXPECT_EQ(Readable(), std::vector<std::string>{});

  ProcessResult r = Cli(End("abort", prepared_.ref));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ExpectRefused(End("commit", prepared_.ref), "TXN_ABORTED");
  r = Cli(End("commit", other_.ref));  // an open one is prepared and committed at once
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ExpectRefused(End("abort", other_.ref), "INVALID_TXN_STATE");
  EXPECT_EQ(List(), std::vector<std::string>{Line(open_, "open")});
  EXPECT_EQ(Readable(), Sorted(other_.records));
}

// The maintenance thread aborts an open transaction idle for --txn-timeout-ms; a prepared one
// never expires.
TEST_F(CliTxnTest, AnIdleOpenTransactionExpiresAndAPreparedOneStays) {
  ASSERT_NO_FATAL_FAILURE(Start({"--txn-timeout-ms", "300"}));
  // A UTF-8 id comes back byte for byte.
  Txn prepared = BeginAndAppend(Init("job-\xc3\xbc.sink"), {0});
  ASSERT_TRUE(client_->TxnPrepare(prepared.ref).ok());
  const int64_t start = MonotonicNowMs();  // before the open transaction's last activity
  // Its append succeeds (BeginAndAppend checks): it is open until the timeout.
  Txn idle = BeginAndAppend(Init("job-1.idle"), {0, 1});
  ASSERT_FALSE(HasFailure());

  std::vector<std::string> lines;
  while (MonotonicNowMs() - start < 10000) {
    lines = List();
    if (lines.size() < 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int64_t expired_after = MonotonicNowMs() - start;
  EXPECT_EQ(lines, std::vector<std::string>{Line(prepared, "prepared")});
  EXPECT_GE(expired_after, 300);
  EXPECT_LT(expired_after, 5000);

  // Well past the timeout the prepared one is still there, whole: it commits.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(List(), std::vector<std::string>{Line(prepared, "prepared")});
  ExpectRefused(End("commit", idle.ref), "TXN_ABORTED");
  ProcessResult r = Cli(End("commit", prepared.ref));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Readable(), Sorted(prepared.records));
  r = Cli({"stats"});
  EXPECT_NE(r.out.find("nearstream_txn_expired_total 1\n"), std::string::npos) << r.out;
}

// ---- against a scripted broker (see the top of the file) ----------------------------------------

// Answers the CLI's Handshake and returns its next request.
FakeBroker::Request AfterHandshake(FakeBroker& b) {
  FakeBroker::Request r = b.Read();
  EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kHandshake));
  b.Respond(r, Status::Ok(), Encode(net::EncodeHandshakeResponse, net::HandshakeResponse{}));
  return b.Read();
}

// Expects a TxnList request of stream s and `prefix` and answers `transactions`.
void AnswerList(FakeBroker& b, const FakeBroker::Request& r, const std::string& prefix,
                const std::vector<TxnInfo>& transactions) {
  EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnList));
  auto list = net::DecodeTxnListRequest(r.body.data(), r.body.size());
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->stream, kStream);
  EXPECT_EQ(list->id_prefix, prefix);
  b.Respond(r, Status::Ok(),
            Encode(net::EncodeTxnListResponse, net::TxnListResponse{transactions}));
}

// The age is the CLI's clock minus the broker's started_ms, never negative.
TEST(CliTxnScriptedTest, ListAgeFollowsTheBrokerClock) {
  const int64_t hour_ago = WallNowMs() - 3600 * 1000;
  FakeBroker broker([&](FakeBroker& b) {
    AnswerList(b, AfterHandshake(b), "",
               {{"a", 3, 6, TxnState::kPrepared, 0x200000010ull, 2, 2, hour_ago},
                // A broker clock ahead of the CLI's: the age is 0, not negative.
                {"b", 4, 7, TxnState::kOpen, 121, 2, 1, WallNowMs() + 60000}});
  });
  ProcessResult r = RunCli(broker.address(), {"txn", "list", kStream});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const std::string first =
      "a\tepoch 3\tserial 6\tprepared\t8589934608 bytes\t2 chunks\t2 streamlets\tage ";
  ASSERT_EQ(lines[0].substr(0, first.size()), first) << lines[0];
  const int64_t age = std::stoll(lines[0].substr(first.size()));
  EXPECT_GE(age, 3600);
  EXPECT_LT(age, 3660);
  EXPECT_EQ(lines[0].back(), 's');
  EXPECT_EQ(lines[1], "b\tepoch 4\tserial 7\topen\t121 bytes\t2 chunks\t1 streamlets\tage 0s");
}

// abort-all aborts each listed transaction with its own epoch and serial, goes on past one it
// cannot abort (committed after the list) and then fails with that status.
TEST(CliTxnScriptedTest, AbortAllGoesOnPastAFailureAndReportsIt) {
  const std::vector<TxnInfo> listed = {
      {"job-7.a", 2, 10, TxnState::kPrepared, 1, 1, 1, 0},
      {"job-7.a", 3, 11, TxnState::kOpen, 1, 1, 1, 0},
      {"job-7.b", 1, 4, TxnState::kPrepared, 1, 1, 1, 0},
  };
  FakeBroker broker([&](FakeBroker& b) {
    AnswerList(b, AfterHandshake(b), "job-7.", listed);
    for (const TxnInfo& t : listed) {
      FakeBroker::Request r = b.Read();
      EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnAbort));
      auto got = net::DecodeTxnRef(r.body.data(), r.body.size());
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->stream, kStream);
      EXPECT_EQ(got->transactional_id, t.transactional_id);
      EXPECT_EQ(got->epoch, t.epoch);
      EXPECT_EQ(got->serial, t.serial);
      b.Respond(r, t.serial == 11 ? Status::InvalidTxnState("transaction 11 is committed")
                                  : Status::Ok());
    }
  });
  ProcessResult r = RunCli(broker.address(), {"txn", "abort-all", kStream, "--prefix", "job-7."});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{
                              "aborted transaction 'job-7.a' serial 10",
                              "aborted transaction 'job-7.b' serial 4",
                              "aborted 2 of 3 transactions of stream s with prefix 'job-7.'",
                          }));
  EXPECT_NE(r.err.find("transaction 'job-7.a' serial 11: INVALID_TXN_STATE: transaction 11 is "
                       "committed"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("INVALID_TXN_STATE: 1 transactions could not be aborted"), std::string::npos)
      << r.err;
}

// ---- usage: no broker ---------------------------------------------------------------------------

// `txn` checks its subcommand, arguments and flags before it connects: every case exits 2 against
// an address where no broker listens (a connection attempt would exit 1).
TEST(CliTxnUsageTest, BadUsageExitsTwoBeforeConnecting) {
  const std::string nowhere = "127.0.0.1:1";
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"txn"},                                                 // no subcommand
           {"txn", "frobnicate", "s"},                              // unknown subcommand
           {"txn", "list"},                                         // STREAM missing
           {"txn", "list", "s", "extra"},                           // one argument too many
           {"txn", "list", "s", "--epoch", "1"},                    // for abort and commit only
           {"txn", "list", "s", "--bogus"},                         // unknown flag
           {"txn", "abort", "s", "id"},                             // --epoch, --serial missing
           {"txn", "abort", "s", "--epoch", "1", "--serial", "1"},  // ID missing
           {"txn", "commit", "s", "id", "--epoch", "1"},            // --serial missing
           {"txn", "commit", "s", "id", "--epoch", "0", "--serial", "1"},
           {"txn", "commit", "s", "id", "--epoch", "4294967296", "--serial", "1"},
           {"txn", "abort", "s", "id", "--epoch", "1", "--serial", "0"},
           {"txn", "abort", "s", "id", "--epoch", "1", "--serial", "1", "--prefix", "p"},
           {"txn", "abort-all", "s"},                         // --prefix missing
           {"txn", "abort-all", "s", "--prefix", ""},         // would match every id
           {"txn", "abort-all", "s", "id", "--prefix", "p"},  // no ID
       }) {
    ProcessResult r = RunCli(nowhere, bad);
    std::string what;
    for (const std::string& a : bad) what += a + " ";
    EXPECT_EQ(r.exit_code, 2) << what << Describe(r);
    EXPECT_NE(r.err.find("--help"), std::string::npos) << what << r.err;
  }
  ProcessResult r = RunProcess({NEARSTREAM_CLI_PATH, "txn", "--help"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("abort-all STREAM --prefix P"), std::string::npos) << r.out;
  // The cases above mean something: a well-formed command does try the address, and fails.
  r = RunCli(nowhere, {"txn", "list", "s"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
}

}  // namespace
}  // namespace nearstream::testing
