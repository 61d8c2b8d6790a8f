#include "nearstream/storage/stream_config.h"

#include "nearstream/storage/chunk.h"

namespace nearstream::storage {

const char* DurabilityName(Durability d) {
  switch (d) {
    case Durability::kNone: return "none";
    case Durability::kAsync: return "async";
    case Durability::kSync: return "sync";
  }
  return "unknown";
}

Result<Durability> ParseDurability(const std::string& s) {
  if (s == "none") return Durability::kNone;
  if (s == "async") return Durability::kAsync;
  if (s == "sync") return Durability::kSync;
  return Status::InvalidArgument("durability must be one of none, async, sync (got '" + s + "')");
}

bool IsValidStreamName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Status StreamConfig::Validate() const {
  if (!IsValidStreamName(name)) {
    return Status::InvalidArgument(
        "stream name '" + name +
        "' is invalid: use 1-200 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  if (streamlets < 1 || streamlets > 65536)
    return Status::InvalidArgument("streamlets must be in [1, 65536]");
  if (segment_bytes < 4096 || segment_bytes > (1u << 30)) {
    return Status::InvalidArgument("segment_bytes must be in [4096, 1073741824]");
  }
  if (segments_per_group < 1 || segments_per_group > 65536) {
    return Status::InvalidArgument("segments_per_group (P) must be in [1, 65536]");
  }
  if (active_groups < 1 || active_groups > 1024) {
    return Status::InvalidArgument("active_groups (Q) must be in [1, 1024]");
  }
  if (static_cast<uint8_t>(durability) > 2)
    return Status::InvalidArgument("durability must be 0, 1 or 2");
  if (retention_bytes < -1 || retention_bytes == 0) {
    return Status::InvalidArgument("retention_bytes must be -1 (unlimited) or positive");
  }
  if (retention_ms < -1 || retention_ms == 0) {
    return Status::InvalidArgument("retention_ms must be -1 (unlimited) or positive");
  }
  if (replication < 1 || replication > 3) {
    return Status::InvalidArgument("replication must be in [1, 3]");
  }
  if (replication > 1 && durability == Durability::kNone) {
    return Status::InvalidArgument(
        "replication above 1 needs a durable stream (durability async or sync): followers keep "
        "their copy in segment files");
  }
  return Status::Ok();
}

}  // namespace nearstream::storage
