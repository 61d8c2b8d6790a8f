// A record filter a push subscription carries (docs/protocol.md "Record filters"): the push
// thread tests every record of a chunk and writes only those that pass into the slot, so records
// a job would drop first thing never cross into its JVM. Both kinds are pure functions of a
// record's bytes; the Java client implements the same functions for records it fetches, and both
// are checked against testdata/record-filters/cases.tsv.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nearstream/common/status.h"

namespace nearstream::push {

class RecordFilter {
 public:
  enum class Kind : uint8_t { kNone = 0, kJsonFieldIn = 1, kBytesContain = 2 };

  // Bounds from docs/protocol.md (PushSubscribe's RecordFilter).
  static constexpr size_t kMaxFieldBytes = 65535;
  static constexpr size_t kMaxValues = 4096;
  static constexpr size_t kMaxNeedleBytes = 65536;
  // Nesting deeper than this fails a JSON filter (the top-level object is depth 1).
  static constexpr int kMaxJsonDepth = 1000;

  // Every record passes.
  RecordFilter() = default;
  // A record passes when it is a JSON object whose top-level member `field` is a string equal to
  // one of `values`. kInvalidArgument outside the bounds above.
  static Result<RecordFilter> JsonFieldIn(std::string field, std::vector<std::string> values);
  // A record passes when it contains `needle`. kInvalidArgument outside the bounds above.
  static Result<RecordFilter> BytesContain(std::string needle);

  Kind kind() const { return kind_; }
  bool passes_all() const { return kind_ == Kind::kNone; }
  bool Matches(std::string_view record) const;

 private:
  bool MatchesJson(std::string_view record) const;
  bool IsValue(std::string_view decoded) const;

  Kind kind_ = Kind::kNone;
  std::string field_;                // kJsonFieldIn
  std::vector<std::string> values_;  // kJsonFieldIn, sorted, no repeats
  std::string needle_;               // kBytesContain
};

}  // namespace nearstream::push
