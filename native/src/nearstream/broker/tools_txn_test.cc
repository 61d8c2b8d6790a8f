// The `nearstream txn` commands as a user runs them, against a scripted broker (FakeBroker): the
// script checks the exact requests the CLI sends and answers what a broker would, so the output,
// the abort-all loop and the exit codes are tested without a broker that serves transactions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/protocol.h"
#include "nearstream/testing/fake_broker.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

using net::Opcode;
using net::TxnInfo;
using net::TxnRef;
using net::TxnState;

ProcessResult Cli(const std::string& broker, std::vector<std::string> args) {
  args.insert(args.begin(), {NEARSTREAM_CLI_PATH, "--broker", broker});
  return RunProcess(args, "", 60000);
}

// Answers the CLI's Handshake and returns its next request.
FakeBroker::Request AfterHandshake(FakeBroker& b) {
  FakeBroker::Request r = b.Read();
  EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kHandshake));
  b.Respond(r, Status::Ok(), Encode(net::EncodeHandshakeResponse, net::HandshakeResponse{}));
  return b.Read();
}

// Expects a TxnList request of `stream` and `prefix` and answers `transactions`.
void AnswerList(FakeBroker& b, const FakeBroker::Request& r, const std::string& stream,
                const std::string& prefix, const std::vector<TxnInfo>& transactions) {
  EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnList));
  auto list = net::DecodeTxnListRequest(r.body.data(), r.body.size());
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->stream, stream);
  EXPECT_EQ(list->id_prefix, prefix);
  b.Respond(r, Status::Ok(),
            Encode(net::EncodeTxnListResponse, net::TxnListResponse{transactions}));
}

// Expects a TxnAbort or TxnCommit of exactly `want`.
void ExpectTxnRef(const FakeBroker::Request& r, Opcode opcode, const TxnRef& want) {
  EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(opcode));
  auto got = net::DecodeTxnRef(r.body.data(), r.body.size());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->stream, want.stream);
  EXPECT_EQ(got->transactional_id, want.transactional_id);
  EXPECT_EQ(got->epoch, want.epoch);
  EXPECT_EQ(got->serial, want.serial);
}

TEST(CliTxnTest, ListPrintsOneTabSeparatedLinePerTransaction) {
  const int64_t hour_ago = WallNowMs() - 3600 * 1000;
  FakeBroker broker([&](FakeBroker& b) {
    AnswerList(b, AfterHandshake(b), "s", "job-42.",
               {{"job-42.sink 3", 3, 6, TxnState::kPrepared, 0x200000010ull, 2, 2, hour_ago},
                // A broker clock ahead of the CLI's: the age is 0, not negative.
                {"job-42.sink-\xc3\xbc", 4, 7, TxnState::kOpen, 121, 2, 1, WallNowMs() + 60000}});
  });
  ProcessResult r = Cli(broker.address(), {"txn", "list", "s", "--prefix", "job-42."});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const std::string first =
      "job-42.sink 3\tepoch 3\tserial 6\tprepared\t8589934608 bytes\t2 chunks\t2 streamlets\tage ";
  ASSERT_EQ(lines[0].substr(0, first.size()), first) << lines[0];
  const int64_t age = std::stoll(lines[0].substr(first.size()));
  EXPECT_GE(age, 3600);
  EXPECT_LT(age, 3660);
  EXPECT_EQ(lines[0].back(), 's');
  EXPECT_EQ(
      lines[1],
      "job-42.sink-\xc3\xbc\tepoch 4\tserial 7\topen\t121 bytes\t2 chunks\t1 streamlets\tage 0s");
}

