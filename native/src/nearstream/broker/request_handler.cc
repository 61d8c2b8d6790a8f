#include "nearstream/broker/request_handler.h"

#include <cstring>

#include "nearstream/common/clock.h"
#include "nearstream/common/version.h"
#include "nearstream/net/protocol.h"

namespace nearstream::broker {

using net::Opcode;
using storage::Position;

namespace {

// The message of STREAM_NOT_FOUND.
std::string NoSuchStream(const std::string& name) { return "stream '" + name + "' does not exist"; }

}  // namespace

RequestHandler::RequestHandler(HandlerOptions options, storage::StreamStore* store,
                               FetchWaiters* waiters, BrokerMetrics* metrics,
                               push::PushManager* push, cluster::ZkCluster* cluster)
    : options_(std::move(options)),
      store_(store),
      waiters_(waiters),
      metrics_(metrics),
      push_(push),
      cluster_(cluster),
      address_(options_.address) {}

Result<std::shared_ptr<storage::Stream>> RequestHandler::FindStream(const std::string& name) {
  std::shared_ptr<storage::Stream> stream;
  if (cluster_ != nullptr) {
    ASSIGN_OR_RETURN(stream, cluster_->Find(name));
  } else {
    stream = store_->Find(name);
  }
  // A stream being deleted is gone for new requests (its transactions end with it).
  if (stream == nullptr || stream->deleted()) return Status::StreamNotFound(NoSuchStream(name));
  return stream;
}

Result<storage::Streamlet*> RequestHandler::Served(storage::Stream& stream, uint32_t id,
                                                   bool replica_read) const {
  storage::Streamlet* s = stream.streamlet(id);
  if (s == nullptr) {
    return Status::StreamletNotFound("stream '" + stream.config().name + "' has no streamlet " +
                                     std::to_string(id) + " (it has " +
                                     std::to_string(stream.streamlet_count()) + ")");
  }
  if (cluster_ != nullptr) {
    Status owner = cluster_->CheckOwner(stream.config().name, id);
    // Another broker's streamlet, read from this broker's copy (docs/cluster.md, "Follower
    // reads"): only while it follows in sync and its copy in memory holds the leader's view.
    if (!owner.ok() && replica_read && cluster_->ServesFollowerRead(stream.config().name, id)) {
      return s;
    }
    RETURN_IF_ERROR(owner);
  }
  return s;
}

Status RequestHandler::ServesRings(const std::string& stream,
                                   const std::vector<net::PushRing>& rings,
                                   bool replica_read) const {
  if (cluster_ == nullptr) return Status::Ok();
  for (const net::PushRing& ring : rings) {
    for (const net::PushSplit& split : ring.splits) {
      Status owner = cluster_->CheckOwner(stream, split.streamlet);
      if (!owner.ok() && replica_read && cluster_->ServesFollowerRead(stream, split.streamlet)) {
        continue;  // pushed from this broker's copy (follower reads)
      }
      RETURN_IF_ERROR(owner);
    }
  }
  return Status::Ok();
}

void RequestHandler::Respond(const Request& req, Bytes* out,
                             const std::function<void(ByteWriter&)>& body) {
  size_t start =
      net::BeginResponse(out, req.frame.header.opcode, req.frame.header.request_id, Status::Ok());
  ByteWriter w(out);
  body(w);
  net::FinishFrame(out, start);
}

void RequestHandler::Error(const Request& req, const Status& status, Bytes* out) {
  metrics_->request_errors.Add(1);
  size_t start =
      net::BeginResponse(out, req.frame.header.opcode, req.frame.header.request_id, status);
  net::FinishFrame(out, start);
}

bool RequestHandler::Handle(Request& req, net::OutFrame* response, AppendBatch* appends,
                            ReplicaWriteBatch* replicas) {
  if (static_cast<Opcode>(req.frame.header.opcode) == Opcode::kFetch &&
      req.frame.header.version == net::kProtocolVersion && !req.frame.header.is_response()) {
    return Fetch(req, response);
  }
  // Held appends keep their slots locked, and flights their connections to followers, until
  // they are settled; a request that may take one of those locks itself (a seal, a delete, a
  // commit) would wait on this very thread, so they go first. Fetch (above) takes none, and
  // appends join the batch.
  if (static_cast<Opcode>(req.frame.header.opcode) != Opcode::kAppend &&
      (!appends->held.empty() || appends->in_flight())) {
    FlushAppends(appends);
  }
  Bytes* out = &response->bytes;
  const net::FrameHeader& h = req.frame.header;
  if (!req.wait_over && req.deadline_ms == 0) metrics_->requests.Add(1);
  if (h.version != net::kProtocolVersion) {
    Error(req,
          Status::UnsupportedVersion("protocol version " + std::to_string(h.version) +
                                     " is not supported; this broker speaks version 1"),
          out);
    return true;
  }
  if (h.is_response()) {
    Error(req, Status::MalformedRequest("a response frame was sent to the broker"), out);
    return true;
  }
  switch (static_cast<Opcode>(h.opcode)) {
    case Opcode::kHandshake: Handshake(req, out); return true;
    case Opcode::kCreateStream: CreateStream(req, out); return true;
    case Opcode::kDeleteStream: DeleteStream(req, out); return true;
    case Opcode::kDescribeStream: DescribeStream(req, out); return true;
    case Opcode::kListStreams: ListStreams(req, out); return true;
    case Opcode::kMetadata: Metadata(req, out); return true;
    case Opcode::kAppend: return Append(req, out, appends);
    case Opcode::kFetch: break;  // handled above
    case Opcode::kStats: Stats(req, out); return true;
    case Opcode::kLookupTimestamp: LookupTimestamp(req, out); return true;
    case Opcode::kClusterMetadata: ClusterMetadata(req, out); return true;
    case Opcode::kMoveStreamlet: MoveStreamlet(req, out); return true;
    case Opcode::kSealStreamlet: SealStreamlet(req, out); return true;
    case Opcode::kReplicaAppend: return ReplicaAppend(req, out, replicas);
    case Opcode::kReplicaJoin: ReplicaJoin(req, out); return true;
    case Opcode::kReplicaMove: ReplicaMove(req, out); return true;
    case Opcode::kReplicaCheck: ReplicaCheck(req, out); return true;
    case Opcode::kReplicaTxn: ReplicaTxn(req, out); return true;
    case Opcode::kReplicaTxnFiles: ReplicaTxnFiles(req, out); return true;
    case Opcode::kPushSubscribe: PushSubscribe(req, out); return true;
    case Opcode::kPushUpdate: PushUpdate(req, out); return true;
    case Opcode::kPushClose: PushClose(req, out); return true;
    case Opcode::kTxnInit: TxnInit(req, out); return true;
    case Opcode::kTxnBegin: TxnBegin(req, out); return true;
    case Opcode::kTxnAppend: return TxnAppend(req, out, appends);
    case Opcode::kTxnPrepare:
    case Opcode::kTxnCommit:
    case Opcode::kTxnAbort: TxnEnd(req, out); return true;
    case Opcode::kTxnList: TxnList(req, out); return true;
    case Opcode::kReplicaPublished: ReplicaPublished(req, out); return true;
  }
  Error(req, Status::UnknownOpcode("unknown opcode " + std::to_string(h.opcode)), out);
  return true;
}

void RequestHandler::Handshake(const Request& req, Bytes* out) {
  auto m = net::DecodeHandshakeRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (m->min_version > net::kProtocolVersion || m->max_version < net::kProtocolVersion) {
    return Error(
        req,
        Status::UnsupportedVersion("client speaks versions " + std::to_string(m->min_version) +
                                   ".." + std::to_string(m->max_version) + ", broker speaks 1"),
        out);
  }
  net::HandshakeResponse r;
  r.broker_epoch = options_.broker_epoch;
  r.max_frame_bytes = options_.max_frame_bytes;
  r.broker_version = kNearstreamVersion;
  Respond(req, out, [&](ByteWriter& w) { net::EncodeHandshakeResponse(w, r); });
}

void RequestHandler::CreateStream(const Request& req, Bytes* out) {
  auto c = net::DecodeStreamConfig(req.frame.body.data(), req.frame.body.size());
  if (!c.ok()) return Error(req, c.status(), out);
  storage::StreamConfig config = *c;
  if (config.segment_bytes == 0) config.segment_bytes = options_.default_segment_bytes;
  if (config.segments_per_group == 0)
    config.segments_per_group = options_.default_segments_per_group;
  if (config.active_groups == 0) config.active_groups = options_.default_active_groups;
  if (config.replication == 0) config.replication = 1;
  if (config.replication > 1 && cluster_ == nullptr) {
    return Error(req,
                 Status::InvalidArgument("replication " + std::to_string(config.replication) +
                                         " needs a broker cluster (nearstreamd --zookeeper): a "
                                         "standalone broker keeps one copy"),
                 out);
  }
  Status s = cluster_ != nullptr ? cluster_->CreateStream(config, req.frame.header.is_forwarded())
                                 : store_->Create(config);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::DeleteStream(const Request& req, Bytes* out) {
  auto m = net::DecodeStreamNameRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  std::shared_ptr<storage::Stream> stream;
  if (cluster_ != nullptr) {
    auto deleted = cluster_->DeleteStream(m->name, req.frame.header.is_forwarded());
    if (!deleted.ok()) return Error(req, deleted.status(), out);
    stream = *deleted;
  } else {
    stream = store_->Find(m->name);
    Status s = store_->Delete(m->name);
    if (!s.ok()) return Error(req, s, out);
  }
  if (stream != nullptr) waiters_->WakeAll(stream.get());  // parked fetches: STREAM_NOT_FOUND
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::DescribeStream(const Request& req, Bytes* out) {
  auto m = net::DecodeStreamNameRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ != nullptr) {  // also on a broker that owns none of its streamlets
    auto config = cluster_->Describe(m->name);
    if (!config.ok()) return Error(req, config.status(), out);
    return Respond(req, out, [&](ByteWriter& w) { net::EncodeStreamConfig(w, *config); });
  }
  auto stream = store_->Find(m->name);
  if (stream == nullptr) return Error(req, Status::StreamNotFound(NoSuchStream(m->name)), out);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeStreamConfig(w, stream->config()); });
}

