// Checks the C++ codec against the golden frames in testdata/protocol/, which an independent
// implementation of docs/protocol.md (testdata/protocol/generate.py) wrote. Every file is split
// into frame header and body, decoded, compared field by field with the values below (the same
// values as vectors.json) and re-encoded byte for byte. Then the decoders are fed every
// truncation of their golden body, trailing garbage and hostile counts: they must refuse them
// without reading out of bounds (this also runs under ASan) and without large allocations.
#include "nearstream/net/protocol.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "nearstream/storage/chunk.h"

// ---- allocation probe ---------------------------------------------------------------------------
// The hostile-count tests must show that a decoder never sizes an allocation from an untrusted
// count. This test binary's operator new records the largest request made while the probe is
// armed on the calling thread; otherwise it is a plain malloc. Sanitizer builds keep their
// runtime's allocator (which must see every new/delete pair), so there the probe is off and the
// tests check only that hostile bodies are refused.

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NS_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NS_SANITIZED_BUILD 1
#endif

namespace {
thread_local bool g_probe_armed = false;
thread_local size_t g_probe_largest = 0;
#ifdef NS_SANITIZED_BUILD
constexpr bool kProbeActive = false;
#else
constexpr bool kProbeActive = true;
#endif
}  // namespace

#ifndef NS_SANITIZED_BUILD
// noinline: GCC 12 otherwise flags malloc/free inside replaced new/delete as mismatched.
[[gnu::noinline]] void* operator new(size_t size) {
  if (g_probe_armed && size > g_probe_largest) g_probe_largest = size;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t /*size*/) noexcept { std::free(p); }
#endif

namespace nearstream::net {
namespace {

using storage::ChunkBuilder;
using storage::Durability;
using storage::Position;

constexpr const char* kStream = "golden.stream-1_x";
constexpr uint64_t kProducer = 0x1122334455667788ull;

// ---- golden files -----------------------------------------------------------------------------

std::string GoldenPath(const std::string& name) {
  return std::string(NEARSTREAM_TESTDATA_DIR) + "/protocol/" + name;
}

void ReadGolden(const std::string& name, Bytes* out) {
  std::ifstream in(GoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in.good()) << "cannot open " << GoldenPath(name)
                         << " (regenerate with testdata/protocol/generate.py)";
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A golden frame split into its parts.
struct GoldenFrame {
  Bytes bytes;
  FrameHeader header;
  uint16_t status = 0;  // responses only
  std::string message;  // responses only
  size_t body_offset = 0;

  const uint8_t* body() const { return bytes.data() + body_offset; }
  size_t body_size() const { return bytes.size() - body_offset; }
  // An exact-size heap copy of the body, so ASan sees any read past its end.
  Bytes body_copy() const { return Bytes(body(), body() + body_size()); }
};

void LoadFrame(const std::string& name, GoldenFrame* f) {
  ASSERT_NO_FATAL_FAILURE(ReadGolden(name, &f->bytes));
  ASSERT_GE(f->bytes.size(), kFrameLengthPrefix + kFrameHeaderSize) << name;
  // The length prefix counts the bytes after itself.
  ASSERT_EQ(LoadLe32(f->bytes.data()), f->bytes.size() - kFrameLengthPrefix) << name;
  f->header = DecodeFrameHeader(f->bytes.data() + kFrameLengthPrefix);
  f->body_offset = kFrameLengthPrefix + kFrameHeaderSize;
  if (f->header.is_response()) {
    ByteReader r(f->bytes.data() + f->body_offset, f->bytes.size() - f->body_offset);
    f->status = r.U16();
    f->message = r.Str();
    ASSERT_TRUE(r.ok()) << name << ": response frame too short for status and message";
    f->body_offset = f->bytes.size() - r.remaining();
  }
}

void ExpectHeader(const GoldenFrame& f, Opcode opcode, uint64_t request_id, bool response) {
  EXPECT_EQ(f.header.version, 1);
  EXPECT_EQ(f.header.flags, response ? 0x01 : 0x00);
  EXPECT_EQ(f.header.opcode, static_cast<uint16_t>(opcode));
  EXPECT_EQ(f.header.request_id, request_id);
}

void ExpectOkResponse(const GoldenFrame& f, Opcode opcode, uint64_t request_id) {
  ExpectHeader(f, opcode, request_id, /*response=*/true);
  EXPECT_EQ(f.status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(f.message, "");
}

std::string Hex(const Bytes& b, size_t from, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = from; i < b.size() && i < from + n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x ", b[i]);
    s += buf;
  }
  return s;
}

// Byte-for-byte comparison that points at the first difference.
void ExpectSameBytes(const Bytes& got, const Bytes& want, const std::string& what) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return;
  size_t from = i < 8 ? 0 : i - 8;
  ADD_FAILURE() << what << ": re-encoded bytes differ from the golden file at offset " << i
                << " (got " << got.size() << " bytes, want " << want.size()
                << ")\n  got:  " << Hex(got, from, 24) << "\n  want: " << Hex(want, from, 24);
}

template <typename BodyFn>
Bytes EncodeRequest(Opcode opcode, uint64_t request_id, BodyFn body) {
  Bytes out;
  FrameHeader h;
  h.version = kProtocolVersion;
  h.flags = 0;
  h.opcode = static_cast<uint16_t>(opcode);
  h.request_id = request_id;
  size_t start = BeginFrame(&out, h);
  ByteWriter w(&out);
  body(w);
  FinishFrame(&out, start);
  return out;
}

template <typename BodyFn>
Bytes EncodeResponse(Opcode opcode, uint64_t request_id, const Status& status, BodyFn body) {
  Bytes out;
  size_t start = BeginResponse(&out, static_cast<uint16_t>(opcode), request_id, status);
  ByteWriter w(&out);
  body(w);
  FinishFrame(&out, start);
  return out;
}

const auto kNoBody = [](ByteWriter&) {};

Position Pos(uint64_t group, uint64_t segment, uint32_t offset) {
  Position p;
  p.group = group;
  p.segment = segment;
  p.offset = offset;
  return p;
}

// Positions are compared through their text form so a failure prints readably.
#define EXPECT_POSITION(actual, g, s, o) EXPECT_EQ((actual).ToString(), Pos(g, s, o).ToString())

// Validates one chunk, checks its header fields and records, and checks that the C++ chunk
// builder produces exactly the same bytes from the same values.
void ExpectChunk(const uint8_t* data, size_t size, uint64_t producer_id, uint64_t sequence,
                 int64_t first_timestamp_ms, const std::vector<std::string>& records) {
  auto h = storage::ValidateChunk(data, size);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->producer_id, producer_id);
  EXPECT_EQ(h->sequence, sequence);
  EXPECT_EQ(h->first_timestamp_ms, first_timestamp_ms);
  EXPECT_EQ(h->record_count, records.size());
  EXPECT_EQ(h->total_size(), size);
  storage::RecordIterator it(data + storage::kChunkHeaderSize, h->payload_length);
  std::vector<std::string> got;
  std::string_view r;
  while (it.Next(&r)) got.emplace_back(r);
  EXPECT_EQ(got, records);

  ChunkBuilder b;
  for (const auto& rec : records) b.Add(rec);
  Bytes rebuilt = b.Finish(producer_id, sequence, first_timestamp_ms);
  ExpectSameBytes(rebuilt, Bytes(data, data + size), "chunk");
}

// ---- the expected values (the same as vectors.json) -------------------------------------------

constexpr uint64_t kHandshakeId = 0x0102030405060708ull;
constexpr uint64_t kCreateId = 0x1112131415161718ull;
constexpr uint64_t kDeleteId = 0x2122232425262728ull;
constexpr uint64_t kDescribeId = 0x3132333435363738ull;
constexpr uint64_t kListId = 0x4142434445464748ull;
constexpr uint64_t kMetadataId = 0x5152535455565758ull;
constexpr uint64_t kAppendId = 0x6162636465666768ull;
constexpr uint64_t kFetchId = 0x7172737475767778ull;
constexpr uint64_t kStatsId = 0x8182838485868788ull;
constexpr uint64_t kLookupId = 0xA1A2A3A4A5A6A7A8ull;
constexpr uint64_t kErrorId = 0x9192939495969798ull;
constexpr uint64_t kPushSubscribeId = 0xB1B2B3B4B5B6B7B8ull;
constexpr uint64_t kPushSubscribeJsonFilterId = 0xB9BABBBCBDBEBFB0ull;
constexpr uint64_t kPushSubscribeBytesFilterId = 0xBABBBCBDBEBFB0B1ull;
constexpr uint64_t kPushUpdateId = 0xC1C2C3C4C5C6C7C8ull;
constexpr uint64_t kPushCloseId = 0xD1D2D3D4D5D6D7D8ull;
constexpr uint64_t kSubscriptionId = 0x0102030405060708ull;
constexpr uint64_t kTxnInitId = 0xE1E2E3E4E5E6E7E8ull;
constexpr uint64_t kTxnBeginId = 0xF1F2F3F4F5F6F7F8ull;
constexpr uint64_t kTxnAppendId = 0xE9EAEBECEDEEEFE0ull;
constexpr uint64_t kTxnPrepareId = 0xF9FAFBFCFDFEFFF0ull;
constexpr uint64_t kTxnCommitId = 0x1A1B1C1D1E1F1011ull;
constexpr uint64_t kTxnAbortId = 0x2A2B2C2D2E2F2021ull;
constexpr uint64_t kTxnListId = 0x3A3B3C3D3E3F3031ull;
constexpr uint64_t kTxnFencedId = 0x4A4B4C4D4E4F4041ull;
constexpr uint64_t kClusterMetadataId = 0x0C1C2C3C4C5C6C7Cull;
constexpr uint64_t kMoveStreamletId = 0x0D1D2D3D4D5D6D7Dull;
constexpr uint64_t kSealStreamletId = 0x0E1E2E3E4E5E6E7Eull;
constexpr uint64_t kReplicaAppendId = 0x5A5B5C5D5E5F5051ull;
constexpr uint64_t kReplicaJoinId = 0x6A6B6C6D6E6F6061ull;
constexpr uint64_t kReplicaMoveId = 0x7A7B7C7D7E7F7071ull;
constexpr uint64_t kReplicaCheckId = 0x8A8B8C8D8E8F8081ull;
constexpr uint64_t kReplicaTxnId = 0x9A9B9C9D9E9F9091ull;
constexpr uint64_t kReplicaTxnRenameId = 0xAAABACADAEAFA0A1ull;
constexpr uint64_t kReplicaTxnFilesId = 0xCACBCCCDCECFC0C1ull;
constexpr uint64_t kReplicaPublishedId = 0x5061626364656667ull;
constexpr const char* kPartFile = "txn-00000000000000000007-00000000000000000003.seg";
constexpr const char* kTxnId = "job-42.sink-3";
constexpr const char* kTxnIdNonAscii = "job-42.sink-\xc3\xbc";  // "ü": Str counts bytes
constexpr uint32_t kTxnEpoch = 0x01020304u;
constexpr uint64_t kTxnSerial = 0x100000008ull;
constexpr uint64_t kKeptSerial = 0x100000006ull;  // prepared by epoch kTxnEpoch - 1, kept

const std::vector<std::string> kGoldenChunkRecords = {"first", "", "third record \xc3\xbc"};

// Every golden file this test knows; a new file in the folder without a test fails
// ProtocolGoldenTest.EveryFileIsCovered.
const std::set<std::string> kGoldenFiles = {
    "chunk.bin",
    "handshake_request.bin",
    "handshake_response.bin",
    "create_stream_request.bin",
    "create_stream_response.bin",
    "delete_stream_request.bin",
    "delete_stream_response.bin",
    "describe_stream_request.bin",
    "describe_stream_response.bin",
    "list_streams_request.bin",
    "list_streams_response.bin",
    "metadata_request.bin",
    "metadata_response.bin",
    "append_request.bin",
    "append_response.bin",
    "fetch_request.bin",
    "fetch_response.bin",
    "fetch_response_data_loss.bin",
    "stats_request.bin",
    "stats_response.bin",
    "lookup_timestamp_request.bin",
    "lookup_timestamp_response.bin",
    "cluster_metadata_request.bin",
    "cluster_metadata_response.bin",
    "metadata_response_not_owner.bin",
    "move_streamlet_request.bin",
    "move_streamlet_response.bin",
    "seal_streamlet_request.bin",
    "seal_streamlet_response.bin",
    "replica_append_request.bin",
    "replica_append_response.bin",
    "replica_join_request.bin",
    "replica_join_response.bin",
    "replica_move_request.bin",
    "replica_move_response.bin",
    "replica_check_request.bin",
    "replica_check_response.bin",
    "replica_txn_request.bin",
    "replica_txn_response.bin",
    "replica_txn_rename_request.bin",
    "replica_txn_files_request.bin",
    "replica_txn_files_response.bin",
    "replica_published_request.bin",
    "replica_published_response.bin",
    "append_response_moving.bin",
    "push_subscribe_request.bin",
    "push_subscribe_request_json_filter.bin",
    "push_subscribe_request_bytes_filter.bin",
    "push_subscribe_response.bin",
    "push_update_request.bin",
    "push_update_response.bin",
    "push_close_request.bin",
    "push_close_response.bin",
    "txn_init_request.bin",
    "txn_init_response.bin",
    "txn_begin_request.bin",
    "txn_begin_response.bin",
    "txn_append_request.bin",
    "txn_append_response.bin",
    "txn_prepare_request.bin",
    "txn_prepare_response.bin",
    "txn_commit_request.bin",
    "txn_commit_response.bin",
    "txn_abort_request.bin",
    "txn_abort_response.bin",
    "txn_list_request.bin",
    "txn_list_response.bin",
    "error_response.bin",
    "txn_append_response_fenced.bin",
};

// ---- golden tests -----------------------------------------------------------------------------

TEST(ProtocolGoldenTest, EveryFileIsCovered) {
  std::set<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(GoldenPath(""))) {
    if (e.path().extension() == ".bin") found.insert(e.path().filename().string());
  }
  EXPECT_EQ(found, kGoldenFiles);
}

