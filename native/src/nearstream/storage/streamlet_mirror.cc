// Follower reads (docs/cluster.md, "Follower reads"): the leader's published views, and a
// follower's copy in memory that shows its readers what a view says and nothing more.
//
// Why whole groups: readers go group by group in id order and wait at the first open one, so
// what they may see is each group's existence, whether it is closed, and the bytes published in
// each of its segments. A view names every group that changed in any of these since the version
// the follower was told (the leader marks a group changed under the streamlet lock, in the same
// step that changes it), so applying views in order gives the follower's readers a state the
// leader's readers had, taken at one instant. A group's registration is such a change: a group
// registered before another is named in the same view or an earlier one, so a follower's reader
// never passes a group it has not heard of yet.
#include <algorithm>

#include "nearstream/common/byte_io.h"
#include "nearstream/storage/streamlet.h"

namespace nearstream::storage {

uint64_t Streamlet::published_version() const {
  MutexLock lock(&mu_);
  return version_;
}

PublishedView Streamlet::PublishedSince(uint64_t since) const {
  MutexLock lock(&mu_);
  PublishedView view;
  view.version = version_;
  if (!groups_.empty()) {
    const Group& front = *groups_.front();
    view.head = Position{front.id, front.segments.empty() ? 0 : front.segments.front()->id(), 0};
  }
  for (const auto& g : groups_) {
    if (g->version <= since) continue;
    PublishedGroup pg;
    pg.id = g->id;
    pg.closed = g->closed;
    pg.segments.reserve(g->segments.size());
    for (const auto& seg : g->segments) pg.segments.push_back({seg->id(), seg->committed()});
    view.groups.push_back(std::move(pg));
  }
  return view;
}

Status Streamlet::MirrorChunk(const Position& at, const uint8_t* chunk, uint32_t size,
                              int64_t now_ms) {
  std::shared_ptr<Segment> seg;
  {
    MutexLock lock(&mu_);
    seg = FindSegmentLocked(at);
    if (seg == nullptr) {
      auto it = unlinked_.find({at.group, at.segment});
      if (it != unlinked_.end()) seg = it->second;
    }
  }
  if (seg == nullptr) {
    // A segment begun before this mirror was (re)started: its file holds it, this chunk
    // included, and a view that publishes it loads it from there.
    if (at.offset != 0) return Status::Ok();
    if (size > config_->segment_bytes) return TooLarge(size);
    ASSIGN_OR_RETURN(seg, Segment::Create(at.segment, config_->segment_bytes, now_ms));
    MutexLock lock(&mu_);
    unlinked_[{at.group, at.segment}] = seg;
  }
  // The copy's only writer is the follower's thread that takes its leader's writes in order, so
  // nothing else writes past committed() here; readers read below it.
  if (seg->write_end() != at.offset || at.offset + uint64_t{size} > seg->capacity()) {
    return Status::StorageError("the copy of streamlet " + std::to_string(id_) + " ends at " +
                                std::to_string(seg->write_end()) + " of segment " +
                                std::to_string(at.segment) + ", not where the chunk at " +
                                at.ToString() + " goes");
  }
  return seg->WriteChunk(chunk, size, /*sync=*/false);
}

Result<std::shared_ptr<Segment>> Streamlet::LoadMirrorSegment(uint64_t group,
                                                              const PublishedSegment& ps,
                                                              int64_t now_ms) const {
  const std::string path = SegmentPath(group, ps.id);
  if (dir_.empty() || !env_->Exists(path)) {
    if (ps.committed == 0) return Segment::Create(ps.id, config_->segment_bytes, now_ms);
    return Status::StorageError("streamlet " + std::to_string(id_) + " has no copy of segment " +
                                std::to_string(ps.id) + " of group " + std::to_string(group));
  }
  ASSIGN_OR_RETURN(Bytes data, env_->ReadFile(path));
  if (data.size() < ps.committed) {
    return Status::StorageError(path + " holds " + std::to_string(data.size()) +
                                " bytes; its leader published " + std::to_string(ps.committed));
  }
  // The whole file: what is past `committed` are chunks the leader sent and has not published
  // yet, and the next chunk of the segment goes after them.
  const uint32_t size = static_cast<uint32_t>(data.size());
  ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                   Segment::Create(ps.id, std::max(size, config_->segment_bytes), now_ms));
  // Written as chunks are (no file: the follower's is the one read), published by the caller.
  RETURN_IF_ERROR(seg->WriteChunk(data.data(), size, /*sync=*/false));
  return seg;
}

