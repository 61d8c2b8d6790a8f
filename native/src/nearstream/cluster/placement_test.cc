#include "nearstream/cluster/placement.h"

#include <gtest/gtest.h>

#include <map>

#include "nearstream/storage/stream_store.h"

namespace nearstream::cluster {
namespace {

TEST(PlacementTest, ZkAddressSplitsServersFromTheRoot) {
  auto a = ParseZkAddress("127.0.0.1:2181,127.0.0.1:2182/clusters/a/");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->servers, "127.0.0.1:2181,127.0.0.1:2182");
  EXPECT_EQ(a->root, "/clusters/a");
  auto plain = ParseZkAddress("zk:2181");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->root, "/nearstream");
  for (const char* bad : {"", "/root", "zk:2181/", "zk:2181//x"}) {
    EXPECT_TRUE(ParseZkAddress(bad).status().IsInvalidArgument()) << bad;
  }
}

TEST(PlacementTest, OwnersGoRoundRobinOverTheLiveBrokersFromAStreamDependentStart) {
  auto owners = AssignOwners("s", 7, {3, 1, 2, 3});
  ASSERT_TRUE(owners.ok());
  ASSERT_EQ(owners->size(), 7u);
  std::map<uint32_t, int> per_broker;
  for (size_t i = 0; i < owners->size(); ++i) {
    ++per_broker[(*owners)[i]];
    // Consecutive streamlets on consecutive brokers (ascending id, wrapping).
    const uint32_t next = (*owners)[(i + 1) % owners->size()];
    if (i + 1 < owners->size()) {
      EXPECT_EQ(next, (*owners)[i] % 3 + 1) << i;
    }
  }
  EXPECT_EQ(per_broker.size(), 3u);
  for (const auto& [broker, count] : per_broker) EXPECT_GE(count, 2) << broker;
  // The same name and brokers give the same placement; many names do not all start at 1.
  auto again = AssignOwners("s", 7, {1, 2, 3});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *owners);
  std::map<uint32_t, int> starts;
  for (int i = 0; i < 30; ++i) {
    auto one = AssignOwners("stream-" + std::to_string(i), 1, {1, 2, 3});
    ASSERT_TRUE(one.ok());
    ++starts[(*one)[0]];
  }
  EXPECT_EQ(starts.size(), 3u);
  EXPECT_TRUE(AssignOwners("s", 2, {}).status().IsInvalidArgument());
}

TEST(PlacementTest, RecordsRoundTrip) {
  auto broker = ParseBrokerRecord(7, FormatBrokerRecord({7, "127.0.0.1:7427", "host-b"}));
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  EXPECT_EQ(broker->id, 7u);
  EXPECT_EQ(broker->address, "127.0.0.1:7427");
  EXPECT_EQ(broker->host, "host-b");
  EXPECT_FALSE(ParseBrokerRecord(7, "address=x\n").ok());

  storage::StreamConfig config;
  config.name = "orders";
  config.streamlets = 3;
  auto stream = ParseStreamRecord(FormatStreamRecord(config, {2, 3, 1}), 4);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ(stream->config.name, "orders");
  EXPECT_EQ(stream->owners, (std::vector<uint32_t>{2, 3, 1}));
  EXPECT_EQ(stream->version, 5u);
  EXPECT_FALSE(ParseStreamRecord(FormatStreamRecord(config, {2, 3}), 0).ok());
  EXPECT_FALSE(ParseStreamRecord(storage::FormatStreamMeta(config) + "owners=1,x,2\n", 0).ok());
}

TEST(PlacementTest, ControllerRecordsRoundTrip) {
  auto c = ParseControllerRecord(FormatControllerRecord({0x7FFFFFFF, 0x100000002}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->broker, 0x7FFFFFFFu);
  EXPECT_EQ(c->epoch, 0x100000002u);
  EXPECT_FALSE(ParseControllerRecord("format=1\nbroker=3\n").ok());
  EXPECT_FALSE(ParseControllerRecord("format=1\nbroker=3\nepoch=x\n").ok());
  EXPECT_FALSE(ParseControllerRecord("format=2\nbroker=3\nepoch=1\n").ok());
  EXPECT_FALSE(ParseControllerRecord("").ok());
}

TEST(PlacementTest, ARequestForAnotherBrokersStreamletNamesIt) {
  std::vector<BrokerRecord> brokers = {{1, "127.0.0.1:7421", "a"}, {2, "127.0.0.1:7422", "a"}};
  Status moved = NotHere("s", 3, 2, brokers);
  EXPECT_TRUE(moved.IsNotOwner());
  EXPECT_EQ(moved.message(), "streamlet 3 of stream 's' is stored by broker 2 at 127.0.0.1:7422");
  Status gone = NotHere("s", 3, 5, brokers);
  EXPECT_TRUE(gone.IsBrokerUnavailable());
  EXPECT_NE(gone.message().find("broker 5, which is not registered"), std::string::npos);
}

}  // namespace
}  // namespace nearstream::cluster
