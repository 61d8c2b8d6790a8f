// Little-endian encoding helpers for the wire protocol and on-disk formats. ByteWriter appends to
// a growable buffer; ByteReader is bounds-checked and sticky-fails, so a decoder can read a whole
// message and check ok() once at the end instead of after every field.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace nearstream {

using Bytes = std::vector<uint8_t>;

inline void StoreLe16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void StoreLe32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void StoreLe64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t LoadLe16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Nearstream targets little-endian hosts");

class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}

  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void I64(int64_t v) { Raw(&v, 8); }
  // Strings are u16 length + UTF-8 bytes; longer ones are cut at 65535 bytes so the frame stays
  // well-formed (names are validated far below that; messages are informational).
  void Str(std::string_view s) {
    if (s.size() > 0xFFFF) s = s.substr(0, 0xFFFF);
    U16(static_cast<uint16_t>(s.size()));
    Raw(s.data(), s.size());
  }
  // Byte blobs are u32 length + bytes.
  void Blob(const uint8_t* data, size_t n) {
    U32(static_cast<uint32_t>(n));
    Raw(data, n);
  }
  void Raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_->insert(out_->end(), p, p + n);
  }
  // Reserves n bytes and returns their offset, for lengths patched in afterwards.
  size_t Skip(size_t n) {
    size_t at = out_->size();
    out_->resize(at + n);
    return at;
  }
  size_t size() const { return out_->size(); }
  Bytes* buffer() { return out_; }

 private:
  Bytes* out_;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

  uint8_t U8() {
    uint8_t v = 0;
    Copy(&v, 1);
    return v;
  }
  uint16_t U16() {
    uint16_t v = 0;
    Copy(&v, 2);
    return v;
  }
  uint32_t U32() {
    uint32_t v = 0;
    Copy(&v, 4);
    return v;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Copy(&v, 8);
    return v;
  }
  int64_t I64() {
    int64_t v = 0;
    Copy(&v, 8);
    return v;
  }
  std::string Str() {
    uint16_t n = U16();
    const uint8_t* p = Take(n);
    return p ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
  }
  // Returns a pointer into the underlying buffer (no copy) or nullptr when out of bounds.
  const uint8_t* Take(size_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* p = p_;
    p_ += n;
    return p;
  }
  // A count that each element of which needs at least min_element_bytes: refuses counts that the
  // remaining bytes cannot possibly hold, so a hostile count never drives a huge reserve().
  uint32_t Count(size_t min_element_bytes) {
    uint32_t n = U32();
    if (ok_ && min_element_bytes > 0 && n > remaining() / min_element_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  void Fail() { ok_ = false; }

 private:
  void Copy(void* dst, size_t n) {
    const uint8_t* p = Take(n);
    if (p) std::memcpy(dst, p, n);
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace nearstream
