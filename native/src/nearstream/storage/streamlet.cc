#include "nearstream/storage/streamlet.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include "nearstream/common/log.h"
#include "nearstream/storage/held_appends.h"

namespace nearstream::storage {

void Streamlet::ProducerState::Remember(uint64_t seq, const Position& pos) {
  last_sequence = seq;
  recent_seq[next_slot] = seq;
  recent_pos[next_slot] = pos;
  next_slot = (next_slot + 1) % kWindow;
}

Position Streamlet::ProducerState::Lookup(uint64_t seq) const {
  for (int i = 0; i < kWindow; ++i) {
    if (recent_seq[i] == seq && !recent_pos[i].is_earliest()) return recent_pos[i];
  }
  return Position{};
}

Streamlet::Streamlet(uint32_t id, const StreamConfig* config, Env* env, std::string dir)
    : id_(id),
      config_(config),
      env_(env),
      dir_(std::move(dir)),
      slot_count_(config->active_groups),
      slots_(new Slot[config->active_groups]) {}

Streamlet::~Streamlet() = default;

std::string Streamlet::SegmentPath(uint64_t group, uint64_t segment) const {
  char name[64];
  std::snprintf(name, sizeof(name), "%020" PRIu64 "-%020" PRIu64 ".seg", group, segment);
  return dir_ + "/" + name;
}

std::string Streamlet::TxnSegmentName(uint64_t txn, uint64_t segment) {
  char name[80];
  std::snprintf(name, sizeof(name), "txn-%020" PRIu64 "-%020" PRIu64 ".seg", txn, segment);
  return name;
}

bool Streamlet::ParseTxnSegmentName(const std::string& name, uint64_t* txn, uint64_t* segment) {
  char tail[8] = {};
  return std::sscanf(name.c_str(), "txn-%20" SCNu64 "-%20" SCNu64 ".%4s", txn, segment, tail) ==
             3 &&
         std::strcmp(tail, "seg") == 0 && *txn > 0 && *segment > 0;
}

bool Streamlet::ParseGroupSegmentName(const std::string& name, uint64_t* group, uint64_t* segment) {
  char tail[8] = {};
  return std::sscanf(name.c_str(), "%20" SCNu64 "-%20" SCNu64 ".%4s", group, segment, tail) == 3 &&
         std::strcmp(tail, "seg") == 0 && *group > 0 && *segment > 0;
}

uint64_t Streamlet::AllocateSegmentId() {
  MutexLock lock(&mu_);
  return next_segment_id_++;
}

uint64_t Streamlet::ReserveGroup(int64_t now_ms) {
  // Every slot's lock, in index order (the only place that takes more than one), so no append
  // is half done in a group being closed; then mu_, as always after slot locks.
  std::vector<std::unique_lock<std::mutex>> slot_locks;
  slot_locks.reserve(slot_count_);
  for (size_t k = 0; k < slot_count_; ++k) slot_locks.push_back(LockSlot(slots_[k]));
  MutexLock lock(&mu_);
  for (size_t k = 0; k < slot_count_; ++k) {
    Slot& slot = slots_[k];
    if (slot.group == nullptr) continue;
    slot.group->closed = true;
    TouchLocked(slot.group);
    if (slot.segment != nullptr) slot.segment->Seal();
    slot.group = nullptr;
    slot.segment = nullptr;
  }
  auto reserved = std::make_unique<Group>();
  reserved->id = next_group_id_++;
  reserved->last_append_ms = now_ms;
  TouchLocked(reserved.get());
  groups_.push_back(std::move(reserved));
  return groups_.back()->id;
}

void Streamlet::LinkReserved(uint64_t group, std::vector<std::shared_ptr<Segment>> segments) {
  MutexLock lock(&mu_);
  Group* g = FindGroupLocked(group);
  NS_CHECK(g != nullptr && g->segments.empty() && !g->closed);
  for (auto& seg : segments) {
    seg->Seal();
    g->last_append_ms = std::max(g->last_append_ms, seg->last_append_ms());
    g->bytes += seg->committed();
    bytes_ += seg->committed();
    g->segments.push_back(std::move(seg));
  }
  g->closed = true;
  TouchLocked(g);
}

void Streamlet::DropReserved(uint64_t group) {
  MutexLock lock(&mu_);
  Group* g = FindGroupLocked(group);
  if (g != nullptr && g->segments.empty()) {
    g->closed = true;
    TouchLocked(g);
  }
}

Streamlet::Group* Streamlet::NewGroupFromRecovery(uint64_t id, int64_t now_ms) {
  auto g = std::make_unique<Group>();
  g->id = id;
  g->last_append_ms = now_ms;
  groups_.push_back(std::move(g));
  return groups_.back().get();
}

void Streamlet::UseSegmentFiles(std::shared_ptr<SegmentFiles> files) {
  MutexLock lock(&mu_);
  segment_files_ = std::move(files);
}

Result<std::shared_ptr<Segment>> Streamlet::CreateSegment(uint64_t group, uint64_t segment,
                                                          int64_t now_ms) {
  std::shared_ptr<SegmentFiles> files;
  {
    MutexLock lock(&mu_);
    files = segment_files_;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                   Segment::Create(segment, config_->segment_bytes, now_ms, std::move(files)));
  if (!dir_.empty()) {
    ASSIGN_OR_RETURN(auto file, env_->OpenAppendable(SegmentPath(group, segment)));
    // A new file's directory entry must be durable before a sync append is acknowledged.
    if (config_->durability == Durability::kSync) RETURN_IF_ERROR(env_->SyncDir(dir_));
    if (config_->durability == Durability::kAsync) dir_dirty_.store(true);
    seg->set_file(std::move(file));
  }
  return seg;
}

Result<Segment*> Streamlet::NextSegmentSlotLocked(Slot& slot, int64_t now_ms) {
  // Ids are taken and a new group registered under mu_, the file is opened (and under `sync`
  // its directory entry fsync'd) without it, and the segment is linked under mu_ again: other
  // slots append, and readers read, while this slot waits on the file system.
  Group* target = nullptr;
  bool new_group = false;
  uint64_t segment_id = 0;
  {
    MutexLock lock(&mu_);
    Group* g = slot.group;
    if (slot.segment != nullptr) slot.segment->Seal();  // the group's last segment
    new_group = g == nullptr || g->segments.size() >= config_->segments_per_group;
    if (new_group) {
      if (g != nullptr) {
        g->closed = true;
        TouchLocked(g);
      }
      slot.group = nullptr;
      slot.segment = nullptr;
      // Registered now, empty and open, so that groups_ stays in id order and a reader that
      // finishes the groups before it waits for it instead of moving past it.
      auto fresh = std::make_unique<Group>();
      fresh->id = next_group_id_++;
      fresh->last_append_ms = now_ms;
      TouchLocked(fresh.get());
      groups_.push_back(std::move(fresh));
      target = groups_.back().get();
    } else {
      target = g;
    }
    segment_id = next_segment_id_++;
  }
  // `target` stays alive: retention never drops an open group, nor Maintain close one that is
  // not a slot's group.
  auto seg = CreateSegment(target->id, segment_id, now_ms);
  MutexLock lock(&mu_);
  if (!seg.ok()) {
    // The failed open registers no group and, unless another slot took a later id meanwhile,
    // consumes no id. When one did, the group stays, closed and empty (readers pass it): a
    // follower may have been told of it already, and its readers would wait there forever.
    if (next_segment_id_ == segment_id + 1) --next_segment_id_;
    if (new_group && next_group_id_ == target->id + 1) {
      --next_group_id_;
      groups_.erase(
          std::find_if(groups_.begin(), groups_.end(),
                       [&](const std::unique_ptr<Group>& x) { return x.get() == target; }));
    } else if (new_group) {
      target->closed = true;
      TouchLocked(target);
    }
    return seg.status();
  }
  target->segments.push_back(*seg);
  slot.group = target;
  slot.segment = std::move(*seg);
  return slot.segment.get();
}

Streamlet::Group* Streamlet::FindGroupLocked(uint64_t id) const {
  auto it = std::lower_bound(groups_.begin(), groups_.end(), id,
                             [](const std::unique_ptr<Group>& g, uint64_t v) { return g->id < v; });
  if (it == groups_.end() || (*it)->id != id) return nullptr;
  return it->get();
}

Position Streamlet::TailLocked() const {
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
    if ((*it)->segments.empty()) continue;
    const Segment& s = *(*it)->segments.back();
    return Position{(*it)->id, s.id(), s.committed()};
  }
  return Position{};
}

