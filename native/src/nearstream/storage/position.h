// A read position inside a streamlet (KerA's "application offset" without the stream/streamlet):
// the chunk that starts at byte `offset` of segment `segment` of group `group`. Ids start at 1;
// the all-zero position means "the earliest data the streamlet still holds".
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>

namespace nearstream::storage {

struct Position {
  uint64_t group = 0;
  uint64_t segment = 0;
  uint32_t offset = 0;

  bool is_earliest() const { return group == 0 && segment == 0 && offset == 0; }
  bool operator==(const Position& o) const {
    return group == o.group && segment == o.segment && offset == o.offset;
  }
  bool operator<(const Position& o) const {
    return std::tie(group, segment, offset) < std::tie(o.group, o.segment, o.offset);
  }
  std::string ToString() const {
    return std::to_string(group) + ":" + std::to_string(segment) + ":" + std::to_string(offset);
  }
};

inline std::ostream& operator<<(std::ostream& os, const Position& p) { return os << p.ToString(); }

}  // namespace nearstream::storage
