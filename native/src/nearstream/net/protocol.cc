#include "nearstream/net/protocol.h"

namespace nearstream::net {

using storage::Position;

namespace {

// Every decoder ends here: the reader must have stayed in bounds and consumed everything.
template <typename T>
Result<T> Finish(const ByteReader& r, T value, const char* what) {
  if (!r.ok() || r.remaining() != 0)
    return Status::MalformedRequest(std::string("malformed ") + what + " body");
  return value;
}

constexpr size_t kPositionSize = 20;

}  // namespace

const char* OpcodeName(uint16_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kHandshake: return "Handshake";
    case Opcode::kCreateStream: return "CreateStream";
    case Opcode::kDeleteStream: return "DeleteStream";
    case Opcode::kDescribeStream: return "DescribeStream";
    case Opcode::kListStreams: return "ListStreams";
    case Opcode::kMetadata: return "Metadata";
    case Opcode::kAppend: return "Append";
    case Opcode::kFetch: return "Fetch";
    case Opcode::kStats: return "Stats";
    case Opcode::kLookupTimestamp: return "LookupTimestamp";
    case Opcode::kClusterMetadata: return "ClusterMetadata";
    case Opcode::kMoveStreamlet: return "MoveStreamlet";
    case Opcode::kSealStreamlet: return "SealStreamlet";
    case Opcode::kReplicaAppend: return "ReplicaAppend";
    case Opcode::kReplicaJoin: return "ReplicaJoin";
    case Opcode::kReplicaMove: return "ReplicaMove";
    case Opcode::kReplicaCheck: return "ReplicaCheck";
    case Opcode::kReplicaTxn: return "ReplicaTxn";
    case Opcode::kReplicaTxnFiles: return "ReplicaTxnFiles";
    case Opcode::kPushSubscribe: return "PushSubscribe";
    case Opcode::kPushUpdate: return "PushUpdate";
    case Opcode::kPushClose: return "PushClose";
    case Opcode::kTxnInit: return "TxnInit";
    case Opcode::kTxnBegin: return "TxnBegin";
    case Opcode::kTxnAppend: return "TxnAppend";
    case Opcode::kTxnPrepare: return "TxnPrepare";
    case Opcode::kTxnCommit: return "TxnCommit";
    case Opcode::kTxnAbort: return "TxnAbort";
    case Opcode::kTxnList: return "TxnList";
    case Opcode::kReplicaPublished: return "ReplicaPublished";
  }
  return "Unknown";
}

bool IsKnownOpcode(uint16_t opcode) { return std::string(OpcodeName(opcode)) != "Unknown"; }

FrameHeader DecodeFrameHeader(const uint8_t* p) {
  FrameHeader h;
  h.version = p[0];
  h.flags = p[1];
  h.opcode = LoadLe16(p + 2);
  h.request_id = LoadLe64(p + 4);
  return h;
}

size_t BeginFrame(Bytes* out, const FrameHeader& h) {
  size_t start = out->size();
  ByteWriter w(out);
  w.U32(0);
  w.U8(h.version);
  w.U8(h.flags);
  w.U16(h.opcode);
  w.U64(h.request_id);
  return start;
}

void FinishFrame(Bytes* out, size_t frame_start) {
  StoreLe32(out->data() + frame_start,
            static_cast<uint32_t>(out->size() - frame_start - kFrameLengthPrefix));
}

size_t BeginResponse(Bytes* out, uint16_t opcode, uint64_t request_id, const Status& status) {
  FrameHeader h;
  h.flags = kFlagResponse;
  h.opcode = opcode;
  h.request_id = request_id;
  size_t start = BeginFrame(out, h);
  ByteWriter w(out);
  w.U16(static_cast<uint16_t>(status.code()));
  std::string_view msg = status.message();
  w.Str(msg.substr(0, 4096));
  return start;
}

void EncodePosition(ByteWriter& w, const Position& p) {
  w.U64(p.group);
  w.U64(p.segment);
  w.U32(p.offset);
}

Position DecodePosition(ByteReader& r) {
  Position p;
  p.group = r.U64();
  p.segment = r.U64();
  p.offset = r.U32();
  return p;
}

void EncodeHandshakeRequest(ByteWriter& w, const HandshakeRequest& m) {
  w.U16(m.min_version);
  w.U16(m.max_version);
  w.Str(m.client_name);
}

Result<HandshakeRequest> DecodeHandshakeRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  HandshakeRequest m;
  m.min_version = r.U16();
  m.max_version = r.U16();
  m.client_name = r.Str();
  return Finish(r, std::move(m), "Handshake request");
}

void EncodeHandshakeResponse(ByteWriter& w, const HandshakeResponse& m) {
  w.U16(m.version);
  w.U64(m.broker_epoch);
  w.U32(m.max_frame_bytes);
  w.Str(m.broker_version);
}