Result<AppendOutcome> Streamlet::Append(const uint8_t* chunk, const ChunkHeader& header,
                                        int64_t now_ms) {
  const uint32_t size = header.total_size();
  if (size > config_->segment_bytes) return TooLarge(size);
  // A producer always maps to the same slot, so its sequence state lives there, under the
  // slot's lock, and producers of different slots append in parallel (see streamlet.h).
  Slot& slot = slots_[header.producer_id % slot_count_];
  std::unique_lock<std::mutex> slot_lock = LockSlot(slot);
  // Under the slot lock: Seal() takes every slot lock after setting the flag, so once it returns
  // no append is past this check.
  if (sealed()) return Moving();
  if (header.producer_id != 0) {
    auto it = slot.producers.find(header.producer_id);
    if (it != slot.producers.end()) {
      const ProducerState& p = it->second;
      if (header.sequence <= p.last_sequence) return AppendOutcome{p.Lookup(header.sequence), true};
      RETURN_IF_ERROR(CheckNext(header, p));
    }
  }
  RETURN_IF_ERROR(FlushFailure());  // a retry of an acknowledged chunk is still answered above

  // Only this slot writes past its segment's committed() or seals it (Maintain holds the slot
  // lock to close an idle group), so what is checked here holds until the publish below.
  Segment* seg = slot.segment.get();
  if (seg == nullptr || seg->sealed() || seg->write_end() + size > seg->capacity()) {
    ASSIGN_OR_RETURN(seg, NextSegmentSlotLocked(slot, now_ms));
  }
  Group* g = slot.group;
  const uint32_t offset = seg->write_end();
  RETURN_IF_ERROR(seg->WriteChunk(chunk, size, config_->durability == Durability::kSync));
  PublishChunk(g, seg, offset, size, header.first_timestamp_ms, now_ms);
  Position pos{g->id, seg->id(), offset};
  if (header.producer_id != 0) slot.producers[header.producer_id].Remember(header.sequence, pos);
  return AppendOutcome{pos, false};
}