void RequestHandler::ListStreams(const Request& req, Bytes* out) {
  if (!req.frame.body.empty()) {
    return Error(req, Status::MalformedRequest("ListStreams takes no body"), out);
  }
  net::ListStreamsResponse r;
  r.names = cluster_ != nullptr ? cluster_->List() : store_->List();
  Respond(req, out, [&](ByteWriter& w) { net::EncodeListStreamsResponse(w, r); });
}

void RequestHandler::Metadata(const Request& req, Bytes* out) {
  auto m = net::DecodeMetadataRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto found = FindStream(m->stream);
  if (!found.ok()) return Error(req, found.status(), out);
  const std::shared_ptr<storage::Stream>& stream = *found;
  // "All" means, in a cluster, the streamlets this broker stores; a named one it does not store
  // fails the request.
  const bool all = m->streamlets.empty();
  std::vector<uint32_t> ids = m->streamlets;
  if (all) {
    for (uint32_t i = 0; i < stream->streamlet_count(); ++i) ids.push_back(i);
  }
  net::MetadataResponse r;
  for (uint32_t id : ids) {
    auto s = Served(*stream, id);
    if (!s.ok() && all) continue;  // another broker's
    if (!s.ok()) return Error(req, s.status(), out);
    storage::StreamletInfo info = (*s)->Describe();
    net::StreamletMetadata sm;
    sm.streamlet = id;
    sm.head = info.head;
    sm.tail = info.tail;
    for (const auto& g : info.groups) {
      sm.groups.push_back({g.id, g.closed, g.first_segment, g.segment_count, g.bytes});
    }
    r.streamlets.push_back(std::move(sm));
  }
  Respond(req, out, [&](ByteWriter& w) { net::EncodeMetadataResponse(w, r); });
}

