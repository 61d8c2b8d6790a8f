#include "nearstream/push/record_filter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

namespace nearstream::push {

namespace {

// A strict RFC 8259 reader over one record, just enough to find one top-level member: it
// validates everything it passes over (a record that is not JSON fails the filter whatever its
// member says), decodes strings only where a comparison needs it, and keeps its container stack
// in a fixed array (no recursion, no allocation for records without escapes).
class JsonCursor {
 public:
  explicit JsonCursor(std::string_view s)
      : p_(reinterpret_cast<const uint8_t*>(s.data())), end_(p_ + s.size()) {}

  bool AtEnd() const { return p_ == end_; }

  void SkipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  // Consumes `c` after optional whitespace.
  bool Take(uint8_t c) {
    SkipSpace();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  bool Peek(uint8_t c) {
    SkipSpace();
    return p_ != end_ && *p_ == c;
  }

  // Reads a string (after optional whitespace) and sets `*raw` to its bytes between the quotes
  // and `*escaped` to whether any escape occurs in it.
  bool String(std::string_view* raw, bool* escaped) {
    if (!Take('"')) return false;
    const uint8_t* start = p_;
    *escaped = false;
    while (p_ != end_) {
      // Eight bytes at a time past the bytes that need no look (most of a record's bytes are
      // inside strings): the lowest flagged byte of the word is the first special one.
      while (end_ - p_ >= 8) {
        uint64_t w;
        std::memcpy(&w, p_, 8);
        const uint64_t special =
            ZeroBytes(w ^ kQuotes) | ZeroBytes(w ^ kBackslashes) | BytesBelow(w, 0x20);
        if (special == 0) {
          p_ += 8;
          continue;
        }
        p_ += std::countr_zero(special) / 8;
        break;
      }
      if (p_ == end_) break;
      const uint8_t c = *p_;
      if (c == '"') {
        *raw = std::string_view(reinterpret_cast<const char*>(start), size_t(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;  // a raw control character
      if (c == '\\') {
        *escaped = true;
        if (++p_ == end_) return false;
        const uint8_t e = *p_;
        if (e == 'u') {
          if (end_ - p_ < 5) return false;
          for (int i = 1; i <= 4; ++i) {
            if (HexValue(p_[i]) < 0) return false;
          }
          p_ += 4;
        } else if (std::strchr("\"\\/bfnrt", e) == nullptr || e == 0) {
          return false;
        }
      }
      ++p_;
    }
    return false;  // no closing quote
  }

  // Skips one value of any type; `depth` is the nesting depth of the container holding it.
  bool SkipValue(int depth) {
    std::array<bool, RecordFilter::kMaxJsonDepth + 1> is_object;  // containers this call opened
    int top = 0;
    for (;;) {
      // A value starts here.
      SkipSpace();
      if (p_ == end_) return false;
      const uint8_t c = *p_;
      if (c == '{' || c == '[') {
        if (depth + top + 1 > RecordFilter::kMaxJsonDepth) return false;
        ++p_;
        is_object[size_t(++top)] = (c == '{');
        if (Take(c == '{' ? '}' : ']')) {
          --top;
        } else if (c == '{') {
          if (!MemberName()) return false;
          continue;  // the member's value
        } else {
          continue;  // the array's first element
        }
      } else if (c == '"') {
        std::string_view raw;
        bool escaped = false;
        if (!String(&raw, &escaped)) return false;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (!Number()) return false;
      } else if (!Literal("true") && !Literal("false") && !Literal("null")) {
        return false;
      }
      // After a value: close containers, or go on with the next element or member.
      for (;;) {
        if (top == 0) return true;
        if (Take(',')) {
          if (is_object[size_t(top)] && !MemberName()) return false;
          break;
        }
        if (!Take(is_object[size_t(top)] ? '}' : ']')) return false;
        --top;
      }
    }
  }

 private:
  static constexpr uint64_t kOnes = 0x0101010101010101ull;
  static constexpr uint64_t kHighs = 0x8080808080808080ull;
  static constexpr uint64_t kQuotes = kOnes * '"';
  static constexpr uint64_t kBackslashes = kOnes * '\\';
  // The high bit of each byte of `w` that is zero; exact for the lowest such byte (a borrow may
  // flag bytes above it, which the caller never looks at).
  static uint64_t ZeroBytes(uint64_t w) { return (w - kOnes) & ~w & kHighs; }
  // The same for bytes below `n` (n <= 128).
  static uint64_t BytesBelow(uint64_t w, uint8_t n) { return (w - kOnes * n) & ~w & kHighs; }

  static int HexValue(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A member's name and the colon after it.
  bool MemberName() {
    std::string_view raw;
    bool escaped = false;
    return String(&raw, &escaped) && Take(':');
  }

  bool Digits() {
    const uint8_t* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != start;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool Number() {
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return false;
    }
    return true;
  }

  bool Literal(const char* word) {
    const size_t n = std::strlen(word);
    if (size_t(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

uint32_t Hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    v = v * 16 + uint32_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

// Decodes the escapes of a string JsonCursor::String validated. Returns false when it holds an
// unpaired surrogate escape (such a string equals no value: values are well-formed UTF-8).
bool Unescape(std::string_view raw, std::string* out) {
  out->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out->push_back(raw[i]);
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        uint32_t cp = Hex4(raw.data() + i + 1);
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate pairs only with a low one escaped right after it.
          if (i + 6 >= raw.size() || raw[i + 1] != '\\' || raw[i + 2] != 'u') return false;
          const uint32_t low = Hex4(raw.data() + i + 3);
          if (low < 0xDC00 || low > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        AppendUtf8(cp, out);
        break;
      }
      default: out->push_back(e);  // " \ /
    }
  }
  return true;
}

}  // namespace

Result<RecordFilter> RecordFilter::JsonFieldIn(std::string field, std::vector<std::string> values) {
  if (field.empty() || field.size() > kMaxFieldBytes) {
    return Status::InvalidArgument("a json_field_in filter's field must have 1 to " +
                                   std::to_string(kMaxFieldBytes) + " bytes");
  }
  if (values.empty() || values.size() > kMaxValues) {
    return Status::InvalidArgument("a json_field_in filter needs 1 to " +
                                   std::to_string(kMaxValues) + " values, got " +
                                   std::to_string(values.size()));
  }
  RecordFilter f;
  f.kind_ = Kind::kJsonFieldIn;
  f.field_ = std::move(field);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  f.values_ = std::move(values);
  return f;
}

Result<RecordFilter> RecordFilter::BytesContain(std::string needle) {
  if (needle.empty() || needle.size() > kMaxNeedleBytes) {
    return Status::InvalidArgument("a bytes_contain filter's needle must have 1 to " +
                                   std::to_string(kMaxNeedleBytes) + " bytes");
  }
  RecordFilter f;
  f.kind_ = Kind::kBytesContain;
  f.needle_ = std::move(needle);
  return f;
}

bool RecordFilter::Matches(std::string_view record) const {
  switch (kind_) {
    case Kind::kNone: return true;
    case Kind::kBytesContain:
      return memmem(record.data(), record.size(), needle_.data(), needle_.size()) != nullptr;
    case Kind::kJsonFieldIn: return MatchesJson(record);
  }
  return false;
}

bool RecordFilter::IsValue(std::string_view decoded) const {
  return std::binary_search(values_.begin(), values_.end(), decoded,
                            [](std::string_view a, std::string_view b) { return a < b; });
}

bool RecordFilter::MatchesJson(std::string_view record) const {
  JsonCursor c(record);
  if (!c.Take('{')) return false;
  bool passes = false;  // whether any member named field_ holds one of values_
  std::string scratch;  // decoded names and values; used only when they hold escapes
  if (!c.Take('}')) {
    for (;;) {
      std::string_view name;
      bool escaped = false;
      if (!c.String(&name, &escaped) || !c.Take(':')) return false;
      bool is_field = false;
      if (!escaped) {
        is_field = name == field_;
      } else if (Unescape(name, &scratch)) {
        is_field = scratch == field_;
      }
      if (is_field && c.Peek('"')) {
        std::string_view value;
        if (!c.String(&value, &escaped)) return false;
        if (!escaped) {
          passes = passes || IsValue(value);
        } else {
          passes = passes || (Unescape(value, &scratch) && IsValue(scratch));
        }
      } else if (!c.SkipValue(1)) {
        return false;
      }
      if (c.Take(',')) continue;
      if (c.Take('}')) break;
      return false;
    }
  }
  c.SkipSpace();
  return c.AtEnd() && passes;
}

}  // namespace nearstream::push
