#include "nearstream/storage/stream_store.h"

#include <charconv>
#include <sstream>

#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/storage/mapping_pool.h"

namespace nearstream::storage {

std::string FormatStreamMeta(const StreamConfig& c) {
  std::ostringstream o;
  o << "format=1\n"
    << "name=" << c.name << "\n"
    << "streamlets=" << c.streamlets << "\n"
    << "segment_bytes=" << c.segment_bytes << "\n"
    << "segments_per_group=" << c.segments_per_group << "\n"
    << "active_groups=" << c.active_groups << "\n"
    << "durability=" << DurabilityName(c.durability) << "\n"
    << "retention_bytes=" << c.retention_bytes << "\n"
    << "retention_ms=" << c.retention_ms << "\n";
  // Written only when replicated, so that files of streams from before replication stay
  // byte-identical when rewritten.
  if (c.replication != 1) o << "replication=" << c.replication << "\n";
  return o.str();
}

namespace {

// Whole-string, range-checked integer parsing: "4294967297" or "1x" are errors, not 1.
template <typename T>
bool ParseInt(const std::string& s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<StreamConfig> ParseStreamMeta(const std::string& text) {
  StreamConfig c;
  std::istringstream in(text);
  std::string line;
  int seen = 0;
  bool numbers_ok = true;
  {
    while (std::getline(in, line)) {
      auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string k = line.substr(0, eq), v = line.substr(eq + 1);
      ++seen;
      if (k == "format") {
        if (v != "1") return Status::StorageError("unknown stream.meta format " + v);
      } else if (k == "name") {
        c.name = v;
      } else if (k == "streamlets") {
        numbers_ok &= ParseInt(v, &c.streamlets);
      } else if (k == "segment_bytes") {
        numbers_ok &= ParseInt(v, &c.segment_bytes);
      } else if (k == "segments_per_group") {
        numbers_ok &= ParseInt(v, &c.segments_per_group);
      } else if (k == "active_groups") {
        numbers_ok &= ParseInt(v, &c.active_groups);
      } else if (k == "durability") {
        ASSIGN_OR_RETURN(c.durability, ParseDurability(v));
      } else if (k == "retention_bytes") {
        numbers_ok &= ParseInt(v, &c.retention_bytes);
      } else if (k == "retention_ms") {
        numbers_ok &= ParseInt(v, &c.retention_ms);
      } else if (k == "replication") {
        numbers_ok &= ParseInt(v, &c.replication);
        --seen;  // optional: absent means 1
      } else {
        --seen;
      }
      if (!numbers_ok) {
        return Status::StorageError("stream.meta has a bad number: " + line);
      }
    }
  }
  if (seen != 9) return Status::StorageError("stream.meta is incomplete");
  RETURN_IF_ERROR(c.Validate());
  return c;
}

StreamStore::StreamStore(StoreOptions options) : options_(std::move(options)) {}

std::string StreamStore::StreamDir(const std::string& name) const {
  return options_.data_dir + "/streams/" + name;
}

Status StreamStore::Open(int64_t now_ms) {
  if (options_.data_dir.empty()) return Status::Ok();
  Env* env = options_.env;
  RETURN_IF_ERROR(env->CreateDirs(options_.data_dir + "/streams"));
  // On a first start the new streams/ entry must be durable before anything lands below it.
  RETURN_IF_ERROR(env->SyncDir(options_.data_dir));
  // A crash in the middle of a delete leaves the stream in trash/, never half in streams/.
  RETURN_IF_ERROR(env->RemoveAll(options_.data_dir + "/trash"));
  ASSIGN_OR_RETURN(auto names, env->ListDir(options_.data_dir + "/streams"));
  for (const auto& name : names) {
    if (!IsValidStreamName(name)) continue;
    RETURN_IF_ERROR(Recover(name, now_ms));
  }
  return Status::Ok();
}

Status StreamStore::Recover(const std::string& name, int64_t now_ms) {
  const std::string dir = StreamDir(name);
  Env* env = options_.env;
  if (!env->Exists(dir + "/stream.meta")) {
    // Creation did not finish (the meta file is written last): nothing was ever acknowledged.
    NS_LOG(kWarning) << "removing incompletely created stream directory " << dir;
    return env->RemoveAll(dir);
  }
  ASSIGN_OR_RETURN(Bytes meta, env->ReadFile(dir + "/stream.meta"));
  auto config = ParseStreamMeta(std::string(meta.begin(), meta.end()));
  if (!config.ok()) {
    return Status::StorageError("cannot recover stream " + name + ": " + config.status().message());
  }
  if (config->name != name) {
    return Status::StorageError("stream.meta in " + dir + " names '" + config->name + "'");
  }
  auto stream = std::make_shared<Stream>(*config, env, dir, options_.txn, &txn_totals_);
  // Committed transactions' files get their group names before the streamlets load them; open
  // and prepared ones' files are loaded by the transactions afterwards.
  for (StreamTransactions* t : stream->all_transactions()) RETURN_IF_ERROR(t->RecoverLog());
  for (uint32_t i = 0; i < stream->streamlet_count(); ++i) {
    RETURN_IF_ERROR(stream->streamlet(i)->Recover(now_ms));
  }
  for (StreamTransactions* t : stream->all_transactions()) {
    RETURN_IF_ERROR(t->RecoverParts(now_ms));
  }
  NS_LOG(kInfo) << "recovered stream " << name << " (" << config->streamlets << " streamlets, "
                << DurabilityName(config->durability) << ")";
  MutexLock lock(&mu_);
  if (all_segment_files_ != nullptr) stream->UseSegmentFiles(all_segment_files_);
  for (StreamTransactions* t : stream->all_transactions()) t->set_mirror(txn_mirror_.load());
  streams_[name] = std::move(stream);
  return Status::Ok();
}

Status StreamStore::Create(const StreamConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  const bool durable = config.durability != Durability::kNone;
  if (durable && options_.data_dir.empty()) {
    return Status::InvalidArgument(std::string("durability ") + DurabilityName(config.durability) +
                                   " needs a broker started with --data-dir");
  }
  MutexLock lock(&mu_);
  if (streams_.contains(config.name)) {
    return Status::StreamExists("stream " + config.name + " already exists");
  }
  std::string dir;
  if (durable) {
    Env* env = options_.env;
    dir = StreamDir(config.name);
    Status s = env->CreateDirs(dir);
    for (uint32_t i = 0; s.ok() && i < config.streamlets; ++i) {
      s = env->CreateDirs(dir + "/" + std::to_string(i));
    }
    if (s.ok()) {
      std::string meta = FormatStreamMeta(config);
      s = env->WriteFileAtomically(dir + "/stream.meta", Bytes(meta.begin(), meta.end()));
    }
    if (s.ok()) s = env->SyncDir(options_.data_dir + "/streams");
    if (!s.ok()) {
      Status cleanup = env->RemoveAll(dir);
      (void)cleanup;  // the creation error is the one to report
      return s;
    }
  }
  auto stream = std::make_shared<Stream>(config, options_.env, dir, options_.txn, &txn_totals_);
  if (all_segment_files_ != nullptr) stream->UseSegmentFiles(all_segment_files_);
  for (StreamTransactions* t : stream->all_transactions()) t->set_mirror(txn_mirror_.load());
  streams_[config.name] = std::move(stream);
  return Status::Ok();
}

void StreamStore::set_txn_mirror(TxnMirror* mirror) {
  MutexLock lock(&mu_);
  txn_mirror_.store(mirror);
  for (auto& [name, stream] : streams_) {
    for (StreamTransactions* t : stream->all_transactions()) t->set_mirror(mirror);
  }
}

void StreamStore::UseSegmentFilesForAll(std::shared_ptr<SegmentFiles> files) {
  MutexLock lock(&mu_);
  all_segment_files_ = std::move(files);
  for (auto& [name, stream] : streams_) stream->UseSegmentFiles(all_segment_files_);
}

Status StreamStore::Delete(const std::string& name) {
  std::shared_ptr<Stream> stream;
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) {
      return Status::StreamNotFound("stream " + name + " does not exist");
    }
    stream = it->second;
    if (stream->config().durability != Durability::kNone) {
      Env* env = options_.env;
      std::string trash = options_.data_dir + "/trash";
      RETURN_IF_ERROR(env->CreateDirs(trash));
      std::string target = trash + "/" + name + "." + std::to_string(++deletions_);
      RETURN_IF_ERROR(env->Rename(StreamDir(name), target));
      // From here on the delete completes: the files are in trash/, which Open() empties, so
      // serving the stream on would promise data the next start throws away.
      Status s = env->SyncDir(options_.data_dir + "/streams");
      if (s.ok()) s = env->RemoveAll(target);
      if (!s.ok()) NS_LOG(kWarning) << "deleting stream " << name << ": " << s.ToString();
    }
    streams_.erase(it);
  }
  for (StreamTransactions* t : stream->all_transactions()) t->DropAwaitingSync();
  stream->MarkDeleted();
  stream->NoteAppended();  // wakes long-polls so they answer STREAM_NOT_FOUND promptly
  return Status::Ok();
}

std::shared_ptr<Stream> StreamStore::Find(const std::string& name) const {
  MutexLock lock(&mu_);
  auto it = streams_.find(name);
  return it == streams_.end() ? nullptr : it->second;
}

std::vector<std::string> StreamStore::List() const {
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, s] : streams_) names.push_back(name);
  return names;
}