TEST(ProtocolGoldenTest, Chunk) {
  Bytes chunk;
  ASSERT_NO_FATAL_FAILURE(ReadGolden("chunk.bin", &chunk));
  ASSERT_EQ(chunk.size(), 80u);
  // The header fields at their documented offsets, read without the codec.
  EXPECT_EQ(LoadLe32(chunk.data() + 0), 0x4B43534Eu);   // "NSCK"
  EXPECT_EQ(chunk[4], 1);                               // version
  EXPECT_EQ(chunk[5], 0);                               // flags
  EXPECT_EQ(LoadLe16(chunk.data() + 6), 48);            // header length
  EXPECT_EQ(LoadLe32(chunk.data() + 8), 32u);           // payload length
  EXPECT_EQ(LoadLe32(chunk.data() + 12), 0x5DD18E21u);  // payload CRC32C, from vectors.json
  EXPECT_EQ(LoadLe32(chunk.data() + 40), 3u);           // record count
  EXPECT_EQ(LoadLe32(chunk.data() + 44), 0x6FAA7AD6u);  // header CRC32C, from vectors.json
  ExpectChunk(chunk.data(), chunk.size(), kProducer, 0x0102030405060708ull, 1700000000123,
              kGoldenChunkRecords);
}

TEST(ProtocolGoldenTest, HandshakeRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("handshake_request.bin", &f));
  ExpectHeader(f, Opcode::kHandshake, kHandshakeId, /*response=*/false);
  auto m = DecodeHandshakeRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->min_version, 1);
  EXPECT_EQ(m->max_version, 1);
  EXPECT_EQ(m->client_name, "golden-client/1.0 (\xc3\xbc)");
  Bytes again = EncodeRequest(Opcode::kHandshake, kHandshakeId,
                              [&](ByteWriter& w) { EncodeHandshakeRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "handshake_request.bin");
}

TEST(ProtocolGoldenTest, HandshakeResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("handshake_response.bin", &f));
  ExpectOkResponse(f, Opcode::kHandshake, kHandshakeId);
  auto m = DecodeHandshakeResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->version, 1);
  EXPECT_EQ(m->broker_epoch, 0x0A0B0C0D0E0F1011ull);
  EXPECT_EQ(m->max_frame_bytes, 64u << 20);
  EXPECT_EQ(m->broker_version, "nearstreamd 0.1.0");
  Bytes again = EncodeResponse(Opcode::kHandshake, kHandshakeId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeHandshakeResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "handshake_response.bin");
}

TEST(ProtocolGoldenTest, CreateStreamRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("create_stream_request.bin", &f));
  ExpectHeader(f, Opcode::kCreateStream, kCreateId, /*response=*/false);
  auto c = DecodeStreamConfig(f.body(), f.body_size());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, kStream);
  EXPECT_EQ(c->streamlets, 258u);
  EXPECT_EQ(c->segment_bytes, 0x00A0B0C0u);
  EXPECT_EQ(c->segments_per_group, 772u);
  EXPECT_EQ(c->active_groups, 5u);
  EXPECT_EQ(c->durability, Durability::kSync);
  EXPECT_EQ(c->retention_bytes, 0x0102030405060708ll);
  EXPECT_EQ(c->retention_ms, -1);
  EXPECT_EQ(c->replication, 3u);
  EXPECT_TRUE(c->Validate().ok()) << c->Validate().ToString();
  Bytes again = EncodeRequest(Opcode::kCreateStream, kCreateId,
                              [&](ByteWriter& w) { EncodeStreamConfig(w, *c); });
  ExpectSameBytes(again, f.bytes, "create_stream_request.bin");
}

TEST(ProtocolGoldenTest, EmptyOkResponses) {
  struct Case {
    const char* file;
    Opcode opcode;
    uint64_t request_id;
  };
  for (const Case& c :
       {Case{"create_stream_response.bin", Opcode::kCreateStream, kCreateId},
        Case{"delete_stream_response.bin", Opcode::kDeleteStream, kDeleteId},
        Case{"push_update_response.bin", Opcode::kPushUpdate, kPushUpdateId},
        Case{"push_close_response.bin", Opcode::kPushClose, kPushCloseId},
        Case{"txn_prepare_response.bin", Opcode::kTxnPrepare, kTxnPrepareId},
        Case{"txn_commit_response.bin", Opcode::kTxnCommit, kTxnCommitId},
        Case{"txn_abort_response.bin", Opcode::kTxnAbort, kTxnAbortId},
        Case{"move_streamlet_response.bin", Opcode::kMoveStreamlet, kMoveStreamletId},
        Case{"replica_append_response.bin", Opcode::kReplicaAppend, kReplicaAppendId},
        Case{"replica_join_response.bin", Opcode::kReplicaJoin, kReplicaJoinId},
        Case{"replica_move_response.bin", Opcode::kReplicaMove, kReplicaMoveId},
        Case{"replica_txn_response.bin", Opcode::kReplicaTxn, kReplicaTxnId},
        Case{"replica_published_response.bin", Opcode::kReplicaPublished, kReplicaPublishedId}}) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    ExpectOkResponse(f, c.opcode, c.request_id);
    EXPECT_EQ(f.bytes.size(), 20u);  // prefix + header + status + empty message
    EXPECT_EQ(f.body_size(), 0u);
    ExpectSameBytes(EncodeResponse(c.opcode, c.request_id, Status::Ok(), kNoBody), f.bytes, c.file);
  }
}

TEST(ProtocolGoldenTest, EmptyRequests) {
  struct Case {
    const char* file;
    Opcode opcode;
    uint64_t request_id;
  };
  for (const Case& c : {Case{"list_streams_request.bin", Opcode::kListStreams, kListId},
                        Case{"stats_request.bin", Opcode::kStats, kStatsId}}) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    ExpectHeader(f, c.opcode, c.request_id, /*response=*/false);
    EXPECT_EQ(f.bytes.size(), 16u);
    EXPECT_EQ(f.body_size(), 0u);
    ExpectSameBytes(EncodeRequest(c.opcode, c.request_id, kNoBody), f.bytes, c.file);
  }
}

TEST(ProtocolGoldenTest, StreamNameRequests) {
  struct Case {
    const char* file;
    Opcode opcode;
    uint64_t request_id;
    const char* name;
  };
  for (const Case& c :
       {Case{"delete_stream_request.bin", Opcode::kDeleteStream, kDeleteId, "old-stream"},
        Case{"describe_stream_request.bin", Opcode::kDescribeStream, kDescribeId, kStream}}) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    ExpectHeader(f, c.opcode, c.request_id, /*response=*/false);
    auto m = DecodeStreamNameRequest(f.body(), f.body_size());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->name, c.name);
    Bytes again = EncodeRequest(c.opcode, c.request_id,
                                [&](ByteWriter& w) { EncodeStreamNameRequest(w, *m); });
    ExpectSameBytes(again, f.bytes, c.file);
  }
}

TEST(ProtocolGoldenTest, DescribeStreamResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("describe_stream_response.bin", &f));
  ExpectOkResponse(f, Opcode::kDescribeStream, kDescribeId);
  auto c = DecodeStreamConfig(f.body(), f.body_size());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, kStream);
  EXPECT_EQ(c->streamlets, 4u);
  EXPECT_EQ(c->segment_bytes, 8u << 20);
  EXPECT_EQ(c->segments_per_group, 16u);
  EXPECT_EQ(c->active_groups, 2u);
  EXPECT_EQ(c->durability, Durability::kAsync);
  EXPECT_EQ(c->retention_bytes, -1);
  EXPECT_EQ(c->retention_ms, 604800000);
  EXPECT_EQ(c->replication, 2u);
  Bytes again = EncodeResponse(Opcode::kDescribeStream, kDescribeId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeStreamConfig(w, *c); });
  ExpectSameBytes(again, f.bytes, "describe_stream_response.bin");
}

