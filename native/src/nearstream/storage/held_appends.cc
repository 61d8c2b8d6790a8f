#include "nearstream/storage/held_appends.h"

#include <algorithm>

namespace nearstream::storage {

void HeldAppends::HeldSlot::Save(uint64_t producer, const Streamlet::ProducerMap& producers) {
  for (const auto& [id, state] : saved) {
    if (id == producer) return;
  }
  auto it = producers.find(producer);
  saved.emplace_back(producer, it == producers.end()
                                   ? std::nullopt
                                   : std::optional<Streamlet::ProducerState>(it->second));
}

HeldAppends::HeldSlot* HeldAppends::Lock(Streamlet* streamlet, size_t index) {
  for (const auto& s : slots_) {
    if (s->streamlet == streamlet && s->index == index) return s.get();
  }
  std::mutex& mu = streamlet->slots_[index].mu;
  std::unique_lock<std::mutex> lock(mu, std::defer_lock);
  if (slots_.empty()) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return nullptr;
  }
  slots_.push_back(std::make_unique<HeldSlot>(HeldSlot{streamlet, index, std::move(lock), 0, {}}));
  return slots_.back().get();
}

bool HeldAppends::IsHeld(const Streamlet* streamlet, const Position& at) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.streamlet == streamlet && e.group->id == at.group && e.segment->id() == at.segment &&
           e.offset == at.offset;
  });
}

std::vector<Streamlet*> HeldAppends::streamlets() const {
  std::vector<Streamlet*> out;
  for (const Entry& e : entries_) {
    if (std::find(out.begin(), out.end(), e.streamlet) == out.end()) out.push_back(e.streamlet);
  }
  return out;
}

std::vector<HeldAppends::Chunk> HeldAppends::ChunksOf(const Streamlet* streamlet) const {
  std::vector<Chunk> out;
  for (const Entry& e : entries_) {
    if (e.streamlet != streamlet) continue;
    out.push_back(Chunk{Position{e.group->id, e.segment->id(), e.offset},
                        e.segment->data() + e.offset, e.size});
  }
  return out;
}

Status HeldAppends::failure(const Streamlet* streamlet) const {
  for (const auto& [s, status] : failures_) {
    if (s == streamlet) return status;
  }
  return Status::Ok();
}

void HeldAppends::Publish(Streamlet* streamlet) {
  for (const Entry& e : entries_) {
    if (e.streamlet != streamlet) continue;
    streamlet->PublishChunk(e.group, e.segment.get(), e.offset, e.size, e.first_timestamp_ms,
                            e.now_ms);
  }
  Forget(streamlet);
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
  for (const auto& s : slots_) {
    if (s->streamlet != streamlet) continue;
    Streamlet::ProducerMap& producers = streamlet->slots_[s->index].producers;
    for (auto& [producer, state] : s->saved) {
      if (state.has_value()) {
        producers[producer] = *state;
      } else {
        producers.erase(producer);
      }
    }
  }
  Forget(streamlet);
}

void HeldAppends::Forget(Streamlet* streamlet) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [streamlet](const Entry& e) { return e.streamlet == streamlet; }),
                 entries_.end());
  for (const auto& s : slots_) {
    if (s->streamlet != streamlet) continue;
    s->held_chunks = 0;
    s->saved.clear();
  }
  failures_.erase(std::remove_if(failures_.begin(), failures_.end(),
                                 [streamlet](const auto& f) { return f.first == streamlet; }),
                  failures_.end());
}

void HeldAppends::Release() {
  while (!entries_.empty()) Discard(entries_.front().streamlet);
  failures_.clear();
  slots_.clear();  // unlocks
}

}  // namespace nearstream::storage
