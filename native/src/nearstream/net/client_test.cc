#include "nearstream/net/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <future>
#include <thread>

#include "nearstream/common/clock.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/fake_broker.h"

namespace nearstream::net {
namespace {

using testing::Encode;
using testing::FakeBroker;

// ---- address parsing -------------------------------------------------------------------------

TEST(BrokerAddressTest, ParsesHostAndPort) {
  auto a = ParseBrokerAddress("127.0.0.1:7070");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7070);
  a = ParseBrokerAddress("broker-1.example:65535");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "broker-1.example");
  EXPECT_EQ(a->port, 65535);
}

TEST(BrokerAddressTest, ParsesBracketedIpv6AndPrintsItBack) {
  auto a = ParseBrokerAddress("[::1]:9000");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 9000);
  EXPECT_EQ(a->ToString(), "[::1]:9000");
  EXPECT_EQ((BrokerAddress{"localhost", 1}).ToString(), "localhost:1");
}

TEST(BrokerAddressTest, RefusesMalformedAddresses) {
  for (const char* bad : {"", "localhost", ":7070", "host:", "host:0", "host:65536", "host:12a",
                          "host:-1", "::1:80", "[::1]80", "[::1", "[]:80", "host: 80"}) {
    auto a = ParseBrokerAddress(bad);
    EXPECT_FALSE(a.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(a.status().message().find(bad), std::string::npos) << a.status().message();
  }
}

Client MustConnect(const std::string& address) {
  auto c = Client::Connect(address);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// ---- connecting ------------------------------------------------------------------------------

TEST(ClientTest, ConnectToClosedPortFailsWithIoError) {
  // Bind, learn the port, close: nothing listens there now.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  auto c = Client::Connect("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), 2000);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kIoError);
  EXPECT_NE(c.status().message().find("refused"), std::string::npos) << c.status().message();
}

TEST(ClientTest, ConnectRefusesABadAddress) {
  auto c = Client::Connect("no-port-here");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

// ---- synchronous calls -----------------------------------------------------------------------

TEST(ClientTest, TypedCallsRoundTripThroughTheCodec) {
  FakeBroker broker([](FakeBroker& b) {
    auto r = b.Read();  // Handshake
    auto hs = DecodeHandshakeRequest(r.body.data(), r.body.size());
    EXPECT_TRUE(hs.ok());
    EXPECT_EQ(hs->client_name, "unit");
    HandshakeResponse h;
    h.broker_epoch = 99;
    h.broker_version = "fake";
    b.Respond(r, Status::Ok(), Encode(EncodeHandshakeResponse, h));

    r = b.Read();  // DescribeStream
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kDescribeStream));
    storage::StreamConfig c;
    c.name = DecodeStreamNameRequest(r.body.data(), r.body.size())->name;
    c.streamlets = 3;
    b.Respond(r, Status::Ok(), Encode(EncodeStreamConfig, c));

    r = b.Read();  // ListStreams
    b.Respond(r, Status::Ok(), Encode(EncodeListStreamsResponse, ListStreamsResponse{{"a", "b"}}));
  });
  Client client = MustConnect(broker.address());
  auto hs = client.Handshake("unit");
  ASSERT_TRUE(hs.ok()) << hs.status().ToString();
  EXPECT_EQ(hs->broker_epoch, 99u);
  auto config = client.DescribeStream("clicks");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->name, "clicks");
  EXPECT_EQ(config->streamlets, 3u);
  auto names = client.ListStreams();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(client.in_flight(), 0u);
}