TEST(ProtocolGoldenTest, ListStreamsResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("list_streams_response.bin", &f));
  ExpectOkResponse(f, Opcode::kListStreams, kListId);
  auto m = DecodeListStreamsResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->names, (std::vector<std::string>{"alpha", "beta.2", kStream}));
  Bytes again = EncodeResponse(Opcode::kListStreams, kListId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeListStreamsResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "list_streams_response.bin");
}

TEST(ProtocolGoldenTest, MetadataRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("metadata_request.bin", &f));
  ExpectHeader(f, Opcode::kMetadata, kMetadataId, /*response=*/false);
  auto m = DecodeMetadataRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlets, (std::vector<uint32_t>{3, 258}));
  Bytes again = EncodeRequest(Opcode::kMetadata, kMetadataId,
                              [&](ByteWriter& w) { EncodeMetadataRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "metadata_request.bin");
}

TEST(ProtocolGoldenTest, MetadataResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("metadata_response.bin", &f));
  ExpectOkResponse(f, Opcode::kMetadata, kMetadataId);
  auto m = DecodeMetadataResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->streamlets.size(), 2u);

  const StreamletMetadata& a = m->streamlets[0];
  EXPECT_EQ(a.streamlet, 3u);
  EXPECT_POSITION(a.head, 1, 1, 0);
  EXPECT_POSITION(a.tail, 2, 18, 0x000A0B0C);
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_EQ(a.groups[0].group_id, 1u);
  EXPECT_TRUE(a.groups[0].closed);
  EXPECT_EQ(a.groups[0].first_segment, 1u);
  EXPECT_EQ(a.groups[0].segment_count, 16u);
  EXPECT_EQ(a.groups[0].bytes, 16ull * (8 << 20));
  EXPECT_EQ(a.groups[1].group_id, 2u);
  EXPECT_FALSE(a.groups[1].closed);
  EXPECT_EQ(a.groups[1].first_segment, 17u);
  EXPECT_EQ(a.groups[1].segment_count, 2u);
  EXPECT_EQ(a.groups[1].bytes, (8ull << 20) + 0x000A0B0C);

  const StreamletMetadata& b = m->streamlets[1];
  EXPECT_EQ(b.streamlet, 258u);
  EXPECT_POSITION(b.head, 0x100000002ull, 0x200000003ull, 0);
  EXPECT_POSITION(b.tail, 0x100000002ull, 0x200000003ull, 0x1234);
  ASSERT_EQ(b.groups.size(), 1u);
  EXPECT_EQ(b.groups[0].group_id, 0x100000002ull);
  EXPECT_FALSE(b.groups[0].closed);
  EXPECT_EQ(b.groups[0].first_segment, 0x200000003ull);
  EXPECT_EQ(b.groups[0].segment_count, 1u);
  EXPECT_EQ(b.groups[0].bytes, 0x1234u);

  Bytes again = EncodeResponse(Opcode::kMetadata, kMetadataId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeMetadataResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "metadata_response.bin");
}

TEST(ProtocolGoldenTest, AppendRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("append_request.bin", &f));
  ExpectHeader(f, Opcode::kAppend, kAppendId, /*response=*/false);
  auto m = DecodeAppendRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].streamlet, 3u);
  EXPECT_EQ(m->entries[0].chunk_size, 66u);
  ExpectChunk(m->entries[0].chunk, m->entries[0].chunk_size, kProducer, 41, 1700000000456,
              {"hello", "world"});
  EXPECT_EQ(m->entries[1].streamlet, 258u);
  EXPECT_EQ(m->entries[1].chunk_size, 56u);
  ExpectChunk(m->entries[1].chunk, m->entries[1].chunk_size, 0, 0, -86400000,
              {std::string("\x00\x01\xfe\xff", 4)});
  Bytes again =
      EncodeRequest(Opcode::kAppend, kAppendId, [&](ByteWriter& w) { EncodeAppendRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "append_request.bin");
}

TEST(ProtocolGoldenTest, AppendResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("append_response.bin", &f));
  ExpectOkResponse(f, Opcode::kAppend, kAppendId);
  auto m = DecodeAppendResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->results.size(), 3u);

  EXPECT_EQ(m->results[0].streamlet, 3u);
  EXPECT_EQ(m->results[0].status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(m->results[0].message, "");
  EXPECT_POSITION(m->results[0].position, 2, 18, 0x000A0B0C);
  EXPECT_FALSE(m->results[0].duplicate);

  EXPECT_EQ(m->results[1].streamlet, 3u);
  EXPECT_EQ(m->results[1].status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(m->results[1].message, "");
  EXPECT_POSITION(m->results[1].position, 2, 17, 4096);
  EXPECT_TRUE(m->results[1].duplicate);

  EXPECT_EQ(m->results[2].streamlet, 258u);
  EXPECT_EQ(m->results[2].status, static_cast<uint16_t>(StatusCode::kOutOfOrderSequence));
  EXPECT_EQ(m->results[2].message, "producer 1234605616436508552 sent sequence 44 after 41");
  EXPECT_TRUE(m->results[2].position.is_earliest());
  EXPECT_FALSE(m->results[2].duplicate);

  Bytes again = EncodeResponse(Opcode::kAppend, kAppendId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeAppendResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "append_response.bin");
}

TEST(ProtocolGoldenTest, FetchRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("fetch_request.bin", &f));
  ExpectHeader(f, Opcode::kFetch, kFetchId, /*response=*/false);
  auto m = DecodeFetchRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->max_wait_ms, 500u);
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].streamlet, 3u);
  EXPECT_TRUE(m->entries[0].position.is_earliest());
  EXPECT_EQ(m->entries[0].max_bytes, 1u << 20);
  EXPECT_EQ(m->entries[1].streamlet, 258u);
  EXPECT_POSITION(m->entries[1].position, 1, 1, 0);
  EXPECT_EQ(m->entries[1].max_bytes, 0x00010203u);
  Bytes again =
      EncodeRequest(Opcode::kFetch, kFetchId, [&](ByteWriter& w) { EncodeFetchRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "fetch_request.bin");
}

TEST(ProtocolGoldenTest, FetchResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("fetch_response.bin", &f));
  ExpectOkResponse(f, Opcode::kFetch, kFetchId);
  auto m = DecodeFetchResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->results.size(), 2u);

  const FetchResult& a = m->results[0];
  EXPECT_EQ(a.streamlet, 3u);
  EXPECT_EQ(a.status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(a.message, "");
  EXPECT_POSITION(a.next, 1, 2, 111);
  EXPECT_POSITION(a.tail, 2, 18, 0x000A0B0C);
  ASSERT_EQ(a.blocks.size(), 2u);
  // Block 1: one chunk at 1:1:0.
  EXPECT_POSITION(a.blocks[0].at, 1, 1, 0);
  ASSERT_EQ(a.blocks[0].size, 64u);
  ExpectChunk(a.blocks[0].data, a.blocks[0].size, kProducer, 1, 1700000001000, {"r1-a", "r1-b"});
  // Block 2: two consecutive chunks at 1:2:0; the second starts where the first ends.
  EXPECT_POSITION(a.blocks[1].at, 1, 2, 0);
  ASSERT_EQ(a.blocks[1].size, 111u);
  auto first = storage::DecodeChunkHeader(a.blocks[1].data, a.blocks[1].size);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const uint32_t first_size = first->total_size();
  ASSERT_EQ(first_size, 54u);
  ExpectChunk(a.blocks[1].data, first_size, kProducer, 2, 1700000002000, {"r2"});
  ExpectChunk(a.blocks[1].data + first_size, a.blocks[1].size - first_size, 0x99AABBCCDDEEFF00ull,
              7, 1700000003000, {"", "z"});

  const FetchResult& b = m->results[1];
  EXPECT_EQ(b.streamlet, 258u);
  EXPECT_EQ(b.status, static_cast<uint16_t>(StatusCode::kPositionOutOfRange));
  EXPECT_EQ(b.message,
            "position 1:1:0 is not in streamlet 258 (it holds groups 4294967298..4294967298)");
  EXPECT_POSITION(b.next, 1, 1, 0);  // an error entry keeps the requested position
  EXPECT_TRUE(b.tail.is_earliest());
  EXPECT_TRUE(b.blocks.empty());

  Bytes again = EncodeResponse(Opcode::kFetch, kFetchId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeFetchResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "fetch_response.bin");
}

// DATA_LOSS (17): the entry's `next` is where the damaged range ends, not the requested position.
TEST(ProtocolGoldenTest, FetchResponseDataLoss) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("fetch_response_data_loss.bin", &f));
  constexpr uint64_t kId = 0x7A7B7C7D7E7F7071ull;
  ExpectOkResponse(f, Opcode::kFetch, kId);
  auto m = DecodeFetchResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->results.size(), 2u);
  const FetchResult& a = m->results[0];
  EXPECT_EQ(a.status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_POSITION(a.next, 1, 1, 64);  // the damaged range's start
  ASSERT_EQ(a.blocks.size(), 1u);
  ExpectChunk(a.blocks[0].data, a.blocks[0].size, kProducer, 1, 1700000001000, {"r1-a", "r1-b"});
  const FetchResult& b = m->results[1];
  EXPECT_EQ(b.streamlet, 258u);
  EXPECT_EQ(b.status, 17u);
  EXPECT_EQ(b.status, static_cast<uint16_t>(StatusCode::kDataLoss));
  EXPECT_EQ(StatusCodeName(StatusCode::kDataLoss), std::string("DATA_LOSS"));
  EXPECT_NE(b.message.find("1:2:2000 to 1:2:3000"), std::string::npos) << b.message;
  EXPECT_POSITION(b.next, 1, 2, 3000);
  EXPECT_TRUE(b.tail.is_earliest());
  EXPECT_TRUE(b.blocks.empty());
  Bytes again = EncodeResponse(Opcode::kFetch, kId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeFetchResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "fetch_response_data_loss.bin");
}

TEST(ProtocolGoldenTest, StatsResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("stats_response.bin", &f));
  ExpectOkResponse(f, Opcode::kStats, kStatsId);
  auto m = DecodeStatsResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  using Pair = std::pair<std::string, uint64_t>;
  EXPECT_EQ(m->values,
            (std::vector<Pair>{
                {"nearstream_append_chunks_total", 0x0000000100000002ull},
                {"nearstream_append_bytes_total", 0x0102030405060708ull},
                {"nearstream_thread_busy_ns_total{thread=\"worker-0\"}", 0xF0E0D0C0B0A09080ull},
            }));
  Bytes again = EncodeResponse(Opcode::kStats, kStatsId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeStatsResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "stats_response.bin");
}

