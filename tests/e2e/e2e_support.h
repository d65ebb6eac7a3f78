// Paths and helpers shared by the end-to-end tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "../support/subprocess.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::test {

inline std::string bin(const std::string& name) { return std::string(GPUSCOPE_BIN_DIR) + "/" + name; }
inline std::string gpuscope_exe() { return bin("gpuscope"); }
inline std::string capture_library() { return std::string(GPUSCOPE_LIB_DIR) + "/libgpuscope.so"; }

// Environment for running a program with the library preloaded directly.
inline std::vector<std::string> preload_env(const std::string& output,
                                            std::vector<std::string> extra = {}) {
  extra.push_back("LD_PRELOAD=" + capture_library());
  extra.push_back("GPUSCOPE_OUTPUT=" + output);
  return environment_with(extra, {"GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID"});
}

inline std::vector<std::string> clean_env() {
  return environment_with({}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID"});
}

inline std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".gpuscope") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.substr(start, end - start).find(needle) != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

}  // namespace gpuscope::test