Result<AppendOutcome> Streamlet::AppendHeld(const uint8_t* chunk, const ChunkHeader& header,
                                            int64_t now_ms, HeldAppends* held, bool* must_flush) {
  *must_flush = false;
  const uint32_t size = header.total_size();
  if (size > config_->segment_bytes) return TooLarge(size);
  HeldAppends::HeldSlot* hs = held->Lock(this, header.producer_id % slot_count_);
  if (hs == nullptr) {
    *must_flush = true;
    return AppendOutcome{};
  }
  Slot& slot = slots_[hs->index];
  if (sealed()) return Moving();
  // A write into this streamlet failed with chunks held: they are settled first.
  if (held->HasFailure(this)) {
    *must_flush = true;
    return AppendOutcome{};
  }
  if (header.producer_id != 0) {
    auto it = slot.producers.find(header.producer_id);
    if (it != slot.producers.end()) {
      const ProducerState& p = it->second;
      if (header.sequence <= p.last_sequence) {
        const Position pos = p.Lookup(header.sequence);
        // A retry of a chunk still held: answered once that chunk is published (or not).
        if (hs->held_chunks > 0 && held->IsHeld(this, pos)) {
          *must_flush = true;
          return AppendOutcome{};
        }
        return AppendOutcome{pos, true};
      }
      RETURN_IF_ERROR(CheckNext(header, p));
    }
  }
  RETURN_IF_ERROR(FlushFailure());
  Segment* seg = slot.segment.get();
  if (seg == nullptr || seg->sealed() || seg->write_end() + size > seg->capacity()) {
    // Sealing a segment tells readers its length is final, so its held chunks go first.
    if (hs->held_chunks > 0) {
      *must_flush = true;
      return AppendOutcome{};
    }
    ASSIGN_OR_RETURN(seg, NextSegmentSlotLocked(slot, now_ms));
  }
  Group* g = slot.group;
  const uint32_t offset = seg->write_end();
  // Copied only: HeldAppends::WriteFiles writes the flight's chunks of each segment to its file
  // in one write.
  seg->CopyChunk(chunk, size);
  held->entries_.push_back(HeldAppends::Entry{this, hs, held->flight(), slot.segment, g, offset,
                                              size, header.first_timestamp_ms, now_ms});
  ++hs->held_chunks;
  hs->newest_flight = held->flight();
  Position pos{g->id, seg->id(), offset};
  if (header.producer_id != 0) {
    hs->Save(held->flight(), header.producer_id, slot.producers);
    slot.producers[header.producer_id].Remember(header.sequence, pos);
  }
  return AppendOutcome{pos, false};
}

void Streamlet::PublishChunk(Group* g, Segment* seg, uint32_t offset, uint32_t size,
                             int64_t first_timestamp_ms, int64_t now_ms) {
  // What readers, Maintain and LookupTimestamp look at under mu_, then committed().
  MutexLock lock(&mu_);
  seg->IndexChunk(offset);
  seg->NoteTimestamp(first_timestamp_ms);
  seg->Publish(offset + size);
  seg->set_last_append_ms(now_ms);
  g->last_append_ms = now_ms;
  g->bytes += size;
  bytes_ += size;
  TouchLocked(g);
}

Status Streamlet::TooLarge(uint32_t size) const {
  return Status::ChunkTooLarge("chunk of " + std::to_string(size) +
                               " bytes does not fit in a segment of " +
                               std::to_string(config_->segment_bytes));
}

