#include "nearstream/storage/held_appends.h"

#include <algorithm>

#include "nearstream/common/log.h"

namespace nearstream::storage {

void HeldAppends::HeldSlot::Save(uint64_t flight, uint64_t producer,
                                 const Streamlet::ProducerMap& producers) {
  for (const Saved& s : saved) {
    if (s.flight == flight && s.producer == producer) return;
  }
  auto it = producers.find(producer);
  saved.push_back(Saved{
      flight, producer,
      it == producers.end() ? std::nullopt : std::optional<Streamlet::ProducerState>(it->second)});
}

HeldAppends::HeldSlot* HeldAppends::Lock(Streamlet* streamlet, size_t index) {
  Streamlet::Slot& slot = streamlet->slots_[index];
  for (const auto& s : slots_) {
    if (s->streamlet != streamlet || s->index != index) continue;
    // Kept across flights only while nobody else wants it: a seal, a transaction's group or
    // another worker's producer waits at most until this worker's flights are settled.
    if (s->held_chunks > 0 && s->newest_flight < flight_ &&
        slot.waiting.load(std::memory_order_relaxed) > 0) {
      return nullptr;
    }
    return s.get();
  }
  std::unique_lock<std::mutex> lock;
  if (slots_.empty() && unsettled_ == 0) {
    lock = Streamlet::LockSlot(slot);
  } else {
    lock = std::unique_lock<std::mutex>(slot.mu, std::try_to_lock);
    if (!lock.owns_lock()) return nullptr;
  }
  slots_.push_back(
      std::make_unique<HeldSlot>(HeldSlot{streamlet, index, std::move(lock), 0, 0, {}}));
  return slots_.back().get();
}

bool HeldAppends::IsHeld(const Streamlet* streamlet, const Position& at) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.streamlet == streamlet && e.group->id == at.group && e.segment->id() == at.segment &&
           e.offset == at.offset;
  });
}

bool HeldAppends::HasFailure(const Streamlet* streamlet) const {
  return std::any_of(failures_.begin(), failures_.end(),
                     [streamlet](const Failure& f) { return f.streamlet == streamlet; });
}

std::vector<Streamlet*> HeldAppends::streamlets(uint64_t flight) const {
  std::vector<Streamlet*> out;
  for (const Entry& e : entries_) {
    if (e.flight != flight) continue;
    if (std::find(out.begin(), out.end(), e.streamlet) == out.end()) out.push_back(e.streamlet);
  }
  for (const Failure& f : failures_) {
    if (f.flight == flight && std::find(out.begin(), out.end(), f.streamlet) == out.end()) {
      out.push_back(f.streamlet);
    }
  }
  return out;
}

std::vector<HeldAppends::Chunk> HeldAppends::ChunksOf(const Streamlet* streamlet,
                                                      uint64_t flight) const {
  std::vector<Chunk> out;
  for (const Entry& e : entries_) {
    if (e.streamlet != streamlet || e.flight != flight) continue;
    out.push_back(Chunk{Position{e.group->id, e.segment->id(), e.offset},
                        e.segment->data() + e.offset, e.size});
  }
  return out;
}

void HeldAppends::WriteFiles(uint64_t flight) {
  std::vector<const Segment*> written;
  for (const Entry& e : entries_) {
    if (e.flight != flight) continue;
    if (std::find(written.begin(), written.end(), e.segment.get()) != written.end()) continue;
    written.push_back(e.segment.get());
    if (!failure(e.streamlet, flight).ok()) continue;
    Status w = e.segment->WriteFile(e.streamlet->config().durability == Durability::kSync);
    if (!w.ok()) failures_.push_back(Failure{e.streamlet, flight, std::move(w), e.segment});
  }
}

Status HeldAppends::failure(const Streamlet* streamlet, uint64_t flight) const {
  for (const Failure& f : failures_) {
    if (f.streamlet == streamlet && f.flight == flight) return f.status;
  }
  return Status::Ok();
}

void HeldAppends::Publish(Streamlet* streamlet, uint64_t flight) {
  for (const Entry& e : entries_) {
    if (e.streamlet != streamlet) continue;
    if (e.flight != flight) continue;  // a later flight's
    NS_CHECK(e.segment->file_written(e.offset + e.size));
    streamlet->PublishChunk(e.group, e.segment.get(), e.offset, e.size, e.first_timestamp_ms,
                            e.now_ms);
  }
  Forget(streamlet, flight, /*all_flights=*/false);
}

void HeldAppends::Discard(Streamlet* streamlet) {
  // Each segment is cut at its first held chunk: the ones after it were written after it.
  std::vector<const Segment*> cut;
  for (const Entry& e : entries_) {
    if (e.streamlet != streamlet) continue;
    if (std::find(cut.begin(), cut.end(), e.segment.get()) != cut.end()) continue;
    e.segment->Discard(e.offset);
    cut.push_back(e.segment.get());
  }
  // A segment whose write failed takes no more chunks (WriteChunk left that to the flights).
  for (const Failure& f : failures_) {
    if (f.streamlet == streamlet) f.segment->Seal();
  }
  for (const auto& s : slots_) {
    if (s->streamlet != streamlet) continue;
    Streamlet::ProducerMap& producers = streamlet->slots_[s->index].producers;
    // Newest flight first, so that each producer ends with its state before its oldest held
    // chunk.
    for (auto it = s->saved.rbegin(); it != s->saved.rend(); ++it) {
      if (it->state.has_value()) {
        producers[it->producer] = *it->state;
      } else {
        producers.erase(it->producer);
      }
    }
  }
  Forget(streamlet, 0, /*all_flights=*/true);
}

void HeldAppends::Forget(Streamlet* streamlet, uint64_t flight, bool all_flights) {
  auto gone = [&](uint64_t f) { return all_flights || f == flight; };
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) {
                                  if (e.streamlet != streamlet || !gone(e.flight)) return false;
                                  --e.slot->held_chunks;
                                  return true;
                                }),
                 entries_.end());
  for (const auto& s : slots_) {
    if (s->streamlet != streamlet) continue;
    s->saved.erase(std::remove_if(s->saved.begin(), s->saved.end(),
                                  [&](const Saved& x) { return gone(x.flight); }),
                   s->saved.end());
  }
  failures_.erase(
      std::remove_if(failures_.begin(), failures_.end(),
                     [&](const Failure& f) { return f.streamlet == streamlet && gone(f.flight); }),
      failures_.end());
}

void HeldAppends::ReleaseIdle() {
  slots_.erase(std::remove_if(slots_.begin(), slots_.end(),
                              [](const std::unique_ptr<HeldSlot>& s) {
                                return s->held_chunks == 0;  // unlocks
                              }),
               slots_.end());
}

void HeldAppends::Release() {
  while (!entries_.empty()) Discard(entries_.front().streamlet);
  for (const Failure& f : failures_) f.segment->Seal();
  failures_.clear();
  unsettled_ = 0;
  slots_.clear();  // unlocks
}

}  // namespace nearstream::storage