// A leader keeps its connection to a follower between batches; one the follower closed
// meanwhile (it restarted) must be found closed before the next batch is lost on it.
TEST(ClientTest, AnIdleConnectionItsBrokerClosedIsFoundClosedWithoutWaiting) {
  std::promise<void> hang_up;
  std::shared_future<void> when = hang_up.get_future().share();
  FakeBroker broker([when](FakeBroker& b) {
    auto r = b.Read();  // DescribeStream, answered: the connection is in use, then idle
    storage::StreamConfig c;
    c.name = "clicks";
    c.streamlets = 1;
    b.Respond(r, Status::Ok(), Encode(EncodeStreamConfig, c));
    when.wait();
    b.Hangup();
  });
  Client client = MustConnect(broker.address());
  ASSERT_TRUE(client.DescribeStream("clicks").ok());
  EXPECT_FALSE(client.ClosedWhileIdle()) << "an open idle connection";
  EXPECT_TRUE(client.ok());
  hang_up.set_value();
  bool closed = false;
  const int64_t deadline = MonotonicNowMs() + 5000;
  while (!closed && MonotonicNowMs() < deadline) {
    closed = client.ClosedWhileIdle();
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(closed);
  EXPECT_FALSE(client.ok());
  EXPECT_TRUE(client.DescribeStream("clicks").status().IsIoError());
}

TEST(ClientTest, BrokerErrorBecomesStatusWithItsCodeAndMessage) {
  FakeBroker broker([](FakeBroker& b) {
    auto r = b.Read();
    b.Respond(r, Status::StreamNotFound("stream 'x' does not exist"));
    r = b.Read();
    b.Respond(r, Status::Ok());
  });
  Client client = MustConnect(broker.address());
  Status s = client.DeleteStream("x");
  EXPECT_EQ(s.code(), StatusCode::kStreamNotFound);
  EXPECT_EQ(s.message(), "stream 'x' does not exist");
  EXPECT_EQ(s.ToString(), "STREAM_NOT_FOUND: stream 'x' does not exist");
  EXPECT_TRUE(client.ok()) << "a broker error must not break the connection";
  EXPECT_TRUE(client.DeleteStream("y").ok());
}

TEST(ClientTest, CallRejectsAnAnswerToAnotherRequest) {
  FakeBroker broker([](FakeBroker& b) {
    auto r = b.Read();
    b.RespondRaw(r.header.opcode, r.header.request_id + 7, Status::Ok(), {});
  });
  Client client = MustConnect(broker.address());
  auto r = client.Call(Opcode::kStats, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("answered request"), std::string::npos);
  EXPECT_FALSE(client.ok());
}

// ---- pipelining ------------------------------------------------------------------------------

TEST(ClientTest, PipelinedResponsesMayArriveInAnyOrder) {
  FakeBroker broker([](FakeBroker& b) {
    std::vector<FakeBroker::Request> got;
    for (int i = 0; i < 3; ++i) got.push_back(b.Read());
    for (int i = 2; i >= 0; --i) {
      Bytes echo = got[i].body;
      b.Respond(got[i], Status::Ok(), echo);
    }
  });
  Client client = MustConnect(broker.address());
  std::vector<uint64_t> ids;
  for (uint8_t i = 0; i < 3; ++i) {
    auto id = client.Send(Opcode::kStats, Bytes{i});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  EXPECT_EQ(client.in_flight(), 3u);
  auto refused = client.Call(Opcode::kStats, {});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  for (int i = 2; i >= 0; --i) {
    auto r = client.Receive();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->header.request_id, ids[i]);
    EXPECT_EQ(r->body, (Bytes{static_cast<uint8_t>(i)}));
  }
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST(ClientTest, SendAppendWritesTheSameBytesAsTheCodec) {
  storage::ChunkBuilder builder;
  builder.Add("alpha");
  builder.Add("beta");
  Bytes chunk1 = builder.Finish(5, 0, 1);
  builder.Add("gamma");
  Bytes chunk2 = builder.Finish(5, 0, 2);
  AppendRequest request;
  request.stream = "s";
  request.entries = {{0, chunk1.data(), static_cast<uint32_t>(chunk1.size())},
                     {3, chunk2.data(), static_cast<uint32_t>(chunk2.size())}};
  Bytes expected = Encode(EncodeAppendRequest, request);

  FakeBroker broker([&](FakeBroker& b) {
    auto r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kAppend));
    EXPECT_EQ(r.body, expected);
    AppendResponse response;
    response.results.push_back({0, 0, "", storage::Position{1, 1, 0}, false});
    response.results.push_back({3, static_cast<uint16_t>(StatusCode::kOutOfOrderSequence), "gap",
                                storage::Position{}, false});
    b.Respond(r, Status::Ok(), Encode(EncodeAppendResponse, response));
  });
  Client client = MustConnect(broker.address());
  auto response = client.Append(request);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->results.size(), 2u);
  EXPECT_EQ(response->results[0].position, (storage::Position{1, 1, 0}));
  EXPECT_EQ(response->results[1].status, static_cast<uint16_t>(StatusCode::kOutOfOrderSequence));
}