TEST(ProtocolGoldenTest, LookupTimestampRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("lookup_timestamp_request.bin", &f));
  ExpectHeader(f, Opcode::kLookupTimestamp, kLookupId, /*response=*/false);
  auto m = DecodeLookupTimestampRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].streamlet, 3u);
  EXPECT_EQ(m->entries[0].timestamp_ms, 1700000001500);
  EXPECT_EQ(m->entries[1].streamlet, 258u);
  EXPECT_EQ(m->entries[1].timestamp_ms, -1);
  Bytes again = EncodeRequest(Opcode::kLookupTimestamp, kLookupId,
                              [&](ByteWriter& w) { EncodeLookupTimestampRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "lookup_timestamp_request.bin");
}

TEST(ProtocolGoldenTest, LookupTimestampResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("lookup_timestamp_response.bin", &f));
  ExpectOkResponse(f, Opcode::kLookupTimestamp, kLookupId);
  auto m = DecodeLookupTimestampResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->results.size(), 2u);
  EXPECT_EQ(m->results[0].streamlet, 3u);
  EXPECT_EQ(m->results[0].status, 0);
  EXPECT_EQ(m->results[0].message, "");
  EXPECT_EQ(m->results[0].position, (Position{1, 2, 0x0102}));
  EXPECT_EQ(m->results[1].streamlet, 258u);
  EXPECT_EQ(m->results[1].status, static_cast<uint16_t>(StatusCode::kStreamletNotFound));
  EXPECT_EQ(m->results[1].message, "stream 'golden.stream-1_x' has no streamlet 258");
  EXPECT_EQ(m->results[1].position, Position{});
  Bytes again = EncodeResponse(Opcode::kLookupTimestamp, kLookupId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeLookupTimestampResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "lookup_timestamp_response.bin");
}

TEST(ProtocolGoldenTest, ClusterMetadataRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("cluster_metadata_request.bin", &f));
  ExpectHeader(f, Opcode::kClusterMetadata, kClusterMetadataId, /*response=*/false);
  auto m = DecodeClusterMetadataRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->streams, (std::vector<std::string>{kStream, "missing"}));
  Bytes again = EncodeRequest(Opcode::kClusterMetadata, kClusterMetadataId,
                              [&](ByteWriter& w) { EncodeClusterMetadataRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "cluster_metadata_request.bin");
}

TEST(ProtocolGoldenTest, ClusterMetadataResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("cluster_metadata_response.bin", &f));
  ExpectOkResponse(f, Opcode::kClusterMetadata, kClusterMetadataId);
  auto m = DecodeClusterMetadataResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->broker_id, 2u);
  ASSERT_EQ(m->brokers.size(), 3u);
  EXPECT_EQ(m->brokers[0].id, 1u);
  EXPECT_EQ(m->brokers[0].address, "127.0.0.1:7421");
  EXPECT_EQ(m->brokers[0].host, "host-a");
  EXPECT_EQ(m->brokers[1].id, 2u);
  EXPECT_EQ(m->brokers[1].address, "127.0.0.1:7422");
  EXPECT_EQ(m->brokers[1].host, "h\xc3\xb6st-b");
  EXPECT_EQ(m->brokers[2].id, 0x01020304u);
  EXPECT_EQ(m->brokers[2].address, "10.0.0.3:7420");
  EXPECT_EQ(m->brokers[2].host, "host-c");
  ASSERT_EQ(m->streams.size(), 1u);
  EXPECT_EQ(m->streams[0].name, kStream);
  EXPECT_EQ(m->streams[0].version, 0x0A0B0C0Du);
  EXPECT_EQ(m->streams[0].owners, (std::vector<uint32_t>{1, 2, 0x01020304, 1}));
  const std::vector<ReplicaSet>& sets = m->streams[0].replicas;
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets[0].leader_epoch, 0x0102030405060708ull);
  EXPECT_EQ(sets[0].replicas, (std::vector<uint32_t>{1, 2, 0x01020304}));
  EXPECT_EQ(sets[0].isr, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(sets[1].leader_epoch, 0u);
  EXPECT_EQ(sets[1].replicas, (std::vector<uint32_t>{2}));
  EXPECT_EQ(sets[1].isr, (std::vector<uint32_t>{2}));
  EXPECT_EQ(sets[2].leader_epoch, 7u);
  EXPECT_EQ(sets[2].replicas, (std::vector<uint32_t>{0x01020304, 1}));
  EXPECT_EQ(sets[2].isr, (std::vector<uint32_t>{0x01020304}));
  EXPECT_EQ(sets[3].leader_epoch, 1u);
  EXPECT_EQ(sets[3].replicas, (std::vector<uint32_t>{1, 2, 0x01020304}));
  EXPECT_EQ(sets[3].isr, (std::vector<uint32_t>{1, 2, 0x01020304}));
  EXPECT_EQ(m->controller_id, 0x01020304u);
  Bytes again = EncodeResponse(Opcode::kClusterMetadata, kClusterMetadataId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeClusterMetadataResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "cluster_metadata_response.bin");
}

TEST(ProtocolGoldenTest, MoveStreamletRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("move_streamlet_request.bin", &f));
  ExpectHeader(f, Opcode::kMoveStreamlet, kMoveStreamletId, /*response=*/false);
  auto m = DecodeStreamletRef(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 0x00010203u);
  Bytes again = EncodeRequest(Opcode::kMoveStreamlet, kMoveStreamletId,
                              [&](ByteWriter& w) { EncodeStreamletRef(w, *m); });
  ExpectSameBytes(again, f.bytes, "move_streamlet_request.bin");
}

TEST(ProtocolGoldenTest, ReplicaAppendRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_append_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaAppend, kReplicaAppendId, /*response=*/false);
  auto m = DecodeReplicaAppendRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 258u);
  EXPECT_EQ(m->leader, 0x01020304u);
  EXPECT_EQ(m->leader_epoch, 0x0A0B0C0D0E0F1011ull);
  EXPECT_EQ(m->at, (storage::Position{0x100000002ull, 0x200000003ull, 0x1234u}));
  Bytes chunk;
  ASSERT_NO_FATAL_FAILURE(ReadGolden("chunk.bin", &chunk));
  ASSERT_EQ(m->chunk_size, chunk.size());
  EXPECT_EQ(Bytes(m->chunk, m->chunk + m->chunk_size), chunk);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaAppend, kReplicaAppendId,
                                [&](ByteWriter& w) { EncodeReplicaAppendRequest(w, *m); }),
                  f.bytes, "replica_append_request.bin");
}

TEST(ProtocolGoldenTest, ReplicaJoinRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_join_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaJoin, kReplicaJoinId, /*response=*/false);
  auto m = DecodeReplicaJoinRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 3u);
  EXPECT_EQ(m->follower, 0x01020304u);
  EXPECT_EQ(m->leader_epoch, 0x0102030405060708ull);
  EXPECT_EQ(m->tail, (storage::Position{0x100000002ull, 0x200000003ull, 0x00ABCDEFu}));
  EXPECT_EQ(m->take_over, ReplicaJoinRequest::TakeOver::kLeaderFollows);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaJoin, kReplicaJoinId,
                                [&](ByteWriter& w) { EncodeReplicaJoinRequest(w, *m); }),
                  f.bytes, "replica_join_request.bin");
}

TEST(ProtocolGoldenTest, ReplicaMoveRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_move_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaMove, kReplicaMoveId, /*response=*/false);
  auto m = DecodeReplicaMoveRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 3u);
  EXPECT_EQ(m->from, 0x01020304u);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaMove, kReplicaMoveId,
                                [&](ByteWriter& w) { EncodeReplicaMoveRequest(w, *m); }),
                  f.bytes, "replica_move_request.bin");
}

TEST(ProtocolGoldenTest, ReplicaCheck) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_check_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaCheck, kReplicaCheckId, /*response=*/false);
  auto m = DecodeReplicaCheckRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 3u);
  EXPECT_EQ(m->follower, 0x01020304u);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaCheck, kReplicaCheckId,
                                [&](ByteWriter& w) { EncodeReplicaCheckRequest(w, *m); }),
                  f.bytes, "replica_check_request.bin");

  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_check_response.bin", &f));
  ExpectHeader(f, Opcode::kReplicaCheck, kReplicaCheckId, /*response=*/true);
  auto resp = DecodeReplicaCheckResponse(f.body(), f.body_size());
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->leader_epoch, 0x0102030405060708ull);
  EXPECT_EQ(resp->epochs, (std::vector<EpochStart>{{0, 0}, {3, 0x100000002ull}}));
  EXPECT_EQ(resp->segments,
            (std::vector<SegmentExtent>{{1, 1, 0x00ABCDEF}, {0x100000002ull, 0x200000003ull, 0}}));
  ExpectSameBytes(EncodeResponse(Opcode::kReplicaCheck, kReplicaCheckId, Status::Ok(),
                                 [&](ByteWriter& w) { EncodeReplicaCheckResponse(w, *resp); }),
                  f.bytes, "replica_check_response.bin");
}

TEST(ProtocolGoldenTest, ReplicaTxn) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_txn_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaTxn, kReplicaTxnId, /*response=*/false);
  auto m = DecodeReplicaTxnRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 3u);
  EXPECT_EQ(m->leader, 0x01020304u);
  EXPECT_EQ(m->leader_epoch, 0x0102030405060708ull);
  EXPECT_EQ(m->op, ReplicaTxnOp::kAppend);
  EXPECT_EQ(m->file, kPartFile);
  EXPECT_EQ(m->offset, 0x100000040ull);
  EXPECT_EQ(m->to, "");
  ExpectChunk(m->data, m->data_size, kProducer, 2, 1700000005000, {"in a replica"});
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaTxn, kReplicaTxnId,
                                [&](ByteWriter& w) { EncodeReplicaTxnRequest(w, *m); }),
                  f.bytes, "replica_txn_request.bin");

  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_txn_rename_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaTxn, kReplicaTxnRenameId, /*response=*/false);
  m = DecodeReplicaTxnRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->leader, 2u);
  EXPECT_EQ(m->leader_epoch, 9u);
  EXPECT_EQ(m->op, ReplicaTxnOp::kRename);
  EXPECT_EQ(m->file, kPartFile);
  EXPECT_EQ(m->offset, 0u);
  EXPECT_EQ(m->to, "00000000000000000012-00000000000000000003.seg");
  EXPECT_EQ(m->data_size, 0u);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaTxn, kReplicaTxnRenameId,
                                [&](ByteWriter& w) { EncodeReplicaTxnRequest(w, *m); }),
                  f.bytes, "replica_txn_rename_request.bin");

  // Ops outside 1-4 are malformed.
  for (uint8_t op : {0, 5, 0xFF}) {
    Bytes body(f.body(), f.body() + f.body_size());
    body[2 + std::string(kStream).size() + 4 + 4 + 8] = op;
    EXPECT_TRUE(DecodeReplicaTxnRequest(body.data(), body.size()).status().IsMalformedRequest())
        << int{op};
  }
}

