#include "nearstream/storage/txn_log.h"

#include "nearstream/common/byte_io.h"
#include "nearstream/common/crc32c.h"
#include "nearstream/common/log.h"

namespace nearstream::storage {

namespace {

constexpr size_t kRecordPrefix = 8;   // u32 length, u32 crc
constexpr size_t kOldLinkBytes = 12;  // a COMMIT's link before `bytes` existed

void EncodeLinks(const std::vector<TxnLink>& links, ByteWriter& w) {
  w.U32(static_cast<uint32_t>(links.size()));
  for (const auto& l : links) {
    w.U32(l.streamlet);
    w.U64(l.group);
    w.U64(l.bytes);
  }
}

// Links as EncodeLinks writes them, or (`old_size` set and the count says so) as they were
// written without `bytes`.
void DecodeLinks(ByteReader& rd, bool old_size, std::vector<TxnLink>* links) {
  const uint32_t count = rd.Count(kOldLinkBytes);
  const bool old = old_size && rd.remaining() == size_t{count} * kOldLinkBytes;
  for (uint32_t i = 0; i < count && rd.ok(); ++i) {
    TxnLink l;
    l.streamlet = rd.U32();
    l.group = rd.U64();
    if (!old) l.bytes = rd.U64();
    links->push_back(l);
  }
}

void EncodeBody(const TxnRecord& r, ByteWriter& w) {
  w.U8(static_cast<uint8_t>(r.type));
  w.Str(r.id);
  switch (r.type) {
    case TxnRecordType::kEpoch:
      w.U32(r.epoch);
      w.U64(r.serial);
      break;
    case TxnRecordType::kBegin:
      w.U32(r.epoch);
      w.U64(r.serial);
      w.U64(r.number);
      w.I64(r.started_ms);
      break;
    case TxnRecordType::kAbort: w.U64(r.serial); break;
    case TxnRecordType::kPrepare:
    case TxnRecordType::kCommit:
      w.U64(r.serial);
      EncodeLinks(r.links, w);
      break;
  }
}

Result<TxnRecord> DecodeBody(const uint8_t* p, size_t n) {
  ByteReader rd(p, n);
  TxnRecord r;
  const uint8_t type = rd.U8();
  r.id = rd.Str();
  switch (type) {
    case static_cast<uint8_t>(TxnRecordType::kEpoch):
      r.epoch = rd.U32();
      r.serial = rd.U64();
      break;
    case static_cast<uint8_t>(TxnRecordType::kBegin):
      r.epoch = rd.U32();
      r.serial = rd.U64();
      r.number = rd.U64();
      r.started_ms = rd.I64();
      break;
    case static_cast<uint8_t>(TxnRecordType::kAbort): r.serial = rd.U64(); break;
    case static_cast<uint8_t>(TxnRecordType::kPrepare):
      r.serial = rd.U64();
      if (rd.remaining() != 0) DecodeLinks(rd, false, &r.links);  // none before sizes existed
      break;
    case static_cast<uint8_t>(TxnRecordType::kCommit):
      r.serial = rd.U64();
      DecodeLinks(rd, true, &r.links);
      break;
    default:
      return Status::StorageError("unknown transaction log record type " + std::to_string(type));
  }
  if (!rd.ok() || rd.remaining() != 0) {
    return Status::StorageError("transaction log record does not parse");
  }
  r.type = static_cast<TxnRecordType>(type);
  return r;
}

}  // namespace

void AppendTxnRecord(const TxnRecord& record, Bytes* out) {
  const size_t start = out->size();
  ByteWriter w(out);
  w.Skip(kRecordPrefix);
  EncodeBody(record, w);
  const size_t body = out->size() - start - kRecordPrefix;
  StoreLe32(out->data() + start, static_cast<uint32_t>(body));
  StoreLe32(out->data() + start + 4, Crc32c(out->data() + start + kRecordPrefix, body));
}

Result<std::vector<TxnRecord>> ParseTxnLog(const Bytes& data, size_t* valid_bytes) {
  std::vector<TxnRecord> records;
  size_t off = 0;
  std::string bad;  // why the bytes at `off` are not a record
  while (off < data.size()) {
    if (data.size() - off < kRecordPrefix) {
      bad = "a record prefix cut short";
      break;
    }
    const uint32_t len = LoadLe32(data.data() + off);
    if (len > data.size() - off - kRecordPrefix) {
      bad = "the file ends inside a record";
      break;
    }
    const uint8_t* body = data.data() + off + kRecordPrefix;
    if (Crc32c(body, len) != LoadLe32(data.data() + off + 4)) {
      bad = "a record fails its checksum";
      break;
    }
    auto r = DecodeBody(body, len);
    if (!r.ok()) {
      bad = r.status().message();
      break;
    }
    records.push_back(std::move(*r));
    off += kRecordPrefix + len;
  }
  *valid_bytes = off;
  if (off < data.size()) {
    // A torn append leaves only a prefix of one record. If a whole record follows the bad bytes
    // the damage is in the middle, and the state it recorded cannot be rebuilt.
    for (size_t at = off + 1; at + kRecordPrefix <= data.size(); ++at) {
      const uint32_t len = LoadLe32(data.data() + at);
      if (len == 0 || len > data.size() - at - kRecordPrefix) continue;
      if (Crc32c(data.data() + at + kRecordPrefix, len) == LoadLe32(data.data() + at + 4) &&
          DecodeBody(data.data() + at + kRecordPrefix, len).ok()) {
        return Status::StorageError("transaction log is damaged at byte " + std::to_string(off) +
                                    " (" + bad + ") and has whole records after it");
      }
    }
  }
  return records;
}

Result<std::unique_ptr<TxnLog>> TxnLog::Open(Env* env, const std::string& path,
                                             std::vector<TxnRecord>* replayed) {
  std::unique_ptr<TxnLog> log(new TxnLog(env, path));
  if (env->Exists(path)) {
    ASSIGN_OR_RETURN(Bytes data, env->ReadFile(path));
    size_t valid = 0;
    ASSIGN_OR_RETURN(*replayed, ParseTxnLog(data, &valid));
    if (valid < data.size()) {
      NS_LOG(kWarning) << "recovery: cutting a torn record (" << (data.size() - valid)
                       << " bytes) off " << path;
      ASSIGN_OR_RETURN(auto file, env->OpenAppendable(path));
      RETURN_IF_ERROR(file->Truncate(valid));
      RETURN_IF_ERROR(file->Sync());
    }
  }
  RETURN_IF_ERROR(log->Reopen());
  return log;
}

Status TxnLog::Reopen() {
  ASSIGN_OR_RETURN(file_, env_->OpenAppendable(path_));
  size_ = file_->size();
  synced_ = size_;  // what a reopened file holds was read back or written atomically
  return Status::Ok();
}

Status TxnLog::Append(const TxnRecord& record, bool sync, Bytes* framed) {
  if (file_ == nullptr) RETURN_IF_ERROR(Reopen());
  Bytes local;
  Bytes& buf = framed != nullptr ? *framed : local;
  buf.clear();
  AppendTxnRecord(record, &buf);
  Status s = file_->Append(buf.data(), buf.size());
  if (s.ok() && sync) s = file_->Sync();
  if (!s.ok()) {
    // Cut back so a half-written record never precedes later ones (which would read as damage);
    // if even that fails the file is not trusted and is reopened for the next record.
    Status cut = file_->Truncate(size_);
    if (!cut.ok()) {
      NS_LOG(kError) << "rollback of " << path_ << " failed: " << cut.ToString();
      file_.reset();
    }
    return s;
  }
  size_ += buf.size();
  if (sync) synced_ = size_;
  return Status::Ok();
}

Status TxnLog::Sync() {
  if (file_ == nullptr || synced_ == size_) return Status::Ok();
  RETURN_IF_ERROR(file_->Sync());
  synced_ = size_;
  return Status::Ok();
}

Status TxnLog::Rewrite(const std::vector<TxnRecord>& records, Bytes* image) {
  Bytes local;
  Bytes& buf = image != nullptr ? *image : local;
  buf.clear();
  for (const auto& r : records) AppendTxnRecord(r, &buf);
  RETURN_IF_ERROR(env_->WriteFileAtomically(path_, buf));
  return Reopen();
}

}  // namespace nearstream::storage
