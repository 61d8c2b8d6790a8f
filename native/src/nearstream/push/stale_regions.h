// Regions and segment files left behind by a broker that died without unlinking them (kill -9,
// power loss of the process): found by the pid in their name and removed when the next broker
// starts.
#pragma once

#include <string>
#include <vector>

namespace nearstream::push {

// The name prefix of every region a broker creates: "nearstream-push-<broker pid>-<id>".
inline constexpr char kRegionNamePrefix[] = "nearstream-push-";
// Segment files (docs/shm-layout.md, "Segment files"): <prefix><broker pid>-<number>.
inline constexpr char kSegmentFileNamePrefix[] = "nearstream-seg-";

// The region file name for subscription `id` of broker `pid`.
std::string RegionName(long pid, unsigned long long id);
// The name prefix of broker `pid`'s segment files ("nearstream-seg-<pid>-").
std::string SegmentFilePrefix(long pid);

// Unlinks the regions and segment files in `dir` whose broker pid names no live process (kill(pid,
// 0) says ESRCH). A region of a live process - this broker, another broker sharing the directory,
// or a process that reused a dead broker's pid - is left alone: removing a live region would break
// its consumers, keeping a stale one only costs memory until that pid is gone too. Returns the
// names removed; a directory that cannot be read removes nothing.
std::vector<std::string> RemoveRegionsOfDeadBrokers(const std::string& dir);

}  // namespace nearstream::push
