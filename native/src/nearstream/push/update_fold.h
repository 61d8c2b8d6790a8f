// Folding a PushUpdate into one that is still queued (not yet applied by the push thread).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace nearstream::push {

// PushUpdates must act as if each were applied in turn, but the push thread applies only the
// latest queued one at its next pass. Folding `queued` into `next` keeps the sequential meaning:
// a split of `next` that `queued` also names takes over its start and restart flag (the queued
// update decided where it stands); a split that `queued` dropped is re-added by `next`, so it
// restarts at its own start instead of keeping the push position it had before both (a pause
// and resume of a split inside one pass must not skip what was pushed meanwhile).
//
// SplitT needs `uint32_t streamlet`, a copyable `pos` and `bool restart`.
template <typename SplitT>
void FoldQueuedUpdate(const std::vector<std::vector<SplitT>>& queued,
                      std::vector<std::vector<SplitT>>* next) {
  std::unordered_map<uint32_t, const SplitT*> by_streamlet;
  for (const auto& ring : queued) {
    for (const SplitT& s : ring) by_streamlet[s.streamlet] = &s;
  }
  for (auto& ring : *next) {
    for (SplitT& s : ring) {
      auto it = by_streamlet.find(s.streamlet);
      if (it == by_streamlet.end()) {
        s.restart = true;
      } else {
        s.pos = it->second->pos;
        s.restart = it->second->restart;
      }
    }
  }
}

}  // namespace nearstream::push
