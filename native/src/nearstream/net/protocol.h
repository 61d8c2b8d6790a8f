// The Nearstream wire protocol, version 1: frame header and every request/response body.
// docs/protocol.md is the prose definition and testdata/protocol/ holds golden frames; this file
// is the C++ codec. All integers are little-endian. Str = u16 length + UTF-8 bytes;
// Blob = u32 length + bytes; Position = u64 group, u64 segment, u32 offset (20 bytes).
//
// Frame:    u32 length (bytes after this field)
//           u8 version | u8 flags (bit 0: response) | u16 opcode | u64 request id
// Request:  frame header, then the request body.
// Response: frame header, u16 status, Str message, then the response body (empty unless OK).
//
// Decoded messages point into the frame buffer they were decoded from (no copies); the buffer
// must outlive them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"
#include "nearstream/storage/position.h"
#include "nearstream/storage/published_view.h"
#include "nearstream/storage/stream_config.h"

namespace nearstream::net {

inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr uint32_t kFrameLengthPrefix = 4;
inline constexpr uint32_t kFrameHeaderSize = 12;  // after the length prefix
inline constexpr uint8_t kFlagResponse = 0x01;
// A broker passing a client's CreateStream or DeleteStream on to the controller.
inline constexpr uint8_t kFlagForwarded = 0x02;
// A Fetch that an in-sync follower of a streamlet may answer from its copy (follower reads).
inline constexpr uint8_t kFlagReplicaRead = 0x04;
// ClusterMetadataResponse::controller_id while no controller is elected.
inline constexpr uint32_t kNoController = 0xFFFFFFFF;
inline constexpr uint32_t kDefaultMaxFrameBytes = 64u << 20;

enum class Opcode : uint16_t {
  kHandshake = 1,
  kCreateStream = 2,
  kDeleteStream = 3,
  kDescribeStream = 4,
  kListStreams = 5,
  kMetadata = 6,
  kAppend = 7,
  kFetch = 8,
  kStats = 9,
  kLookupTimestamp = 10,
  kClusterMetadata = 11,
  kMoveStreamlet = 12,
  kSealStreamlet = 13,
  kReplicaAppend = 14,
  kReplicaJoin = 15,
  kReplicaMove = 16,
  kReplicaCheck = 17,
  kReplicaTxn = 18,
  kReplicaTxnFiles = 19,
  kPushSubscribe = 20,
  kPushUpdate = 21,
  kPushClose = 22,
  kTxnInit = 30,
  kTxnBegin = 31,
  kTxnAppend = 32,
  kTxnPrepare = 33,
  kTxnCommit = 34,
  kTxnAbort = 35,
  kTxnList = 36,
  kReplicaPublished = 40,
};

const char* OpcodeName(uint16_t opcode);
bool IsKnownOpcode(uint16_t opcode);

struct FrameHeader {
  uint8_t version = kProtocolVersion;
  uint8_t flags = 0;
  uint16_t opcode = 0;
  uint64_t request_id = 0;
  bool is_response() const { return (flags & kFlagResponse) != 0; }
  bool is_forwarded() const { return (flags & kFlagForwarded) != 0; }
};

// Parses the 12 header bytes that follow the length prefix.
FrameHeader DecodeFrameHeader(const uint8_t* p);

// Starts a frame in `out` (length patched by FinishFrame).
size_t BeginFrame(Bytes* out, const FrameHeader& h);
void FinishFrame(Bytes* out, size_t frame_start);

// Response frames: header + status + message; the body follows when status is OK.
size_t BeginResponse(Bytes* out, uint16_t opcode, uint64_t request_id, const Status& status);

// ---- message bodies -------------------------------------------------------------------------

struct HandshakeRequest {
  uint16_t min_version = kProtocolVersion;
  uint16_t max_version = kProtocolVersion;
  std::string client_name;
};
struct HandshakeResponse {
  uint16_t version = kProtocolVersion;
  uint64_t broker_epoch = 0;  // changes on every broker start
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  std::string broker_version;
};

struct StreamNameRequest {  // body of DeleteStream and DescribeStream
  std::string name;
};

struct ListStreamsResponse {
  std::vector<std::string> names;
};

struct MetadataRequest {
  std::string stream;
  std::vector<uint32_t> streamlets;  // empty = all
};
struct GroupMetadata {
  uint64_t group_id = 0;
  bool closed = false;
  uint64_t first_segment = 0;
  uint32_t segment_count = 0;
  uint64_t bytes = 0;
};
struct StreamletMetadata {
  uint32_t streamlet = 0;
  storage::Position head;  // first retained chunk (== tail when empty)
  storage::Position tail;  // end of the newest group's newest segment
  std::vector<GroupMetadata> groups;
};
struct MetadataResponse {
  std::vector<StreamletMetadata> streamlets;
};

struct AppendEntry {
  uint32_t streamlet = 0;
  const uint8_t* chunk = nullptr;
  uint32_t chunk_size = 0;
};
// A follower whose copy is whole again asks its leader to be in sync.
struct ReplicaJoinRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t follower = 0;
  uint64_t leader_epoch = 0;
  storage::Position tail;  // where the copy ends: the sealed leader's tail
  // What the sender asks for (docs/protocol.md, "ReplicaJoin (15)").
  enum class TakeOver : uint8_t {
    kNo = 0,             // join the in-sync set
    kLeaderLeaves = 1,   // lead in the receiver's place; the receiver leaves the replicas
    kLeaderFollows = 2,  // lead in the receiver's place; the receiver stays a follower
  };
  TakeOver take_over = TakeOver::kNo;
};
// An operator asks the receiver to take over broker `from`'s replica of a streamlet (and its
// leadership, when `from` leads it).
struct ReplicaMoveRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t from = 0;
};
// A follower about to catch up asks its leader for its epoch history and segments.
struct ReplicaCheckRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t follower = 0;
};
struct EpochStart {
  uint64_t epoch = 0;
  uint64_t start_group = 0;
  bool operator==(const EpochStart&) const = default;
};
struct SegmentExtent {
  uint64_t group = 0;
  uint64_t segment = 0;
  uint32_t bytes = 0;
  bool operator==(const SegmentExtent&) const = default;
};
struct ReplicaCheckResponse {
  uint64_t leader_epoch = 0;
  std::vector<EpochStart> epochs;       // oldest first
  std::vector<SegmentExtent> segments;  // by group, then segment
};
// A leader's write to a file of a replicated streamlet's transaction scope, for a follower to
// repeat (docs/protocol.md, "ReplicaTxn (18)").
enum class ReplicaTxnOp : uint8_t { kAppend = 1, kReplace = 2, kRename = 3, kDelete = 4 };
struct ReplicaTxnRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t leader = 0;
  uint64_t leader_epoch = 0;
  ReplicaTxnOp op = ReplicaTxnOp::kAppend;
  std::string file;
  uint64_t offset = 0;
  std::string to;
  const uint8_t* data = nullptr;  // into the request's body when decoded
  uint32_t data_size = 0;
};
// A page of a transaction scope's files for a follower catching up (docs/protocol.md,
// "ReplicaTxnFiles (19)"): each part file from what the follower holds of it already.
struct ReplicaTxnHeld {
  std::string name;
  uint64_t have = 0;
  bool operator==(const ReplicaTxnHeld&) const = default;
};
// A leader's view of what its readers see, for a follower's readers (storage::PublishedView).
struct ReplicaPublishedRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t leader = 0;
  uint64_t leader_epoch = 0;
  uint64_t since = 0;  // the view's base: the version the follower last applied; 0 = whole
  storage::PublishedView view;
  bool operator==(const ReplicaPublishedRequest&) const = default;
};
struct ReplicaTxnFilesRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t follower = 0;
  uint32_t max_bytes = 0;
  std::vector<ReplicaTxnHeld> held;
};
struct ReplicaTxnFile {
  std::string name;
  uint64_t size = 0;    // the whole file's
  uint64_t offset = 0;  // where `data` starts in it
  Bytes data;
  bool operator==(const ReplicaTxnFile&) const = default;
};
struct ReplicaTxnFilesResponse {
  bool complete = false;  // every file's data reaches its size
  std::vector<ReplicaTxnFile> files;
};
struct AppendRequest {
  std::string stream;
  std::vector<AppendEntry> entries;
};
struct AppendResult {
  uint32_t streamlet = 0;
  uint16_t status = 0;
  std::string message;
  storage::Position position;  // where the chunk is (also for a duplicate, when still known)
  bool duplicate = false;
};
struct AppendResponse {
  std::vector<AppendResult> results;
};