std::vector<std::shared_ptr<Stream>> StreamStore::Snapshot() const {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Stream>> out;
  for (const auto& [name, s] : streams_) out.push_back(s);
  return out;
}

void StreamStore::Maintain(int64_t now_ms) {
  for (const auto& stream : Snapshot()) {
    std::vector<std::string> doomed;
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) {
      auto dropped = stream->streamlet(i)->Maintain(now_ms, options_.group_idle_close_ms);
      doomed.insert(doomed.end(), dropped.begin(), dropped.end());
    }
    // Committed transactions' files take their group names before retention deletes files by
    // those names (a segment dropped here may belong to a transaction committed a moment ago).
    for (StreamTransactions* t : stream->all_transactions()) {
      if (Status s = t->FinishCommits(); !s.ok()) {
        NS_LOG(kWarning) << "finishing commits of " << stream->config().name << ": "
                         << s.ToString();
      }
    }
    for (const auto& path : doomed) {
      Status s = options_.env->RemoveFile(path);
      if (!s.ok()) NS_LOG(kWarning) << "retention: " << s.ToString();
    }
    stream->NoteAppended();  // a closed idle group may let a waiting reader move on
    for (StreamTransactions* t : stream->all_transactions()) t->ExpireOpen(now_ms);
  }
  // After retention dropped segments, so that those just dropped wait for their reuse.
  MappingPool::Get().ReleaseIdle(MonotonicNowMs());
}

