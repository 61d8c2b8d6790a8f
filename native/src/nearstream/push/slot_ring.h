// The single-producer/single-consumer slot ring of a push region (docs/shm-layout.md, "Slot
// protocol"): Vyukov's bounded queue over the descriptors' sequence words.
//
//   sequence of the slot of position p (slot p % N):
//     p          free: the producer at position p may fill it
//     p + 1      published: the consumer at position p may read it
//     p + N      released: free for position p + N (the next lap)
//
//   producer (broker push thread)          consumer (source subtask)
//   TryClaim: seq == pos ? (acquire)       TryNext: seq == pos + 1 ? (acquire)
//   fill payload + descriptor              read payload + descriptor
//   Publish: seq = pos + 1 (release),      Release: seq = pos + N (release),
//            ring data_doorbell                     ring release_doorbell
//
// Neither side blocks or makes a syscall while the other is busy: a doorbell is a counter bump,
// and FUTEX_WAKE is issued only when the other side has set its waiting flag.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "nearstream/common/status.h"
#include "nearstream/push/futex.h"
#include "nearstream/push/shm_region.h"

namespace nearstream::push {

// What a descriptor says about its slot's payload; offsets are relative to the payload start.
struct SlotLayout {
  uint32_t row_count = 0;
  uint32_t chunk_count = 0;
  uint32_t validity_offset = 0;
  uint32_t validity_length = 0;
  uint32_t offsets_offset = 0;
  uint32_t offsets_length = 0;
  uint32_t data_offset = 0;
  uint32_t data_length = 0;
  uint32_t chunk_map_offset = 0;
  uint32_t chunk_map_length = 0;
  uint32_t payload_length = 0;  // bytes of the payload in use
  uint32_t flags = 0;           // NS_SHM_SLOT_*: 0 for a batch, else a marker slot
  uint32_t buffers_offset = 0;  // binary_view slots: the buffer table
  uint32_t buffers_length = 0;

  bool operator==(const SlotLayout&) const = default;
};

inline constexpr int kDefaultSpins = 1000;

// Broker side of one ring. Owned by the push thread that serves the ring: every method must be
// called from that one thread. `region` must outlive the producer.
class RingProducer {
 public:
  RingProducer(ShmRegion* region, uint32_t ring);

  // Hands a free or reclaimed ring to a (new) consumer: records the subtask, starts a new
  // generation at the current position, resets the counters, grants a heartbeat grace period
  // starting at `now_ns`, and publishes state = active (release).
  void Activate(uint32_t subtask_index, uint64_t now_ns);

  // Takes the ring back from a dead consumer: state = reclaimed, every published or unreleased
  // slot is dropped and the sequences are re-initialized for a fresh lap that starts beyond any
  // value the old consumer could still store. Activate() makes it usable again. A consumer that
  // is in fact alive and releases after this can still stall one slot (never fake data), which
  // is why it must check Detached() and why staleness is measured in seconds.
  void Reclaim();

  // The payload of the slot at the current position, or nullptr when the ring is full (its
  // consumer still holds that slot). Never blocks. Returns the same slot until Publish().
  uint8_t* TryClaim();

  // Publishes the claimed slot (descriptor fields, then the sequence word with release order)
  // and rings the data doorbell. Fails only if FUTEX_WAKE fails; the slot is published anyway.
  Status Publish(const SlotLayout& layout);

  // True when the consumer's heartbeat is older than `max_age_ns` (an activation counts as one).
  bool ConsumerStale(uint64_t now_ns, uint64_t max_age_ns) const;
  // False until a consumer stores a heartbeat after the last Activate(): a ring nobody attached
  // to holds nothing to take back (its published slots wait for whoever attaches).
  bool ConsumerSeenSinceActivation() const;

  uint64_t position() const { return position_; }
  uint32_t ring() const { return ring_; }
  uint32_t slot_bytes() const { return region_->geometry().slot_bytes; }

 private:
  ShmRegion* const region_;
  const uint32_t ring_;
  const uint32_t slots_;
  uint64_t position_;
  uint64_t published_ = 0;
  uint64_t activated_ns_ = 0;  // the heartbeat Activate() stored
  bool claimed_ = false;
};

// Consumer side of one ring (in production the Java reader does the same through VarHandles;
// this one serves tests and native tools). One thread at a time. `region` must outlive it.
class RingConsumer {
 public:
  // Attaches to an active ring at its generation's base position; kInvalidArgument when the ring
  // is not active. Stores a first heartbeat.
  static Result<RingConsumer> Attach(ShmRegion* region, uint32_t ring, uint64_t now_ns);

  struct Slot {
    uint64_t position;
    SlotLayout layout;
    const uint8_t* payload;
  };

  // The next published slot, or nothing yet. The slot stays valid until Release(position).
  std::optional<Slot> TryNext();

  // Hands the slot of `position` (returned by TryNext, not yet released) back to the producer
  // and rings the region's release doorbell. Slots may be released in any order.
  Status Release(uint64_t position);

  // Waits until TryNext would return a slot or `timeout` passes: spins, then sleeps on the
  // ring's data doorbell. ready is false on timeout.
  Result<WaitOutcome> Wait(std::chrono::nanoseconds timeout, int spins = kDefaultSpins);

  void Heartbeat(uint64_t now_ns);
  // True once the broker reclaimed or re-activated the ring behind this consumer's back.
  bool Detached() const;

  uint64_t position() const { return position_; }
  uint32_t generation() const { return generation_; }

 private:
  RingConsumer(ShmRegion* region, uint32_t ring, uint32_t generation, uint64_t base);
  bool Ready() const;

  ShmRegion* region_;
  uint32_t ring_;
  uint32_t slots_;
  uint32_t generation_;
  uint64_t position_;
  uint64_t released_ = 0;
};

}  // namespace nearstream::push