struct FetchEntry {
  uint32_t streamlet = 0;
  storage::Position position;
  uint32_t max_bytes = 1u << 20;
};
struct FetchRequest {
  std::string stream;
  uint32_t max_wait_ms = 0;  // long-poll: wait up to this long when no entry has data
  std::vector<FetchEntry> entries;
};
struct FetchBlock {
  storage::Position at;  // position of the first chunk in `data`
  const uint8_t* data = nullptr;
  uint32_t size = 0;  // whole chunks only
};
struct FetchResult {
  uint32_t streamlet = 0;
  uint16_t status = 0;
  std::string message;
  storage::Position next;  // where to fetch from next
  storage::Position tail;
  std::vector<FetchBlock> blocks;
};
struct FetchResponse {
  std::vector<FetchResult> results;
};

struct TimestampQuery {
  uint32_t streamlet = 0;
  int64_t timestamp_ms = 0;
};
struct LookupTimestampRequest {
  std::string stream;
  std::vector<TimestampQuery> entries;
};
struct TimestampResult {
  uint32_t streamlet = 0;
  uint16_t status = 0;
  std::string message;
  // The first chunk in read order whose first-record timestamp is >= the asked time; the tail
  // when there is none.
  storage::Position position;
};
struct LookupTimestampResponse {
  std::vector<TimestampResult> results;
};

