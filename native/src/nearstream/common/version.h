// The product version reported by the handshake and --version.
#pragma once

namespace nearstream {
inline constexpr const char* kNearstreamVersion = "0.1.0";
}  // namespace nearstream