bool RequestHandler::Fetch(Request& req, net::OutFrame* response) {
  Bytes* out = &response->bytes;
  auto m = net::DecodeFetchRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) {
    Error(req, m.status(), out);
    return true;
  }
  auto found = FindStream(m->stream);
  if (!found.ok()) {
    Error(req, found.status(), out);
    return true;
  }
  const std::shared_ptr<storage::Stream>& stream = *found;
  const bool replica_read = (req.frame.header.flags & net::kFlagReplicaRead) != 0;
  if (req.deadline_ms == 0) {
    metrics_->fetch_requests.Add(1);
    req.deadline_ms = MonotonicNowMs() + std::min(m->max_wait_ms, options_.max_wait_ms);
  }
  // Read the entries' streamlet generations first: an append to one of them racing with the
  // reads below makes Park() refuse.
  std::vector<FetchWaiters::Watched> watched;
  watched.reserve(m->entries.size());
  for (const auto& e : m->entries) {
    if (e.streamlet < stream->streamlet_count()) {
      watched.push_back({e.streamlet, stream->streamlet_generation(e.streamlet)});
    }
  }

  response->Clear();
  size_t start =
      net::BeginResponse(out, req.frame.header.opcode, req.frame.header.request_id, Status::Ok());
  size_t spliced = 0;
  ByteWriter w(out);
  w.U32(static_cast<uint32_t>(m->entries.size()));
  uint64_t total_bytes = 0, chunks = 0, records = 0;
  bool any_error = false;
  for (const auto& e : m->entries) {
    auto served = Served(*stream, e.streamlet, replica_read);
    storage::Streamlet* s = served.ok() ? *served : nullptr;
    // Entry head for the success case: streamlet, status, empty message, next, tail, count.
    const size_t entry_at = out->size();
    w.Skip(4 + 2 + 2 + 20 + 20 + 4);
    uint32_t blocks = 0;
    Result<storage::ReadOutcome> read =
        s == nullptr ? Result<storage::ReadOutcome>(served.status())
                     : s->Read(e.position, e.max_bytes,
                               [&](const Position& at, const uint8_t* data, uint32_t size) {
                                 // The chunk bytes stay in the segment: the response splices them
                                 // in and the socket write copies them once, straight from there.
                                 net::EncodePosition(w, at);
                                 w.U32(size);
                                 response->splices.push_back({out->size(), data, size});
                                 spliced += size;
                                 ++blocks;
                               });
    if (!read.ok() && read.status().IsPositionOutOfRange() && s != nullptr) {
      // The streamlet may have been given up since the check above (another broker leads it
      // now and its chunks were dropped here): the reader must hear NOT_OWNER, not lose its
      // place.
      if (auto again = Served(*stream, e.streamlet, replica_read); !again.ok()) {
        read = again.status();
      } else if (Status owner = cluster_ == nullptr
                                    ? Status::Ok()
                                    : cluster_->CheckOwner(stream->config().name, e.streamlet);
                 !owner.ok()) {
        // A follower's copy in memory that is being replaced by a whole view (follower reads):
        // the reader goes to the leader, as from any follower that cannot serve it.
        read = owner;
      }
    }
    if (read.ok()) {
      uint8_t* p = out->data() + entry_at;
      StoreLe32(p, e.streamlet);
      StoreLe16(p + 4, 0);
      StoreLe16(p + 6, 0);
      Bytes head;
      ByteWriter hw(&head);
      net::EncodePosition(hw, read->next);
      net::EncodePosition(hw, read->tail);
      std::memcpy(p + 8, head.data(), 40);
      StoreLe32(p + 48, blocks);
      for (auto& seg : read->segments) response->keep.push_back(std::move(seg));
      if (replica_read && cluster_ != nullptr &&
          !cluster_->CheckOwner(stream->config().name, e.streamlet).ok()) {
        metrics_->fetch_follower_chunks.Add(read->chunks);
      }
      total_bytes += read->bytes;
      chunks += read->chunks;
      records += read->records;
    } else {
      // Errors are found before any block is written: replace the placeholder head.
      any_error = true;
      out->resize(entry_at);
      net::FetchResult fr;
      fr.streamlet = e.streamlet;
      fr.status = static_cast<uint16_t>(read.status().code());
      fr.message = read.status().message();
      // DATA_LOSS names where the damaged range ends: a reader told to skip it goes on there.
      std::optional<storage::DamagedRange> damage;
      if (read.status().IsDataLoss()) damage = s->DamageAt(e.position);
      w.U32(fr.streamlet);
      w.U16(fr.status);
      w.Str(fr.message);
      net::EncodePosition(w, damage ? damage->next() : e.position);
      net::EncodePosition(w, Position{});
      w.U32(0);
    }
  }
  if (total_bytes == 0 && !any_error && !req.wait_over && MonotonicNowMs() < req.deadline_ms) {
    metrics_->fetch_parked.Add(1);
    // Either parked, or something was appended meanwhile and the request goes to the back of
    // its worker's queue to read again (no recursion, and other requests get their turn).
    if (!waiters_->Park(req, stream, std::move(watched))) waiters_->Requeue(std::move(req));
    return false;
  }
  StoreLe32(out->data() + start,
            static_cast<uint32_t>(out->size() + spliced - start - net::kFrameLengthPrefix));
  metrics_->fetch_bytes.Add(total_bytes);
  metrics_->fetch_chunks.Add(chunks);
  metrics_->fetch_records.Add(records);
  return true;
}

