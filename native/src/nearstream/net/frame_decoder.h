// Cuts a TCP byte stream into frames. Owned by the dispatcher thread of one connection.
// Bad input is reported, never trusted: a length below the header size or above the limit ends
// the connection (after an error response when the header could be read).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"
#include "nearstream/net/protocol.h"

namespace nearstream::net {

struct Frame {
  FrameHeader header;
  Bytes body;
};

struct FrameError {
  Status status;
  // The header of the offending frame when it was read, so the error can answer its request id.
  std::optional<FrameHeader> header;
};

class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Consumes `n` bytes; appends every completed frame to `out`. After an error the decoder is
  // unusable (the stream has lost its framing).
  std::optional<FrameError> Feed(const uint8_t* data, size_t n, std::vector<Frame>* out);

  // True when a frame has been started but not completed (a disconnect now truncates it).
  bool mid_frame() const { return head_filled_ > 0; }

 private:
  static constexpr uint32_t kHeadSize = kFrameLengthPrefix + kFrameHeaderSize;

  const uint32_t max_frame_bytes_;
  uint8_t head_[kHeadSize];
  uint32_t head_filled_ = 0;
  uint32_t body_size_ = 0;
  Frame current_;
};

}  // namespace nearstream::net
