#include "nearstream/broker/metrics.h"

#include <time.h>

#include <set>

namespace nearstream::broker {

std::string RenderPrometheus(const MetricValues& values) {
  std::string out;
  std::set<std::string> typed;
  for (const auto& [name, value] : values) {
    std::string base = name.substr(0, name.find('{'));
    if (typed.insert(base).second) {
      bool counter = base.size() > 6 && base.compare(base.size() - 6, 6, "_total") == 0;
      out += "# TYPE " + base + (counter ? " counter\n" : " gauge\n");
    }
    out += name + " " + std::to_string(value) + "\n";
  }
  return out;
}

uint64_t ProcessCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace nearstream::broker