Status Streamlet::FlushFailure() const {
  if (!flush_failed_.load(std::memory_order_acquire)) return Status::Ok();
  MutexLock lock(&flush_mu_);
  return Status::StorageError(
      "streamlet " + std::to_string(id_) +
      " takes no appends until its data reaches the disk again: " + flush_failure_.message());
}

Status Streamlet::Moving() const {
  return Status::StreamletMoving("streamlet " + std::to_string(id_) +
                                 " is moving to another broker; retry after a back-off");
}

Status Streamlet::CheckNext(const ChunkHeader& header, const ProducerState& p) {
  if (header.sequence == p.last_sequence + 1) return Status::Ok();
  return Status::OutOfOrderSequence("producer " + std::to_string(header.producer_id) +
                                    " sent sequence " + std::to_string(header.sequence) +
                                    " after " + std::to_string(p.last_sequence));
}

std::shared_ptr<Segment> Streamlet::SuccessorLocked(uint64_t group_id, uint64_t segment_id,
                                                    uint64_t* next_group) const {
  const Group* g = FindGroupLocked(group_id);
  if (g == nullptr) return nullptr;
  for (size_t i = 0; i < g->segments.size(); ++i) {
    if (g->segments[i]->id() == segment_id && i + 1 < g->segments.size()) {
      *next_group = g->id;
      return g->segments[i + 1];
    }
  }
  if (!g->closed) return nullptr;
  // Groups are read in id order: move on once this one is closed and fully read.
  auto it = std::upper_bound(groups_.begin(), groups_.end(), group_id,
                             [](uint64_t v, const std::unique_ptr<Group>& x) { return v < x->id; });
  // Skip empty closed groups; an empty open one is being opened: wait for it.
  while (it != groups_.end() && (*it)->segments.empty() && (*it)->closed) ++it;
  if (it == groups_.end() || (*it)->segments.empty()) return nullptr;
  *next_group = (*it)->id;
  return (*it)->segments.front();
}

Result<ReadOutcome> Streamlet::Read(const Position& from, uint32_t max_bytes,
                                    const BlockSink& sink) const {
  ReadOutcome out;
  Position cur = from;
  std::shared_ptr<Segment> seg;
  {
    MutexLock lock(&mu_);
    out.tail = TailLocked();
    if (from.is_earliest()) {
      // The first segment with a published chunk (see the successor step below: a position in
      // a segment with nothing published may not exist on another replica); until there is
      // one, the reader stays at "earliest".
      std::shared_ptr<Segment> first;
      uint64_t first_group = 0;
      if (!groups_.empty() && !groups_.front()->segments.empty()) {
        first = groups_.front()->segments.front();
        first_group = groups_.front()->id;
      }
      while (first != nullptr && first->committed() == 0 && first->sealed()) {
        const uint64_t empty_group = first_group;
        first = SuccessorLocked(empty_group, first->id(), &first_group);
      }
      if (first == nullptr || first->committed() == 0) {
        out.next = from;
        return out;
      }
      cur = Position{first_group, first->id(), 0};
    }
    seg = FindSegmentLocked(cur);
    // A client-supplied offset must start a chunk (checked against the segment's chunk index),
    // or the walk below would take record bytes for chunk lengths.
    if (seg == nullptr || !seg->IsChunkStart(cur.offset)) {
      std::string held = groups_.empty() ? "nothing"
                                         : "groups " + std::to_string(groups_.front()->id) + ".." +
                                               std::to_string(groups_.back()->id);
      return Status::PositionOutOfRange("position " + cur.ToString() + " is not in streamlet " +
                                        std::to_string(id_) + " (it holds " + held + ")");
    }
  }

  for (;;) {
    const bool sealed = seg->sealed();  // before committed(): a sealed length is final
    const uint32_t committed = seg->committed();
    const uint8_t* data = seg->data();
    uint32_t end = cur.offset;
    bool budget_spent = false;
    const Segment::DamagedBytes* damaged = nullptr;
    while (end < committed) {
      if ((damaged = seg->DamagedAt(end)) != nullptr) break;
      uint32_t chunk_size = kChunkHeaderSize + LoadLe32(data + end + 8);
      NS_CHECK(committed - end >= chunk_size);  // starts at a chunk; segments hold whole chunks
      uint32_t taken = out.bytes + (end - cur.offset);
      if (taken > 0 && taken + chunk_size > max_bytes) {
        budget_spent = true;
        break;
      }
      out.records += LoadLe32(data + end + 40);
      ++out.chunks;
      end += chunk_size;
    }
    if (end > cur.offset) {
      if (out.segments.empty() || out.segments.back() != seg) out.segments.push_back(seg);
      sink(cur, data + cur.offset, end - cur.offset);
      out.bytes += end - cur.offset;
      cur.offset = end;
    }
    if (damaged != nullptr) {
      // What came before the damage is served; a read that starts at it fails, so no reader
      // passes it without being told (the caller may then skip to DamageAt(..).next()).
      if (out.bytes == 0) return DataLoss(cur, *damaged);
      break;
    }
    if (budget_spent || !sealed || cur.offset < committed) break;
    MutexLock lock(&mu_);
    uint64_t next_group = 0;
    std::shared_ptr<Segment> next = SuccessorLocked(cur.group, cur.segment, &next_group);
    // Never into a segment with nothing published: the reader's next position would name a
    // segment that exists only here (a replicated streamlet's follower, which becomes leader
    // after a failover, has no file for a segment whose first chunk was never copied to it),
    // while the end of this one is valid on every replica. Sealed empty ones (a first write
    // undone) are passed over.
    while (next != nullptr && next->committed() == 0 && next->sealed()) {
      const uint64_t empty_group = next_group;
      next = SuccessorLocked(empty_group, next->id(), &next_group);
    }
    if (next == nullptr || next->committed() == 0) break;
    seg = std::move(next);
    cur = Position{next_group, seg->id(), 0};
  }
  out.next = cur;
  return out;
}