TEST(CliTxnTest, ListWithoutPrefixAsksForEveryId) {
  FakeBroker broker([&](FakeBroker& b) { AnswerList(b, AfterHandshake(b), "s", "", {}); });
  ProcessResult r = Cli(broker.address(), {"txn", "list", "s"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "");
}

TEST(CliTxnTest, CommitAndAbortSendTheTransactionGiven) {
  const TxnRef txn{"s", "job-42.sink-3", 3, 0x100000006ull};
  {
    FakeBroker broker([&](FakeBroker& b) {
      FakeBroker::Request r = AfterHandshake(b);
      ExpectTxnRef(r, Opcode::kTxnCommit, txn);
      b.Respond(r, Status::Ok());
    });
    ProcessResult r = Cli(broker.address(), {"txn", "commit", "s", "job-42.sink-3", "--epoch", "3",
                                             "--serial", "4294967302"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "committed transaction 'job-42.sink-3' serial 4294967302\n");
  }
  {
    FakeBroker broker([&](FakeBroker& b) {
      FakeBroker::Request r = AfterHandshake(b);
      ExpectTxnRef(r, Opcode::kTxnAbort, txn);
      b.Respond(r, Status::Ok());
    });
    ProcessResult r = Cli(broker.address(), {"txn", "abort", "s", "job-42.sink-3", "--epoch=3",
                                             "--serial=4294967302"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "aborted transaction 'job-42.sink-3' serial 4294967302\n");
  }
}

TEST(CliTxnTest, BrokerErrorsPrintTheStatusNameAndExitOne) {
  FakeBroker broker([&](FakeBroker& b) {
    FakeBroker::Request r = AfterHandshake(b);
    b.Respond(r, Status::TxnFenced("epoch 3 of 'job-1' is fenced by epoch 4"));
  });
  ProcessResult r =
      Cli(broker.address(), {"txn", "abort", "s", "job-1", "--epoch", "3", "--serial", "9"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("TXN_FENCED: epoch 3 of 'job-1' is fenced by epoch 4"), std::string::npos)
      << r.err;
}

// abort-all aborts each listed transaction with its own epoch and serial, goes on past one it
// cannot abort (committed in the meantime) and then fails with that status.
TEST(CliTxnTest, AbortAllAbortsEveryListedTransactionAndReportsFailures) {
  const std::vector<TxnInfo> listed = {
      {"job-7.a", 2, 10, TxnState::kPrepared, 1, 1, 1, 0},
      {"job-7.a", 3, 11, TxnState::kOpen, 1, 1, 1, 0},
      {"job-7.b", 1, 4, TxnState::kPrepared, 1, 1, 1, 0},
  };
  FakeBroker broker([&](FakeBroker& b) {
    AnswerList(b, AfterHandshake(b), "s", "job-7.", listed);
    for (const TxnInfo& t : listed) {
      FakeBroker::Request r = b.Read();
      ExpectTxnRef(r, Opcode::kTxnAbort, {"s", t.transactional_id, t.epoch, t.serial});
      b.Respond(r, t.serial == 11 ? Status::InvalidTxnState("transaction 11 is committed")
                                  : Status::Ok());
    }
  });
  ProcessResult r = Cli(broker.address(), {"txn", "abort-all", "s", "--prefix", "job-7."});
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

TEST(CliTxnTest, AbortAllOfNothingSucceeds) {
  FakeBroker broker([&](FakeBroker& b) { AnswerList(b, AfterHandshake(b), "s", "gone.", {}); });
  ProcessResult r = Cli(broker.address(), {"txn", "abort-all", "s", "--prefix", "gone."});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "aborted 0 of 0 transactions of stream s with prefix 'gone.'\n");
}

// `txn` checks its subcommand, arguments and flags before it connects: every case exits 2 against
// an address where no broker listens (a connection attempt would exit 1).
TEST(CliTxnTest, BadUsageExitsTwoBeforeConnecting) {
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
    ProcessResult r = Cli(nowhere, bad);
    std::string what;
    for (const std::string& a : bad) what += a + " ";
    EXPECT_EQ(r.exit_code, 2) << what << Describe(r);
    EXPECT_NE(r.err.find("--help"), std::string::npos) << what << r.err;
  }
  ProcessResult r = RunProcess({NEARSTREAM_CLI_PATH, "txn", "--help"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("abort-all STREAM --prefix P"), std::string::npos) << r.out;
  // The cases above mean something: a well-formed command does try the address, and fails.
  r = Cli(nowhere, {"txn", "list", "s"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
}

}  // namespace
}  // namespace nearstream::testing
