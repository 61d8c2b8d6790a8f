// Minimal leveled logging to stderr: one line per statement, written with a single write(2) so
// lines of different threads never interleave.
#pragma once

#include <sstream>

namespace nearstream {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped (default kInfo;
// NEARSTREAM_LOG_LEVEL=debug|info|warning|error).
LogLevel MinLogLevel();

class LogLine;
// Lowers the precedence of a LogLine chain so NS_LOG can be a single expression.
struct LogVoidify {
  void operator&(const LogLine& /*line*/) {}
};

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& v) {
    out_ << v;
    return *this;
  }

 private:
  std::ostringstream out_;
};

}  // namespace nearstream

// The ternary (glog's trick) keeps `if (x) NS_LOG(...) << y; else ...` unambiguous.
#define NS_LOG(level)                                           \
  (::nearstream::LogLevel::level < ::nearstream::MinLogLevel()) \
      ? (void)0                                                 \
      : ::nearstream::LogVoidify() &                            \
            ::nearstream::LogLine(::nearstream::LogLevel::level, __FILE__, __LINE__)

// Always-on invariant check: a broken invariant aborts with a message instead of corrupting data.
#define NS_CHECK(cond) ((cond) ? (void)0 : ::nearstream::CheckFailure(__FILE__, __LINE__, #cond))

namespace nearstream {
[[noreturn]] void CheckFailure(const char* file, int line, const char* cond);
}  // namespace nearstream
