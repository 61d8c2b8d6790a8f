#include "nearstream/broker/damage_metrics.h"

#include <string>

namespace nearstream::broker {

void CollectDamageMetrics(const storage::StreamStore& store, MetricValues* out) {
  uint64_t ranges = 0;
  for (const std::string& name : store.List()) {
    std::shared_ptr<storage::Stream> stream = store.Find(name);
    if (stream == nullptr || stream->deleted()) continue;
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) {
      for (const storage::DamagedRange& d : stream->streamlet(i)->Damaged()) {
        ++ranges;
        // Stream names are [A-Za-z0-9._-]: nothing to escape in a label value.
        out->emplace_back("nearstream_damaged_range_bytes{stream=\"" + name + "\",streamlet=\"" +
                              std::to_string(i) + "\",group=\"" + std::to_string(d.from.group) +
                              "\",segment=\"" + std::to_string(d.from.segment) + "\",offset=\"" +
                              std::to_string(d.from.offset) + "\"}",
                          d.length);
      }
    }
  }
  out->emplace_back("nearstream_damaged_ranges", ranges);
}

}  // namespace nearstream::broker