int StreamStore::FlushAsync() {
  int failures = 0;
  for (const auto& stream : Snapshot()) {
    if (stream->config().durability != Durability::kAsync) continue;
    // Transactions first: a commit's renamed files then get their directory synced below.
    for (StreamTransactions* t : stream->all_transactions()) {
      if (Status s = t->FlushAsync(); !s.ok()) {
        ++failures;
        NS_LOG(kError) << "async flush of " << stream->config().name
                       << " transactions: " << s.ToString();
      }
    }
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) {
      Status s = stream->streamlet(i)->SyncDirty();
      if (!s.ok()) {
        ++failures;
        NS_LOG(kError) << "async flush of " << stream->config().name << "/" << i << ": "
                       << s.ToString();
      }
    }
  }
  return failures;
}

uint64_t StreamStore::total_bytes() const {
  uint64_t total = 0;
  for (const auto& stream : Snapshot()) {
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) total += stream->streamlet(i)->bytes();
  }
  return total;
}

TxnGauges StreamStore::transaction_gauges() const {
  TxnGauges total;
  for (const auto& stream : Snapshot()) {
    for (StreamTransactions* t : stream->all_transactions()) {
      TxnGauges g = t->Gauges();
      total.open += g.open;
      total.prepared += g.prepared;
      total.open_bytes += g.open_bytes;
      total.prepared_bytes += g.prepared_bytes;
    }
  }
  return total;
}

}  // namespace nearstream::storage