TEST(ProtocolGoldenTest, ReplicaPublished) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_published_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaPublished, kReplicaPublishedId, /*response=*/false);
  auto m = DecodeReplicaPublishedRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 258u);
  EXPECT_EQ(m->leader, 0x01020304u);
  EXPECT_EQ(m->leader_epoch, 0x0A0B0C0D0E0F1011ull);
  EXPECT_EQ(m->since, 0x1000000020000001ull);
  EXPECT_EQ(m->view.version, 0x1000000020000003ull);
  EXPECT_EQ(m->view.head, (storage::Position{0x100000002ull, 0x200000003ull, 0}));
  const std::vector<storage::PublishedGroup> groups = {
      {0x100000005ull, true, {{0x200000007ull, 0x00800000u}, {0x200000009ull, 0x1234u}}},
      {0x100000006ull, false, {}}};
  EXPECT_EQ(m->view.groups, groups);
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaPublished, kReplicaPublishedId,
                                [&](ByteWriter& w) { EncodeReplicaPublishedRequest(w, *m); }),
                  f.bytes, "replica_published_request.bin");

  // A closed flag other than 0 or 1 is malformed (it would not re-encode the same).
  Bytes body(f.body(), f.body() + f.body_size());
  body[2 + std::string(kStream).size() + 4 + 4 + 8 + 8 + 8 + 20 + 4 + 8] = 2;
  EXPECT_TRUE(
      DecodeReplicaPublishedRequest(body.data(), body.size()).status().IsMalformedRequest());
}

TEST(ProtocolGoldenTest, ReplicaTxnFiles) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_txn_files_request.bin", &f));
  ExpectHeader(f, Opcode::kReplicaTxnFiles, kReplicaTxnFilesId, /*response=*/false);
  auto m = DecodeReplicaTxnFilesRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 3u);
  EXPECT_EQ(m->follower, 0x01020304u);
  EXPECT_EQ(m->max_bytes, 4u << 20);
  EXPECT_EQ(m->held, (std::vector<ReplicaTxnHeld>{{kPartFile, 0x100000040ull}}));
  ExpectSameBytes(EncodeRequest(Opcode::kReplicaTxnFiles, kReplicaTxnFilesId,
                                [&](ByteWriter& w) { EncodeReplicaTxnFilesRequest(w, *m); }),
                  f.bytes, "replica_txn_files_request.bin");

  ASSERT_NO_FATAL_FAILURE(LoadFrame("replica_txn_files_response.bin", &f));
  ExpectOkResponse(f, Opcode::kReplicaTxnFiles, kReplicaTxnFilesId);
  auto resp = DecodeReplicaTxnFilesResponse(f.body(), f.body_size());
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_TRUE(resp->complete);
  ASSERT_EQ(resp->files.size(), 2u);
  EXPECT_EQ(resp->files[0].name, "txn.log");
  EXPECT_EQ(resp->files[0].size, 32u);
  EXPECT_EQ(resp->files[0].offset, 0u);
  Bytes log;
  for (uint8_t b = 0x10; b < 0x30; ++b) log.push_back(b);
  EXPECT_EQ(resp->files[0].data, log);
  EXPECT_EQ(resp->files[1].name, kPartFile);
  EXPECT_EQ(resp->files[1].offset, 0x100000040ull);
  EXPECT_EQ(resp->files[1].size, 0x100000040ull + resp->files[1].data.size());
  ExpectChunk(resp->files[1].data.data(), static_cast<uint32_t>(resp->files[1].data.size()),
              kProducer, 2, 1700000005000, {"in a replica"});
  ExpectSameBytes(EncodeResponse(Opcode::kReplicaTxnFiles, kReplicaTxnFilesId, Status::Ok(),
                                 [&](ByteWriter& w) { EncodeReplicaTxnFilesResponse(w, *resp); }),
                  f.bytes, "replica_txn_files_response.bin");
}

// A piece that reaches past its file's end, or a complete flag other than 0 or 1, describes no
// answer a leader makes.
TEST(ProtocolRobustnessTest, AReplicaTxnFilesPiecePastItsFileIsRefused) {
  auto encode = [](uint8_t complete, uint64_t size, uint64_t offset, uint32_t data) {
    Bytes body;
    ByteWriter w(&body);
    w.U8(complete);
    w.U32(1);
    w.Str("txn.log");
    w.U64(size);
    w.U64(offset);
    const Bytes bytes(data, 7);
    w.Blob(bytes.data(), data);
    return body;
  };
  const Bytes ok = encode(1, 10, 6, 4);
  EXPECT_TRUE(DecodeReplicaTxnFilesResponse(ok.data(), ok.size()).ok());
  for (const Bytes& bad : {encode(1, 10, 6, 5), encode(1, 10, 11, 0), encode(2, 10, 6, 4)}) {
    EXPECT_EQ(DecodeReplicaTxnFilesResponse(bad.data(), bad.size()).status().code(),
              StatusCode::kMalformedRequest);
  }
}

TEST(ProtocolGoldenTest, SealStreamlet) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("seal_streamlet_request.bin", &f));
  ExpectHeader(f, Opcode::kSealStreamlet, kSealStreamletId, /*response=*/false);
  auto m = DecodeSealStreamletRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->streamlet, 5u);
  EXPECT_EQ(m->seal_ms, 30000u);
  ExpectSameBytes(EncodeRequest(Opcode::kSealStreamlet, kSealStreamletId,
                                [&](ByteWriter& w) { EncodeSealStreamletRequest(w, *m); }),
                  f.bytes, "seal_streamlet_request.bin");

  ASSERT_NO_FATAL_FAILURE(LoadFrame("seal_streamlet_response.bin", &f));
  ExpectOkResponse(f, Opcode::kSealStreamlet, kSealStreamletId);
  auto r = DecodeSealStreamletResponse(f.body(), f.body_size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tail,
            (storage::Position{0x0102030405060708ull, 0x1112131415161718ull, 0x21222324u}));
  ExpectSameBytes(EncodeResponse(Opcode::kSealStreamlet, kSealStreamletId, Status::Ok(),
                                 [&](ByteWriter& w) { EncodeSealStreamletResponse(w, *r); }),
                  f.bytes, "seal_streamlet_response.bin");
}

TEST(ProtocolGoldenTest, StreamletMovingResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("append_response_moving.bin", &f));
  ExpectHeader(f, Opcode::kAppend, kAppendId, /*response=*/true);
  const std::string message = "streamlet 5 is moving to another broker; retry after a back-off";
  EXPECT_EQ(f.status, static_cast<uint16_t>(StatusCode::kStreamletMoving));
  EXPECT_EQ(f.message, message);
  EXPECT_EQ(f.body_size(), 0u);
  ExpectSameBytes(
      EncodeResponse(Opcode::kAppend, kAppendId, Status::StreamletMoving(message), kNoBody),
      f.bytes, "append_response_moving.bin");
}

TEST(ProtocolGoldenTest, NotOwnerResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("metadata_response_not_owner.bin", &f));
  ExpectHeader(f, Opcode::kMetadata, kMetadataId, /*response=*/true);
  const std::string message =
      "streamlet 3 of stream 'golden.stream-1_x' is stored by broker 1 at 127.0.0.1:7421";
  EXPECT_EQ(f.status, static_cast<uint16_t>(StatusCode::kNotOwner));
  EXPECT_EQ(f.message, message);
  EXPECT_EQ(f.body_size(), 0u);
  Bytes again = EncodeResponse(Opcode::kMetadata, kMetadataId, Status::NotOwner(message), kNoBody);
  ExpectSameBytes(again, f.bytes, "metadata_response_not_owner.bin");
}

