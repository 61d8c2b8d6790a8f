// A fixed-size segment: the unit of storage, retention and (for durable streams) of files.
//
// Threading: one appender at a time (the lock of the streamlet's active slot that owns the
// segment held) writes past committed() and then publishes with a release store (under the
// streamlet lock); readers load committed() with acquire and read [0, committed) without locks,
// which never changes once published. sealed() turns true after the last Publish, so a reader
// that sees sealed() and then reads committed() has the final length.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/storage/env.h"
#include "nearstream/storage/segment_files.h"

namespace nearstream::storage {

class Segment {
 public:
  // Segment memory is its own anonymous mapping: pages are committed as appends touch them and
  // returned to the OS the moment retention or a delete drops the segment (a malloc'd 8 MiB
  // block may stay in the allocator's heap). With `files`, the memory is one of its files, which
  // push consumers can map (view slots); when no file can be made the segment falls back to an
  // anonymous mapping (logged) and file_number() is 0.
  static Result<std::shared_ptr<Segment>> Create(uint64_t id, uint32_t capacity, int64_t now_ms,
                                                 std::shared_ptr<SegmentFiles> files = nullptr);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  uint64_t id() const { return id_; }
  // The segment file holding this segment's bytes (docs/shm-layout.md, "Segment files"); 0 when
  // they are in private memory.
  uint64_t file_number() const { return file_number_; }
  uint32_t capacity() const { return capacity_; }
  const uint8_t* data() const { return data_; }
  uint32_t committed() const { return committed_.load(std::memory_order_acquire); }
  bool sealed() const { return sealed_.load(std::memory_order_acquire); }

  // ---- appender side (slot lock held; Publish and last_append_ms with the streamlet lock) ----
  uint8_t* mutable_data() { return data_; }
  // Where the next WriteChunk writes: committed() plus the chunks written and not yet published
  // (a replicated streamlet's leader holds chunks unpublished until its followers have them).
  uint32_t write_end() const { return std::max(committed(), written_); }
  // Copies `chunk` to write_end() and, for a segment with a file, appends it there (fsync'd when
  // `sync`; marked dirty for the async flusher otherwise). A failed write or fsync cuts the file
  // back and seals the segment: nothing was acknowledged, and after a failed fsync the kernel may
  // have dropped dirty pages, so the file is not trusted again. Publishes nothing (the caller
  // does).
  Status WriteChunk(const uint8_t* chunk, uint32_t size, bool sync);
  // Copies `chunk` to write_end() and leaves the file to WriteFile: a replicated streamlet's
  // leader holds chunks unpublished until its followers have them, and writes each flight of
  // them to the file in one write, which costs the page cache less per byte than one per chunk.
  void CopyChunk(const uint8_t* chunk, uint32_t size);
  // Appends what was copied since the file's end in one write (fsync'd when `sync`, marked dirty
  // otherwise). A failed write or fsync cuts the file back to its end before; the caller seals
  // the segment, later: chunks written before and not yet published must be published (or
  // discarded) first, as a sealed segment's length is final to readers.
  Status WriteFile(bool sync);
  // Whether the bytes up to `end` are in the file (or there is none).
  bool file_written(uint32_t end) const { return file_ == nullptr || file_end_ >= end; }
  void Publish(uint32_t committed) { committed_.store(committed, std::memory_order_release); }
  // Undoes the chunks from `offset` on, none of them published (their replication failed):
  // cuts the file back to `offset` (when they reached it) and seals the segment, whose file then
  // holds exactly what was published.
  void Discard(uint32_t offset);
  void Seal() { sealed_.store(true, std::memory_order_release); }
  int64_t last_append_ms() const { return last_append_ms_; }
  void set_last_append_ms(int64_t ms) { last_append_ms_ = ms; }

  // Chunk boundaries, sparsely: index_[k] is the first chunk starting at or after k * kStride.
  // Lets a reader prove that a client's offset starts a chunk with at most kStride bytes of
  // header hops. Written by the appender and read by readers, both under the streamlet lock.
  static constexpr uint32_t kIndexStride = 64 * 1024;
  void IndexChunk(uint32_t offset) {
    while (index_.size() * uint64_t{kIndexStride} <= offset) index_.push_back(offset);
  }
  bool IsChunkStart(uint32_t offset) const {
    const uint32_t end = committed();
    if (offset == end) return true;
    size_t k = offset / kIndexStride;
    if (offset > end || k >= index_.size() || index_[k] > offset) return false;
    uint32_t p = index_[k];
    while (p < offset) p += StepAt(p);
    return p == offset;
  }