// The leader's gathered ReplicaAppends are byte for byte the codec's (the golden vector's
// layout), sent in one write with consecutive ids; a follower's refusal is the batch's status,
// and every answer is read, so the connection stays in step.
TEST(ClientTest, ReplicaAppendsWriteTheSameBytesAsTheCodec) {
  storage::ChunkBuilder builder;
  builder.Add("copied");
  Bytes chunk = builder.Finish(9, 4, 1);
  ReplicaAppendRequest request{"s",
                               2,
                               7,
                               0x0102030405060708ull,
                               storage::Position{3, 4, 512},
                               chunk.data(),
                               static_cast<uint32_t>(chunk.size())};
  Bytes expected = Encode(EncodeReplicaAppendRequest, request);

  FakeBroker broker([&](FakeBroker& b) {
    // A batch of one, then a batch of two whose first is refused.
    auto r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kReplicaAppend));
    EXPECT_EQ(r.body, expected);
    b.Respond(r, Status::Ok(), {});
    auto first = b.Read();
    auto second = b.Read();
    EXPECT_EQ(first.body, expected);
    EXPECT_EQ(second.body, expected);
    EXPECT_EQ(second.header.request_id, first.header.request_id + 1);
    b.Respond(first, Status::NotOwner("epoch 8 leads"), {});
    b.Respond(second, Status::Ok(), {});
  });
  Client client = MustConnect(broker.address());
  Result<uint64_t> id = client.SendReplicaAppends(&request, 1);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Status one = client.AwaitReplicaAppends(*id, 1);
  EXPECT_TRUE(one.ok()) << one.ToString();
  const ReplicaAppendRequest pair[2] = {request, request};
  id = client.SendReplicaAppends(pair, 2);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(client.in_flight(), 2u);
  Status two = client.AwaitReplicaAppends(*id, 2);
  EXPECT_EQ(two.code(), StatusCode::kNotOwner) << two.ToString();
  EXPECT_EQ(client.in_flight(), 0u) << "an answer was left unread";
  EXPECT_TRUE(client.ok());
}

// A leader's transaction writes, pipelined: written back to back with consecutive ids, every
// answer read (a refusal is the result, the later answers still consumed), and an answer to
// another opcode where a ReplicaTxn answer was due breaks the connection.
TEST(ClientTest, ReplicaTxnsArePipelinedAndAnsweredInOrder) {
  const uint8_t data[3] = {1, 2, 3};
  ReplicaTxnRequest append;
  append.stream = "s";
  append.streamlet = 2;
  append.leader = 7;
  append.leader_epoch = 9;
  append.op = ReplicaTxnOp::kAppend;
  append.file = "txn.log";
  append.offset = 64;
  append.data = data;
  append.data_size = sizeof(data);
  ReplicaTxnRequest rename = append;
  rename.op = ReplicaTxnOp::kRename;
  rename.file = "txn-00000000000000000001-00000000000000000002.seg";
  rename.to = "00000000000000000003-00000000000000000002.seg";
  rename.data = nullptr;
  rename.data_size = 0;
  const std::vector<ReplicaTxnRequest> writes = {append, rename};

  FakeBroker broker([&](FakeBroker& b) {
    auto first = b.Read();
    auto second = b.Read();
    EXPECT_EQ(first.header.opcode, static_cast<uint16_t>(Opcode::kReplicaTxn));
    EXPECT_EQ(first.body, Encode(EncodeReplicaTxnRequest, append));
    EXPECT_EQ(second.body, Encode(EncodeReplicaTxnRequest, rename));
    EXPECT_EQ(second.header.request_id, first.header.request_id + 1);
    b.Respond(first, Status::PositionOutOfRange("the copy has 60 bytes"), {});
    b.Respond(second, Status::Ok(), {});
    auto third = b.Read();
    b.RespondRaw(static_cast<uint16_t>(Opcode::kReplicaAppend), third.header.request_id,
                 Status::Ok(), {});
  });
  Client client = MustConnect(broker.address());
  Result<uint64_t> id = client.SendReplicaTxns(writes.data(), writes.size());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(client.in_flight(), 2u);
  Status both = client.AwaitAnswers(Opcode::kReplicaTxn, *id, 2);
  EXPECT_TRUE(both.IsPositionOutOfRange()) << both.ToString();
  EXPECT_EQ(client.in_flight(), 0u) << "an answer was left unread";
  EXPECT_TRUE(client.ok());
  id = client.SendReplicaTxns(writes.data(), 1);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Status wrong = client.AwaitAnswers(Opcode::kReplicaTxn, *id, 1);
  EXPECT_EQ(wrong.code(), StatusCode::kMalformedRequest) << wrong.ToString();
  EXPECT_FALSE(client.ok());
}

