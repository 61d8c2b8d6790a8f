#include "nearstream/storage/file_syncer.h"

#include <utility>

#include "nearstream/common/thread_name.h"

namespace nearstream::storage {

FileSyncer::FileSyncer(const std::string& thread_name, size_t max_pending)
    : max_pending_(max_pending == 0 ? 1 : max_pending) {
  thread_ = std::thread([this] { Run(); });
  NameThread(thread_, thread_name);
}

FileSyncer::~FileSyncer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

void FileSyncer::Hand(std::unique_ptr<WritableFile> file, OnFailure on_failure) {
  MutexLock lock(&mu_);
  while (pending_.size() >= max_pending_) changed_.Wait(&mu_);
  pending_.push_back(Pending{std::move(file), std::move(on_failure)});
  ++handed_;
  changed_.SignalAll();
}

void FileSyncer::Drain() {
  MutexLock lock(&mu_);
  const uint64_t target = handed_;
  while (done_ < target) changed_.Wait(&mu_);
}

void FileSyncer::Run() {
  while (true) {
    WritableFile* file;
    {
      MutexLock lock(&mu_);
      while (pending_.empty() && !stopping_) changed_.Wait(&mu_);
      if (pending_.empty()) return;        // stopping, and everything handed over is synced
      file = pending_.front().file.get();  // stays in pending_ while it syncs: Hand counts it
    }
    Status synced = file->Sync();
    Pending done;
    {
      MutexLock lock(&mu_);
      done = std::move(pending_.front());
      pending_.pop_front();
    }
    if (!synced.ok() && done.on_failure) done.on_failure(synced);
    done.file.reset();  // closed off the lock
    MutexLock lock(&mu_);
    ++done_;
    changed_.SignalAll();
  }
}

}  // namespace nearstream::storage