// Push subscriptions (docs/protocol.md "Push subscriptions").
struct PushSplit {
  uint32_t streamlet = 0;
  storage::Position start;
};
struct PushRing {
  uint32_t subtask_index = 0;
  std::vector<PushSplit> splits;
};
// RecordFilter of PushSubscribe (docs/protocol.md "Record filters"): which fields are used
// depends on `kind`; bounds are the request handler's to check (INVALID_ARGUMENT).
enum class RecordFilterKind : uint8_t { kNone = 0, kJsonFieldIn = 1, kBytesContain = 2 };
struct RecordFilterWire {
  RecordFilterKind kind = RecordFilterKind::kNone;
  std::string field;                // kJsonFieldIn
  std::vector<std::string> values;  // kJsonFieldIn
  std::string needle;               // kBytesContain (bytes)
};
struct PushSubscribeRequest {
  std::string stream;
  uint32_t slots_per_ring = 0;
  uint32_t slot_bytes = 0;
  uint32_t consumer_timeout_ms = 0;
  std::vector<PushRing> rings;  // ring i of the region is rings[i]
  RecordFilterWire filter;
  uint8_t slot_format = 0;  // 0 binary, 1 binary_view; anything else is malformed
};
struct PushSubscribeResponse {
  uint64_t subscription_id = 0;
  uint64_t broker_epoch = 0;
  std::string region_path;
  uint64_t region_bytes = 0;
};
struct PushUpdateRequest {
  uint64_t subscription_id = 0;
  std::vector<PushRing> rings;  // a full replacement, as many as the subscription has
};
struct PushCloseRequest {
  uint64_t subscription_id = 0;
};

struct StatsResponse {
  std::vector<std::pair<std::string, uint64_t>> values;
};