bool Streamlet::HoldsSegmentLocked(uint64_t group, uint64_t segment) const {
  if (unlinked_.contains({group, segment})) return true;
  auto at = std::lower_bound(groups_.begin(), groups_.end(), group,
                             [](const std::unique_ptr<Group>& g, uint64_t v) { return g->id < v; });
  if (at == groups_.end() || (*at)->id != group) return false;
  return std::any_of((*at)->segments.begin(), (*at)->segments.end(),
                     [segment](const std::shared_ptr<Segment>& s) { return s->id() == segment; });
}

Streamlet::MirrorLoads Streamlet::LoadMirrorSegments(const PublishedView& view, bool whole,
                                                     int64_t now_ms) const {
  std::vector<std::pair<uint64_t, PublishedSegment>> wanted;
  {
    MutexLock lock(&mu_);
    for (const PublishedGroup& pg : view.groups) {
      for (size_t i = 0; i < pg.segments.size(); ++i) {
        const bool final_length = pg.closed || i + 1 < pg.segments.size();
        if (final_length && (whole || !HoldsSegmentLocked(pg.id, pg.segments[i].id))) {
          wanted.emplace_back(pg.id, pg.segments[i]);
        }
      }
    }
  }
  MirrorLoads out;
  for (const auto& [group, ps] : wanted) {
    Result<std::shared_ptr<Segment>> seg = LoadMirrorSegment(group, ps, now_ms);
    if (seg.ok()) out[{group, ps.id}] = std::move(*seg);
  }
  return out;
}