std::shared_ptr<Segment> Streamlet::FindSegmentLocked(const Position& at) const {
  const Group* g = FindGroupLocked(at.group);
  if (g == nullptr) return nullptr;
  for (const auto& s : g->segments) {
    if (s->id() == at.segment) return s;
  }
  return nullptr;
}

Status Streamlet::DataLoss(const Position& at, const Segment::DamagedBytes& d) const {
  const Position next{at.group, at.segment, at.offset + d.length};
  return Status::DataLoss("stream '" + config_->name + "' streamlet " + std::to_string(id_) + ": " +
                          std::to_string(d.length) + " bytes from " + at.ToString() + " to " +
                          next.ToString() + " were found damaged when the broker recovered (" +
                          d.reason + "); the records there are lost, reading on from " +
                          next.ToString() + " skips them");
}

std::optional<DamagedRange> Streamlet::DamageAt(const Position& at) const {
  MutexLock lock(&mu_);
  Position from = at;
  if (at.is_earliest() && !groups_.empty() && !groups_.front()->segments.empty()) {
    from = Position{groups_.front()->id, groups_.front()->segments.front()->id(), 0};
  }
  std::shared_ptr<Segment> seg = FindSegmentLocked(from);
  const Segment::DamagedBytes* d = seg == nullptr ? nullptr : seg->DamagedAt(from.offset);
  if (d == nullptr) return std::nullopt;
  return DamagedRange{from, d->length, d->reason};
}

std::vector<DamagedRange> Streamlet::Damaged() const {
  MutexLock lock(&mu_);
  std::vector<DamagedRange> out;
  for (const auto& g : groups_) {
    for (const auto& s : g->segments) {
      for (const auto& d : s->damaged()) {
        out.push_back(DamagedRange{Position{g->id, s->id(), d.offset}, d.length, d.reason});
      }
    }
  }
  return out;
}

Position Streamlet::LookupTimestamp(int64_t timestamp_ms) const {
  MutexLock lock(&mu_);
  for (const auto& g : groups_) {
    for (const auto& s : g->segments) {
      if (s->max_timestamp_ms() < timestamp_ms) continue;
      const uint32_t committed = s->committed();
      for (uint32_t off = 0; off < committed; off += s->StepAt(off)) {
        if (s->DamagedAt(off) == nullptr &&
            static_cast<int64_t>(LoadLe64(s->data() + off + 32)) >= timestamp_ms) {
          return Position{g->id, s->id(), off};
        }
      }
    }
  }
  return TailLocked();
}

StreamletInfo Streamlet::Describe() const {
  MutexLock lock(&mu_);
  StreamletInfo info;
  info.tail = TailLocked();
  if (!groups_.empty() && !groups_.front()->segments.empty()) {
    info.head = Position{groups_.front()->id, groups_.front()->segments.front()->id(), 0};
  } else {
    info.head = info.tail;
  }
  for (const auto& g : groups_) {
    if (g->segments.empty() && !g->closed) continue;  // being opened: not there yet
    GroupInfo gi;
    gi.id = g->id;
    gi.closed = g->closed;
    gi.first_segment = g->segments.empty() ? 0 : g->segments.front()->id();
    gi.segment_count = static_cast<uint32_t>(g->segments.size());
    gi.bytes = g->bytes;
    info.groups.push_back(gi);
  }
  return info;
}

