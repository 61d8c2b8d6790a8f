#include "nearstream/net/frame_decoder.h"

#include <algorithm>
#include <cstring>

namespace nearstream::net {

std::optional<FrameError> FrameDecoder::Feed(const uint8_t* data, size_t n,
                                             std::vector<Frame>* out) {
  while (n > 0) {
    if (head_filled_ < kHeadSize) {
      size_t take = std::min<size_t>(n, kHeadSize - head_filled_);
      std::memcpy(head_ + head_filled_, data, take);
      head_filled_ += static_cast<uint32_t>(take);
      data += take;
      n -= take;
      if (head_filled_ >= kFrameLengthPrefix) {
        uint32_t length = LoadLe32(head_);
        if (length < kFrameHeaderSize) {
          return FrameError{Status(StatusCode::kMalformedRequest,
                                   "frame length " + std::to_string(length) +
                                       " is shorter than the 12-byte frame header"),
                            std::nullopt};
        }
      }
      if (head_filled_ < kHeadSize) continue;
      uint32_t length = LoadLe32(head_);
      current_.header = DecodeFrameHeader(head_ + kFrameLengthPrefix);
      if (length > max_frame_bytes_) {
        return FrameError{Status(StatusCode::kFrameTooLarge,
                                 "frame of " + std::to_string(length) +
                                     " bytes exceeds the broker limit of " +
                                     std::to_string(max_frame_bytes_)),
                          current_.header};
      }
      body_size_ = length - kFrameHeaderSize;
      current_.body.clear();
      current_.body.reserve(body_size_);
    }
    size_t take = std::min<size_t>(n, body_size_ - current_.body.size());
    current_.body.insert(current_.body.end(), data, data + take);
    data += take;
    n -= take;
    if (current_.body.size() == body_size_) {
      out->push_back(std::move(current_));
      current_ = Frame();
      head_filled_ = 0;
    }
  }
  return std::nullopt;
}

}  // namespace nearstream::net
