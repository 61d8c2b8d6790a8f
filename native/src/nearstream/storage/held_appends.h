// The appends of one request worker to replicated streamlets, written but not yet published
// (docs/cluster.md, "Replication"). A replicated streamlet's leader publishes and acknowledges a
// chunk only once its in-sync followers hold it. Rather than sending each chunk and waiting for
// the answer before the next one is written, a worker writes every chunk of the requests it took
// in one go (Streamlet::AppendHeld), keeping the slots it wrote to locked and the chunks
// unpublished; then it sends each streamlet's chunks to the followers in one gathered write and
// publishes them in order (Publish) or cuts them off again (Discard) once the answers are in.
// The round trip and the wake-ups it costs are shared by every chunk of the batch, which is the
// group commit of a database log.
//
// Flights. While one batch's chunks are on their way, the worker may write the next batch's:
// each batch is a flight (CloseFlight), a slot stays locked while any flight holds chunks of it,
// and flights are settled in order, so a streamlet's chunks are still published in the order
// they were written. A slot someone else waits for is not kept across flights (Lock refuses),
// and a segment that fills up waits for every flight (AppendHeld asks for a flush), as a sealed
// segment's length is final to readers.
//
// A worker never waits for a slot lock while it holds another or has flights unsettled (which
// hold its connections to followers): Lock refuses instead, and the worker settles its flights
// first, so workers cannot deadlock on each other's slots and connections. One worker owns an
// instance; it is not thread-safe.
#pragma once

#include <cstdint>
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
  // The flight chunks written now join.
  uint64_t flight() const { return flight_; }
  // Ends the current flight: chunks written from now on join the next one. The worker calls
  // FlightSettled once its outcome is applied (Publish or Discard of each streamlet).
  void CloseFlight() {
    ++flight_;
    ++unsettled_;
  }
  void FlightSettled() { --unsettled_; }
  // The streamlets with held chunks, or a failed write, in `flight`.
  std::vector<Streamlet*> streamlets(uint64_t flight) const;
  // The held chunks of `streamlet` in `flight`, in the order they were written: the order its
  // followers must take them in.
  std::vector<Chunk> ChunksOf(const Streamlet* streamlet, uint64_t flight) const;
  // Writes the chunks held in `flight` to their segments' files, one write per segment: a held
  // chunk is only copied to its segment's memory when it is appended. Called before the flight
  // goes to the followers, so they never hold a chunk the leader could not write. A streamlet
  // whose write fails has its chunks of the flight cut off (failure()).
  void WriteFiles(uint64_t flight);
  // Ok, or why the write of `streamlet`'s chunks of `flight` failed: they can only be discarded
  // (those of earlier flights still stand).
  Status failure(const Streamlet* streamlet, uint64_t flight) const;

  // Makes the held chunks of `streamlet` in `flight`, its oldest flight with chunks held, visible
  // to readers, in order. WriteFiles wrote them.
  void Publish(Streamlet* streamlet, uint64_t flight);
  // Cuts every held chunk of `streamlet`, of every flight, off again (their segments take no
  // more chunks) and restores their producers' sequences, so that a retry appends them anew.
  void Discard(Streamlet* streamlet);
  // Unlocks the slots no flight holds chunks of.
  void ReleaseIdle();
  // Unlocks every slot and ends every flight. Chunks neither published nor discarded are
  // discarded.
  void Release();

 private:
  friend class Streamlet;

  struct Saved {
    uint64_t flight;
    uint64_t producer;
    std::optional<Streamlet::ProducerState> state;  // nullopt: it had none
  };
  struct HeldSlot {
    Streamlet* streamlet;
    size_t index;
    std::unique_lock<std::mutex> lock;
    uint32_t held_chunks = 0;    // of every flight
    uint64_t newest_flight = 0;  // the flight of its last held chunk
    // Each producer's state before its first held chunk of each flight.
    std::vector<Saved> saved;
    void Save(uint64_t flight, uint64_t producer, const Streamlet::ProducerMap& producers);
  };
  struct Entry {
    Streamlet* streamlet;
    HeldSlot* slot;
    uint64_t flight;
    std::shared_ptr<Segment> segment;
    Streamlet::Group* group;
    uint32_t offset;
    uint32_t size;
    int64_t first_timestamp_ms;
    int64_t now_ms;
  };
  struct Failure {
    Streamlet* streamlet;
    uint64_t flight;
    Status status;
    std::shared_ptr<Segment> segment;  // the one the write failed in, sealed when settled
  };

  // Slot `index` of `streamlet`, locked by this instance: already held, or locked now. Null
  // when the worker must settle its flights first: another thread holds the slot and this
  // instance holds some slot already or has flights unsettled (which hold other locks: the
  // connections to the followers), or the slot holds chunks of an earlier flight and another
  // thread waits for it.
  HeldSlot* Lock(Streamlet* streamlet, size_t index);
  bool IsHeld(const Streamlet* streamlet, const Position& at) const;
  bool HasFailure(const Streamlet* streamlet) const;
  void Forget(Streamlet* streamlet, uint64_t flight, bool all_flights);

  uint64_t flight_ = 1;
  uint64_t unsettled_ = 0;                        // flights closed and not settled
  std::vector<std::unique_ptr<HeldSlot>> slots_;  // pointers into it stay valid
  std::vector<Entry> entries_;                    // in write order
  std::vector<Failure> failures_;
};

}  // namespace nearstream::storage