void RequestHandler::LookupTimestamp(const Request& req, Bytes* out) {
  auto m = net::DecodeLookupTimestampRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto found = FindStream(m->stream);
  if (!found.ok()) return Error(req, found.status(), out);
  const std::shared_ptr<storage::Stream>& stream = *found;
  net::LookupTimestampResponse r;
  for (const auto& e : m->entries) {
    net::TimestampResult res;
    res.streamlet = e.streamlet;
    if (auto s = Served(*stream, e.streamlet); s.ok()) {
      res.position = (*s)->LookupTimestamp(e.timestamp_ms);
    } else {
      res.status = static_cast<uint16_t>(s.status().code());
      res.message = s.status().message();
    }
    r.results.push_back(std::move(res));
  }
  Respond(req, out, [&](ByteWriter& w) { net::EncodeLookupTimestampResponse(w, r); });
}

namespace {

Status NoPush() { return Status::Internal("push subscriptions are not enabled"); }

// Wire messages <-> the push module's subscription spec (push/subscription_spec.h).
std::vector<push::RingSpec> ToRingSpecs(const std::vector<net::PushRing>& rings) {
  std::vector<push::RingSpec> out;
  out.reserve(rings.size());
  for (const net::PushRing& r : rings) {
    push::RingSpec spec;
    spec.subtask_index = r.subtask_index;
    spec.splits.reserve(r.splits.size());
    for (const net::PushSplit& s : r.splits) spec.splits.push_back({s.streamlet, s.start});
    out.push_back(std::move(spec));
  }
  return out;
}

Result<push::RecordFilter> ToRecordFilter(const net::RecordFilterWire& f) {
  switch (f.kind) {
    case net::RecordFilterKind::kNone: return push::RecordFilter();
    case net::RecordFilterKind::kJsonFieldIn:
      return push::RecordFilter::JsonFieldIn(f.field, f.values);
    case net::RecordFilterKind::kBytesContain: return push::RecordFilter::BytesContain(f.needle);
  }
  return Status::InvalidArgument("unknown record filter kind");
}

Result<push::SubscriptionSpec> ToSubscriptionSpec(const net::PushSubscribeRequest& m) {
  push::SubscriptionSpec spec;
  spec.stream = m.stream;
  spec.slots_per_ring = m.slots_per_ring;
  spec.slot_bytes = m.slot_bytes;
  spec.consumer_timeout_ms = m.consumer_timeout_ms;
  spec.rings = ToRingSpecs(m.rings);
  ASSIGN_OR_RETURN(spec.filter, ToRecordFilter(m.filter));
  spec.slot_format = m.slot_format;
  return spec;
}

net::PushSubscribeResponse ToWire(const push::Subscribed& s) {
  net::PushSubscribeResponse r;
  r.subscription_id = s.id;
  r.broker_epoch = s.broker_epoch;
  r.region_path = s.region_path;
  r.region_bytes = s.region_bytes;
  return r;
}

}  // namespace

