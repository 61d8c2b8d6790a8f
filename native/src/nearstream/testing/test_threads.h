#pragma once

// This process's threads as the kernel lists them, for tests of thread names and priorities.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace nearstream::testing {

// (name, /proc/self/task/<tid>) of every thread of this process.
inline std::vector<std::pair<std::string, std::filesystem::path>> ThreadsOfThisProcess() {
  std::vector<std::pair<std::string, std::filesystem::path>> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    out.emplace_back(name, task.path());
  }
  return out;
}

// The nice value of a thread from its /proc task directory (field 19 of its stat line).
inline int NiceOf(const std::filesystem::path& task) {
  std::ifstream stat(task / "stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command may hold spaces; the fields after its closing parenthesis start at field 3.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 19; ++i) fields >> field;
  return std::stoi(field);
}

}  // namespace nearstream::testing
