#include "nearstream/storage/stream.h"

namespace nearstream::storage {

Stream::Stream(StreamConfig config, Env* env, const std::string& dir, TxnSettings txn_settings,
               TxnTotals* totals)
    : config_(std::move(config)),
      streamlet_generations_(new std::atomic<uint64_t>[config_.streamlets]()),
      transactions_(std::make_unique<StreamTransactions>(
          this, env, dir, txn_settings, totals != nullptr ? totals : &own_totals_)) {
  streamlets_.reserve(config_.streamlets);
  for (uint32_t i = 0; i < config_.streamlets; ++i) {
    std::string sdir = dir.empty() ? std::string() : dir + "/" + std::to_string(i);
    streamlets_.push_back(std::make_unique<Streamlet>(i, &config_, env, sdir));
  }
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
