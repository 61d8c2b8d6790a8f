// Cuts a TCP byte stream into frames. Owned by the dispatcher thread of one connection.
// Bad input is reported, never trusted: a length below the header size or above the limit ends
// the connection (after an error response when the header could be read).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"
#include "nearstream/net/protocol.h"

namespace nearstream::net {

// A frame body: filled once, so it skips the zero-fill a std::vector would do first.
class FrameBody {
 public:
  FrameBody() = default;
  explicit FrameBody(size_t n) : data_(n > 0 ? new uint8_t[n] : nullptr), size_(n) {}
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

struct Frame {
  FrameHeader header;
  FrameBody body;
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

  // Large bodies are received straight into their buffer (one copy less on the append path):
  // DirectSpace() is where the rest of the current body goes (empty unless a body is being
  // filled), CommitDirect(n) says n bytes were written there.
  std::pair<uint8_t*, size_t> DirectSpace();
  void CommitDirect(size_t n, std::vector<Frame>* out);

  // True when a frame has been started but not completed (a disconnect now truncates it).
  bool mid_frame() const { return head_filled_ > 0; }

 private:
  static constexpr uint32_t kHeadSize = kFrameLengthPrefix + kFrameHeaderSize;

  const uint32_t max_frame_bytes_;
  uint8_t head_[kHeadSize];
  uint32_t head_filled_ = 0;
  uint32_t body_filled_ = 0;
  Frame current_;
};

}  // namespace nearstream::net
