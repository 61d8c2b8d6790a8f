// The appends of one request worker to replicated streamlets, written but not yet published
// (docs/cluster.md, "Replication"). A replicated streamlet's leader publishes and acknowledges a
// chunk only once its in-sync followers hold it. Rather than sending each chunk and waiting for
// the answer before the next one is written, a worker writes every chunk of the requests it took
// in one go (Streamlet::AppendHeld), keeping the slots it wrote to locked and the chunks
// unpublished; then it sends each streamlet's chunks to the followers in one gathered write,
// waits for all their answers, and publishes the chunks in order (Publish) or cuts them off
// again (Discard). The round trip and the wake-ups it costs are shared by every chunk of the
// batch, which is the group commit of a database log.
//
// A worker never waits for a slot lock while it holds another (Lock refuses instead, and the
// worker finishes its batch first), so workers cannot deadlock on each other's slots. One worker
// owns an instance; it is not thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "nearstream/storage/streamlet.h"

namespace nearstream::storage {

class HeldAppends {
 public:
  struct Chunk {
    Position at;
    const uint8_t* data;  // in the segment, valid until the chunk is published or discarded
    uint32_t size;
  };

  HeldAppends() = default;
  ~HeldAppends() { Release(); }
  HeldAppends(const HeldAppends&) = delete;
  HeldAppends& operator=(const HeldAppends&) = delete;

  // Nothing held and no slot locked.
  bool empty() const { return entries_.empty() && slots_.empty(); }
  // The streamlets with held chunks, in the order of their first chunk.
  std::vector<Streamlet*> streamlets() const;
  // The held chunks of `streamlet` in the order they were written: the order its followers
  // must take them in.
  std::vector<Chunk> ChunksOf(const Streamlet* streamlet) const;
  // Ok, or why a write into `streamlet` failed after chunks of it were held: the segment it
  // failed in is sealed, so the chunks held before can only be discarded.
  Status failure(const Streamlet* streamlet) const;

  // Makes the held chunks of `streamlet` visible to readers, in order.
  void Publish(Streamlet* streamlet);
  // Cuts the held chunks of `streamlet` off again (their segments take no more chunks) and
  // restores their producers' sequences, so that a retry appends them anew.
  void Discard(Streamlet* streamlet);
  // Unlocks every slot. Chunks neither published nor discarded are discarded.
  void Release();

 private:
  friend class Streamlet;

  struct HeldSlot {
    Streamlet* streamlet;
    size_t index;
    std::unique_lock<std::mutex> lock;
    uint32_t held_chunks = 0;
    // Each producer's state before its first held chunk (nullopt: it had none).
    std::vector<std::pair<uint64_t, std::optional<Streamlet::ProducerState>>> saved;
    void Save(uint64_t producer, const Streamlet::ProducerMap& producers);
  };
  struct Entry {
    Streamlet* streamlet;
    std::shared_ptr<Segment> segment;
    Streamlet::Group* group;
    uint32_t offset;
    uint32_t size;
    int64_t first_timestamp_ms;
    int64_t now_ms;
  };

  // Slot `index` of `streamlet`, locked by this batch: already held, or locked now. Null when
  // another thread holds it and this batch holds some slot already (finish the batch first).
  HeldSlot* Lock(Streamlet* streamlet, size_t index);
  bool IsHeld(const Streamlet* streamlet, const Position& at) const;
  void Forget(Streamlet* streamlet);

  std::vector<std::unique_ptr<HeldSlot>> slots_;  // pointers into it stay valid
  std::vector<Entry> entries_;                    // in write order
  std::vector<std::pair<const Streamlet*, Status>> failures_;
};

}  // namespace nearstream::storage
