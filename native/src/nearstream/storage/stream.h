// A stream: its configuration and a fixed set of streamlets, plus counters (one per streamlet,
// one for the stream) that long-polling fetches and push threads watch to learn that something
// was appended.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "nearstream/storage/stream_transactions.h"
#include "nearstream/storage/streamlet.h"

namespace nearstream::storage {

class Stream {
 public:
  // `dir` holds the streamlet directories of a durable stream; empty for memory-only streams.
  // `totals` (may be null: the stream keeps its own) counts finished transactions broker-wide.
  Stream(StreamConfig config, Env* env, const std::string& dir, TxnSettings txn_settings = {},
         TxnTotals* totals = nullptr);

  const StreamConfig& config() const { return config_; }
  uint32_t streamlet_count() const { return static_cast<uint32_t>(streamlets_.size()); }
  // Null when `id` is out of range.
  Streamlet* streamlet(uint32_t id) {
    return id < streamlets_.size() ? streamlets_[id].get() : nullptr;
  }

  // Bumped after every successful append; push threads compare it. Both seq_cst (free on
  // x86): a push thread going to sleep stores a flag and then loads this, the append path bumps
  // this and then loads the flag (PushManager::NotifyAppend).
  uint64_t append_generation() const { return generation_.load(std::memory_order_seq_cst); }
  // Per streamlet, bumped by appends to that streamlet only: a long-poll fetch compares the
  // generations of its own streamlets, so appends elsewhere neither wake it nor make it retry.
  // `id` must be < streamlet_count(). seq_cst like the stream-wide one (FetchWaiters relies on
  // it: an append bumps this and then loads the waiter count, a parking fetch stores the count
  // and then, under the same mutex, loads this).
  uint64_t streamlet_generation(uint32_t id) const {
    return streamlet_generations_[id].load(std::memory_order_seq_cst);
  }

  // After an append to streamlet `id` (< streamlet_count()): bumps its generation, then the
  // stream-wide one.
  void NoteAppended(uint32_t id) {
    streamlet_generations_[id].fetch_add(1, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
  }
  // Something that concerns every streamlet (the stream's deletion, maintenance closing idle
  // groups): bumps every streamlet's generation and the stream-wide one.
  void NoteAppended();

  // New segments of every streamlet live in `files` from now on (a view push subscription asked
  // for it; segment_files.h).
  void UseSegmentFiles(const std::shared_ptr<SegmentFiles>& files);

  // The broker scope's transactions (a stream without replication; a replicated stream's are
  // memory-only and take no requests).
  StreamTransactions& transactions() { return *transactions_; }
  const StreamTransactions& transactions() const { return *transactions_; }
  // The transactions of `scope` (kBrokerTxnScope or a streamlet index): null when the stream has
  // no such scope. A replicated stream has one per streamlet, any other stream the broker scope.
  StreamTransactions* transactions_of(uint32_t scope);
  // Every scope's transactions (recovery, maintenance, gauges).
  std::vector<StreamTransactions*> all_transactions();

  // Set once the stream has been deleted; handlers holding a reference stop using it.
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  void MarkDeleted() { deleted_.store(true, std::memory_order_release); }

 private:
  const StreamConfig config_;
  std::vector<std::unique_ptr<Streamlet>> streamlets_;
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> streamlet_generations_;  // streamlet_count() of them
  std::atomic<bool> deleted_{false};
  TxnTotals own_totals_;
  std::unique_ptr<StreamTransactions> transactions_;
  std::vector<std::unique_ptr<StreamTransactions>> streamlet_transactions_;  // replicated only
};

}  // namespace nearstream::storage
