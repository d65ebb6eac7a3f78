// One recording session for a whole benchmark program: 64 MiB rings so the
// writer (draining every millisecond on the other core, as in a real run)
// keeps up and loops measure recording, not dropping.
#pragma once

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "session.h"

namespace gpuscope::bench {

inline std::string& trace_dir() {
  static std::string dir;
  return dir;
}

inline void ensure_session(std::vector<capture::TraceSource*> sources = {}) {
  using namespace capture;
  if (current_phase() == Phase::Recording) return;
  trace_dir() = std::filesystem::temp_directory_path() / "gpuscope-bench-XXXXXX";
  if (mkdtemp(trace_dir().data()) == nullptr) std::abort();
  SessionOptions o;
  o.ring_kb = 64 * 1024;
  o.max_threads = 8;
  o.drain_interval_ms = 1;
  o.cpu_sample_interval_ms = 0;
  std::string error;
  if (!start_session(o, trace_dir() + "/bench.gpuscope", collect_process_metadata(), &error, std::move(sources))) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::abort();
  }
}

// main() of a benchmark program that may have started a session.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  if (capture::current_phase() == capture::Phase::Recording) {
    capture::stop_session(fb::EndKind::Exit, 0);
    std::filesystem::remove_all(trace_dir());
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace gpuscope::bench
