// libFuzzer target: every wire decoder and the chunk validator on arbitrary bytes. A decoder must
// either refuse the input or accept it, never crash, read out of bounds or allocate from an
// untrusted count; an accepted message must re-encode to exactly the bytes it came from (the
// encoding is canonical: no field has two spellings).
//
// Not part of the default build. Build and run it with clang (Debian: apt-get install -y clang),
// from native/:
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Iinclude
//       fuzz/protocol_fuzz.cc src/nearstream/net/protocol.cc src/nearstream/storage/chunk.cc
//       src/nearstream/common/crc32c.cc src/nearstream/common/status.cc
//       src/nearstream/storage/stream_config.cc -o build/protocol_fuzz
//   mkdir -p build/fuzz-corpus && cp ../testdata/protocol/*.bin build/fuzz-corpus/
//   ./build/protocol_fuzz -max_len=4096 -rss_limit_mb=2048 -max_total_time=60 build/fuzz-corpus
//
// (one command each; the first is wrapped here). The first input byte picks the decoder and the
// rest is the body; the golden frames are only a seed corpus of realistic byte patterns.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "nearstream/net/protocol.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::net {
namespace {

// Decodes `body` with `decode`; when accepted, re-encodes it and requires the same bytes.
template <typename DecodeFn, typename EncodeFn>
void RoundTrip(const uint8_t* body, size_t n, DecodeFn decode, EncodeFn encode) {
  auto m = decode(body, n);
  if (!m.ok()) {
    if (!m.status().IsMalformedRequest()) std::abort();
    return;
  }
  Bytes again;
  ByteWriter w(&again);
  encode(w, m.value());
  if (again.size() != n || (n > 0 && std::memcmp(again.data(), body, n) != 0)) std::abort();
}

void FuzzChunk(const uint8_t* data, size_t n) {
  auto h = storage::ValidateChunk(data, n);
  if (!h.ok()) {
    if (!h.status().IsCorruptChunk()) std::abort();
    return;
  }
  // A valid chunk iterates exactly record_count records to the end of its payload.
  storage::RecordIterator it(data + storage::kChunkHeaderSize, h->payload_length);
  std::string_view record;
  uint32_t count = 0;
  size_t bytes = 0;
  while (it.Next(&record)) {
    ++count;
    bytes += storage::kRecordLengthPrefix + record.size();
  }
  if (count != h->record_count || bytes != h->payload_length) std::abort();
}

}  // namespace
}  // namespace nearstream::net

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nearstream::net;  // NOLINT: a fuzz entry point, not a header
  if (size == 0) return 0;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 18) {
    case 0: RoundTrip(body, n, DecodeHandshakeRequest, EncodeHandshakeRequest); break;
    case 1: RoundTrip(body, n, DecodeHandshakeResponse, EncodeHandshakeResponse); break;
    case 2: RoundTrip(body, n, DecodeStreamConfig, EncodeStreamConfig); break;
    case 3: RoundTrip(body, n, DecodeStreamNameRequest, EncodeStreamNameRequest); break;
    case 4: RoundTrip(body, n, DecodeListStreamsResponse, EncodeListStreamsResponse); break;
    case 5: RoundTrip(body, n, DecodeMetadataRequest, EncodeMetadataRequest); break;
    case 6: RoundTrip(body, n, DecodeMetadataResponse, EncodeMetadataResponse); break;
    case 7: RoundTrip(body, n, DecodeAppendRequest, EncodeAppendRequest); break;
    case 8: RoundTrip(body, n, DecodeAppendResponse, EncodeAppendResponse); break;
    case 9: RoundTrip(body, n, DecodeFetchRequest, EncodeFetchRequest); break;
    case 10:
      RoundTrip(body, n, DecodeFetchResponse, EncodeFetchResponse);
      RoundTrip(body, n, DecodeStatsResponse, EncodeStatsResponse);
      break;
    case 11: FuzzChunk(body, n); break;
    case 12: RoundTrip(body, n, DecodeTxnRef, EncodeTxnRef); break;
    case 13: RoundTrip(body, n, DecodeTxnInitRequest, EncodeTxnInitRequest); break;
    case 14:
      RoundTrip(body, n, DecodeTxnInitResponse, EncodeTxnInitResponse);
      RoundTrip(body, n, DecodeTxnBeginResponse, EncodeTxnBeginResponse);
      break;
    case 15: RoundTrip(body, n, DecodeTxnAppendRequest, EncodeTxnAppendRequest); break;
    case 16: RoundTrip(body, n, DecodeTxnListRequest, EncodeTxnListRequest); break;
    case 17: RoundTrip(body, n, DecodeTxnListResponse, EncodeTxnListResponse); break;
  }
  return 0;
}