std::vector<Streamlet::SegmentBytes> Streamlet::Segments() const {
  MutexLock lock(&mu_);
  std::vector<SegmentBytes> out;
  for (const auto& g : groups_) {
    for (const auto& seg : g->segments) out.push_back({g->id, seg->id(), seg->committed()});
  }
  return out;
}

uint64_t Streamlet::next_group_id() const {
  MutexLock lock(&mu_);
  return next_group_id_;
}

uint64_t Streamlet::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

void Streamlet::Seal() {
  sealed_.store(true, std::memory_order_release);
  for (size_t k = 0; k < slot_count_; ++k) {
    std::unique_lock<std::mutex> drain =
        LockSlot(slots_[k]);  // an append in progress finishes first
  }
}

void Streamlet::CloseActiveGroups() {
  for (size_t k = 0; k < slot_count_; ++k) {
    Slot& slot = slots_[k];
    std::unique_lock<std::mutex> slot_lock = LockSlot(slot);  // no append half done in the group
    MutexLock lock(&mu_);
    if (Group* g = slot.group; g != nullptr) {
      g->closed = true;
      TouchLocked(g);
      if (!g->segments.empty()) g->segments.back()->Seal();
    }
    slot.group = nullptr;
    slot.segment = nullptr;
  }
}

Position Streamlet::tail() const {
  MutexLock lock(&mu_);
  return TailLocked();
}

std::vector<std::string> Streamlet::DropAll(bool reopen) {
  std::vector<std::unique_lock<std::mutex>> slot_locks;
  slot_locks.reserve(slot_count_);
  for (size_t k = 0; k < slot_count_; ++k) slot_locks.push_back(LockSlot(slots_[k]));
  std::vector<std::string> doomed;
  {
    MutexLock lock(&mu_);
    for (const auto& g : groups_) {
      for (const auto& s : g->segments) {
        if (!dir_.empty()) doomed.push_back(SegmentPath(g->id, s->id()));
      }
    }
    groups_.clear();
    unlinked_.clear();
    bytes_ = 0;
    ++version_;
    for (size_t k = 0; k < slot_count_; ++k) {
      slots_[k].group = nullptr;
      slots_[k].segment = nullptr;
      slots_[k].producers.clear();
    }
  }
  if (reopen) Reopen();
  return doomed;
}

std::vector<std::string> Streamlet::Maintain(int64_t now_ms, int64_t group_idle_close_ms) {
  // With several active groups, readers go group by group: an idle open group would hold back
  // the groups after it, so it is closed once it has been idle long enough (KerA does the same).
  // Closing takes the slot's lock, so no append is half done in the group; a slot whose lock is
  // held is appending (perhaps waiting on an fsync), not idle, and is left alone.
  if (mirror()) return {};
  if (slot_count_ > 1 && group_idle_close_ms > 0) {
    for (size_t k = 0; k < slot_count_; ++k) {
      Slot& slot = slots_[k];
      std::unique_lock<std::mutex> slot_lock(slot.mu, std::try_to_lock);
      if (!slot_lock.owns_lock()) continue;
      MutexLock lock(&mu_);
      Group* g = slot.group;
      if (g != nullptr && g != groups_.back().get() &&
          now_ms - g->last_append_ms >= group_idle_close_ms) {
        g->closed = true;
        TouchLocked(g);
        if (!g->segments.empty()) g->segments.back()->Seal();
        slot.group = nullptr;
        slot.segment = nullptr;
      }
    }
  }
  std::vector<std::string> doomed;
  // Segments retention drops, freed once the lock is released (declared before it, so
  // destroyed after it): returning a segment's memory unmaps it, about 1 ms per 8 MiB, and a
  // pass that dropped several held the appends that wait for `mu_` for up to 36 ms.
  std::vector<std::shared_ptr<Segment>> dropped;
  // And files closed after it, too: a close is a system call.
  std::vector<std::shared_ptr<WritableFile>> finished;
  MutexLock lock(&mu_);
  // Retention drops whole sealed segments from the head, and always keeps the newest segment
  // so positions at the tail stay valid.
  for (;;) {
    if (groups_.empty()) break;
    Group* g = groups_.front().get();
    if (g->segments.empty()) {
      if (g->closed && groups_.size() > 1) {
        groups_.pop_front();
        continue;
      }
      break;
    }
    Segment* s = g->segments.front().get();
    // The newest segment: no later group has one (a later group may be being opened).
    const bool newest = g->segments.size() == 1 && std::all_of(groups_.begin() + 1, groups_.end(),
                                                               [](const std::unique_ptr<Group>& x) {
                                                                 return x->segments.empty();
                                                               });
    if (!s->sealed() || newest) break;
    if (!g->closed && g->segments.size() == 1) break;
    bool too_big =
        config_->retention_bytes > 0 && bytes_ > static_cast<uint64_t>(config_->retention_bytes);
    bool too_old =
        config_->retention_ms > 0 && now_ms - s->last_append_ms() > config_->retention_ms;
    if (!too_big && !too_old) break;
    uint32_t n = s->committed();
    if (!dir_.empty()) doomed.push_back(SegmentPath(g->id, s->id()));
    dropped.push_back(std::move(g->segments.front()));
    g->segments.erase(g->segments.begin());
    g->bytes -= n;
    bytes_ -= n;
    ++version_;  // the head moved: followers drop what lies before it
    if (g->segments.empty() && g->closed) groups_.pop_front();
  }
  // A sealed segment takes no more writes (a seal follows its last write, under the slot lock,
  // and a segment holding a leader's unsettled chunks is never sealed by others); not dirty, its
  // bytes are synced: under `sync` by each append, under `async` by the last SyncDirty, which
  // marks it dirty again when the sync fails.
  for (const auto& g : groups_) {
    for (const auto& s : g->segments) {
      if (s->sealed() && s->file() != nullptr && !s->dirty().load()) {
        finished.push_back(s->TakeFile());
      }
    }
  }
  return doomed;
}

