#include "nearstream/push/slot_ring.h"

#include <atomic>

#include "nearstream/common/log.h"

namespace nearstream::push {

namespace {

template <typename T>
std::atomic_ref<T> Word(T& w) {
  return std::atomic_ref<T>(w);
}

}  // namespace

// ---- RingProducer ----

RingProducer::RingProducer(ShmRegion* region, uint32_t ring)
    : region_(region), ring_(ring), slots_(region->geometry().slots_per_ring) {
  NS_CHECK(ring < region->geometry().ring_count);
  position_ = Word(region_->ring(ring_)->base_position).load(std::memory_order_relaxed);
}

void RingProducer::Activate(uint32_t subtask_index, uint64_t now_ns) {
  ns_shm_ring_header* r = region_->ring(ring_);
  NS_CHECK(!claimed_);
  NS_CHECK(Word(r->state).load(std::memory_order_relaxed) != NS_SHM_RING_ACTIVE);
  Word(r->subtask_index).store(subtask_index, std::memory_order_relaxed);
  Word(r->generation).fetch_add(1, std::memory_order_relaxed);
  Word(r->base_position).store(position_, std::memory_order_relaxed);
  Word(r->published).store(0, std::memory_order_relaxed);
  Word(r->released).store(0, std::memory_order_relaxed);
  Word(r->consumer_heartbeat_ns).store(now_ns, std::memory_order_relaxed);
  published_ = 0;
  activated_ns_ = now_ns;
  Word(r->state).store(NS_SHM_RING_ACTIVE, std::memory_order_release);
}

void RingProducer::Reclaim() {
  ns_shm_ring_header* r = region_->ring(ring_);
  Word(r->state).store(NS_SHM_RING_RECLAIMED, std::memory_order_release);
  // A stale consumer can still store at most (its position) + N <= position_ + N. Starting the
  // new lap at the first multiple of N above position_ + N - 1 keeps every value it might write
  // at or below the new slot's "free" value, so it can never fake a publication.
  const uint64_t base = (position_ + 2 * uint64_t{slots_} - 1) / slots_ * slots_;
  for (uint32_t s = 0; s < slots_; ++s) {
    Word(region_->descriptor(ring_, s)->sequence).store(base + s, std::memory_order_relaxed);
  }
  position_ = base;
  claimed_ = false;
  Word(r->base_position).store(base, std::memory_order_release);
}

uint8_t* RingProducer::TryClaim() {
  const uint32_t slot = static_cast<uint32_t>(position_ % slots_);
  if (!claimed_) {
    // Acquire: the consumer's reads of the previous lap happen before our writes.
    const uint64_t seq =
        Word(region_->descriptor(ring_, slot)->sequence).load(std::memory_order_acquire);
    if (seq != position_) return nullptr;
    claimed_ = true;
  }
  return region_->payload(ring_, slot);
}

Status RingProducer::Publish(const SlotLayout& l) {
  NS_CHECK(claimed_);
  NS_CHECK(l.payload_length <= region_->geometry().slot_bytes);
  const uint32_t slot = static_cast<uint32_t>(position_ % slots_);
  ns_shm_slot_descriptor* d = region_->descriptor(ring_, slot);
  d->row_count = l.row_count;
  d->chunk_count = l.chunk_count;
  d->validity_offset = l.validity_offset;
  d->validity_length = l.validity_length;
  d->offsets_offset = l.offsets_offset;
  d->offsets_length = l.offsets_length;
  d->data_offset = l.data_offset;
  d->data_length = l.data_length;
  d->chunk_map_offset = l.chunk_map_offset;
  d->chunk_map_length = l.chunk_map_length;
  d->flags = l.flags;
  d->payload_length = l.payload_length;
  d->buffers_offset = l.buffers_offset;
  d->buffers_length = l.buffers_length;
  Word(d->sequence).store(position_ + 1, std::memory_order_release);
  ++position_;
  claimed_ = false;
  ns_shm_ring_header* r = region_->ring(ring_);
  Word(r->published).store(++published_, std::memory_order_relaxed);
  return RingDoorbell(&r->data_doorbell, &r->consumer_waiting);
}

bool RingProducer::ConsumerStale(uint64_t now_ns, uint64_t max_age_ns) const {
  const uint64_t hb =
      Word(region_->ring(ring_)->consumer_heartbeat_ns).load(std::memory_order_relaxed);
  return now_ns > hb && now_ns - hb > max_age_ns;
}

bool RingProducer::ConsumerSeenSinceActivation() const {
  return Word(region_->ring(ring_)->consumer_heartbeat_ns).load(std::memory_order_relaxed) !=
         activated_ns_;
}

// ---- RingConsumer ----

RingConsumer::RingConsumer(ShmRegion* region, uint32_t ring, uint32_t generation, uint64_t base)
    : region_(region),
      ring_(ring),
      slots_(region->geometry().slots_per_ring),
      generation_(generation),
      position_(base) {}

Result<RingConsumer> RingConsumer::Attach(ShmRegion* region, uint32_t ring, uint64_t now_ns) {
  if (ring >= region->geometry().ring_count) {
    return Status::InvalidArgument("ring " + std::to_string(ring) + " out of range");
  }
  ns_shm_ring_header* r = region->ring(ring);
  if (Word(r->state).load(std::memory_order_acquire) != NS_SHM_RING_ACTIVE) {
    return Status::InvalidArgument("ring " + std::to_string(ring) + " is not active");
  }
  RingConsumer c(region, ring, Word(r->generation).load(std::memory_order_relaxed),
                 Word(r->base_position).load(std::memory_order_relaxed));
  c.Heartbeat(now_ns);
  return c;
}

bool RingConsumer::Ready() const {
  const uint32_t slot = static_cast<uint32_t>(position_ % slots_);
  return Word(region_->descriptor(ring_, slot)->sequence).load(std::memory_order_acquire) ==
         position_ + 1;
}

std::optional<RingConsumer::Slot> RingConsumer::TryNext() {
  if (!Ready()) return std::nullopt;
  const uint32_t slot = static_cast<uint32_t>(position_ % slots_);
  const ns_shm_slot_descriptor* d = region_->descriptor(ring_, slot);
  Slot out;
  out.position = position_;
  out.layout.row_count = d->row_count;
  out.layout.chunk_count = d->chunk_count;
  out.layout.validity_offset = d->validity_offset;
  out.layout.validity_length = d->validity_length;
  out.layout.offsets_offset = d->offsets_offset;
  out.layout.offsets_length = d->offsets_length;
  out.layout.data_offset = d->data_offset;
  out.layout.data_length = d->data_length;
  out.layout.chunk_map_offset = d->chunk_map_offset;
  out.layout.chunk_map_length = d->chunk_map_length;
  out.layout.payload_length = d->payload_length;
  out.layout.buffers_offset = d->buffers_offset;
  out.layout.buffers_length = d->buffers_length;
  out.layout.flags = d->flags;
  out.payload = region_->payload(ring_, slot);
  ++position_;
  return out;
}

Status RingConsumer::Release(uint64_t position) {
  NS_CHECK(position < position_ && position + slots_ >= position_);
  const uint32_t slot = static_cast<uint32_t>(position % slots_);
  Word(region_->descriptor(ring_, slot)->sequence)
      .store(position + slots_, std::memory_order_release);
  Word(region_->ring(ring_)->released).store(++released_, std::memory_order_relaxed);
  ns_shm_region_header* h = region_->header();
  return RingDoorbell(&h->release_doorbell, &h->broker_waiting);
}

Result<WaitOutcome> RingConsumer::Wait(std::chrono::nanoseconds timeout, int spins) {
  ns_shm_ring_header* r = region_->ring(ring_);
  return AwaitDoorbell(
      &r->data_doorbell, &r->consumer_waiting, [this] { return Ready(); }, spins, timeout);
}

void RingConsumer::Heartbeat(uint64_t now_ns) {
  Word(region_->ring(ring_)->consumer_heartbeat_ns).store(now_ns, std::memory_order_relaxed);
}

bool RingConsumer::Detached() const {
  ns_shm_ring_header* r = region_->ring(ring_);
  return Word(r->state).load(std::memory_order_acquire) != NS_SHM_RING_ACTIVE ||
         Word(r->generation).load(std::memory_order_relaxed) != generation_;
}

}  // namespace nearstream::push