Result<HandshakeResponse> DecodeHandshakeResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  HandshakeResponse m;
  m.version = r.U16();
  m.broker_epoch = r.U64();
  m.max_frame_bytes = r.U32();
  m.broker_version = r.Str();
  return Finish(r, std::move(m), "Handshake response");
}

void EncodeStreamConfig(ByteWriter& w, const storage::StreamConfig& c) {
  w.Str(c.name);
  w.U32(c.streamlets);
  w.U32(c.segment_bytes);
  w.U32(c.segments_per_group);
  w.U32(c.active_groups);
  w.U8(static_cast<uint8_t>(c.durability));
  w.I64(c.retention_bytes);
  w.I64(c.retention_ms);
  w.U8(static_cast<uint8_t>(c.replication));
}

Result<storage::StreamConfig> DecodeStreamConfig(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  storage::StreamConfig c;
  c.name = r.Str();
  c.streamlets = r.U32();
  c.segment_bytes = r.U32();
  c.segments_per_group = r.U32();
  c.active_groups = r.U32();
  uint8_t d = r.U8();
  if (d > 2) r.Fail();
  c.durability = static_cast<storage::Durability>(d);
  c.retention_bytes = r.I64();
  c.retention_ms = r.I64();
  // 0 = the default (1); any other value is checked by StreamConfig::Validate.
  c.replication = r.U8();
  return Finish(r, std::move(c), "stream config");
}

void EncodeStreamNameRequest(ByteWriter& w, const StreamNameRequest& m) { w.Str(m.name); }

Result<StreamNameRequest> DecodeStreamNameRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  StreamNameRequest m;
  m.name = r.Str();
  return Finish(r, std::move(m), "stream name");
}

void EncodeListStreamsResponse(ByteWriter& w, const ListStreamsResponse& m) {
  w.U32(static_cast<uint32_t>(m.names.size()));
  for (const auto& s : m.names) w.Str(s);
}

Result<ListStreamsResponse> DecodeListStreamsResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ListStreamsResponse m;
  uint32_t count = r.Count(2);
  m.names.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) m.names.push_back(r.Str());
  return Finish(r, std::move(m), "ListStreams response");
}

void EncodeStreamletRef(ByteWriter& w, const StreamletRef& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
}

Result<StreamletRef> DecodeStreamletRef(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  StreamletRef m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  return Finish(r, std::move(m), "MoveStreamlet request");
}

void EncodeSealStreamletRequest(ByteWriter& w, const SealStreamletRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.seal_ms);
}

Result<SealStreamletRequest> DecodeSealStreamletRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  SealStreamletRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.seal_ms = r.U32();
  return Finish(r, std::move(m), "SealStreamlet request");
}

void EncodeReplicaAppendRequest(ByteWriter& w, const ReplicaAppendRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.leader);
  w.U64(m.leader_epoch);
  EncodePosition(w, m.at);
  w.Blob(m.chunk, m.chunk_size);
}

Result<ReplicaAppendRequest> DecodeReplicaAppendRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaAppendRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.leader = r.U32();
  m.leader_epoch = r.U64();
  m.at = DecodePosition(r);
  m.chunk_size = r.U32();
  m.chunk = r.Take(m.chunk_size);
  return Finish(r, std::move(m), "ReplicaAppend request");
}

void EncodeReplicaJoinRequest(ByteWriter& w, const ReplicaJoinRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.follower);
  w.U64(m.leader_epoch);
  EncodePosition(w, m.tail);
  w.U8(static_cast<uint8_t>(m.take_over));
}

Result<ReplicaJoinRequest> DecodeReplicaJoinRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaJoinRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.follower = r.U32();
  m.leader_epoch = r.U64();
  m.tail = DecodePosition(r);
  const uint8_t take_over = r.U8();
  if (r.ok() && take_over > static_cast<uint8_t>(ReplicaJoinRequest::TakeOver::kLeaderFollows)) {
    return Status::MalformedRequest("ReplicaJoin request: take_over " + std::to_string(take_over) +
                                    " is not 0, 1 or 2");
  }
  m.take_over = static_cast<ReplicaJoinRequest::TakeOver>(take_over);
  return Finish(r, std::move(m), "ReplicaJoin request");
}

void EncodeReplicaMoveRequest(ByteWriter& w, const ReplicaMoveRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.from);
}

Result<ReplicaMoveRequest> DecodeReplicaMoveRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaMoveRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.from = r.U32();
  return Finish(r, std::move(m), "ReplicaMove request");
}

void EncodeReplicaTxnRequest(ByteWriter& w, const ReplicaTxnRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.leader);
  w.U64(m.leader_epoch);
  w.U8(static_cast<uint8_t>(m.op));
  w.Str(m.file);
  w.U64(m.offset);
  w.Str(m.to);
  w.Blob(m.data, m.data_size);
}