// ---- fetch -----------------------------------------------------------------------------------

// Every transaction call sends its opcode and exactly the codec's body, and decodes the answer;
// a broker error (TXN_FENCED here) is the call's status and leaves the connection usable.
TEST(ClientTest, TransactionCallsRoundTripThroughTheCodec) {
  storage::ChunkBuilder builder;
  builder.Add("in a transaction");
  Bytes chunk = builder.Finish(5, 0, 1);
  const TxnRef txn{"s", "job-1", 3, 6};
  TxnAppendRequest append{txn, {{2, chunk.data(), static_cast<uint32_t>(chunk.size())}}};

  FakeBroker broker([&](FakeBroker& b) {
    auto r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnInit));
    auto init = DecodeTxnInitRequest(r.body.data(), r.body.size());
    ASSERT_TRUE(init.ok()) << init.status().ToString();
    EXPECT_EQ(init->stream, "s");
    EXPECT_EQ(init->transactional_id, "job-1");
    EXPECT_EQ(init->keep_prepared_through, 4u);
    b.Respond(r, Status::Ok(), Encode(EncodeTxnInitResponse, TxnInitResponse{3, 5}));

    r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnBegin));
    // The caller's serial is not sent: Begin carries 0.
    EXPECT_EQ(r.body, Encode(EncodeTxnRef, TxnRef{"s", "job-1", 3, 0}));
    b.Respond(r, Status::Ok(), Encode(EncodeTxnBeginResponse, TxnBeginResponse{6}));

    r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnAppend));
    EXPECT_EQ(r.body, Encode(EncodeTxnAppendRequest, append));
    AppendResponse appended;
    appended.results.push_back({2, 0, "", storage::Position{}, true});
    b.Respond(r, Status::Ok(), Encode(EncodeAppendResponse, appended));

    for (Opcode op : {Opcode::kTxnPrepare, Opcode::kTxnCommit, Opcode::kTxnAbort}) {
      r = b.Read();
      EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(op));
      EXPECT_EQ(r.body, Encode(EncodeTxnRef, txn));
      b.Respond(r,
                op == Opcode::kTxnCommit ? Status::TxnFenced("epoch 3 is fenced") : Status::Ok());
    }

    r = b.Read();
    EXPECT_EQ(r.header.opcode, static_cast<uint16_t>(Opcode::kTxnList));
    EXPECT_EQ(r.body, Encode(EncodeTxnListRequest, TxnListRequest{"s", "job-"}));
    TxnListResponse list;
    list.transactions.push_back({"job-1", 3, 6, TxnState::kPrepared, 100, 1, 1, 1700000000000});
    b.Respond(r, Status::Ok(), Encode(EncodeTxnListResponse, list));
  });
  Client client = MustConnect(broker.address());
  auto init = client.TxnInit({"s", "job-1", 4});
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  EXPECT_EQ(init->epoch, 3u);
  EXPECT_EQ(init->last_serial, 5u);
  auto serial = client.TxnBegin(TxnRef{"s", "job-1", 3, 99});
  ASSERT_TRUE(serial.ok()) << serial.status().ToString();
  EXPECT_EQ(*serial, 6u);
  auto appended = client.TxnAppend(append);
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  ASSERT_EQ(appended->results.size(), 1u);
  EXPECT_TRUE(appended->results[0].duplicate);
  EXPECT_TRUE(client.TxnPrepare(txn).ok());
  Status fenced = client.TxnCommit(txn);
  EXPECT_EQ(fenced.ToString(), "TXN_FENCED: epoch 3 is fenced");
  EXPECT_TRUE(client.ok());
  EXPECT_TRUE(client.TxnAbort(txn).ok());
  auto list = client.TxnList({"s", "job-"});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->transactions.size(), 1u);
  EXPECT_EQ(list->transactions[0].state, TxnState::kPrepared);
  EXPECT_EQ(list->transactions[0].started_ms, 1700000000000);
}

