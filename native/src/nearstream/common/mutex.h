// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with clang's
// thread-safety annotations (common/thread_annotations.h), so that NS_GUARDED_BY(mu_) members
// and NS_REQUIRES(mu_) functions are checked. Same cost as the std types they wrap.
//
//   Mutex mu_;
//   int count_ NS_GUARDED_BY(mu_) = 0;
//   void Add() NS_EXCLUDES(mu_) {
//     MutexLock lock(&mu_);
//     ++count_;
//   }
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "nearstream/common/thread_annotations.h"

namespace nearstream {

class NS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() NS_ACQUIRE() { mu_.lock(); }
  void Unlock() NS_RELEASE() { mu_.unlock(); }
  // For code the analysis cannot follow (a lambda run while the caller holds the lock): declares
  // the lock held. Checks nothing at run time.
  void AssertHeld() const NS_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class NS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) NS_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() NS_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Releases `mu`, sleeps until Signal()/SignalAll() (or spuriously), and takes `mu` again before
  // returning. Callers wait in a loop on their condition.
  void Wait(Mutex* mu) NS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // `mu` stays held, as the caller's MutexLock expects
  }
  // As Wait, but also returns after `timeout`.
  void WaitFor(Mutex* mu, std::chrono::milliseconds timeout) NS_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait_for(lock, timeout);
    lock.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace nearstream
