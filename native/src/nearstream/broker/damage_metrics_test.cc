#include "nearstream/broker/damage_metrics.h"

#include <gtest/gtest.h>

namespace nearstream::broker {
namespace {

TEST(DamageMetricsTest, ParsesTheSeriesItWrites) {
  auto s = ParseDamagedRangeSeries(
      "nearstream_damaged_range_bytes{stream=\"a.b-c_1\",streamlet=\"7\",group=\"4294967298\","
      "segment=\"12\",offset=\"4096\"}",
      1088);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->stream, "a.b-c_1");
  EXPECT_EQ(s->streamlet, 7u);
  EXPECT_EQ(s->range.from, (storage::Position{4294967298ull, 12, 4096}));
  EXPECT_EQ(s->range.length, 1088u);
  EXPECT_EQ(s->range.next(), (storage::Position{4294967298ull, 12, 5184}));
}

TEST(DamageMetricsTest, IgnoresOtherNamesAndMalformedSeries) {
  for (const char* name :
       {"", "nearstream_damaged_ranges", "nearstream_damaged_range_bytes",
        "nearstream_damaged_range_bytes{}",
        "nearstream_damaged_range_bytes{stream=\"s\",streamlet=\"x\",group=\"1\",segment=\"1\","
        "offset=\"0\"}",
        "nearstream_damaged_range_bytes{stream=\"s\",streamlet=\"0\",group=\"1\",segment=\"1\"}",
        "nearstream_damaged_range_bytes{stream=\"s\",streamlet=\"0\",group=\"1\",segment=\"1\","
        "offset=\"0\",extra=\"1\"}",
        "nearstream_thread_busy_ns_total{thread=\"worker-0\"}"}) {
    EXPECT_FALSE(ParseDamagedRangeSeries(name, 1).has_value()) << name;
  }
}

}  // namespace
}  // namespace nearstream::broker
