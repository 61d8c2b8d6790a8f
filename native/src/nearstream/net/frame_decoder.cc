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
          return FrameError{Status::MalformedRequest("frame length " + std::to_string(length) +
                                                     " is shorter than the 12-byte frame header"),
                            std::nullopt};
        }
      }
      if (head_filled_ < kHeadSize) continue;
      uint32_t length = LoadLe32(head_);
      current_.header = DecodeFrameHeader(head_ + kFrameLengthPrefix);
      if (length > max_frame_bytes_) {
        return FrameError{Status::FrameTooLarge("frame of " + std::to_string(length) +
                                                " bytes exceeds the broker limit of " +
                                                std::to_string(max_frame_bytes_)),
                          current_.header};
      }
      current_.body = FrameBody(length - kFrameHeaderSize);
      body_filled_ = 0;
    }
    size_t take = std::min<size_t>(n, current_.body.size() - body_filled_);
    if (take > 0) std::memcpy(current_.body.data() + body_filled_, data, take);
    data += take;
    n -= take;
    CommitDirect(take, out);
  }
  return std::nullopt;
}

std::pair<uint8_t*, size_t> FrameDecoder::DirectSpace() {
  if (head_filled_ < kHeadSize) return {nullptr, 0};
  return {current_.body.data() + body_filled_, current_.body.size() - body_filled_};
}

void FrameDecoder::CommitDirect(size_t n, std::vector<Frame>* out) {
  body_filled_ += static_cast<uint32_t>(n);
  if (body_filled_ == current_.body.size()) {
    out->push_back(std::move(current_));
    current_ = Frame();
    head_filled_ = 0;
    body_filled_ = 0;
  }
}

}  // namespace nearstream::net
