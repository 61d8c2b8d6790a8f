// A mutex lock that counts the threads waiting for it, for a holder that keeps the mutex across
// several steps and lets go when someone waits (a request worker keeps its slots and its
// connections to followers locked while its batches of replicated chunks are on their way:
// storage/held_appends.h, cluster/zk_cluster.h).
#pragma once

#include <atomic>
#include <mutex>

namespace nearstream {

// Takes `mu`, counted in `waiting` while it waits for it.
inline std::unique_lock<std::mutex> LockCounted(std::mutex& mu, std::atomic<int>& waiting) {
  std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
  if (lock.owns_lock()) return lock;
  waiting.fetch_add(1, std::memory_order_relaxed);
  lock.lock();
  waiting.fetch_sub(1, std::memory_order_relaxed);
  return lock;
}

}  // namespace nearstream