Status Streamlet::ApplyGroupLocked(const PublishedGroup& pg, int64_t now_ms, MirrorLoads* loaded) {
  auto at = std::lower_bound(groups_.begin(), groups_.end(), pg.id,
                             [](const std::unique_ptr<Group>& g, uint64_t v) { return g->id < v; });
  Group* g = nullptr;
  if (at != groups_.end() && (*at)->id == pg.id) {
    g = at->get();
  } else {
    auto fresh = std::make_unique<Group>();
    fresh->id = pg.id;
    fresh->last_append_ms = now_ms;
    g = groups_.insert(at, std::move(fresh))->get();
  }
  for (size_t i = 0; i < pg.segments.size(); ++i) {
    const PublishedSegment& ps = pg.segments[i];
    auto found =
        std::find_if(g->segments.begin(), g->segments.end(),
                     [&ps](const std::shared_ptr<Segment>& s) { return s->id() == ps.id; });
    std::shared_ptr<Segment> seg;
    if (found != g->segments.end()) {
      seg = *found;
    } else {
      if (!g->segments.empty() && g->segments.back()->id() > ps.id) {
        return Status::StorageError("the copy of group " + std::to_string(pg.id) +
                                    " lacks segment " + std::to_string(ps.id) + " before segment " +
                                    std::to_string(g->segments.back()->id()));
      }
      auto it = unlinked_.find({pg.id, ps.id});
      auto read = loaded == nullptr ? MirrorLoads::iterator() : loaded->find({pg.id, ps.id});
      if (it != unlinked_.end()) {
        seg = std::move(it->second);
        unlinked_.erase(it);
      } else if (loaded != nullptr && read != loaded->end()) {
        seg = std::move(read->second);  // read ahead by LoadMirrorSegments
        loaded->erase(read);
      } else {
        // Not written through MirrorChunk: copied while catching up, begun before this mirror
        // started, or a transaction's segment (its commit's renames put the file here).
        ASSIGN_OR_RETURN(seg, LoadMirrorSegment(pg.id, ps, now_ms));
      }
      g->segments.push_back(seg);
    }
    const uint32_t from = seg->committed();
    if (ps.committed < from || ps.committed > std::max(seg->write_end(), from)) {
      return Status::StorageError(
          "the copy of segment " + std::to_string(ps.id) + " of group " + std::to_string(pg.id) +
          " holds " + std::to_string(seg->write_end()) + " bytes (" + std::to_string(from) +
          " published); its leader published " + std::to_string(ps.committed));
    }
    // Chunk by chunk, as the leader published them: the index and timestamps readers use.
    for (uint32_t off = from; off < ps.committed;) {
      const uint32_t step = kChunkHeaderSize + LoadLe32(seg->data() + off + 8);
      if (step > ps.committed - off) {
        return Status::StorageError("the leader published " + std::to_string(ps.committed) +
                                    " bytes of segment " + std::to_string(ps.id) +
                                    ", inside the chunk at offset " + std::to_string(off));
      }
      seg->IndexChunk(off);
      seg->NoteTimestamp(static_cast<int64_t>(LoadLe64(seg->data() + off + 32)));
      off += step;
    }
    seg->Publish(ps.committed);
    g->bytes += ps.committed - from;
    bytes_ += ps.committed - from;
    if (ps.committed > from) {
      seg->set_last_append_ms(now_ms);
      g->last_append_ms = now_ms;
    }
    // A later segment of the group exists on the leader: this one's length is final.
    if (i + 1 < pg.segments.size() || pg.closed) seg->Seal();
  }
  if (pg.closed) {
    g->closed = true;
    // Chunks the leader wrote and then took back (its followers failed) are never published.
    for (auto it = unlinked_.begin(); it != unlinked_.end();) {
      it = it->first.first == pg.id ? unlinked_.erase(it) : std::next(it);
    }
  }
  TouchLocked(g);
  return Status::Ok();
}

void Streamlet::DropBeforeLocked(const Position& head) {
  if (head.is_earliest()) return;
  while (!groups_.empty() && groups_.front()->id < head.group) {
    for (const auto& s : groups_.front()->segments) bytes_ -= s->committed();
    groups_.pop_front();
  }
  if (!groups_.empty() && groups_.front()->id == head.group) {
    Group& g = *groups_.front();
    while (!g.segments.empty() && g.segments.front()->id() < head.segment) {
      const uint32_t n = g.segments.front()->committed();
      g.bytes -= n;
      bytes_ -= n;
      g.segments.erase(g.segments.begin());
    }
  }
  for (auto it = unlinked_.begin(); it != unlinked_.end();) {
    it = it->first < std::make_pair(head.group, head.segment) ? unlinked_.erase(it) : std::next(it);
  }
}

Status Streamlet::ApplyPublished(const PublishedView& view, int64_t now_ms, MirrorLoads* loaded) {
  MutexLock lock(&mu_);
  for (const PublishedGroup& pg : view.groups) {
    for (size_t i = 1; i < pg.segments.size(); ++i) {
      if (pg.segments[i].id <= pg.segments[i - 1].id) {
        return Status::InvalidArgument("a published view lists segment " +
                                       std::to_string(pg.segments[i].id) + " of group " +
                                       std::to_string(pg.id) + " out of order");
      }
    }
  }
  for (const PublishedGroup& pg : view.groups) {
    RETURN_IF_ERROR(ApplyGroupLocked(pg, now_ms, loaded));
  }
  DropBeforeLocked(view.head);
  return Status::Ok();
}

}  // namespace nearstream::storage