void RequestHandler::PushSubscribe(const Request& req, Bytes* out) {
  auto m = net::DecodePushSubscribeRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (push_ == nullptr) return Error(req, NoPush(), out);
  const bool replica_read = (req.frame.header.flags & net::kFlagReplicaRead) != 0;
  if (Status s = ServesRings(m->stream, m->rings, replica_read); !s.ok()) {
    return Error(req, s, out);
  }
  auto spec = ToSubscriptionSpec(*m);
  if (!spec.ok()) return Error(req, spec.status(), out);
  auto r = push_->Subscribe(req.conn->id(), *spec);
  if (!r.ok()) return Error(req, r.status(), out);
  // The connection may have closed while the region was made: its subscriptions end with it.
  if (req.conn->closed()) push_->ConnectionClosed(req.conn->id());
  Respond(req, out, [&](ByteWriter& w) { net::EncodePushSubscribeResponse(w, ToWire(*r)); });
}

void RequestHandler::PushUpdate(const Request& req, Bytes* out) {
  auto m = net::DecodePushUpdateRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (push_ == nullptr) return Error(req, NoPush(), out);
  Status s = push_->Update(req.conn->id(), m->subscription_id, ToRingSpecs(m->rings));
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::PushClose(const Request& req, Bytes* out) {
  auto m = net::DecodePushCloseRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (push_ == nullptr) return Error(req, NoPush(), out);
  Status s = push_->Close(req.conn->id(), m->subscription_id);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::ClusterMetadata(const Request& req, Bytes* out) {
  auto m = net::DecodeClusterMetadataRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  net::ClusterMetadataResponse r;
  if (cluster_ != nullptr) {
    if (!cluster_->joined()) {
      // Its view would be empty or stale: clients ask another broker of their list.
      return Error(req,
                   Status::ClusterUnavailable("broker " + std::to_string(cluster_->broker_id()) +
                                              " is joining the cluster"),
                   out);
    }
    r = cluster_->Metadata(m->streams);
  } else {
    // Standalone: the only broker, owner of every streamlet.
    r.broker_id = options_.broker_id;
    r.controller_id = options_.broker_id;  // it makes its own creates and deletes
    r.brokers.push_back({options_.broker_id, address_, options_.host});
    for (const std::string& name : m->streams.empty() ? store_->List() : m->streams) {
      if (auto stream = store_->Find(name)) {
        const uint32_t count = stream->streamlet_count();
        r.streams.push_back(
            {name, 0, std::vector<uint32_t>(count, options_.broker_id),
             std::vector<net::ReplicaSet>(count, {0, {options_.broker_id}, {options_.broker_id}})});
      }
    }
  }
  Respond(req, out, [&](ByteWriter& w) { net::EncodeClusterMetadataResponse(w, r); });
}

bool RequestHandler::ReplicaAppend(Request& req, Bytes* out, ReplicaWriteBatch* replicas) {
  Status refused;
  size_t run = 0;
  auto m = net::DecodeReplicaAppendRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) {
    refused = m.status();
  } else if (cluster_ == nullptr) {
    refused =
        Status::InvalidArgument("a standalone broker follows no leader: nothing to replicate here");
  } else {
    Result<size_t> staged = cluster_->StageReplica(*m, &replicas->writes);
    if (staged.ok()) {
      run = *staged;
    } else {
      refused = staged.status();
    }
  }
  // Refused alone, it is answered now; behind staged ones, in its turn after them.
  if (!refused.ok() && replicas->staged.empty()) {
    Error(req, refused, out);
    return true;
  }
  replicas->staged.push_back({std::move(req), std::move(refused), run});
  return false;
}

void RequestHandler::AnswerReplicas(ReplicaWriteBatch* replicas, ResponseWriter* writer) {
  if (replicas->staged.empty()) return;
  // Only a staged chunk starts the list (a refusal before it is answered at once), and only a
  // broker in a cluster stages one.
  const std::vector<Status> outcomes = cluster_->WriteReplicas(&replicas->writes);
  metrics_->replica_writes.Add(outcomes.size());
  for (StagedReplicaAppend& staged : replicas->staged) {
    const Status& status = staged.refused.ok() ? outcomes[staged.run] : staged.refused;
    net::OutFrame frame;
    if (status.ok()) {
      metrics_->replica_appends.Add(1);
      Respond(staged.req, &frame.bytes, [](ByteWriter&) {});
    } else {
      Error(staged.req, status, &frame.bytes);
    }
    writer->Add(staged.req.conn, std::move(frame));
  }
  replicas->staged.clear();
}

void RequestHandler::ReplicaPublished(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaPublishedRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req,
                 Status::InvalidArgument("a standalone broker follows no leader: nothing to "
                                         "publish here"),
                 out);
  }
  Status s = cluster_->AcceptPublished(*m);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::ReplicaJoin(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaJoinRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req, Status::InvalidArgument("a standalone broker has no followers"), out);
  }
  Status s = cluster_->JoinIsr(*m);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::MoveStreamlet(const Request& req, Bytes* out) {
  auto m = net::DecodeStreamletRef(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(
        req, Status::InvalidArgument("a standalone broker owns every streamlet: nothing to move"),
        out);
  }
  // Blocks this worker for the copy: a move is an operator's request, rare and bounded by the
  // streamlet's retained bytes.
  Status s = cluster_->MoveIn(m->stream, m->streamlet);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::ReplicaCheck(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaCheckRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req, Status::InvalidArgument("a standalone broker has no followers"), out);
  }
  if (Status joined = cluster_->CheckOwner(m->stream, m->streamlet); !joined.ok()) {
    return Error(req, joined, out);
  }
  auto r = cluster_->CheckReplica(*m);
  if (!r.ok()) return Error(req, r.status(), out);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeReplicaCheckResponse(w, *r); });
}