Result<ReplicaTxnRequest> DecodeReplicaTxnRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaTxnRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.leader = r.U32();
  m.leader_epoch = r.U64();
  const uint8_t op = r.U8();
  // Only the four ops exist; any other byte is malformed, so that an accepted body always
  // re-encodes to the same bytes.
  if (op < static_cast<uint8_t>(ReplicaTxnOp::kAppend) ||
      op > static_cast<uint8_t>(ReplicaTxnOp::kDelete)) {
    r.Fail();
  }
  m.op = static_cast<ReplicaTxnOp>(op);
  m.file = r.Str();
  m.offset = r.U64();
  m.to = r.Str();
  m.data_size = r.U32();
  m.data = r.Take(m.data_size);
  return Finish(r, std::move(m), "ReplicaTxn request");
}

void EncodeReplicaTxnFilesRequest(ByteWriter& w, const ReplicaTxnFilesRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.follower);
  w.U32(m.max_bytes);
  w.U32(static_cast<uint32_t>(m.held.size()));
  for (const ReplicaTxnHeld& h : m.held) {
    w.Str(h.name);
    w.U64(h.have);
  }
}

Result<ReplicaTxnFilesRequest> DecodeReplicaTxnFilesRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaTxnFilesRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.follower = r.U32();
  m.max_bytes = r.U32();
  const uint32_t count = r.Count(2 + 8);  // an empty name and its u64 at least
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    ReplicaTxnHeld h;
    h.name = r.Str();
    h.have = r.U64();
    m.held.push_back(std::move(h));
  }
  return Finish(r, std::move(m), "ReplicaTxnFiles request");
}

void EncodeReplicaTxnFilesResponse(ByteWriter& w, const ReplicaTxnFilesResponse& m) {
  w.U8(m.complete ? 1 : 0);
  w.U32(static_cast<uint32_t>(m.files.size()));
  for (const ReplicaTxnFile& f : m.files) {
    w.Str(f.name);
    w.U64(f.size);
    w.U64(f.offset);
    w.Blob(f.data.data(), static_cast<uint32_t>(f.data.size()));
  }
}

Result<ReplicaTxnFilesResponse> DecodeReplicaTxnFilesResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaTxnFilesResponse m;
  const uint8_t complete = r.U8();
  if (complete > 1) r.Fail();  // a flag: any other byte would not re-encode the same
  m.complete = complete == 1;
  const uint32_t count = r.Count(2 + 8 + 8 + 4);  // an empty name, two u64s, an empty blob
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    ReplicaTxnFile f;
    f.name = r.Str();
    f.size = r.U64();
    f.offset = r.U64();
    const uint32_t size = r.U32();
    const uint8_t* data = r.Take(size);
    if (data != nullptr) f.data.assign(data, data + size);
    // A piece past its file's end describes no file.
    if (f.offset > f.size || f.size - f.offset < size) r.Fail();
    m.files.push_back(std::move(f));
  }
  return Finish(r, std::move(m), "ReplicaTxnFiles response");
}

void EncodeReplicaPublishedRequest(ByteWriter& w, const ReplicaPublishedRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.leader);
  w.U64(m.leader_epoch);
  w.U64(m.since);
  w.U64(m.view.version);
  EncodePosition(w, m.view.head);
  w.U32(static_cast<uint32_t>(m.view.groups.size()));
  for (const storage::PublishedGroup& g : m.view.groups) {
    w.U64(g.id);
    w.U8(g.closed ? 1 : 0);
    w.U32(static_cast<uint32_t>(g.segments.size()));
    for (const storage::PublishedSegment& s : g.segments) {
      w.U64(s.id);
      w.U32(s.committed);
    }
  }
}

Result<ReplicaPublishedRequest> DecodeReplicaPublishedRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaPublishedRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.leader = r.U32();
  m.leader_epoch = r.U64();
  m.since = r.U64();
  m.view.version = r.U64();
  m.view.head = DecodePosition(r);
  const uint32_t groups = r.Count(8 + 1 + 4);  // a group without segments
  for (uint32_t i = 0; i < groups && r.ok(); ++i) {
    storage::PublishedGroup g;
    g.id = r.U64();
    const uint8_t closed = r.U8();
    if (closed > 1) r.Fail();  // a flag: any other byte would not re-encode the same
    g.closed = closed == 1;
    const uint32_t segments = r.Count(8 + 4);
    for (uint32_t k = 0; k < segments && r.ok(); ++k) {
      storage::PublishedSegment s;
      s.id = r.U64();
      s.committed = r.U32();
      g.segments.push_back(s);
    }
    m.view.groups.push_back(std::move(g));
  }
  return Finish(r, std::move(m), "ReplicaPublished request");
}