// Transactions (docs/protocol.md "Transactions"). A transactional id is scoped to one stream.
// TxnRef is the whole body of TxnBegin (serial 0, ignored), TxnPrepare, TxnCommit and TxnAbort.
//
// The scope of a stream without replication: one set of transaction records per broker, whose
// transactions write any streamlet the broker owns. Any other scope is a streamlet index: a
// replicated stream's transactions are per streamlet, kept by its replicas (docs/protocol.md,
// "Transaction scopes"). In TxnList it asks for every scope.
inline constexpr uint32_t kBrokerScope = 0xFFFFFFFF;
struct TxnRef {
  std::string stream;
  std::string transactional_id;
  uint32_t epoch = 0;   // the sender's (Begin) or the one the transaction was begun in (others)
  uint64_t serial = 0;  // the transaction
  uint32_t scope = kBrokerScope;
};
struct TxnInitRequest {
  std::string stream;
  std::string transactional_id;
  // Prepared transactions with serial <= this stay prepared; later ones are aborted (0 = all).
  uint64_t keep_prepared_through = 0;
  uint32_t scope = kBrokerScope;
};
struct TxnInitResponse {
  uint32_t epoch = 0;        // the new epoch
  uint64_t last_serial = 0;  // the highest serial the id has used (0 = none)
};
struct TxnBeginResponse {
  uint64_t serial = 0;
};
// Answered with an AppendResponse whose positions are all-zero (nothing is placed before commit).
struct TxnAppendRequest {
  TxnRef txn;
  std::vector<AppendEntry> entries;
};
struct TxnListRequest {
  std::string stream;
  std::string id_prefix;          // empty = every transactional id
  uint32_t scope = kBrokerScope;  // kBrokerScope: every scope the broker keeps
};
enum class TxnState : uint8_t { kOpen = 1, kPrepared = 2 };
struct TxnInfo {
  std::string transactional_id;
  uint32_t epoch = 0;  // the epoch the transaction was begun in
  uint64_t serial = 0;
  TxnState state = TxnState::kOpen;
  uint64_t bytes = 0;  // chunk bytes held
  uint32_t chunks = 0;
  uint32_t streamlets = 0;  // streamlets written to
  int64_t started_ms = 0;   // broker wall clock at TxnBegin
  uint32_t scope = kBrokerScope;
};
struct TxnListResponse {
  std::vector<TxnInfo> transactions;  // ordered by transactional id, then serial
};

struct ClusterMetadataRequest {
  std::vector<std::string> streams;  // empty = every stream
};
struct BrokerInfo {
  uint32_t id = 0;
  std::string address;  // host:port where clients reach it
  std::string host;     // the machine it runs on (push only to readers of the same host)
};
// A streamlet's copies (docs/protocol.md, "Replication"): the leader is owners[i] and the first
// of `isr`.
struct ReplicaSet {
  uint64_t leader_epoch = 0;
  std::vector<uint32_t> replicas;  // the preferred leader first
  std::vector<uint32_t> isr;       // in sync: hold every acknowledged chunk
};
struct StreamPlacement {
  std::string name;
  uint32_t version = 0;              // grows with every placement change; 0 on a standalone broker
  std::vector<uint32_t> owners;      // broker id of streamlet i (its leader)
  std::vector<ReplicaSet> replicas;  // one per streamlet
};
struct ClusterMetadataResponse {
  uint32_t broker_id = 0;  // the answering broker
  std::vector<BrokerInfo> brokers;
  std::vector<StreamPlacement> streams;
  uint32_t controller_id = kNoController;
};

struct StreamletRef {
  std::string stream;
  uint32_t streamlet = 0;
};
struct SealStreamletRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t seal_ms = 0;  // 0 = lift the seal
};
struct SealStreamletResponse {
  storage::Position tail;  // nothing is appended after it while the seal holds
};
// A leader's chunk for a follower; `chunk` points into the decoded body (no copy).
struct ReplicaAppendRequest {
  std::string stream;
  uint32_t streamlet = 0;
  uint32_t leader = 0;
  uint64_t leader_epoch = 0;
  storage::Position at;
  const uint8_t* chunk = nullptr;
  uint32_t chunk_size = 0;
};