TEST(ProtocolGoldenTest, PushSubscribeRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_subscribe_request.bin", &f));
  ExpectHeader(f, Opcode::kPushSubscribe, kPushSubscribeId, /*response=*/false);
  auto m = DecodePushSubscribeRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->slots_per_ring, 8u);
  EXPECT_EQ(m->slot_bytes, 1u << 20);
  EXPECT_EQ(m->consumer_timeout_ms, 5000u);
  ASSERT_EQ(m->rings.size(), 3u);
  EXPECT_EQ(m->rings[0].subtask_index, 0u);
  ASSERT_EQ(m->rings[0].splits.size(), 2u);
  EXPECT_EQ(m->rings[0].splits[0].streamlet, 3u);
  EXPECT_EQ(m->rings[0].splits[0].start, Position{});
  EXPECT_EQ(m->rings[0].splits[1].streamlet, 258u);
  EXPECT_EQ(m->rings[0].splits[1].start, (Position{0x100000002ull, 0x200000003ull, 0x1234}));
  EXPECT_EQ(m->rings[1].subtask_index, 5u);
  EXPECT_TRUE(m->rings[1].splits.empty());
  EXPECT_EQ(m->rings[2].subtask_index, 0x01020304u);
  ASSERT_EQ(m->rings[2].splits.size(), 1u);
  EXPECT_EQ(m->rings[2].splits[0].streamlet, 7u);
  EXPECT_EQ(m->rings[2].splits[0].start, (Position{1, 2, 64}));
  EXPECT_EQ(m->filter.kind, RecordFilterKind::kNone);
  EXPECT_EQ(m->slot_format, 0);
  Bytes again = EncodeRequest(Opcode::kPushSubscribe, kPushSubscribeId,
                              [&](ByteWriter& w) { EncodePushSubscribeRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_subscribe_request.bin");
}

TEST(ProtocolGoldenTest, PushSubscribeRequestWithAJsonFilter) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_subscribe_request_json_filter.bin", &f));
  ExpectHeader(f, Opcode::kPushSubscribe, kPushSubscribeJsonFilterId, /*response=*/false);
  auto m = DecodePushSubscribeRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->slots_per_ring, 4u);
  EXPECT_EQ(m->slot_bytes, 1u << 16);
  EXPECT_EQ(m->consumer_timeout_ms, 0u);
  ASSERT_EQ(m->rings.size(), 1u);
  EXPECT_EQ(m->rings[0].subtask_index, 2u);
  ASSERT_EQ(m->rings[0].splits.size(), 1u);
  EXPECT_EQ(m->rings[0].splits[0].streamlet, 3u);
  EXPECT_EQ(m->filter.kind, RecordFilterKind::kJsonFieldIn);
  EXPECT_EQ(m->filter.field, "event_type");
  EXPECT_EQ(m->filter.values, (std::vector<std::string>{"view",
                                                        "cl\xc3\xaf"
                                                        "ck",
                                                        ""}));
  EXPECT_EQ(m->slot_format, 1);
  Bytes again = EncodeRequest(Opcode::kPushSubscribe, kPushSubscribeJsonFilterId,
                              [&](ByteWriter& w) { EncodePushSubscribeRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_subscribe_request_json_filter.bin");
}

TEST(ProtocolGoldenTest, PushSubscribeRequestWithABytesFilter) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_subscribe_request_bytes_filter.bin", &f));
  ExpectHeader(f, Opcode::kPushSubscribe, kPushSubscribeBytesFilterId, /*response=*/false);
  auto m = DecodePushSubscribeRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->slots_per_ring, 2u);
  ASSERT_EQ(m->rings.size(), 1u);
  EXPECT_EQ(m->rings[0].subtask_index, 0u);
  EXPECT_TRUE(m->rings[0].splits.empty());
  EXPECT_EQ(m->filter.kind, RecordFilterKind::kBytesContain);
  EXPECT_EQ(m->filter.needle, std::string("\x00\xff\x22", 3));
  EXPECT_EQ(m->slot_format, 0);
  Bytes again = EncodeRequest(Opcode::kPushSubscribe, kPushSubscribeBytesFilterId,
                              [&](ByteWriter& w) { EncodePushSubscribeRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_subscribe_request_bytes_filter.bin");

  // An unknown filter kind makes the body malformed.
  Bytes body(f.body(), f.body() + f.body_size());
  body[body.size() - 1 - 3 - 4 - 1] = 3;
  EXPECT_EQ(DecodePushSubscribeRequest(body.data(), body.size()).status().code(),
            StatusCode::kMalformedRequest);
  // So does an unknown slot format.
  Bytes format(f.body(), f.body() + f.body_size());
  format.back() = 2;
  EXPECT_EQ(DecodePushSubscribeRequest(format.data(), format.size()).status().code(),
            StatusCode::kMalformedRequest);
}

TEST(ProtocolGoldenTest, PushSubscribeResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_subscribe_response.bin", &f));
  ExpectOkResponse(f, Opcode::kPushSubscribe, kPushSubscribeId);
  auto m = DecodePushSubscribeResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->subscription_id, kSubscriptionId);
  EXPECT_EQ(m->broker_epoch, 0x0A0B0C0D0E0F1011ull);
  EXPECT_EQ(m->region_path, "/dev/shm/nearstream-push-4242-1");
  EXPECT_EQ(m->region_bytes, 4096u + 3u * 8392704u);
  Bytes again = EncodeResponse(Opcode::kPushSubscribe, kPushSubscribeId, Status::Ok(),
                               [&](ByteWriter& w) { EncodePushSubscribeResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_subscribe_response.bin");
}

TEST(ProtocolGoldenTest, PushUpdateRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_update_request.bin", &f));
  ExpectHeader(f, Opcode::kPushUpdate, kPushUpdateId, /*response=*/false);
  auto m = DecodePushUpdateRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->subscription_id, kSubscriptionId);
  ASSERT_EQ(m->rings.size(), 3u);
  EXPECT_EQ(m->rings[0].subtask_index, 0u);
  ASSERT_EQ(m->rings[0].splits.size(), 1u);
  EXPECT_EQ(m->rings[0].splits[0].streamlet, 3u);
  EXPECT_EQ(m->rings[0].splits[0].start, Position{});
  EXPECT_EQ(m->rings[1].subtask_index, 5u);
  ASSERT_EQ(m->rings[1].splits.size(), 2u);
  EXPECT_EQ(m->rings[1].splits[0].streamlet, 258u);
  EXPECT_EQ(m->rings[1].splits[0].start, (Position{0x100000002ull, 0x200000003ull, 0x1234}));
  EXPECT_EQ(m->rings[1].splits[1].streamlet, 9u);
  EXPECT_EQ(m->rings[1].splits[1].start, (Position{3, 40, 0x00ABCDEF}));
  EXPECT_EQ(m->rings[2].subtask_index, 0x01020304u);
  EXPECT_TRUE(m->rings[2].splits.empty());
  Bytes again = EncodeRequest(Opcode::kPushUpdate, kPushUpdateId,
                              [&](ByteWriter& w) { EncodePushUpdateRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_update_request.bin");
}

TEST(ProtocolGoldenTest, PushCloseRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("push_close_request.bin", &f));
  ExpectHeader(f, Opcode::kPushClose, kPushCloseId, /*response=*/false);
  auto m = DecodePushCloseRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->subscription_id, kSubscriptionId);
  Bytes again = EncodeRequest(Opcode::kPushClose, kPushCloseId,
                              [&](ByteWriter& w) { EncodePushCloseRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "push_close_request.bin");
}

TEST(ProtocolGoldenTest, ErrorResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("error_response.bin", &f));
  ExpectHeader(f, Opcode::kDescribeStream, kErrorId, /*response=*/true);
  EXPECT_EQ(f.status, static_cast<uint16_t>(StatusCode::kStreamNotFound));
  EXPECT_EQ(f.message, "stream 'nope' does not exist");
  EXPECT_EQ(f.body_size(), 0u);  // a non-OK response has no body
  Bytes again = EncodeResponse(Opcode::kDescribeStream, kErrorId,
                               Status::StreamNotFound("stream 'nope' does not exist"), kNoBody);
  ExpectSameBytes(again, f.bytes, "error_response.bin");
}

TEST(ProtocolGoldenTest, TxnInitRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_init_request.bin", &f));
  ExpectHeader(f, Opcode::kTxnInit, kTxnInitId, /*response=*/false);
  auto m = DecodeTxnInitRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->transactional_id, kTxnId);
  EXPECT_EQ(m->keep_prepared_through, kKeptSerial);
  EXPECT_EQ(m->scope, kBrokerScope);
  Bytes again = EncodeRequest(Opcode::kTxnInit, kTxnInitId,
                              [&](ByteWriter& w) { EncodeTxnInitRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_init_request.bin");
}

TEST(ProtocolGoldenTest, TxnInitResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_init_response.bin", &f));
  ExpectOkResponse(f, Opcode::kTxnInit, kTxnInitId);
  auto m = DecodeTxnInitResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->epoch, kTxnEpoch);
  EXPECT_EQ(m->last_serial, kTxnSerial - 1);
  Bytes again = EncodeResponse(Opcode::kTxnInit, kTxnInitId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeTxnInitResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_init_response.bin");
}

// TxnBegin, TxnPrepare, TxnCommit and TxnAbort requests are each one TxnRef.
TEST(ProtocolGoldenTest, TxnRefRequests) {
  struct Case {
    const char* file;
    Opcode opcode;
    uint64_t request_id;
    const char* transactional_id;
    uint32_t epoch;
    uint64_t serial;
    uint32_t scope;
  };
  for (const Case& c : {
           Case{"txn_begin_request.bin", Opcode::kTxnBegin, kTxnBeginId, kTxnId, kTxnEpoch, 0,
                kBrokerScope},
           Case{"txn_prepare_request.bin", Opcode::kTxnPrepare, kTxnPrepareId, kTxnId, kTxnEpoch,
                kTxnSerial, kBrokerScope},
           // A commit of a prepared transaction that an earlier epoch began and TxnInit kept.
           Case{"txn_commit_request.bin", Opcode::kTxnCommit, kTxnCommitId, kTxnId, kTxnEpoch - 1,
                kKeptSerial, kBrokerScope},
           // A streamlet scope above 2^24, so a field read with the wrong width or order shows.
           Case{"txn_abort_request.bin", Opcode::kTxnAbort, kTxnAbortId, kTxnIdNonAscii, 7,
                0x0102030405060708ull, 0x01020304u},
       }) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    ExpectHeader(f, c.opcode, c.request_id, /*response=*/false);
    auto m = DecodeTxnRef(f.body(), f.body_size());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->stream, kStream);
    EXPECT_EQ(m->transactional_id, c.transactional_id);
    EXPECT_EQ(m->epoch, c.epoch);
    EXPECT_EQ(m->serial, c.serial);
    EXPECT_EQ(m->scope, c.scope);
    Bytes again =
        EncodeRequest(c.opcode, c.request_id, [&](ByteWriter& w) { EncodeTxnRef(w, *m); });
    ExpectSameBytes(again, f.bytes, c.file);
  }
}

TEST(ProtocolGoldenTest, TxnBeginResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_begin_response.bin", &f));
  ExpectOkResponse(f, Opcode::kTxnBegin, kTxnBeginId);
  auto m = DecodeTxnBeginResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->serial, kTxnSerial);
  Bytes again = EncodeResponse(Opcode::kTxnBegin, kTxnBeginId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeTxnBeginResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_begin_response.bin");
}