  // Byte ranges that recovery found damaged (a chunk failing its CRC, or bytes that no longer
  // parse as chunks), ascending and disjoint. Set once, before the recovered segment is shared;
  // immutable after that, so readers need no lock. A range starts where a chunk should start and
  // ends at the next intact chunk or at committed().
  struct DamagedBytes {
    uint32_t offset = 0;
    uint32_t length = 0;
    std::string reason;
  };
  void SetDamaged(std::vector<DamagedBytes> ranges) { damaged_ = std::move(ranges); }
  const std::vector<DamagedBytes>& damaged() const { return damaged_; }
  // The damaged range starting at `offset`, or null.
  const DamagedBytes* DamagedAt(uint32_t offset) const {
    if (damaged_.empty()) return nullptr;
    for (const DamagedBytes& d : damaged_) {
      if (d.offset == offset) return &d;
    }
    return nullptr;
  }
  // Bytes from `offset` (a chunk or damaged-range start) to the next such start: walks over a
  // damaged range without trusting the length field it may hold.
  uint32_t StepAt(uint32_t offset) const {
    if (const DamagedBytes* d = DamagedAt(offset)) return d->length;
    return 48 + LoadLe32(data() + offset + 8);  // 48 = chunk header size
  }

  // Newest first-record timestamp of the chunks in this segment (streamlet lock held), so a
  // timestamp lookup skips whole segments.
  int64_t max_timestamp_ms() const { return max_timestamp_ms_; }
  void NoteTimestamp(int64_t ts) { max_timestamp_ms_ = std::max(max_timestamp_ms_, ts); }

  // The backing file of a durable segment; null for memory-only streams and recovered segments.
  WritableFile* file() { return file_.get(); }
  // The same, shared: a flusher that syncs outside the lock under which it took the file keeps
  // it open even if a commit closes the segment's file meanwhile.
  std::shared_ptr<WritableFile> shared_file() const { return file_; }
  void set_file(std::unique_ptr<WritableFile> f) {
    file_ = std::move(f);
    file_end_ = write_end();
  }
  // Closes the file once nothing will write or sync it again: a committed transaction's
  // segment, its bytes durable. Each commit links segments of its own, and a broker that kept a
  // descriptor for each of them ran out after some ten thousand transactions.
  void CloseFile() { file_.reset(); }
  // Gives the file up to the caller, which closes it: a sealed segment whose bytes are durable
  // (Streamlet::Maintain), closed outside the streamlet lock.
  std::shared_ptr<WritableFile> TakeFile() { return std::move(file_); }
  // Set by appends under `async` durability, cleared by the flusher before it syncs.
  std::atomic<bool>& dirty() { return dirty_; }

 private:
  Segment(uint64_t id, uint32_t capacity, uint8_t* data, int64_t now_ms,
          std::shared_ptr<SegmentFiles> files, uint64_t file_number)
      : id_(id),
        capacity_(capacity),
        data_(data),
        files_(std::move(files)),
        file_number_(file_number),
        last_append_ms_(now_ms) {}

  const uint64_t id_;
  const uint32_t capacity_;
  uint8_t* const data_;
  const std::shared_ptr<SegmentFiles> files_;  // null: data_ is an anonymous mapping
  const uint64_t file_number_;
  alignas(64) std::atomic<uint32_t> committed_{0};
  uint32_t written_ = 0;   // the end of the last chunk copied (slot lock); see write_end()
  uint32_t file_end_ = 0;  // where the file ends: written_ but for CopyChunk's since WriteFile
  std::atomic<bool> sealed_{false};
  std::atomic<bool> dirty_{false};
  int64_t last_append_ms_;
  // Shared with a flusher's sync in progress (shared_file): closing the segment's file
  // (CloseFile, TakeFile) meanwhile leaves the descriptor open until that sync returns.
  std::shared_ptr<WritableFile> file_;
  std::vector<uint32_t> index_;
  std::vector<DamagedBytes> damaged_;
  int64_t max_timestamp_ms_ = INT64_MIN;
};

}  // namespace nearstream::storage
