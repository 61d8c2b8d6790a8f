// What a push subscription asks for and what the broker answers, in the push module's own terms:
// PushManager takes these, and the broker's request handler converts the wire messages
// (net::PushSubscribeRequest/PushUpdateRequest/PushSubscribeResponse, docs/protocol.md "Push
// subscriptions") to and from them, so the push path does not depend on the wire codec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/push/record_filter.h"
#include "nearstream/storage/position.h"

namespace nearstream::push {

// One split of a ring: a streamlet and where its push starts.
struct SplitStart {
  uint32_t streamlet = 0;
  storage::Position start;
};

// One ring of the region: the reader subtask it is for and the splits it carries.
struct RingSpec {
  uint32_t subtask_index = 0;
  std::vector<SplitStart> splits;
};

struct SubscriptionSpec {
  std::string stream;
  uint32_t slots_per_ring = 0;
  uint32_t slot_bytes = 0;
  uint32_t consumer_timeout_ms = 0;  // 0 = PushOptions::default_consumer_timeout_ms
  std::vector<RingSpec> rings;       // ring i of the region is rings[i]
  RecordFilter filter;               // records that fail it are not pushed
  // NS_SHM_SLOT_FORMAT_BINARY (records copied into slots) or _BINARY_VIEW (views into segment
  // files); docs/shm-layout.md, "View slots".
  uint32_t slot_format = 0;
};

// A subscription made: its id (for Update/Close) and the region to map.
struct Subscribed {
  uint64_t id = 0;
  uint64_t broker_epoch = 0;
  std::string region_path;
  uint64_t region_bytes = 0;
};

}  // namespace nearstream::push