Status Streamlet::SyncDirty() {
  std::vector<std::shared_ptr<Segment>> dirty;
  std::vector<std::shared_ptr<WritableFile>> files;  // open until synced, whoever closes them
  {
    MutexLock lock(&mu_);
    for (const auto& g : groups_) {
      for (const auto& s : g->segments) {
        if (s->file() != nullptr && s->dirty().exchange(false)) {
          dirty.push_back(s);
          files.push_back(s->shared_file());
        }
      }
    }
  }
  Status first;
  // New segment files of an async stream need their directory entry synced too.
  if (!dir_.empty() && dir_dirty_.exchange(false)) {
    first = env_->SyncDir(dir_);
    if (!first.ok()) dir_dirty_.store(true);
  }
  for (size_t i = 0; i < dirty.size(); ++i) {
    const std::shared_ptr<Segment>& s = dirty[i];
    Status st = files[i]->Sync();
    if (!st.ok()) {
      s->dirty().store(true);  // try again next round
      if (first.ok()) first = st;
    }
  }
  // Refused until a flush succeeds. Linux may report a failed writeback only once, so a later
  // fsync that succeeds does not prove the earlier bytes reached the disk; it does prove the disk
  // takes writes again, and the refusal only bounds how much waits for it.
  {
    MutexLock lock(&flush_mu_);
    flush_failure_ = first;
  }
  flush_failed_.store(!first.ok(), std::memory_order_release);
  return first;
}

Status Streamlet::Recover(int64_t now_ms) {
  if (dir_.empty()) return Status::Ok();
  RETURN_IF_ERROR(env_->CreateDirs(dir_));
  ASSIGN_OR_RETURN(auto names, env_->ListDir(dir_));
  struct Entry {
    uint64_t group, segment;
    std::string name;
  };
  std::vector<Entry> files;
  uint64_t txn_segments_above = 0;  // segment ids that open and prepared transactions hold
  for (auto& n : names) {
    uint64_t g = 0, s = 0;
    if (uint64_t txn = 0; ParseTxnSegmentName(n, &txn, &s)) {
      txn_segments_above = std::max(txn_segments_above, s);
      continue;
    }
    if (ParseGroupSegmentName(n, &g, &s)) files.push_back({g, s, n});
  }
  std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.group, a.segment) < std::tie(b.group, b.segment);
  });
  ProducerMap producers;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < files.size(); ++i) {
      const bool group_tail = i + 1 == files.size() || files[i + 1].group != files[i].group;
      RETURN_IF_ERROR(RecoverFile(files[i].name, files[i].group, files[i].segment, group_tail,
                                  now_ms, &producers));
    }
    for (auto& g : groups_) {
      g->closed = true;
      TouchLocked(g.get());
    }
    next_segment_id_ = std::max(next_segment_id_, txn_segments_above + 1);
  }
  // Each producer's state goes to the slot it appends through (slot locks come before mu_).
  for (auto& [id, state] : producers) {
    Slot& slot = slots_[id % slot_count_];
    std::unique_lock<std::mutex> lock = LockSlot(slot);
    slot.producers[id] = state;
  }
  return Status::Ok();
}

