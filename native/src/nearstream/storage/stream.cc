#include "nearstream/storage/stream.h"

namespace nearstream::storage {

Stream::Stream(StreamConfig config, Env* env, const std::string& dir, TxnSettings txn_settings,
               TxnTotals* totals)
    : config_(std::move(config)),
      streamlet_generations_(new std::atomic<uint64_t>[config_.streamlets]()) {
  TxnTotals* counted = totals != nullptr ? totals : &own_totals_;
  const bool replicated = config_.replication > 1;
  // A replicated stream's broker scope keeps no files: its recovery would take the streamlet
  // scopes' part files, which share the streamlet directories, for leftovers.
  transactions_ = std::make_unique<StreamTransactions>(this, env, replicated ? std::string() : dir,
                                                       txn_settings, counted);
  streamlets_.reserve(config_.streamlets);
  for (uint32_t i = 0; i < config_.streamlets; ++i) {
    std::string sdir = dir.empty() ? std::string() : dir + "/" + std::to_string(i);
    if (replicated) {
      streamlet_transactions_.push_back(
          std::make_unique<StreamTransactions>(this, env, sdir, txn_settings, counted, i));
    }
    streamlets_.push_back(std::make_unique<Streamlet>(i, &config_, env, std::move(sdir)));
  }
}

StreamTransactions* Stream::transactions_of(uint32_t scope) {
  if (scope == kBrokerTxnScope) {
    return streamlet_transactions_.empty() ? transactions_.get() : nullptr;
  }
  return scope < streamlet_transactions_.size() ? streamlet_transactions_[scope].get() : nullptr;
}

std::vector<StreamTransactions*> Stream::all_transactions() {
  std::vector<StreamTransactions*> out;
  if (streamlet_transactions_.empty()) {
    out.push_back(transactions_.get());
  } else {
    for (auto& t : streamlet_transactions_) out.push_back(t.get());
  }
  return out;
}

void Stream::UseSegmentFiles(const std::shared_ptr<SegmentFiles>& files) {
  for (auto& s : streamlets_) s->UseSegmentFiles(files);
}

void Stream::NoteAppended() {
  for (uint32_t i = 0; i < streamlet_count(); ++i) {
    streamlet_generations_[i].fetch_add(1, std::memory_order_seq_cst);
  }
  generation_.fetch_add(1, std::memory_order_seq_cst);
}

}  // namespace nearstream::storage