TEST(ClientTest, FetchReplyKeepsItsBlocksValidAcrossMoves) {
  storage::ChunkBuilder builder;
  builder.Add(std::string(3 << 20, 'x'));  // a multi-megabyte body exercises the direct read
  Bytes chunk = builder.Finish(0, 0, 0);
  FakeBroker broker([&](FakeBroker& b) {
    auto r = b.Read();
    auto request = DecodeFetchRequest(r.body.data(), r.body.size());
    EXPECT_TRUE(request.ok());
    EXPECT_EQ(request->max_wait_ms, 250u);
    FetchResponse response;
    FetchResult result;
    result.streamlet = 2;
    result.next = storage::Position{1, 1, static_cast<uint32_t>(chunk.size())};
    result.blocks.push_back(
        {storage::Position{1, 1, 0}, chunk.data(), static_cast<uint32_t>(chunk.size())});
    response.results.push_back(result);
    b.Respond(r, Status::Ok(), Encode(EncodeFetchResponse, response));
  });
  Client client = MustConnect(broker.address());
  FetchRequest request;
  request.stream = "s";
  request.max_wait_ms = 250;
  request.entries.push_back({2, storage::Position{}, 8u << 20});
  auto reply = client.Fetch(request);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  FetchReply moved = std::move(reply).value();
  ASSERT_EQ(moved.response.results.size(), 1u);
  const FetchBlock& block = moved.response.results[0].blocks.at(0);
  ASSERT_EQ(block.size, chunk.size());
  EXPECT_EQ(Bytes(block.data, block.data + block.size), chunk);
  EXPECT_TRUE(storage::ValidateChunk(block.data, block.size).ok());
}

// ---- failures --------------------------------------------------------------------------------

TEST(ClientTest, ReceiveTimeoutBeforeAFrameLeavesTheClientUsable) {
  FakeBroker broker([](FakeBroker& b) {
    auto r = b.Read();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    b.Respond(r, Status::Ok(), Bytes{42});
  });
  Client client = MustConnect(broker.address());
  ASSERT_TRUE(client.Send(Opcode::kStats, {}).ok());
  auto early = client.Receive(/*timeout_ms=*/20);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), StatusCode::kIoError);
  EXPECT_NE(early.status().message().find("timed out"), std::string::npos);
  EXPECT_TRUE(client.ok());
  auto late = client.Receive(5000);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(late->body, Bytes{42});
}

TEST(ClientTest, SynchronousCallTimeoutEndsTheConnection) {
  FakeBroker broker([](FakeBroker& b) {
    b.Read();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  Client client = MustConnect(broker.address());
  client.set_io_timeout_ms(30);
  auto r = client.Call(Opcode::kStats, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos);
  EXPECT_FALSE(client.ok());
  EXPECT_FALSE(client.Send(Opcode::kStats, {}).ok());
}

TEST(ClientTest, BrokerHangupFailsPendingAndLaterCalls) {
  FakeBroker broker([](FakeBroker& b) {
    b.Read();
    b.Hangup();
  });
  Client client = MustConnect(broker.address());
  auto r = client.Call(Opcode::kListStreams, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("closed"), std::string::npos) << r.status().message();
  EXPECT_EQ(client.ListStreams().status().code(), StatusCode::kIoError);
}

TEST(ClientTest, GarbledResponseFrameBreaksTheClient) {
  FakeBroker broker([](FakeBroker& b) {
    b.Read();
    Bytes frame(20, 0);
    StoreLe32(frame.data(), 16);  // a request-flagged frame where a response is due
    b.WriteRaw(frame);
  });
  Client client = MustConnect(broker.address());
  auto r = client.Call(Opcode::kStats, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kMalformedRequest);
  EXPECT_FALSE(client.ok());
}

}  // namespace
}  // namespace nearstream::net