void EncodeReplicaCheckRequest(ByteWriter& w, const ReplicaCheckRequest& m) {
  w.Str(m.stream);
  w.U32(m.streamlet);
  w.U32(m.follower);
}

Result<ReplicaCheckRequest> DecodeReplicaCheckRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaCheckRequest m;
  m.stream = r.Str();
  m.streamlet = r.U32();
  m.follower = r.U32();
  return Finish(r, std::move(m), "ReplicaCheck request");
}

void EncodeReplicaCheckResponse(ByteWriter& w, const ReplicaCheckResponse& m) {
  w.U64(m.leader_epoch);
  w.U32(static_cast<uint32_t>(m.epochs.size()));
  for (const EpochStart& e : m.epochs) {
    w.U64(e.epoch);
    w.U64(e.start_group);
  }
  w.U32(static_cast<uint32_t>(m.segments.size()));
  for (const SegmentExtent& s : m.segments) {
    w.U64(s.group);
    w.U64(s.segment);
    w.U32(s.bytes);
  }
}

Result<ReplicaCheckResponse> DecodeReplicaCheckResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ReplicaCheckResponse m;
  m.leader_epoch = r.U64();
  const uint32_t epochs = r.Count(16);
  for (uint32_t i = 0; i < epochs && r.ok(); ++i) {
    EpochStart e;
    e.epoch = r.U64();
    e.start_group = r.U64();
    m.epochs.push_back(e);
  }
  const uint32_t segments = r.Count(20);
  for (uint32_t i = 0; i < segments && r.ok(); ++i) {
    SegmentExtent s;
    s.group = r.U64();
    s.segment = r.U64();
    s.bytes = r.U32();
    m.segments.push_back(s);
  }
  return Finish(r, std::move(m), "ReplicaCheck response");
}

void EncodeSealStreamletResponse(ByteWriter& w, const SealStreamletResponse& m) {
  EncodePosition(w, m.tail);
}

Result<SealStreamletResponse> DecodeSealStreamletResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  SealStreamletResponse m;
  m.tail = DecodePosition(r);
  return Finish(r, std::move(m), "SealStreamlet response");
}

void EncodeClusterMetadataRequest(ByteWriter& w, const ClusterMetadataRequest& m) {
  w.U32(static_cast<uint32_t>(m.streams.size()));
  for (const std::string& s : m.streams) w.Str(s);
}

Result<ClusterMetadataRequest> DecodeClusterMetadataRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ClusterMetadataRequest m;
  uint32_t count = r.Count(2);
  m.streams.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) m.streams.push_back(r.Str());
  return Finish(r, std::move(m), "ClusterMetadata request");
}

void EncodeClusterMetadataResponse(ByteWriter& w, const ClusterMetadataResponse& m) {
  w.U32(m.broker_id);
  w.U32(static_cast<uint32_t>(m.brokers.size()));
  for (const BrokerInfo& b : m.brokers) {
    w.U32(b.id);
    w.Str(b.address);
    w.Str(b.host);
  }
  w.U32(static_cast<uint32_t>(m.streams.size()));
  for (const StreamPlacement& s : m.streams) {
    w.Str(s.name);
    w.U32(s.version);
    w.U32(static_cast<uint32_t>(s.owners.size()));
    for (uint32_t owner : s.owners) w.U32(owner);
    for (const ReplicaSet& set : s.replicas) {
      w.U64(set.leader_epoch);
      w.U8(static_cast<uint8_t>(set.replicas.size()));
      for (uint32_t b : set.replicas) w.U32(b);
      w.U8(static_cast<uint8_t>(set.isr.size()));
      for (uint32_t b : set.isr) w.U32(b);
    }
  }
  w.U32(m.controller_id);
}

Result<ClusterMetadataResponse> DecodeClusterMetadataResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  ClusterMetadataResponse m;
  m.broker_id = r.U32();
  uint32_t brokers = r.Count(8);  // id + two empty Str
  m.brokers.reserve(brokers);
  for (uint32_t i = 0; i < brokers && r.ok(); ++i) {
    BrokerInfo b;
    b.id = r.U32();
    b.address = r.Str();
    b.host = r.Str();
    m.brokers.push_back(std::move(b));
  }
  uint32_t streams = r.Count(10);  // empty name + version + count
  m.streams.reserve(streams);
  for (uint32_t i = 0; i < streams && r.ok(); ++i) {
    StreamPlacement s;
    s.name = r.Str();
    s.version = r.U32();
    uint32_t owners = r.Count(4);
    s.owners.reserve(owners);
    for (uint32_t k = 0; k < owners && r.ok(); ++k) s.owners.push_back(r.U32());
    s.replicas.reserve(owners);
    for (uint32_t k = 0; k < owners && r.ok(); ++k) {
      ReplicaSet set;
      set.leader_epoch = r.U64();
      const uint8_t replicas = r.U8();
      for (uint8_t j = 0; j < replicas && r.ok(); ++j) set.replicas.push_back(r.U32());
      const uint8_t isr = r.U8();
      for (uint8_t j = 0; j < isr && r.ok(); ++j) set.isr.push_back(r.U32());
      s.replicas.push_back(std::move(set));
    }
    m.streams.push_back(std::move(s));
  }
  m.controller_id = r.U32();
  return Finish(r, std::move(m), "ClusterMetadata response");
}

