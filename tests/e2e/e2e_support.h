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
  return environment_with(extra, {"GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID", "GPUSCOPE_PARENT_PID"});
}

inline std::vector<std::string> clean_env() {
  return environment_with({}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID",
                               "GPUSCOPE_PARENT_PID", "GPUSCOPE_PROGRESS"});
}

inline bool simgpu_built() { return std::filesystem::exists(std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libcudart.so.13"); }

struct Traced {
  ProcessResult process;
  TraceContents trace;
  std::string trace_path;  // gone once the run's directory is (run_on_simgpu)
};

std::vector<std::string> traces_in(const std::string& dir);

// A sample (a program in the build's bin/) under `gpuscope run [options]` on
// simgpu (with `env` set too), and its trace (empty unless exactly one was
// written).
inline Traced run_on_simgpu(const std::vector<std::string>& sample_and_args,
                            const std::vector<std::string>& run_options = {},
                            std::vector<std::string> env = {}) {
  TempDir dir;
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", dir.path()};
  argv.insert(argv.end(), run_options.begin(), run_options.end());
  argv.push_back("--");
  argv.push_back(bin(sample_and_args.front()));
  argv.insert(argv.end(), sample_and_args.begin() + 1, sample_and_args.end());
  Traced t;
  env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
  t.process = run(argv, environment_with(env));
  const auto traces = traces_in(dir.path());
  if (traces.size() == 1) t.trace = read_trace_file(traces[0]);
  return t;
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

// How many times the trace says `function` was called.
inline uint64_t calls(const TraceContents& t, const std::string& function) {
  const auto it = t.summary.calls_by_function.find(function);
  return it == t.summary.calls_by_function.end() ? 0 : it->second;
}

}  // namespace gpuscope::test
