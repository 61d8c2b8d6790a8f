// What readers of a streamlet can see, as a leader tells its followers (docs/cluster.md,
// "Follower reads"): the groups that changed since a version the follower was told, each with
// every segment it holds and the bytes published in it. A follower's copy in memory applies
// views in order (Streamlet::ApplyPublished) and then shows its readers exactly what the
// leader's readers saw when the view was taken, never a chunk the leader had not published.
#pragma once

#include <cstdint>
#include <vector>

#include "nearstream/storage/position.h"

namespace nearstream::storage {

struct PublishedSegment {
  uint64_t id = 0;
  uint32_t committed = 0;  // bytes published, whole chunks
  bool operator==(const PublishedSegment& o) const {
    return id == o.id && committed == o.committed;
  }
};

struct PublishedGroup {
  uint64_t id = 0;
  bool closed = false;
  // Every segment the group holds on the leader, ascending ids (a group being opened has none).
  std::vector<PublishedSegment> segments;
  bool operator==(const PublishedGroup& o) const {
    return id == o.id && closed == o.closed && segments == o.segments;
  }
};

struct PublishedView {
  uint64_t version = 0;  // the leader's publish version the view was taken at
  // The leader's first retained segment (group and segment; offset 0): retention removed what
  // lies before it. All-zero while the leader holds nothing.
  Position head;
  std::vector<PublishedGroup> groups;  // ascending ids: every group changed since the asked version
  bool operator==(const PublishedView& o) const {
    return version == o.version && head == o.head && groups == o.groups;
  }
};

}  // namespace nearstream::storage