void EncodeMetadataRequest(ByteWriter& w, const MetadataRequest& m) {
  w.Str(m.stream);
  w.U32(static_cast<uint32_t>(m.streamlets.size()));
  for (uint32_t s : m.streamlets) w.U32(s);
}

Result<MetadataRequest> DecodeMetadataRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  MetadataRequest m;
  m.stream = r.Str();
  uint32_t count = r.Count(4);
  m.streamlets.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) m.streamlets.push_back(r.U32());
  return Finish(r, std::move(m), "Metadata request");
}

void EncodeMetadataResponse(ByteWriter& w, const MetadataResponse& m) {
  w.U32(static_cast<uint32_t>(m.streamlets.size()));
  for (const auto& s : m.streamlets) {
    w.U32(s.streamlet);
    EncodePosition(w, s.head);
    EncodePosition(w, s.tail);
    w.U32(static_cast<uint32_t>(s.groups.size()));
    for (const auto& g : s.groups) {
      w.U64(g.group_id);
      w.U8(g.closed ? 1 : 0);
      w.U64(g.first_segment);
      w.U32(g.segment_count);
      w.U64(g.bytes);
    }
  }
}

Result<MetadataResponse> DecodeMetadataResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  MetadataResponse m;
  uint32_t count = r.Count(4 + 2 * kPositionSize + 4);
  m.streamlets.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    StreamletMetadata s;
    s.streamlet = r.U32();
    s.head = DecodePosition(r);
    s.tail = DecodePosition(r);
    uint32_t groups = r.Count(29);
    s.groups.reserve(groups);
    for (uint32_t j = 0; j < groups && r.ok(); ++j) {
      GroupMetadata g;
      g.group_id = r.U64();
      uint8_t closed = r.U8();
      if (closed > 1) r.Fail();
      g.closed = closed == 1;
      g.first_segment = r.U64();
      g.segment_count = r.U32();
      g.bytes = r.U64();
      s.groups.push_back(g);
    }
    m.streamlets.push_back(std::move(s));
  }
  return Finish(r, std::move(m), "Metadata response");
}

namespace {

// The count and AppendEntry list that end both Append and TxnAppend requests.
void EncodeAppendEntries(ByteWriter& w, const std::vector<AppendEntry>& entries) {
  w.U32(static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) {
    w.U32(e.streamlet);
    w.Blob(e.chunk, e.chunk_size);
  }
}

std::vector<AppendEntry> DecodeAppendEntries(ByteReader& r) {
  std::vector<AppendEntry> entries;
  uint32_t count = r.Count(8);
  entries.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    AppendEntry e;
    e.streamlet = r.U32();
    e.chunk_size = r.U32();
    e.chunk = r.Take(e.chunk_size);
    entries.push_back(e);
  }
  return entries;
}

}  // namespace

void EncodeAppendRequest(ByteWriter& w, const AppendRequest& m) {
  w.Str(m.stream);
  EncodeAppendEntries(w, m.entries);
}

Result<AppendRequest> DecodeAppendRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  AppendRequest m;
  m.stream = r.Str();
  m.entries = DecodeAppendEntries(r);
  return Finish(r, std::move(m), "Append request");
}

void EncodeAppendResponse(ByteWriter& w, const AppendResponse& m) {
  w.U32(static_cast<uint32_t>(m.results.size()));
  for (const auto& e : m.results) {
    w.U32(e.streamlet);
    w.U16(e.status);
    w.Str(e.message);
    EncodePosition(w, e.position);
    w.U8(e.duplicate ? 1 : 0);
  }
}

Result<AppendResponse> DecodeAppendResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  AppendResponse m;
  uint32_t count = r.Count(4 + 2 + 2 + kPositionSize + 1);
  m.results.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    AppendResult e;
    e.streamlet = r.U32();
    e.status = r.U16();
    e.message = r.Str();
    e.position = DecodePosition(r);
    uint8_t dup = r.U8();
    if (dup > 1) r.Fail();
    e.duplicate = dup == 1;
    m.results.push_back(std::move(e));
  }
  return Finish(r, std::move(m), "Append response");
}