void RequestHandler::ReplicaMove(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaMoveRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req, Status::InvalidArgument("a standalone broker has no replicas to move"), out);
  }
  // Blocks the admin thread for the copy, as MoveStreamlet does.
  Status s = cluster_->MoveReplica(m->stream, m->streamlet, m->from, /*swap=*/false);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::SealStreamlet(const Request& req, Bytes* out) {
  auto m = net::DecodeSealStreamletRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req, Status::InvalidArgument("a standalone broker moves nothing"), out);
  }
  auto found = FindStream(m->stream);
  if (!found.ok()) return Error(req, found.status(), out);
  auto served = Served(**found, m->streamlet);
  if (!served.ok()) return Error(req, served.status(), out);
  auto sealed = cluster_->Seal(**found, m->streamlet, **served, m->seal_ms);
  if (!sealed.ok()) return Error(req, sealed.status(), out);
  net::SealStreamletResponse r{*sealed};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeSealStreamletResponse(w, r); });
}

void RequestHandler::Stats(const Request& req, Bytes* out) {
  if (!req.frame.body.empty()) {
    return Error(req, Status::MalformedRequest("Stats takes no body"), out);
  }
  net::StatsResponse r;
  r.values = collect_metrics ? collect_metrics() : MetricValues{};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeStatsResponse(w, r); });
}

}  // namespace nearstream::broker