TEST(ProtocolGoldenTest, TxnAppendRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_append_request.bin", &f));
  ExpectHeader(f, Opcode::kTxnAppend, kTxnAppendId, /*response=*/false);
  auto m = DecodeTxnAppendRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->txn.stream, kStream);
  EXPECT_EQ(m->txn.transactional_id, kTxnId);
  EXPECT_EQ(m->txn.epoch, kTxnEpoch);
  EXPECT_EQ(m->txn.serial, kTxnSerial);
  EXPECT_EQ(m->txn.scope, kBrokerScope);
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].streamlet, 3u);
  EXPECT_EQ(m->entries[0].chunk_size, 66u);
  ExpectChunk(m->entries[0].chunk, m->entries[0].chunk_size, kProducer, 0, 1700000004000,
              {"txn-a", "txn-b"});
  EXPECT_EQ(m->entries[1].streamlet, 258u);
  EXPECT_EQ(m->entries[1].chunk_size, 55u);
  ExpectChunk(m->entries[1].chunk, m->entries[1].chunk_size, kProducer, 0, 1700000004001,
              {std::string("\x00t\xff", 3)});
  Bytes again = EncodeRequest(Opcode::kTxnAppend, kTxnAppendId,
                              [&](ByteWriter& w) { EncodeTxnAppendRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_append_request.bin");
}

// TxnAppend is answered with an AppendResponse whose positions are all-zero.
TEST(ProtocolGoldenTest, TxnAppendResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_append_response.bin", &f));
  ExpectOkResponse(f, Opcode::kTxnAppend, kTxnAppendId);
  auto m = DecodeAppendResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->results.size(), 2u);
  EXPECT_EQ(m->results[0].streamlet, 3u);
  EXPECT_EQ(m->results[0].status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(m->results[0].message, "");
  EXPECT_TRUE(m->results[0].position.is_earliest());
  EXPECT_FALSE(m->results[0].duplicate);
  EXPECT_EQ(m->results[1].streamlet, 258u);
  EXPECT_EQ(m->results[1].status, static_cast<uint16_t>(StatusCode::kOk));
  EXPECT_EQ(m->results[1].message, "");
  EXPECT_TRUE(m->results[1].position.is_earliest());
  EXPECT_TRUE(m->results[1].duplicate);
  Bytes again = EncodeResponse(Opcode::kTxnAppend, kTxnAppendId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeAppendResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_append_response.bin");
}

TEST(ProtocolGoldenTest, TxnListRequest) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_list_request.bin", &f));
  ExpectHeader(f, Opcode::kTxnList, kTxnListId, /*response=*/false);
  auto m = DecodeTxnListRequest(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stream, kStream);
  EXPECT_EQ(m->id_prefix, "job-42.");
  EXPECT_EQ(m->scope, kBrokerScope);  // every scope
  Bytes again = EncodeRequest(Opcode::kTxnList, kTxnListId,
                              [&](ByteWriter& w) { EncodeTxnListRequest(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_list_request.bin");
}

TEST(ProtocolGoldenTest, TxnListResponse) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_list_response.bin", &f));
  ExpectOkResponse(f, Opcode::kTxnList, kTxnListId);
  auto m = DecodeTxnListResponse(f.body(), f.body_size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->transactions.size(), 2u);

  const TxnInfo& a = m->transactions[0];
  EXPECT_EQ(a.transactional_id, kTxnId);
  EXPECT_EQ(a.epoch, kTxnEpoch - 1);
  EXPECT_EQ(a.serial, kKeptSerial);
  EXPECT_EQ(a.state, TxnState::kPrepared);
  EXPECT_EQ(a.bytes, 0x0000000200000010ull);
  EXPECT_EQ(a.chunks, 0x00010002u);
  EXPECT_EQ(a.streamlets, 1u);
  EXPECT_EQ(a.started_ms, 1700000000999);
  EXPECT_EQ(a.scope, 3u);

  const TxnInfo& b = m->transactions[1];
  EXPECT_EQ(b.transactional_id, kTxnIdNonAscii);
  EXPECT_EQ(b.epoch, 7u);
  EXPECT_EQ(b.serial, 0x0102030405060708ull);
  EXPECT_EQ(b.state, TxnState::kOpen);
  EXPECT_EQ(b.bytes, 121u);  // the two chunks of txn_append_request.bin
  EXPECT_EQ(b.chunks, 2u);
  EXPECT_EQ(b.streamlets, 1u);
  EXPECT_EQ(b.started_ms, 1700000004000);
  EXPECT_EQ(b.scope, 258u);

  Bytes again = EncodeResponse(Opcode::kTxnList, kTxnListId, Status::Ok(),
                               [&](ByteWriter& w) { EncodeTxnListResponse(w, *m); });
  ExpectSameBytes(again, f.bytes, "txn_list_response.bin");
}

// A zombie producer's TxnAppend: TXN_FENCED with a message and no body.
TEST(ProtocolGoldenTest, TxnAppendResponseFenced) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_append_response_fenced.bin", &f));
  ExpectHeader(f, Opcode::kTxnAppend, kTxnFencedId, /*response=*/true);
  EXPECT_EQ(f.status, 19u);
  EXPECT_EQ(f.status, static_cast<uint16_t>(StatusCode::kTxnFenced));
  const std::string message =
      "transactional id 'job-42.sink-3' of stream 'golden.stream-1_x' is at epoch 16909061; the "
      "request's epoch 16909060 is fenced";
  EXPECT_EQ(f.message, message);
  EXPECT_EQ(f.body_size(), 0u);
  Bytes again =
      EncodeResponse(Opcode::kTxnAppend, kTxnFencedId, Status::TxnFenced(message), kNoBody);
  ExpectSameBytes(again, f.bytes, "txn_append_response_fenced.bin");
}

// The numbering of docs/protocol.md's tables.
TEST(ProtocolGoldenTest, OpcodesAndStatusCodesMatchTheDocument) {
  const char* opcodes[] = {"Handshake",     "CreateStream",    "DeleteStream",    "DescribeStream",
                           "ListStreams",   "Metadata",        "Append",          "Fetch",
                           "Stats",         "LookupTimestamp", "ClusterMetadata", "MoveStreamlet",
                           "SealStreamlet", "ReplicaAppend",   "ReplicaJoin",     "ReplicaMove",
                           "ReplicaCheck",  "ReplicaTxn",      "ReplicaTxnFiles"};
  for (uint16_t op = 1; op <= 19; ++op) {
    EXPECT_TRUE(IsKnownOpcode(op)) << op;
    EXPECT_STREQ(OpcodeName(op), opcodes[op - 1]);
  }
  const char* push_opcodes[] = {"PushSubscribe", "PushUpdate", "PushClose"};
  for (uint16_t op = 20; op <= 22; ++op) {
    EXPECT_TRUE(IsKnownOpcode(op)) << op;
    EXPECT_STREQ(OpcodeName(op), push_opcodes[op - 20]);
  }
  const char* txn_opcodes[] = {"TxnInit",   "TxnBegin", "TxnAppend", "TxnPrepare",
                               "TxnCommit", "TxnAbort", "TxnList"};
  for (uint16_t op = 30; op <= 36; ++op) {
    EXPECT_TRUE(IsKnownOpcode(op)) << op;
    EXPECT_STREQ(OpcodeName(op), txn_opcodes[op - 30]);
  }
  EXPECT_TRUE(IsKnownOpcode(40));
  EXPECT_STREQ(OpcodeName(40), "ReplicaPublished");
  for (uint16_t op : {0, 23, 29, 37, 39, 41, 0xFFFF}) EXPECT_FALSE(IsKnownOpcode(op)) << op;

  const char* statuses[] = {"OK",
                            "MALFORMED_REQUEST",
                            "UNSUPPORTED_VERSION",
                            "UNKNOWN_OPCODE",
                            "FRAME_TOO_LARGE",
                            "STREAM_NOT_FOUND",
                            "STREAM_EXISTS",
                            "STREAMLET_NOT_FOUND",
                            "INVALID_ARGUMENT",
                            "CORRUPT_CHUNK",
                            "CHUNK_TOO_LARGE",
                            "OUT_OF_ORDER_SEQUENCE",
                            "POSITION_OUT_OF_RANGE",
                            "STORAGE_ERROR",
                            "SHUTTING_DOWN",
                            "INTERNAL",
                            "IO_ERROR",
                            "DATA_LOSS",
                            "TXN_NOT_FOUND",
                            "TXN_FENCED",
                            "TXN_ABORTED",
                            "INVALID_TXN_STATE",
                            "NOT_OWNER",
                            "BROKER_UNAVAILABLE",
                            "CLUSTER_UNAVAILABLE",
                            "STREAMLET_MOVING"};
  for (uint16_t code = 0; code <= 25; ++code) {
    EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(code)), statuses[code]) << code;
  }
}

// ---- robustness -------------------------------------------------------------------------------

// A decoder reduced to "did it accept the bytes".
using DecodeFn = std::function<Status(const uint8_t*, size_t)>;

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

struct DecoderCase {
  const char* file;  // golden frame whose body the decoder reads
  DecodeFn decode;
};

std::vector<DecoderCase> AllDecoders() {
  auto d = [](auto fn) {
    return DecodeFn([fn](const uint8_t* p, size_t n) { return StatusOf(fn(p, n)); });
  };
  return {
      {"handshake_request.bin", d(DecodeHandshakeRequest)},
      {"handshake_response.bin", d(DecodeHandshakeResponse)},
      {"create_stream_request.bin", d(DecodeStreamConfig)},
      {"describe_stream_response.bin", d(DecodeStreamConfig)},
      {"delete_stream_request.bin", d(DecodeStreamNameRequest)},
      {"describe_stream_request.bin", d(DecodeStreamNameRequest)},
      {"list_streams_response.bin", d(DecodeListStreamsResponse)},
      {"metadata_request.bin", d(DecodeMetadataRequest)},
      {"metadata_response.bin", d(DecodeMetadataResponse)},
      {"append_request.bin", d(DecodeAppendRequest)},
      {"append_response.bin", d(DecodeAppendResponse)},
      {"fetch_request.bin", d(DecodeFetchRequest)},
      {"fetch_response.bin", d(DecodeFetchResponse)},
      {"fetch_response_data_loss.bin", d(DecodeFetchResponse)},
      {"stats_response.bin", d(DecodeStatsResponse)},
      {"lookup_timestamp_request.bin", d(DecodeLookupTimestampRequest)},
      {"lookup_timestamp_response.bin", d(DecodeLookupTimestampResponse)},
      {"cluster_metadata_request.bin", d(DecodeClusterMetadataRequest)},
      {"cluster_metadata_response.bin", d(DecodeClusterMetadataResponse)},
      {"move_streamlet_request.bin", d(DecodeStreamletRef)},
      {"seal_streamlet_request.bin", d(DecodeSealStreamletRequest)},
      {"seal_streamlet_response.bin", d(DecodeSealStreamletResponse)},
      {"replica_append_request.bin", d(DecodeReplicaAppendRequest)},
      {"replica_join_request.bin", d(DecodeReplicaJoinRequest)},
      {"replica_move_request.bin", d(DecodeReplicaMoveRequest)},
      {"replica_check_request.bin", d(DecodeReplicaCheckRequest)},
      {"replica_check_response.bin", d(DecodeReplicaCheckResponse)},
      {"replica_txn_request.bin", d(DecodeReplicaTxnRequest)},
      {"replica_txn_rename_request.bin", d(DecodeReplicaTxnRequest)},
      {"replica_txn_files_request.bin", d(DecodeReplicaTxnFilesRequest)},
      {"replica_txn_files_response.bin", d(DecodeReplicaTxnFilesResponse)},
      {"replica_published_request.bin", d(DecodeReplicaPublishedRequest)},
      {"push_subscribe_request.bin", d(DecodePushSubscribeRequest)},
      {"push_subscribe_request_json_filter.bin", d(DecodePushSubscribeRequest)},
      {"push_subscribe_request_bytes_filter.bin", d(DecodePushSubscribeRequest)},
      {"push_subscribe_response.bin", d(DecodePushSubscribeResponse)},
      {"push_update_request.bin", d(DecodePushUpdateRequest)},
      {"push_close_request.bin", d(DecodePushCloseRequest)},
      {"txn_init_request.bin", d(DecodeTxnInitRequest)},
      {"txn_init_response.bin", d(DecodeTxnInitResponse)},
      {"txn_begin_request.bin", d(DecodeTxnRef)},
      {"txn_begin_response.bin", d(DecodeTxnBeginResponse)},
      {"txn_append_request.bin", d(DecodeTxnAppendRequest)},
      {"txn_append_response.bin", d(DecodeAppendResponse)},
      {"txn_prepare_request.bin", d(DecodeTxnRef)},
      {"txn_commit_request.bin", d(DecodeTxnRef)},
      {"txn_abort_request.bin", d(DecodeTxnRef)},
      {"txn_list_request.bin", d(DecodeTxnListRequest)},
      {"txn_list_response.bin", d(DecodeTxnListResponse)},
  };
}

TEST(ProtocolRobustnessTest, EveryTruncationIsRefused) {
  for (const DecoderCase& c : AllDecoders()) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    ASSERT_TRUE(c.decode(f.body(), f.body_size()).ok());
    for (size_t n = 0; n < f.body_size(); ++n) {
      Bytes cut(f.body(), f.body() + n);  // exact-size allocation: ASan flags any over-read
      Status s = c.decode(cut.data(), cut.size());
      EXPECT_EQ(s.code(), StatusCode::kMalformedRequest) << "accepted a body cut at " << n;
    }
  }
}