void EncodeFetchRequest(ByteWriter& w, const FetchRequest& m) {
  w.Str(m.stream);
  w.U32(m.max_wait_ms);
  w.U32(static_cast<uint32_t>(m.entries.size()));
  for (const auto& e : m.entries) {
    w.U32(e.streamlet);
    EncodePosition(w, e.position);
    w.U32(e.max_bytes);
  }
}

Result<FetchRequest> DecodeFetchRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  FetchRequest m;
  m.stream = r.Str();
  m.max_wait_ms = r.U32();
  uint32_t count = r.Count(4 + kPositionSize + 4);
  m.entries.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    FetchEntry e;
    e.streamlet = r.U32();
    e.position = DecodePosition(r);
    e.max_bytes = r.U32();
    m.entries.push_back(e);
  }
  return Finish(r, std::move(m), "Fetch request");
}

void EncodeFetchResponse(ByteWriter& w, const FetchResponse& m) {
  w.U32(static_cast<uint32_t>(m.results.size()));
  for (const auto& e : m.results) {
    w.U32(e.streamlet);
    w.U16(e.status);
    w.Str(e.message);
    EncodePosition(w, e.next);
    EncodePosition(w, e.tail);
    w.U32(static_cast<uint32_t>(e.blocks.size()));
    for (const auto& b : e.blocks) {
      EncodePosition(w, b.at);
      w.Blob(b.data, b.size);
    }
  }
}

Result<FetchResponse> DecodeFetchResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  FetchResponse m;
  uint32_t count = r.Count(4 + 2 + 2 + 2 * kPositionSize + 4);
  m.results.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    FetchResult e;
    e.streamlet = r.U32();
    e.status = r.U16();
    e.message = r.Str();
    e.next = DecodePosition(r);
    e.tail = DecodePosition(r);
    uint32_t blocks = r.Count(kPositionSize + 4);
    e.blocks.reserve(blocks);
    for (uint32_t j = 0; j < blocks && r.ok(); ++j) {
      FetchBlock b;
      b.at = DecodePosition(r);
      b.size = r.U32();
      b.data = r.Take(b.size);
      e.blocks.push_back(b);
    }
    m.results.push_back(std::move(e));
  }
  return Finish(r, std::move(m), "Fetch response");
}

void EncodeLookupTimestampRequest(ByteWriter& w, const LookupTimestampRequest& m) {
  w.Str(m.stream);
  w.U32(static_cast<uint32_t>(m.entries.size()));
  for (const auto& e : m.entries) {
    w.U32(e.streamlet);
    w.I64(e.timestamp_ms);
  }
}

Result<LookupTimestampRequest> DecodeLookupTimestampRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  LookupTimestampRequest m;
  m.stream = r.Str();
  uint32_t count = r.Count(12);
  m.entries.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    TimestampQuery e;
    e.streamlet = r.U32();
    e.timestamp_ms = r.I64();
    m.entries.push_back(e);
  }
  return Finish(r, std::move(m), "LookupTimestamp request");
}

void EncodeLookupTimestampResponse(ByteWriter& w, const LookupTimestampResponse& m) {
  w.U32(static_cast<uint32_t>(m.results.size()));
  for (const auto& e : m.results) {
    w.U32(e.streamlet);
    w.U16(e.status);
    w.Str(e.message);
    EncodePosition(w, e.position);
  }
}

Result<LookupTimestampResponse> DecodeLookupTimestampResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  LookupTimestampResponse m;
  uint32_t count = r.Count(4 + 2 + 2 + kPositionSize);
  m.results.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    TimestampResult e;
    e.streamlet = r.U32();
    e.status = r.U16();
    e.message = r.Str();
    e.position = DecodePosition(r);
    m.results.push_back(std::move(e));
  }
  return Finish(r, std::move(m), "LookupTimestamp response");
}

