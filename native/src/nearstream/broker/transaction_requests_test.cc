// Bad input to the transaction requests, against the real process: each gets its documented
// status (docs/protocol.md "Transactions (30-36)") and the broker goes on serving.
#include <gtest/gtest.h>

#include <string>

#include "nearstream/common/byte_io.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::broker {
namespace {

using net::Client;
using testing::TestBroker;

TEST(TransactionRequestsTest, ADeletedStreamEndsItsTransactionsAndMalformedBodiesChangeNothing) {
  auto broker = TestBroker::Start();
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  auto c = Client::Connect((*broker)->address());
  ASSERT_TRUE(c.ok());
  storage::StreamConfig config;
  config.name = "doomed";
  config.streamlets = 1;
  ASSERT_TRUE(c->CreateStream(config).ok());

  auto init = c->TxnInit({"doomed", "w", 0});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  net::TxnRef ref{"doomed", "w", init->epoch, 0};
  auto serial = c->TxnBegin(ref);
  ASSERT_TRUE(serial.ok());
  ref.serial = *serial;
  storage::ChunkBuilder b;
  b.Add("in flight");
  Bytes chunk = b.Finish(9, 1, 1);
  auto appended = c->TxnAppend({ref, {{0, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
  ASSERT_TRUE(appended.ok());
  ASSERT_TRUE(c->TxnPrepare(ref).ok());

  // A body cut short, and one with a byte too many, are refused whole.
  Bytes body;
  ByteWriter w(&body);
  net::EncodeTxnRef(w, ref);
  // (Call turns a broker error into the result's status.)
  auto cut = c->Call(net::Opcode::kTxnCommit, Bytes(body.begin(), body.end() - 1));
  EXPECT_TRUE(cut.status().IsMalformedRequest()) << cut.status().ToString();
  Bytes longer = body;
  longer.push_back(0);
  auto extra = c->Call(net::Opcode::kTxnCommit, longer);
  EXPECT_TRUE(extra.status().IsMalformedRequest()) << extra.status().ToString();
  auto listed = c->TxnList({"doomed", ""});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->transactions.size(), 1u);
  EXPECT_EQ(listed->transactions[0].state, net::TxnState::kPrepared);  // still prepared

  // Every request names a scope: a stream without replication has only the broker scope, and
  // lists its transactions in it.
  EXPECT_EQ(listed->transactions[0].scope, net::kBrokerScope);
  for (uint32_t scope : {0u, 1u}) {
    auto init_in = c->TxnInit({"doomed", "w", 0, scope});
    EXPECT_TRUE(init_in.status().IsInvalidArgument()) << init_in.status().ToString();
    EXPECT_NE(init_in.status().message().find("broker scope"), std::string::npos)
        << init_in.status().ToString();
    net::TxnRef in = ref;
    in.scope = scope;
    EXPECT_TRUE(c->TxnCommit(in).IsInvalidArgument());
    EXPECT_TRUE(c->TxnList({"doomed", "", scope}).status().IsInvalidArgument());
    auto append_in = c->TxnAppend({in, {{0, chunk.data(), static_cast<uint32_t>(chunk.size())}}});
    EXPECT_TRUE(append_in.status().IsInvalidArgument()) << append_in.status().ToString();
  }
  listed = c->TxnList({"doomed", ""});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->transactions.size(), 1u);
  EXPECT_EQ(listed->transactions[0].state, net::TxnState::kPrepared);  // untouched

  ASSERT_TRUE(c->DeleteStream("doomed").ok());
  EXPECT_TRUE(c->TxnCommit(ref).IsStreamNotFound());
  EXPECT_TRUE(c->TxnAbort(ref).IsStreamNotFound());
  EXPECT_TRUE(c->TxnInit({"doomed", "w", 0}).status().IsStreamNotFound());
  EXPECT_TRUE(c->TxnList({"doomed", ""}).status().IsStreamNotFound());

  // A stream created again under the name starts with no transactions and no epochs.
  ASSERT_TRUE(c->CreateStream(config).ok());
  auto fresh = c->TxnList({"doomed", ""});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->transactions.empty());
  auto again = c->TxnInit({"doomed", "w", 0});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->epoch, 1u);
}

}  // namespace
}  // namespace nearstream::broker
