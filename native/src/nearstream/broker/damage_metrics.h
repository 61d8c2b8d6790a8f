// The damaged ranges recovery found (storage::Streamlet::Damaged), as metric series for Stats,
// /metrics and `nearstream describe` (docs/broker.md, "Damaged data").
#pragma once

#include "nearstream/broker/metrics.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::broker {

// Adds `nearstream_damaged_ranges` (how many, always present) and, per range,
// `nearstream_damaged_range_bytes{stream="..",streamlet="..",group="..",segment="..",offset=".."}`
// = its length, so the series name carries where it starts.
void CollectDamageMetrics(const storage::StreamStore& store, MetricValues* out);

}  // namespace nearstream::broker