// ---- encoders (append the body to `w`) and decoders (whole body, trailing bytes refused) -----

void EncodePosition(ByteWriter& w, const storage::Position& p);
storage::Position DecodePosition(ByteReader& r);

void EncodeHandshakeRequest(ByteWriter& w, const HandshakeRequest& m);
Result<HandshakeRequest> DecodeHandshakeRequest(const uint8_t* p, size_t n);
void EncodeHandshakeResponse(ByteWriter& w, const HandshakeResponse& m);
Result<HandshakeResponse> DecodeHandshakeResponse(const uint8_t* p, size_t n);

void EncodeStreamConfig(ByteWriter& w, const storage::StreamConfig& c);
Result<storage::StreamConfig> DecodeStreamConfig(const uint8_t* p, size_t n);

void EncodeStreamNameRequest(ByteWriter& w, const StreamNameRequest& m);
Result<StreamNameRequest> DecodeStreamNameRequest(const uint8_t* p, size_t n);

void EncodeListStreamsResponse(ByteWriter& w, const ListStreamsResponse& m);
Result<ListStreamsResponse> DecodeListStreamsResponse(const uint8_t* p, size_t n);

void EncodeMetadataRequest(ByteWriter& w, const MetadataRequest& m);
Result<MetadataRequest> DecodeMetadataRequest(const uint8_t* p, size_t n);
void EncodeMetadataResponse(ByteWriter& w, const MetadataResponse& m);
Result<MetadataResponse> DecodeMetadataResponse(const uint8_t* p, size_t n);

void EncodeAppendRequest(ByteWriter& w, const AppendRequest& m);
Result<AppendRequest> DecodeAppendRequest(const uint8_t* p, size_t n);
void EncodeAppendResponse(ByteWriter& w, const AppendResponse& m);
Result<AppendResponse> DecodeAppendResponse(const uint8_t* p, size_t n);

void EncodeFetchRequest(ByteWriter& w, const FetchRequest& m);
Result<FetchRequest> DecodeFetchRequest(const uint8_t* p, size_t n);
void EncodeFetchResponse(ByteWriter& w, const FetchResponse& m);
Result<FetchResponse> DecodeFetchResponse(const uint8_t* p, size_t n);

void EncodeLookupTimestampRequest(ByteWriter& w, const LookupTimestampRequest& m);
Result<LookupTimestampRequest> DecodeLookupTimestampRequest(const uint8_t* p, size_t n);
void EncodeLookupTimestampResponse(ByteWriter& w, const LookupTimestampResponse& m);
Result<LookupTimestampResponse> DecodeLookupTimestampResponse(const uint8_t* p, size_t n);

void EncodeStreamletRef(ByteWriter& w, const StreamletRef& m);
Result<StreamletRef> DecodeStreamletRef(const uint8_t* p, size_t n);
void EncodeSealStreamletRequest(ByteWriter& w, const SealStreamletRequest& m);
Result<SealStreamletRequest> DecodeSealStreamletRequest(const uint8_t* p, size_t n);
void EncodeSealStreamletResponse(ByteWriter& w, const SealStreamletResponse& m);
void EncodeReplicaAppendRequest(ByteWriter& w, const ReplicaAppendRequest& m);
Result<ReplicaAppendRequest> DecodeReplicaAppendRequest(const uint8_t* p, size_t n);
void EncodeReplicaJoinRequest(ByteWriter& w, const ReplicaJoinRequest& m);
Result<ReplicaJoinRequest> DecodeReplicaJoinRequest(const uint8_t* p, size_t n);
void EncodeReplicaMoveRequest(ByteWriter& w, const ReplicaMoveRequest& m);
void EncodeReplicaTxnRequest(ByteWriter& w, const ReplicaTxnRequest& m);
Result<ReplicaTxnRequest> DecodeReplicaTxnRequest(const uint8_t* p, size_t n);
void EncodeReplicaTxnFilesRequest(ByteWriter& w, const ReplicaTxnFilesRequest& m);
Result<ReplicaTxnFilesRequest> DecodeReplicaTxnFilesRequest(const uint8_t* p, size_t n);
void EncodeReplicaTxnFilesResponse(ByteWriter& w, const ReplicaTxnFilesResponse& m);
Result<ReplicaTxnFilesResponse> DecodeReplicaTxnFilesResponse(const uint8_t* p, size_t n);
void EncodeReplicaPublishedRequest(ByteWriter& w, const ReplicaPublishedRequest& m);
Result<ReplicaPublishedRequest> DecodeReplicaPublishedRequest(const uint8_t* p, size_t n);
void EncodeReplicaCheckRequest(ByteWriter& w, const ReplicaCheckRequest& m);
Result<ReplicaCheckRequest> DecodeReplicaCheckRequest(const uint8_t* p, size_t n);
void EncodeReplicaCheckResponse(ByteWriter& w, const ReplicaCheckResponse& m);
Result<ReplicaCheckResponse> DecodeReplicaCheckResponse(const uint8_t* p, size_t n);
Result<ReplicaMoveRequest> DecodeReplicaMoveRequest(const uint8_t* p, size_t n);
Result<SealStreamletResponse> DecodeSealStreamletResponse(const uint8_t* p, size_t n);

