#pragma once

#include <string>
#include <thread>

namespace nearstream {

// Names a thread (Linux keeps 15 bytes; longer names are cut), so `top -H`, perf and
// /proc/<pid>/task/*/comm tell the dispatcher, workers, push threads and maintenance apart.
// Called by the thread's creator right after creating it, so the name is there when Start
// returns. Best effort: a failure only leaves the inherited name.
void NameThread(std::thread& thread, const std::string& name);

}  // namespace nearstream
