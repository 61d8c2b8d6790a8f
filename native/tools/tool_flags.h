// Command-line flags for the nearstream tools: "--name value", "--name=value" and boolean
// "--name"; everything else is positional; "--" ends the flags. Each tool lists the flags it
// knows, so a typo is an error instead of being ignored. Header-only: tools/ is not part of the
// library.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nearstream/common/status.h"

namespace nearstream::tools {

struct FlagSpec {
  std::string name;  // without the leading "--"
  bool takes_value = true;
};

class Flags {
 public:
  static Result<Flags> Parse(const std::vector<std::string>& args,
                             const std::vector<FlagSpec>& spec) {
    Flags f;
    bool flags_done = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (flags_done || a.size() < 3 || a.compare(0, 2, "--") != 0) {
        if (a == "--") {
          flags_done = true;
        } else {
          f.positional_.push_back(a);
        }
        continue;
      }
      std::string name = a.substr(2);
      std::string value;
      bool inline_value = false;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
      }
      const FlagSpec* s = nullptr;
      for (const FlagSpec& candidate : spec) {
        if (candidate.name == name) s = &candidate;
      }
      if (s == nullptr) return Status::InvalidArgument("unknown flag --" + name);
      if (!s->takes_value) {
        if (inline_value) return Status::InvalidArgument("flag --" + name + " takes no value");
        value = "true";
      } else if (!inline_value) {
        if (i + 1 >= args.size())
          return Status::InvalidArgument("flag --" + name + " needs a value");
        value = args[++i];
      }
      f.values_[name] = value;
    }
    return f;
  }

  bool Has(const std::string& name) const { return values_.contains(name); }
  const std::vector<std::string>& positional() const { return positional_; }

  std::string String(const std::string& name, const std::string& fallback = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

  Result<int64_t> Signed(const std::string& name, int64_t fallback, int64_t min,
                         int64_t max) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    int64_t v = 0;
    const std::string& s = it->second;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
      return Status::InvalidArgument("--" + name + " expects an integer, got '" + s + "'");
    }
    return InRange(name, v, min, max);
  }

  Result<uint64_t> Unsigned(const std::string& name, uint64_t fallback, uint64_t min,
                            uint64_t max) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    ASSIGN_OR_RETURN(uint64_t v, ParseSize(name, it->second, /*suffixes=*/false));
    if (v < min || v > max) return OutOfRange(name, it->second, min, max);
    return v;
  }

  // Like Unsigned, but accepts a binary suffix: 16K = 16384, 1M, 1G.
  Result<uint64_t> Size(const std::string& name, uint64_t fallback, uint64_t min,
                        uint64_t max) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    ASSIGN_OR_RETURN(uint64_t v, ParseSize(name, it->second, /*suffixes=*/true));
    if (v < min || v > max) return OutOfRange(name, it->second, min, max);
    return v;
  }

 private:
  static Result<uint64_t> ParseSize(const std::string& name, std::string_view s, bool suffixes) {
    uint64_t multiplier = 1;
    if (suffixes && !s.empty()) {
      switch (s.back()) {
        case 'k':
        case 'K': multiplier = 1ull << 10; break;
        case 'm':
        case 'M': multiplier = 1ull << 20; break;
        case 'g':
        case 'G': multiplier = 1ull << 30; break;
        default: break;
      }
      if (multiplier != 1) s.remove_suffix(1);
    }
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() ||
        v > UINT64_MAX / multiplier) {
      return Status::InvalidArgument(
          "--" + name + " expects a non-negative integer" +
          (suffixes ? std::string(" (suffixes K, M, G allowed)") : std::string()) + ", got '" +
          std::string(s) + "'");
    }
    return v * multiplier;
  }

  static Result<int64_t> InRange(const std::string& name, int64_t v, int64_t min, int64_t max) {
    if (v < min || v > max) {
      return Status::InvalidArgument("--" + name + " must be in [" + std::to_string(min) + ", " +
                                     std::to_string(max) + "], got " + std::to_string(v));
    }
    return v;
  }

  static Status OutOfRange(const std::string& name, const std::string& text, uint64_t min,
                           uint64_t max) {
    return Status::InvalidArgument("--" + name + " must be in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got " + text);
  }

  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace nearstream::tools