namespace {

void EncodePushRings(ByteWriter& w, const std::vector<PushRing>& rings) {
  w.U32(static_cast<uint32_t>(rings.size()));
  for (const auto& ring : rings) {
    w.U32(ring.subtask_index);
    w.U32(static_cast<uint32_t>(ring.splits.size()));
    for (const auto& split : ring.splits) {
      w.U32(split.streamlet);
      EncodePosition(w, split.start);
    }
  }
}

std::vector<PushRing> DecodePushRings(ByteReader& r) {
  std::vector<PushRing> rings;
  uint32_t count = r.Count(8);
  rings.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    PushRing ring;
    ring.subtask_index = r.U32();
    uint32_t splits = r.Count(4 + kPositionSize);
    ring.splits.reserve(splits);
    for (uint32_t j = 0; j < splits && r.ok(); ++j) {
      PushSplit split;
      split.streamlet = r.U32();
      split.start = DecodePosition(r);
      ring.splits.push_back(split);
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

void EncodeRecordFilter(ByteWriter& w, const RecordFilterWire& f) {
  w.U8(static_cast<uint8_t>(f.kind));
  switch (f.kind) {
    case RecordFilterKind::kNone: break;
    case RecordFilterKind::kJsonFieldIn:
      w.Str(f.field);
      w.U32(static_cast<uint32_t>(f.values.size()));
      for (const std::string& v : f.values) w.Str(v);
      break;
    case RecordFilterKind::kBytesContain:
      w.Blob(reinterpret_cast<const uint8_t*>(f.needle.data()), f.needle.size());
      break;
  }
}

RecordFilterWire DecodeRecordFilter(ByteReader& r) {
  RecordFilterWire f;
  const uint8_t kind = r.U8();
  switch (kind) {
    case static_cast<uint8_t>(RecordFilterKind::kNone): break;
    case static_cast<uint8_t>(RecordFilterKind::kJsonFieldIn): {
      f.kind = RecordFilterKind::kJsonFieldIn;
      f.field = r.Str();
      const uint32_t count = r.Count(2);
      f.values.reserve(count);
      for (uint32_t i = 0; i < count && r.ok(); ++i) f.values.push_back(r.Str());
      break;
    }
    case static_cast<uint8_t>(RecordFilterKind::kBytesContain): {
      f.kind = RecordFilterKind::kBytesContain;
      const uint32_t n = r.U32();
      const uint8_t* p = r.Take(n);
      if (p != nullptr) f.needle.assign(reinterpret_cast<const char*>(p), n);
      break;
    }
    default: r.Fail();  // an unknown kind: the body is malformed (docs/protocol.md)
  }
  return f;
}

}  // namespace

void EncodePushSubscribeRequest(ByteWriter& w, const PushSubscribeRequest& m) {
  w.Str(m.stream);
  w.U32(m.slots_per_ring);
  w.U32(m.slot_bytes);
  w.U32(m.consumer_timeout_ms);
  EncodePushRings(w, m.rings);
  EncodeRecordFilter(w, m.filter);
  w.U8(m.slot_format);
}

Result<PushSubscribeRequest> DecodePushSubscribeRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  PushSubscribeRequest m;
  m.stream = r.Str();
  m.slots_per_ring = r.U32();
  m.slot_bytes = r.U32();
  m.consumer_timeout_ms = r.U32();
  m.rings = DecodePushRings(r);
  m.filter = DecodeRecordFilter(r);
  m.slot_format = r.U8();
  if (m.slot_format > 1) r.Fail();  // an unknown slot format: malformed (docs/protocol.md)
  return Finish(r, std::move(m), "PushSubscribe request");
}

void EncodePushSubscribeResponse(ByteWriter& w, const PushSubscribeResponse& m) {
  w.U64(m.subscription_id);
  w.U64(m.broker_epoch);
  w.Str(m.region_path);
  w.U64(m.region_bytes);
}

Result<PushSubscribeResponse> DecodePushSubscribeResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  PushSubscribeResponse m;
  m.subscription_id = r.U64();
  m.broker_epoch = r.U64();
  m.region_path = r.Str();
  m.region_bytes = r.U64();
  return Finish(r, std::move(m), "PushSubscribe response");
}

void EncodePushUpdateRequest(ByteWriter& w, const PushUpdateRequest& m) {
  w.U64(m.subscription_id);
  EncodePushRings(w, m.rings);
}

Result<PushUpdateRequest> DecodePushUpdateRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  PushUpdateRequest m;
  m.subscription_id = r.U64();
  m.rings = DecodePushRings(r);
  return Finish(r, std::move(m), "PushUpdate request");
}

void EncodePushCloseRequest(ByteWriter& w, const PushCloseRequest& m) { w.U64(m.subscription_id); }

Result<PushCloseRequest> DecodePushCloseRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  PushCloseRequest m;
  m.subscription_id = r.U64();
  return Finish(r, std::move(m), "PushClose request");
}

void EncodeStatsResponse(ByteWriter& w, const StatsResponse& m) {
  w.U32(static_cast<uint32_t>(m.values.size()));
  for (const auto& [name, value] : m.values) {
    w.Str(name);
    w.U64(value);
  }
}

Result<StatsResponse> DecodeStatsResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  StatsResponse m;
  uint32_t count = r.Count(10);
  m.values.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    std::string name = r.Str();
    uint64_t v = r.U64();
    m.values.emplace_back(std::move(name), v);
  }
  return Finish(r, std::move(m), "Stats response");
}

const char* TxnStateName(TxnState state) {
  switch (state) {
    case TxnState::kOpen: return "open";
    case TxnState::kPrepared: return "prepared";
  }
  return "unknown";
}

