// The damaged ranges recovery found (storage::Streamlet::Damaged), as metric series for Stats,
// /metrics and `nearstream describe` (docs/broker.md, "Damaged data").
#pragma once

#include <optional>
#include <string_view>

#include "nearstream/broker/metrics.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::broker {

// Adds `nearstream_damaged_ranges` (how many, always present) and, per range,
// `nearstream_damaged_range_bytes{stream="..",streamlet="..",group="..",segment="..",offset=".."}`
// = its length, so the series name carries where it starts.
void CollectDamageMetrics(const storage::StreamStore& store, MetricValues* out);

// One `nearstream_damaged_range_bytes` series read back (what `nearstream describe` prints).
struct DamagedRangeSeries {
  std::string stream;
  uint32_t streamlet = 0;
  storage::DamagedRange range;  // from and length; the reason is only in the broker's log
};
// Parses a series written by CollectDamageMetrics; nullopt for any other name.
std::optional<DamagedRangeSeries> ParseDamagedRangeSeries(std::string_view name, uint64_t value);

}  // namespace nearstream::broker
