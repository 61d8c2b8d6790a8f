// Per-stream configuration, fixed at creation and persisted with durable streams.
#pragma once

#include <cstdint>
#include <string>

#include "nearstream/common/status.h"

namespace nearstream::storage {

enum class Durability : uint8_t {
  kNone = 0,   // memory only (KerA's default); the stream does not survive a restart
  kAsync = 1,  // segments written to files, fsync'd every flush interval
  kSync = 2,   // fsync before the append is acknowledged
};

const char* DurabilityName(Durability d);
Result<Durability> ParseDurability(const std::string& s);

struct StreamConfig {
  std::string name;
  uint32_t streamlets = 1;
  uint32_t segment_bytes = 8u << 20;  // fixed segment size
  uint32_t segments_per_group = 16;   // P
  uint32_t active_groups = 1;         // Q
  Durability durability = Durability::kNone;
  int64_t retention_bytes = -1;  // per streamlet; -1 = unlimited
  int64_t retention_ms = -1;     // -1 = unlimited
  // Copies of each streamlet, each on its own broker (docs/cluster.md, "Replication"); only a
  // broker cluster replicates, and only durable streams.
  uint32_t replication = 1;

  // Checks names and bounds; the message says which value is wrong and why.
  Status Validate() const;
};

// Stream names become directory names, so they are restricted to [A-Za-z0-9._-], 1..200
// characters, not starting with '.'.
bool IsValidStreamName(const std::string& name);

}  // namespace nearstream::storage
