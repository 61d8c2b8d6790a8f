// An Env for tests that passes every call to another one: a test Env derives from it and
// overrides only the calls it holds up or fails (a gate on a read, on an fsync, on an open).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nearstream/storage/env.h"

namespace nearstream::storage {

class ForwardingEnv : public Env {
 public:
  // `base` must outlive this Env and every file opened through it.
  explicit ForwardingEnv(Env* base) : base_(base) {}

  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override {
    return base_->OpenAppendable(path);
  }
  Result<Bytes> ReadFile(const std::string& path) override { return base_->ReadFile(path); }
  Status WriteFileAtomically(const std::string& path, const Bytes& data) override {
    return base_->WriteFileAtomically(path, data);
  }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    return base_->ModifiedTimeMs(path);
  }

 protected:
  Env* base() const { return base_; }

 private:
  Env* const base_;
};

}  // namespace nearstream::storage
