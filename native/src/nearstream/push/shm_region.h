// A push region: one shared-memory file per push subscription, laid out as
// include/nearstream/shm_layout.h says (docs/shm-layout.md in prose).
//
// The broker creates it (Create: O_CREAT|O_EXCL, mode 0600, space reserved, header and rings
// initialized, magic stored last with release order) and unlinks it when the subscription ends;
// consumers (tests here, the JNI library in production) map it with Open, which validates magic,
// version and geometry. The geometry is copied into the object at map time, so addresses never
// depend on words another process could scribble over.
//
// Threading: the object itself is immutable after construction; what the mapped words mean and
// who may write them is the layout's contract (RingProducer / RingConsumer in slot_ring.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nearstream/common/clock.h"
#include "nearstream/common/status.h"
#include "nearstream/shm_layout.h"

namespace nearstream::push {

inline constexpr char kDefaultShmDir[] = "/dev/shm";

struct RegionGeometry {
  uint32_t ring_count = 1;
  uint32_t slots_per_ring = 8;
  uint32_t slot_bytes = 1u << 20;  // payload bytes per slot, a multiple of 64

  uint64_t payload_offset() const { return ns_shm_payload_offset(slots_per_ring); }
  uint64_t ring_stride() const { return ns_shm_ring_stride(slots_per_ring, slot_bytes); }
  uint64_t region_bytes() const {
    return ns_shm_region_bytes(ring_count, slots_per_ring, slot_bytes);
  }
  // kInvalidArgument unless every count is positive, slot_bytes is a multiple of 64 and at most
  // NS_SHM_MAX_SLOT_BYTES, and the region stays below 1 TiB.
  Status Validate() const;
};

// CLOCK_MONOTONIC in nanoseconds (common/clock.h): the clock of every heartbeat in the region.
using nearstream::MonotonicNowNs;

class ShmRegion {
 public:
  struct CreateOptions {
    std::string dir = kDefaultShmDir;  // tests pass a temporary directory
    std::string name;                  // file name inside dir, e.g. "nearstream-push-<id>"
    RegionGeometry geometry;
    uint64_t broker_epoch = 0;
    uint32_t slot_format = NS_SHM_SLOT_FORMAT_BINARY;
    // binary_view regions: the name prefix of the segment files their views point into
    // (docs/shm-layout.md, "Segment files"); at most NS_SHM_SEGMENT_FILE_PREFIX_BYTES - 1 bytes.
    std::string segment_file_prefix;
  };

  // Broker side. Fails with kIoError (errno text) if the file exists or space cannot be
  // reserved, leaving no file behind. The returned region owns the file: it is unlinked by
  // Unlink() or, at the latest, by the destructor.
  static Result<std::unique_ptr<ShmRegion>> Create(const CreateOptions& options);

  // Consumer side: maps an existing region read-write and validates it. Does not own the file.
  static Result<std::unique_ptr<ShmRegion>> Open(const std::string& path);

  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // Removes the file name (the mapping stays valid for everyone who has it). Idempotent.
  Status Unlink();

  const std::string& path() const { return path_; }
  bool owner() const { return owner_; }
  const RegionGeometry& geometry() const { return geometry_; }
  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }

  ns_shm_region_header* header() const { return reinterpret_cast<ns_shm_region_header*>(base_); }
  ns_shm_ring_header* ring(uint32_t ring) const {
    return reinterpret_cast<ns_shm_ring_header*>(base_ + ring_offset(ring));
  }
  ns_shm_slot_descriptor* descriptor(uint32_t ring, uint32_t slot) const {
    return reinterpret_cast<ns_shm_slot_descriptor*>(base_ + ring_offset(ring) +
                                                     NS_SHM_RING_HEADER_BYTES +
                                                     uint64_t{slot} * NS_SHM_DESCRIPTOR_BYTES);
  }
  uint8_t* payload(uint32_t ring, uint32_t slot) const {
    return base_ + ring_offset(ring) + geometry_.payload_offset() +
           uint64_t{slot} * geometry_.slot_bytes;
  }

  // ---- liveness words ----
  uint64_t broker_epoch() const;
  uint64_t broker_heartbeat_ns() const;
  uint32_t region_state() const;
  // Broker only.
  void SetBrokerHeartbeat(uint64_t now_ns);
  void MarkClosed();

 private:
  ShmRegion(std::string path, int fd, uint8_t* base, uint64_t size, RegionGeometry geometry,
            bool owner);
  uint64_t ring_offset(uint32_t ring) const {
    return NS_SHM_HEADER_BYTES + uint64_t{ring} * geometry_.ring_stride();
  }

  const std::string path_;
  const int fd_;
  uint8_t* const base_;
  const uint64_t size_;
  const RegionGeometry geometry_;
  const bool owner_;
  bool unlinked_ = false;
};

}  // namespace nearstream::push
