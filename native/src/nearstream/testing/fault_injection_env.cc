#include "nearstream/testing/fault_injection_env.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>

namespace nearstream::storage {
namespace {

// One spelling per path, so "a//b/" and "a/b" share their bookkeeping.
std::string Normalize(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string Parent(const std::string& normalized) {
  return std::filesystem::path(normalized).parent_path().string();
}

// True when `path` is `root` or lies below it.
bool IsUnder(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

Status Injected(const std::string& what, const std::string& path, int err) {
  return Status::FromErrno(StatusCode::kStorageError, "injected fault: " + what + " " + path, err);
}

}  // namespace

// Forwards to the wrapped file; every call goes through the Env so the bookkeeping and the fault
// switches live in one place under one lock.
class FaultInjectionEnv::File final : public WritableFile {
 public:
  // Registered with the env (its lock held), which renames follow: a file written through an
  // open handle after its rename is tracked under its new name, as the kernel's inode would be.
  File(FaultInjectionEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {
    env_->open_files_.insert(this);
  }
  ~File() override {
    MutexLock lock(&env_->mu_);
    env_->open_files_.erase(this);
  }

  Status Append(const uint8_t* data, size_t n) override {
    MutexLock lock(&env_->mu_);
    return env_->AppendLocked(path_, base_.get(), data, n);
  }
  Status Truncate(uint64_t size) override {
    MutexLock lock(&env_->mu_);
    return env_->TruncateLocked(path_, base_.get(), size);
  }
  Status Sync() override {
    MutexLock lock(&env_->mu_);
    return env_->SyncLocked(path_, base_.get());
  }
  uint64_t size() const override {
    MutexLock lock(&env_->mu_);
    return base_->size();
  }
  // Rename, with the env's lock held.
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  FaultInjectionEnv* const env_;
  std::string path_;  // guarded by env_->mu_
  const std::unique_ptr<WritableFile> base_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) {}

FaultInjectionEnv::~FaultInjectionEnv() = default;

Status FaultInjectionEnv::AppendLocked(const std::string& path, WritableFile* base,
                                       const uint8_t* data, size_t n) {
  FileState& state = files_[path];
  if (space_budget_ >= 0 && static_cast<uint64_t>(space_budget_) < n) {
    if (torn_writes_ && space_budget_ > 0) {
      const size_t prefix = static_cast<size_t>(space_budget_);
      Status s = base->Append(data, prefix);
      if (s.ok()) {
        state.size += prefix;
        space_budget_ = 0;
      }
    }
    return Injected("disk full writing", path, ENOSPC);
  }
  RETURN_IF_ERROR(base->Append(data, n));
  state.size += n;
  if (space_budget_ >= 0) space_budget_ -= static_cast<int64_t>(n);
  return Status::Ok();
}

Status FaultInjectionEnv::TruncateLocked(const std::string& path, WritableFile* base,
                                         uint64_t size) {
  RETURN_IF_ERROR(base->Truncate(size));
  FileState& state = files_[path];
  state.size = size;
  state.synced = std::min(state.synced, size);
  return Status::Ok();
}

Status FaultInjectionEnv::SyncLocked(const std::string& path, WritableFile* base) {
  if (fail_sync_) return Injected("fdatasync", path, EIO);
  RETURN_IF_ERROR(base->Sync());
  FileState& state = files_[path];
  state.synced = state.size;
  ++sync_count_;
  return Status::Ok();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::OpenAppendable(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  if (fail_open_) return Injected("open", p, EIO);
  const bool existed = base_->Exists(p);
  ASSIGN_OR_RETURN(auto base, base_->OpenAppendable(p));
  if (!existed) NoteNewEntryLocked(p);
  auto [it, fresh] = files_.try_emplace(p);
  it->second.size = base->size();
  // Bytes a file held before this Env first saw it are taken as durable.
  it->second.synced = fresh ? base->size() : std::min(it->second.synced, base->size());
  return std::unique_ptr<WritableFile>(new File(this, p, std::move(base)));
}

Result<Bytes> FaultInjectionEnv::ReadFile(const std::string& path) { return base_->ReadFile(path); }

Status FaultInjectionEnv::WriteFileAtomically(const std::string& path, const Bytes& data) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->WriteFileAtomically(p, data));
  // The contract ends with an fsync of the file's directory: its new entries are durable now.
  const std::string dir = Parent(p);
  std::erase_if(new_entries_, [&](const std::string& e) { return Parent(e) == dir; });
  return Status::Ok();
}

Result<std::vector<std::string>> FaultInjectionEnv::ListDir(const std::string& path) {
  return base_->ListDir(path);
}

Status FaultInjectionEnv::CreateDirs(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  std::vector<std::string> created;
  std::filesystem::path prefix;
  for (const auto& part : std::filesystem::path(p)) {
    prefix /= part;
    const std::string s = prefix.string();
    if (s != "/" && !base_->Exists(s)) created.push_back(s);
  }
  RETURN_IF_ERROR(base_->CreateDirs(p));
  for (const auto& s : created) NoteNewEntryLocked(s);
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->RemoveFile(p));
  ForgetLocked(p, /*recursive=*/false);
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveAll(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->RemoveAll(p));
  ForgetLocked(p, /*recursive=*/true);
  return Status::Ok();
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  const std::string f = Normalize(from), t = Normalize(to);
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(base_->Rename(f, t));
  auto moved = [&](const std::string& p) { return t + p.substr(f.size()); };
  std::map<std::string, FileState> files;
  for (auto& [p, state] : files_) files[IsUnder(p, f) ? moved(p) : p] = state;
  files_ = std::move(files);
  for (File* open : open_files_) {
    if (IsUnder(open->path(), f)) open->set_path(moved(open->path()));
  }
  std::set<std::string> entries;
  for (const auto& p : new_entries_) {
    if (p != f) entries.insert(IsUnder(p, f) ? moved(p) : p);
  }
  new_entries_ = std::move(entries);
  // The new name is a directory entry of its own, durable once its directory is synced.
  NoteNewEntryLocked(t);
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& path) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  if (fail_sync_dir_) return Injected("fsync dir", p, EIO);
  RETURN_IF_ERROR(base_->SyncDir(p));
  std::erase_if(new_entries_, [&](const std::string& e) { return Parent(e) == p; });
  return Status::Ok();
}

bool FaultInjectionEnv::Exists(const std::string& path) { return base_->Exists(path); }

void FaultInjectionEnv::SetSpaceBudget(int64_t bytes, bool torn) {
  MutexLock lock(&mu_);
  space_budget_ = bytes < 0 ? -1 : bytes;
  torn_writes_ = torn;
}

void FaultInjectionEnv::SetSyncFailure(bool fail) {
  MutexLock lock(&mu_);
  fail_sync_ = fail;
}

void FaultInjectionEnv::SetOpenAppendableFailure(bool fail) {
  MutexLock lock(&mu_);
  fail_open_ = fail;
}

void FaultInjectionEnv::SetSyncDirFailure(bool fail) {
  MutexLock lock(&mu_);
  fail_sync_dir_ = fail;
}

void FaultInjectionEnv::NoteNewEntryLocked(const std::string& path) { new_entries_.insert(path); }

void FaultInjectionEnv::ForgetLocked(const std::string& path, bool recursive) {
  auto gone = [&](const std::string& p) { return recursive ? IsUnder(p, path) : p == path; };
  std::erase_if(files_, [&](const auto& kv) { return gone(kv.first); });
  std::erase_if(new_entries_, gone);
}

Status FaultInjectionEnv::CutFileLocked(const std::string& path, uint64_t size) {
  ASSIGN_OR_RETURN(auto file, base_->OpenAppendable(path));
  if (file->size() > size) RETURN_IF_ERROR(file->Truncate(size));
  FileState& state = files_[path];
  state.size = std::min(file->size(), size);
  state.synced = std::min(state.synced, state.size);
  return Status::Ok();
}

Status FaultInjectionEnv::DropUnsyncedData(uint64_t keep_unsynced_bytes) {
  MutexLock lock(&mu_);
  for (auto it = files_.begin(); it != files_.end();) {
    if (!base_->Exists(it->first)) {
      it = files_.erase(it);
      continue;
    }
    const uint64_t keep = std::min(it->second.size, it->second.synced + keep_unsynced_bytes);
    RETURN_IF_ERROR(CutFileLocked(it->first, keep));
    it->second.synced = it->second.size;  // after the reboot, what is on disk is durable
    ++it;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::DropUnsyncedDirEntries() {
  MutexLock lock(&mu_);
  // Sorted, so a directory comes before what lies below it and takes it along.
  std::set<std::string> entries = std::move(new_entries_);
  new_entries_.clear();
  std::string removed_root;
  for (const auto& p : entries) {
    if (!removed_root.empty() && IsUnder(p, removed_root)) continue;
    RETURN_IF_ERROR(base_->RemoveAll(p));
    ForgetLocked(p, /*recursive=*/true);
    removed_root = p;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::CorruptUnsyncedTail(const std::string& path, const Bytes& garbage) {
  const std::string p = Normalize(path);
  MutexLock lock(&mu_);
  auto it = files_.find(p);
  if (it == files_.end()) {
    return Status::InvalidArgument("CorruptUnsyncedTail: " + p + " is not tracked");
  }
  const uint64_t synced = it->second.synced;
  RETURN_IF_ERROR(CutFileLocked(p, synced));
  ASSIGN_OR_RETURN(auto file, base_->OpenAppendable(p));
  RETURN_IF_ERROR(file->Append(garbage.data(), garbage.size()));
  it->second.size = synced + garbage.size();
  return Status::Ok();
}

uint64_t FaultInjectionEnv::SyncedSize(const std::string& path) const {
  MutexLock lock(&mu_);
  auto it = files_.find(Normalize(path));
  return it == files_.end() ? 0 : it->second.synced;
}

uint64_t FaultInjectionEnv::FileSize(const std::string& path) const {
  MutexLock lock(&mu_);
  auto it = files_.find(Normalize(path));
  return it == files_.end() ? 0 : it->second.size;
}

std::vector<std::string> FaultInjectionEnv::TrackedFiles() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [p, state] : files_) {
    if (base_->Exists(p)) out.push_back(p);
  }
  return out;
}

int FaultInjectionEnv::sync_count() const {
  MutexLock lock(&mu_);
  return sync_count_;
}

size_t FaultInjectionEnv::open_file_count() const {
  MutexLock lock(&mu_);
  return open_files_.size();
}

}  // namespace nearstream::storage