namespace {

// TxnRef's fields, which also open a TxnAppend request.
TxnRef DecodeTxnRefFields(ByteReader& r) {
  TxnRef m;
  m.stream = r.Str();
  m.transactional_id = r.Str();
  m.epoch = r.U32();
  m.serial = r.U64();
  m.scope = r.U32();
  return m;
}

// Transactional id, epoch, serial, state, bytes, chunks, streamlets, started_ms, scope.
constexpr size_t kMinTxnInfoSize = 2 + 4 + 8 + 1 + 8 + 4 + 4 + 8 + 4;

}  // namespace

void EncodeTxnRef(ByteWriter& w, const TxnRef& m) {
  w.Str(m.stream);
  w.Str(m.transactional_id);
  w.U32(m.epoch);
  w.U64(m.serial);
  w.U32(m.scope);
}

Result<TxnRef> DecodeTxnRef(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnRef m = DecodeTxnRefFields(r);
  return Finish(r, std::move(m), "TxnRef");
}

void EncodeTxnInitRequest(ByteWriter& w, const TxnInitRequest& m) {
  w.Str(m.stream);
  w.Str(m.transactional_id);
  w.U64(m.keep_prepared_through);
  w.U32(m.scope);
}

Result<TxnInitRequest> DecodeTxnInitRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnInitRequest m;
  m.stream = r.Str();
  m.transactional_id = r.Str();
  m.keep_prepared_through = r.U64();
  m.scope = r.U32();
  return Finish(r, std::move(m), "TxnInit request");
}

void EncodeTxnInitResponse(ByteWriter& w, const TxnInitResponse& m) {
  w.U32(m.epoch);
  w.U64(m.last_serial);
}

Result<TxnInitResponse> DecodeTxnInitResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnInitResponse m;
  m.epoch = r.U32();
  m.last_serial = r.U64();
  return Finish(r, m, "TxnInit response");
}

void EncodeTxnBeginResponse(ByteWriter& w, const TxnBeginResponse& m) { w.U64(m.serial); }

Result<TxnBeginResponse> DecodeTxnBeginResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnBeginResponse m;
  m.serial = r.U64();
  return Finish(r, m, "TxnBegin response");
}

void EncodeTxnAppendRequest(ByteWriter& w, const TxnAppendRequest& m) {
  EncodeTxnRef(w, m.txn);
  EncodeAppendEntries(w, m.entries);
}

Result<TxnAppendRequest> DecodeTxnAppendRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnAppendRequest m;
  m.txn = DecodeTxnRefFields(r);
  m.entries = DecodeAppendEntries(r);
  return Finish(r, std::move(m), "TxnAppend request");
}

void EncodeTxnListRequest(ByteWriter& w, const TxnListRequest& m) {
  w.Str(m.stream);
  w.Str(m.id_prefix);
  w.U32(m.scope);
}

Result<TxnListRequest> DecodeTxnListRequest(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnListRequest m;
  m.stream = r.Str();
  m.id_prefix = r.Str();
  m.scope = r.U32();
  return Finish(r, std::move(m), "TxnList request");
}

void EncodeTxnListResponse(ByteWriter& w, const TxnListResponse& m) {
  w.U32(static_cast<uint32_t>(m.transactions.size()));
  for (const auto& t : m.transactions) {
    w.Str(t.transactional_id);
    w.U32(t.epoch);
    w.U64(t.serial);
    w.U8(static_cast<uint8_t>(t.state));
    w.U64(t.bytes);
    w.U32(t.chunks);
    w.U32(t.streamlets);
    w.I64(t.started_ms);
    w.U32(t.scope);
  }
}

Result<TxnListResponse> DecodeTxnListResponse(const uint8_t* p, size_t n) {
  ByteReader r(p, n);
  TxnListResponse m;
  uint32_t count = r.Count(kMinTxnInfoSize);
  m.transactions.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    TxnInfo t;
    t.transactional_id = r.Str();
    t.epoch = r.U32();
    t.serial = r.U64();
    // Only open and prepared transactions are listed; any other byte is malformed, so that an
    // accepted body always re-encodes to the same bytes.
    uint8_t state = r.U8();
    if (state != static_cast<uint8_t>(TxnState::kOpen) &&
        state != static_cast<uint8_t>(TxnState::kPrepared)) {
      r.Fail();
    }
    t.state = static_cast<TxnState>(state);
    t.bytes = r.U64();
    t.chunks = r.U32();
    t.streamlets = r.U32();
    t.started_ms = r.I64();
    t.scope = r.U32();
    m.transactions.push_back(std::move(t));
  }
  return Finish(r, std::move(m), "TxnList response");
}

}  // namespace nearstream::net