TEST(ProtocolRobustnessTest, TrailingBytesAreRefused) {
  for (const DecoderCase& c : AllDecoders()) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    for (size_t extra : {1, 2, 7, 64}) {
      Bytes longer = f.body_copy();
      longer.insert(longer.end(), extra, 0x00);
      Status s = c.decode(longer.data(), longer.size());
      EXPECT_EQ(s.code(), StatusCode::kMalformedRequest) << extra << " trailing zero bytes";
    }
  }
}

// Every single-bit flip either decodes or is refused; none may crash or over-read.
TEST(ProtocolRobustnessTest, BitFlipsNeverCrash) {
  for (const DecoderCase& c : AllDecoders()) {
    SCOPED_TRACE(c.file);
    GoldenFrame f;
    ASSERT_NO_FATAL_FAILURE(LoadFrame(c.file, &f));
    for (size_t i = 0; i < f.body_size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes bad = f.body_copy();
        bad[i] ^= static_cast<uint8_t>(1u << bit);
        Status s = c.decode(bad.data(), bad.size());
        if (!s.ok()) {
          EXPECT_EQ(s.code(), StatusCode::kMalformedRequest);
        }
      }
    }
  }
}

// Builds a body from little-endian pieces.
class BodyBuilder {
 public:
  BodyBuilder& U8(uint8_t v) {
    return Do([&](ByteWriter& w) { w.U8(v); });
  }
  BodyBuilder& U16(uint16_t v) {
    return Do([&](ByteWriter& w) { w.U16(v); });
  }
  BodyBuilder& U32(uint32_t v) {
    return Do([&](ByteWriter& w) { w.U32(v); });
  }
  BodyBuilder& U64(uint64_t v) {
    return Do([&](ByteWriter& w) { w.U64(v); });
  }
  BodyBuilder& Str(std::string_view s) {
    return Do([&](ByteWriter& w) { w.Str(s); });
  }
  BodyBuilder& Zeros(size_t n) {
    return Do([&](ByteWriter& w) { w.Skip(n); });
  }
  BodyBuilder& Pos() { return Zeros(20); }
  Bytes Build() const { return bytes_; }

 private:
  template <typename Fn>
  BodyBuilder& Do(Fn fn) {
    ByteWriter w(&bytes_);
    fn(w);
    return *this;
  }
  Bytes bytes_;
};

constexpr uint32_t kHostile = 0xFFFFFFFFu;

struct HostileCase {
  const char* what;
  DecodeFn decode;
  Bytes body;
};

std::vector<HostileCase> HostileBodies() {
  auto d = [](auto fn) {
    return DecodeFn([fn](const uint8_t* p, size_t n) { return StatusOf(fn(p, n)); });
  };
  using B = BodyBuilder;
  return {
      {"ListStreams count", d(DecodeListStreamsResponse), B().U32(kHostile).Str("a").Build()},
      {"Metadata request count", d(DecodeMetadataRequest),
       B().Str("s").U32(kHostile).U32(1).U32(2).Build()},
      {"Metadata response count", d(DecodeMetadataResponse), B().U32(kHostile).Zeros(96).Build()},
      {"Metadata group count", d(DecodeMetadataResponse),
       B().U32(1).U32(0).Pos().Pos().U32(kHostile).Zeros(58).Build()},
      {"Append request count", d(DecodeAppendRequest),
       B().Str("s").U32(kHostile).U32(0).U32(0).Build()},
      {"Append chunk length", d(DecodeAppendRequest),
       B().Str("s").U32(1).U32(0).U32(kHostile).Zeros(16).Build()},
      {"Append response count", d(DecodeAppendResponse), B().U32(kHostile).Zeros(58).Build()},
      {"Fetch request count", d(DecodeFetchRequest),
       B().Str("s").U32(0).U32(kHostile).Zeros(56).Build()},
      {"Fetch response count", d(DecodeFetchResponse), B().U32(kHostile).Zeros(104).Build()},
      {"Fetch block count", d(DecodeFetchResponse),
       B().U32(1).U32(0).U16(0).Str("").Pos().Pos().U32(kHostile).Zeros(48).Build()},
      {"Fetch block length", d(DecodeFetchResponse),
       B().U32(1).U32(0).U16(0).Str("").Pos().Pos().U32(1).Pos().U32(kHostile).Zeros(8).Build()},
      {"Stats count", d(DecodeStatsResponse), B().U32(kHostile).Str("x").U64(1).Build()},
      {"string length", d(DecodeStreamNameRequest), B().U16(0xFFFF).Zeros(3).Build()},
      {"Handshake string length", d(DecodeHandshakeRequest),
       B().U16(1).U16(1).U16(0xFFFF).Zeros(3).Build()},
      // Values the decoders must refuse although every byte is present.
      {"durability 3", d(DecodeStreamConfig),
       B().Str("s").U32(1).U32(0).U32(0).U32(0).U8(3).U64(0).U64(0).U8(1).Build()},
      {"group closed flag 2", d(DecodeMetadataResponse),
       B().U32(1).U32(0).Pos().Pos().U32(1).U64(1).U8(2).U64(1).U32(1).U64(0).Build()},
      {"duplicate flag 2", d(DecodeAppendResponse),
       B().U32(1).U32(0).U16(0).Str("").Pos().U8(2).Build()},
      {"TxnAppend count", d(DecodeTxnAppendRequest),
       B().Str("s").Str("t").U32(1).U64(1).U32(kHostile).U32(0).U32(0).Build()},
      {"TxnAppend chunk length", d(DecodeTxnAppendRequest),
       B().Str("s")
           .Str("t")
           .U32(1)
           .U64(1)
           .U32(kBrokerScope)
           .U32(1)
           .U32(0)
           .U32(kHostile)
           .Zeros(16)
           .Build()},
      {"TxnList count", d(DecodeTxnListResponse),
       B().U32(kHostile).Str("t").U32(1).U64(1).U8(1).U64(0).U32(0).U32(0).U64(0).U32(0).Build()},
      {"TxnInfo state 0", d(DecodeTxnListResponse),
       B().U32(1).Str("t").U32(1).U64(1).U8(0).U64(0).U32(0).U32(0).U64(0).U32(0).Build()},
      {"TxnInfo state 3", d(DecodeTxnListResponse),
       B().U32(1).Str("t").U32(1).U64(1).U8(3).U64(0).U32(0).U32(0).U64(0).U32(0).Build()},
  };
}

TEST(ProtocolRobustnessTest, HostileCountsAreRefusedWithoutLargeAllocations) {
  for (const HostileCase& c : HostileBodies()) {
    SCOPED_TRACE(c.what);
    Bytes body = c.body;  // exact-size copy
    g_probe_largest = 0;
    g_probe_armed = true;
    Status s = c.decode(body.data(), body.size());
    g_probe_armed = false;
    EXPECT_EQ(s.code(), StatusCode::kMalformedRequest);
    // Nothing sized from the hostile count: allocations stay at the scale of the body.
    if (kProbeActive) {
      EXPECT_LT(g_probe_largest, 4096u) << "an allocation of " << g_probe_largest << " bytes";
    }
  }
}

// The hostile bodies differ from a valid one only in the hostile field: with a sane value in its
// place the same layout decodes (so the tests above refuse the count, not the layout).
TEST(ProtocolRobustnessTest, HostileBodiesAreOtherwiseWellFormed) {
  auto d = [](auto fn) {
    return DecodeFn([fn](const uint8_t* p, size_t n) { return StatusOf(fn(p, n)); });
  };
  using B = BodyBuilder;
  std::vector<HostileCase> sane = {
      {"ListStreams count", d(DecodeListStreamsResponse), B().U32(1).Str("a").Build()},
      {"Metadata group count", d(DecodeMetadataResponse),
       B().U32(1).U32(0).Pos().Pos().U32(2).Zeros(58).Build()},
      {"Append chunk length", d(DecodeAppendRequest),
       B().Str("s").U32(1).U32(0).U32(16).Zeros(16).Build()},
      {"Fetch block length", d(DecodeFetchResponse),
       B().U32(1).U32(0).U16(0).Str("").Pos().Pos().U32(1).Pos().U32(8).Zeros(8).Build()},
      {"durability 2", d(DecodeStreamConfig),
       B().Str("s").U32(1).U32(0).U32(0).U32(0).U8(2).U64(0).U64(0).U8(0).Build()},
      {"TxnAppend chunk length", d(DecodeTxnAppendRequest),
       B().Str("s")
           .Str("t")
           .U32(1)
           .U64(1)
           .U32(kBrokerScope)
           .U32(1)
           .U32(0)
           .U32(16)
           .Zeros(16)
           .Build()},
      {"TxnInfo state 1", d(DecodeTxnListResponse),
       B().U32(1).Str("t").U32(1).U64(1).U8(1).U64(0).U32(0).U32(0).U64(0).U32(0).Build()},
      {"TxnInfo state 2", d(DecodeTxnListResponse),
       B().U32(1).Str("t").U32(1).U64(1).U8(2).U64(0).U32(0).U32(0).U64(0).U32(0).Build()},
  };
  for (const HostileCase& c : sane) {
    SCOPED_TRACE(c.what);
    Status s = c.decode(c.body.data(), c.body.size());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

// A TxnInfo state is 1 (open) or 2 (prepared); every other byte in the golden body's first state
// field makes the whole response malformed.
TEST(ProtocolRobustnessTest, TxnInfoStateOutsideOpenAndPreparedIsRefused) {
  GoldenFrame f;
  ASSERT_NO_FATAL_FAILURE(LoadFrame("txn_list_response.bin", &f));
  // count, transactional id, epoch, serial
  const size_t state_at = 4 + 2 + std::string(kTxnId).size() + 4 + 8;
  ASSERT_EQ(f.body()[state_at], static_cast<uint8_t>(TxnState::kPrepared));
  for (int state = 0; state <= 0xFF; ++state) {
    Bytes body = f.body_copy();
    body[state_at] = static_cast<uint8_t>(state);
    auto m = DecodeTxnListResponse(body.data(), body.size());
    if (state == 1 || state == 2) {
      ASSERT_TRUE(m.ok()) << state << ": " << m.status().ToString();
      EXPECT_EQ(static_cast<int>(m->transactions[0].state), state);
    } else {
      EXPECT_EQ(m.status().code(), StatusCode::kMalformedRequest) << "state " << state;
    }
  }
}

TEST(ProtocolRobustnessTest, ChunkTruncationsAndTrailingBytesAreRefused) {
  Bytes chunk;
  ASSERT_NO_FATAL_FAILURE(ReadGolden("chunk.bin", &chunk));
  for (size_t n = 0; n < chunk.size(); ++n) {
    Bytes cut(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    auto h = storage::ValidateChunk(cut.data(), cut.size());
    EXPECT_FALSE(h.ok()) << "accepted a chunk cut at " << n;
    if (!h.ok()) {
      EXPECT_EQ(h.status().code(), StatusCode::kCorruptChunk);
    }
  }
  Bytes longer = chunk;
  longer.push_back(0);
  EXPECT_FALSE(storage::ValidateChunk(longer.data(), longer.size()).ok());
}

}  // namespace
}  // namespace nearstream::net
