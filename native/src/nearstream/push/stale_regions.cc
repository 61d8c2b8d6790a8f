#include "nearstream/push/stale_regions.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "nearstream/common/log.h"

namespace nearstream::push {

std::string RegionName(long pid, unsigned long long id) {
  return std::string(kRegionNamePrefix) + std::to_string(pid) + "-" + std::to_string(id);
}

std::string SegmentFilePrefix(long pid) {
  return std::string(kSegmentFileNamePrefix) + std::to_string(pid) + "-";
}

namespace {

// The broker pid in a file name that starts with `prefix` and a pid, or -1.
long PidAfter(const char* name, const char* prefix_text) {
  const size_t prefix = std::strlen(prefix_text);
  if (std::strncmp(name, prefix_text, prefix) != 0) return -1;
  char* end = nullptr;
  errno = 0;
  long pid = std::strtol(name + prefix, &end, 10);
  if (errno != 0 || end == name + prefix || *end != '-' || pid <= 0) return -1;
  return pid;
}

// The broker pid of a region or segment file name, or -1 when the name is not one of ours.
long PidOf(const char* name) {
  const long pid = PidAfter(name, kRegionNamePrefix);
  return pid >= 0 ? pid : PidAfter(name, kSegmentFileNamePrefix);
}

}  // namespace

std::vector<std::string> RemoveRegionsOfDeadBrokers(const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  while (dirent* e = ::readdir(d)) {
    const long pid = PidOf(e->d_name);
    if (pid < 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or EPERM)
    const std::string path = dir + "/" + e->d_name;
    if (::unlink(path.c_str()) == 0) {
      removed.emplace_back(e->d_name);
      NS_LOG(kWarning) << "removed " << path << " of dead broker pid " << pid;
    }
  }
  ::closedir(d);
  return removed;
}

}  // namespace nearstream::push
