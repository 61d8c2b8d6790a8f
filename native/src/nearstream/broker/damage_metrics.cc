#include "nearstream/broker/damage_metrics.h"

#include <charconv>
#include <string>

namespace nearstream::broker {

namespace {

constexpr std::string_view kSeries = "nearstream_damaged_range_bytes";

// Reads `key="value"` at the front of `*rest` (followed by ',' or '}'), consuming it.
std::optional<std::string_view> Label(std::string_view* rest, std::string_view key) {
  if (rest->substr(0, key.size() + 2) != std::string(key) + "=\"") return std::nullopt;
  rest->remove_prefix(key.size() + 2);
  const size_t end = rest->find('"');
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view value = rest->substr(0, end);
  rest->remove_prefix(end + 1);
  if (!rest->empty() && rest->front() == ',') rest->remove_prefix(1);
  return value;
}

template <typename T>
bool Number(std::optional<std::string_view> text, T* out) {
  if (!text.has_value() || text->empty()) return false;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), *out);
  return ec == std::errc() && end == text->data() + text->size();
}

}  // namespace

void CollectDamageMetrics(const storage::StreamStore& store, MetricValues* out) {
  uint64_t ranges = 0;
  for (const std::string& name : store.List()) {
    std::shared_ptr<storage::Stream> stream = store.Find(name);
    if (stream == nullptr || stream->deleted()) continue;
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) {
      for (const storage::DamagedRange& d : stream->streamlet(i)->Damaged()) {
        ++ranges;
        // Stream names are [A-Za-z0-9._-]: nothing to escape in a label value.
        out->emplace_back(std::string(kSeries) + "{stream=\"" + name + "\",streamlet=\"" +
                              std::to_string(i) + "\",group=\"" + std::to_string(d.from.group) +
                              "\",segment=\"" + std::to_string(d.from.segment) + "\",offset=\"" +
                              std::to_string(d.from.offset) + "\"}",
                          d.length);
      }
    }
  }
  out->emplace_back("nearstream_damaged_ranges", ranges);
}

std::optional<DamagedRangeSeries> ParseDamagedRangeSeries(std::string_view name, uint64_t value) {
  if (name.substr(0, kSeries.size() + 1) != std::string(kSeries) + "{" || name.back() != '}') {
    return std::nullopt;
  }
  std::string_view rest = name.substr(kSeries.size() + 1, name.size() - kSeries.size() - 2);
  DamagedRangeSeries s;
  std::optional<std::string_view> stream = Label(&rest, "stream");
  if (!stream.has_value() || !Number(Label(&rest, "streamlet"), &s.streamlet) ||
      !Number(Label(&rest, "group"), &s.range.from.group) ||
      !Number(Label(&rest, "segment"), &s.range.from.segment) ||
      !Number(Label(&rest, "offset"), &s.range.from.offset) || !rest.empty() ||
      value > UINT32_MAX) {
    return std::nullopt;
  }
  s.stream = std::string(*stream);
  s.range.length = static_cast<uint32_t>(value);
  return s;
}

}  // namespace nearstream::broker