Status Streamlet::RecoverFile(const std::string& name, uint64_t group, uint64_t segment,
                              bool group_tail, int64_t now_ms, ProducerMap* producers) {
  const std::string path = dir_ + "/" + name;
  ASSIGN_OR_RETURN(Bytes data, env_->ReadFile(path));
  const uint32_t size = static_cast<uint32_t>(data.size());
  uint32_t off = 0;
  std::vector<std::pair<ChunkHeader, uint32_t>> chunks;
  std::vector<Segment::DamagedBytes> damaged;
  std::string unparsable;  // why the bytes from `off` on do not parse as chunks
  bool truncated = false;  // the file ends inside a chunk, or is all zeros from `off` on
  while (off < size) {
    // The header alone first (its own CRC covers the lengths), then whether the file holds
    // the whole chunk: an intact header of a chunk the file ends inside is a truncation.
    auto h = size - off < kChunkHeaderSize
                 ? DecodeChunkHeader(data.data() + off, size - off)
                 : DecodeChunkHeader(data.data() + off, std::numeric_limits<uint32_t>::max());
    if (!h.ok() || h->total_size() > size - off) {
      unparsable =
          h.ok() ? "the file ends inside a chunk of " + std::to_string(h->total_size()) + " bytes"
                 : h.status().message();
      truncated = size - off < kChunkHeaderSize || h.ok() ||
                  std::all_of(data.begin() + off, data.end(), [](uint8_t b) { return b == 0; });
      break;
    }
    // The header checked out (its own CRC covers the lengths), so even when the payload fails
    // its checks the next chunk's start is known and recovery goes on from there.
    auto valid = ValidateChunk(data.data() + off, h->total_size());
    if (valid.ok()) {
      chunks.emplace_back(*h, off);
    } else {
      damaged.push_back({off, h->total_size(), valid.status().message()});
    }
    off += h->total_size();
  }
  next_group_id_ = std::max(next_group_id_, group + 1);
  next_segment_id_ = std::max(next_segment_id_, segment + 1);
  uint32_t keep = size;
  // Under `async` a power loss may lose the unsynced end of any segment written since the last
  // flush (a later one's pages may have reached the disk): a truncated end is torn there too.
  const bool torn = group_tail || (truncated && config_->durability == Durability::kAsync);
  if (off < size && torn) {
    // A torn tail: cut as an append that never completed (under `sync` it was never
    // acknowledged; under `async` it was not yet flushed).
    NS_LOG(kWarning) << "recovery: cutting " << (size - off) << " bytes off " << path
                     << " at offset " << off << " (" << unparsable << ")";
    ASSIGN_OR_RETURN(auto file, env_->OpenAppendable(path));
    RETURN_IF_ERROR(file->Truncate(off));
    RETURN_IF_ERROR(file->Sync());
    keep = off;
  } else if (off < size) {
    // A later segment of the group was written after this one was complete, and nothing says
    // these bytes were never written: they were whole once. Damage, not a torn append.
    damaged.push_back({off, size - off, unparsable});
  }
  for (const auto& d : damaged) {
    NS_LOG(kError) << "recovery: " << path << " bytes [" << d.offset << ", " << d.offset + d.length
                   << ") are damaged (" << d.reason << "); readers that reach them get DATA_LOSS";
  }
  if (keep == 0) return env_->RemoveFile(path);
  const uint32_t valid = keep;

  // Age retention goes on from the file's last write, not from the restart.
  auto mtime = env_->ModifiedTimeMs(path);
  ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                   Segment::Create(segment, std::max(valid, config_->segment_bytes),
                                   mtime.ok() ? std::min(*mtime, now_ms) : now_ms));
  std::memcpy(seg->mutable_data(), data.data(), valid);
  // Damaged ranges start where a chunk would: index them so positions there and after are valid.
  size_t next_damaged = 0;
  for (const auto& [h, offset] : chunks) {
    while (next_damaged < damaged.size() && damaged[next_damaged].offset < offset) {
      seg->IndexChunk(damaged[next_damaged++].offset);
    }
    seg->IndexChunk(offset);
    seg->NoteTimestamp(h.first_timestamp_ms);
  }
  while (next_damaged < damaged.size()) seg->IndexChunk(damaged[next_damaged++].offset);
  seg->SetDamaged(std::move(damaged));
  seg->Publish(valid);
  seg->Seal();
  Group* g = groups_.empty() || groups_.back()->id != group ? NewGroupFromRecovery(group, now_ms)
                                                            : groups_.back().get();
  g->last_append_ms = seg->last_append_ms();
  g->segments.push_back(seg);
  g->bytes += valid;
  bytes_ += valid;
  for (const auto& [h, offset] : chunks) {
    if (h.producer_id == 0) continue;
    ProducerState& p = (*producers)[h.producer_id];
    if (h.sequence >= p.last_sequence) p.Remember(h.sequence, Position{group, segment, offset});
  }
  return Status::Ok();
}

}  // namespace nearstream::storage