void EncodeClusterMetadataRequest(ByteWriter& w, const ClusterMetadataRequest& m);
Result<ClusterMetadataRequest> DecodeClusterMetadataRequest(const uint8_t* p, size_t n);
void EncodeClusterMetadataResponse(ByteWriter& w, const ClusterMetadataResponse& m);
Result<ClusterMetadataResponse> DecodeClusterMetadataResponse(const uint8_t* p, size_t n);

void EncodePushSubscribeRequest(ByteWriter& w, const PushSubscribeRequest& m);
Result<PushSubscribeRequest> DecodePushSubscribeRequest(const uint8_t* p, size_t n);
void EncodePushSubscribeResponse(ByteWriter& w, const PushSubscribeResponse& m);
Result<PushSubscribeResponse> DecodePushSubscribeResponse(const uint8_t* p, size_t n);
void EncodePushUpdateRequest(ByteWriter& w, const PushUpdateRequest& m);
Result<PushUpdateRequest> DecodePushUpdateRequest(const uint8_t* p, size_t n);
void EncodePushCloseRequest(ByteWriter& w, const PushCloseRequest& m);
Result<PushCloseRequest> DecodePushCloseRequest(const uint8_t* p, size_t n);

void EncodeStatsResponse(ByteWriter& w, const StatsResponse& m);
Result<StatsResponse> DecodeStatsResponse(const uint8_t* p, size_t n);

const char* TxnStateName(TxnState state);  // "open", "prepared"

void EncodeTxnRef(ByteWriter& w, const TxnRef& m);
Result<TxnRef> DecodeTxnRef(const uint8_t* p, size_t n);
void EncodeTxnInitRequest(ByteWriter& w, const TxnInitRequest& m);
Result<TxnInitRequest> DecodeTxnInitRequest(const uint8_t* p, size_t n);
void EncodeTxnInitResponse(ByteWriter& w, const TxnInitResponse& m);
Result<TxnInitResponse> DecodeTxnInitResponse(const uint8_t* p, size_t n);
void EncodeTxnBeginResponse(ByteWriter& w, const TxnBeginResponse& m);
Result<TxnBeginResponse> DecodeTxnBeginResponse(const uint8_t* p, size_t n);
void EncodeTxnAppendRequest(ByteWriter& w, const TxnAppendRequest& m);
Result<TxnAppendRequest> DecodeTxnAppendRequest(const uint8_t* p, size_t n);
void EncodeTxnListRequest(ByteWriter& w, const TxnListRequest& m);
Result<TxnListRequest> DecodeTxnListRequest(const uint8_t* p, size_t n);
void EncodeTxnListResponse(ByteWriter& w, const TxnListResponse& m);
Result<TxnListResponse> DecodeTxnListResponse(const uint8_t* p, size_t n);

}  // namespace nearstream::net
