#include "nearstream/common/log.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#include "nearstream/common/clock.h"

namespace nearstream {
namespace {

LogLevel ReadLevel() {
  const char* v = std::getenv("NEARSTREAM_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kInfo;
  if (std::strcmp(v, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(v, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(v, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

const char kLevelChar[] = {'D', 'I', 'W', 'E'};

}  // namespace

LogLevel MinLogLevel() {
  static const LogLevel level = ReadLevel();
  return level;
}

LogLine::LogLine(LogLevel level, const char* file, int line) {
  const int64_t now_ms = WallNowMs();
  std::time_t t = static_cast<std::time_t>(now_ms / 1000);
  const int64_t ms = now_ms % 1000;
  struct tm tm;
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
  const char* base = std::strrchr(file, '/');
  out_ << kLevelChar[static_cast<int>(level)] << ' ' << ts << '.' << (ms / 100) << (ms / 10 % 10)
       << (ms % 10) << ' ' << (base ? base + 1 : file) << ':' << line << "] ";
}

LogLine::~LogLine() {
  out_ << '\n';
  std::string s = out_.str();
  ssize_t ignored = ::write(STDERR_FILENO, s.data(), s.size());
  (void)ignored;
}

void CheckFailure(const char* file, int line, const char* cond) {
  { LogLine(LogLevel::kError, file, line) << "CHECK failed: " << cond; }
  std::abort();
}

}  // namespace nearstream
