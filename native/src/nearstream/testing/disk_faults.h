// Fails the disk of a real broker process on demand: the environment that preloads the library
// of disk_fault_preload.cc into it, and the switches that arm and clear its faults while it runs.
//
//   DiskFaults faults;
//   options.env = faults.BrokerEnv();          // TestBroker::Options, before the broker starts
//   faults.Arm(DiskFaults::kSyncFails, true);  // its fsyncs fail with EIO from now on
//   EXPECT_GT(faults.Injected(), 0u);          // ...and the broker did meet one
//
// Header-only, for test binaries (NEARSTREAM_DISK_FAULT_PRELOAD_PATH is defined by the test
// target only).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {

class DiskFaults {
 public:
  // The names are the switch files the preloaded library looks for.
  static constexpr const char* kSyncFails = "sync-fails";  // fsync, fdatasync: EIO
  static constexpr const char* kDiskFull = "disk-full";    // pwrite, pwritev: ENOSPC

  DiskFaults() : dir_("disk-faults") {}

  // For TestBroker::Options::env. A sanitized broker's runtime wants to come first among the
  // libraries it loads; the preloaded one comes before it, which only forwards calls, so that
  // check is turned off (the other sanitizer options this process has are kept).
  std::vector<std::string> BrokerEnv() const {
    std::string asan = "verify_asan_link_order=0";
    if (const char* inherited = std::getenv("ASAN_OPTIONS"); inherited != nullptr) {
      asan = std::string(inherited) + ":" + asan;
    }
    return {"LD_PRELOAD=" NEARSTREAM_DISK_FAULT_PRELOAD_PATH,
            "NEARSTREAM_DISK_FAULTS=" + dir_.path(), "ASAN_OPTIONS=" + asan};
  }

  // Arms (or clears) `fault` for every later call of the broker.
  void Arm(const char* fault, bool on) {
    const std::string path = dir_.path() + "/" + fault;
    if (on) {
      std::ofstream(path).flush();
    } else {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  }

  // How many calls failed by this broker's faults so far.
  size_t Injected() const {
    std::ifstream in(dir_.path() + "/injected");
    size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

 private:
  TempDir dir_;
};

}  // namespace nearstream::testing
