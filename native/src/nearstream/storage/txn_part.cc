#include "nearstream/storage/txn_part.h"

#include <algorithm>
#include <cstring>

#include "nearstream/common/log.h"

namespace nearstream::storage {

TxnPart::TxnPart(Streamlet* streamlet, const StreamConfig* config, Env* env, uint64_t txn_number)
    : streamlet_(streamlet), config_(config), env_(env), txn_number_(txn_number) {}

std::string TxnPart::PathOf(uint64_t segment) const {
  return streamlet_->dir() + "/" + NameOf(segment);
}

std::string TxnPart::NameOf(uint64_t segment) const {
  return Streamlet::TxnSegmentName(txn_number_, segment);
}

Result<Segment*> TxnPart::NewSegment(int64_t now_ms) {
  if (!segments_.empty()) segments_.back()->Seal();
  const uint64_t id = streamlet_->AllocateSegmentId();
  ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                   Segment::Create(id, config_->segment_bytes, now_ms));
  if (!streamlet_->dir().empty()) {
    ASSIGN_OR_RETURN(auto file, env_->OpenAppendable(PathOf(id)));
    // As for a group's segment: under `sync` the file's entry is durable before any append to
    // it is acknowledged; under `async` the flusher syncs the directory.
    if (config_->durability == Durability::kSync) {
      RETURN_IF_ERROR(env_->SyncDir(streamlet_->dir()));
    } else {
      dir_dirty_ = true;
    }
    seg->set_file(std::move(file));
  }
  segments_.push_back(std::move(seg));
  return segments_.back().get();
}

Result<bool> TxnPart::Append(const uint8_t* chunk, const ChunkHeader& header, int64_t now_ms,
                             TxnFileOp* written, std::shared_ptr<const Segment>* written_in) {
  const uint32_t size = header.total_size();
  if (size > config_->segment_bytes) {
    return Status::ChunkTooLarge("chunk of " + std::to_string(size) +
                                 " bytes does not fit in a segment of " +
                                 std::to_string(config_->segment_bytes));
  }
  if (header.producer_id != 0) {
    auto it = last_sequence_.find(header.producer_id);
    if (it != last_sequence_.end()) {
      if (header.sequence <= it->second) return true;
      if (header.sequence != it->second + 1) {
        return Status::OutOfOrderSequence("producer " + std::to_string(header.producer_id) +
                                          " sent sequence " + std::to_string(header.sequence) +
                                          " after " + std::to_string(it->second) +
                                          " in this transaction");
      }
    }
  }
  Segment* seg = segments_.empty() ? nullptr : segments_.back().get();
  if (seg == nullptr || seg->sealed() || seg->committed() + size > seg->capacity()) {
    ASSIGN_OR_RETURN(seg, NewSegment(now_ms));
  }
  const uint32_t offset = seg->committed();
  RETURN_IF_ERROR(seg->WriteChunk(chunk, size, config_->durability == Durability::kSync));
  // Nobody reads the segment before the commit links it (under the streamlet's lock, which
  // publishes all of this to readers).
  seg->IndexChunk(offset);
  seg->NoteTimestamp(header.first_timestamp_ms);
  seg->Publish(offset + size);
  seg->set_last_append_ms(now_ms);
  bytes_ += size;
  ++chunks_;
  if (header.producer_id != 0) last_sequence_[header.producer_id] = header.sequence;
  if (written != nullptr && seg->file() != nullptr) {
    *written = TxnFileOp{
        TxnFileOp::Kind::kAppend, NameOf(seg->id()), offset, seg->data() + offset, size, {}};
    if (written_in != nullptr) *written_in = segments_.back();
  }
  return false;
}

void TxnPart::TakeDirty(std::vector<std::shared_ptr<Segment>>* dirty, bool* dir) {
  for (const auto& seg : segments_) {
    if (seg->file() != nullptr && seg->dirty().load()) dirty->push_back(seg);
  }
  *dir = *dir || dir_dirty_;
  dir_dirty_ = false;
}

Status TxnPart::Recover(int64_t now_ms) {
  ASSIGN_OR_RETURN(auto names, env_->ListDir(streamlet_->dir()));
  std::vector<uint64_t> ids;
  for (const auto& n : names) {
    uint64_t txn = 0, segment = 0;
    if (Streamlet::ParseTxnSegmentName(n, &txn, &segment) && txn == txn_number_) {
      ids.push_back(segment);
    }
  }
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    const std::string path = PathOf(id);
    ASSIGN_OR_RETURN(Bytes data, env_->ReadFile(path));
    std::vector<std::pair<ChunkHeader, uint32_t>> chunks;
    const auto off = static_cast<uint32_t>(
        ScanWholeChunks(data.data(), data.size(), [&](const ChunkHeader& h, size_t at) {
          chunks.emplace_back(h, static_cast<uint32_t>(at));
        }));
    if (off < data.size()) {
      // An append that never completed (under `sync` never acknowledged); a prepared
      // transaction's files were synced whole before its prepare was acknowledged.
      NS_LOG(kWarning) << "recovery: cutting " << (data.size() - off) << " bytes off " << path;
      ASSIGN_OR_RETURN(auto file, env_->OpenAppendable(path));
      RETURN_IF_ERROR(file->Truncate(off));
      RETURN_IF_ERROR(file->Sync());
    }
    if (off == 0) {
      RETURN_IF_ERROR(env_->RemoveFile(path));
      continue;
    }
    ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                     Segment::Create(id, std::max(off, config_->segment_bytes), now_ms));
    std::memcpy(seg->mutable_data(), data.data(), off);
    for (const auto& [h, at] : chunks) {
      seg->IndexChunk(at);
      seg->NoteTimestamp(h.first_timestamp_ms);
      if (h.producer_id != 0) last_sequence_[h.producer_id] = h.sequence;
      ++chunks_;
    }
    seg->Publish(off);
    seg->Seal();  // appends after a restart go to a new segment (and file)
    bytes_ += off;
    segments_.push_back(std::move(seg));
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> TxnPart::RenamesTo(uint64_t group) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (streamlet_->dir().empty()) return out;
  for (const auto& seg : segments_) {
    out.emplace_back(PathOf(seg->id()), streamlet_->GroupSegmentPath(group, seg->id()));
  }
  return out;
}

void TxnPart::Discard(std::vector<std::string>* deleted) {
  for (const auto& seg : segments_) {
    if (streamlet_->dir().empty()) break;
    Status s = env_->RemoveFile(PathOf(seg->id()));
    if (!s.ok()) NS_LOG(kWarning) << "aborted transaction: " << s.ToString();
    if (deleted != nullptr) deleted->push_back(NameOf(seg->id()));
  }
  segments_.clear();
}

void TxnPart::ForEachFile(
    const std::function<void(std::string, const uint8_t*, uint32_t)>& fn) const {
  if (streamlet_->dir().empty()) return;
  for (const auto& seg : segments_) fn(NameOf(seg->id()), seg->data(), seg->committed());
}

}  // namespace nearstream::storage
