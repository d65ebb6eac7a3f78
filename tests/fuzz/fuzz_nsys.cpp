// Fuzz target: arbitrary bytes as an Nsight Systems SQLite export, through
// the importer (SQLite reads a file, so the input goes to a temporary file
// first): listing its processes, importing the busiest and another, and
// reading back the trace each import wrote. Nothing may crash, leak, read
// out of bounds or hang; run under libFuzzer (clang, GPUSCOPE_FUZZ=ON) or
// replayed over the generated seeds with deterministic mutations by
// replay_main.cpp in the ordinary and sanitizer builds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_input_file.h"
#include "import.h"
#include "trace_reader.h"

namespace {

const std::string& input_path() { return gpuscope::fuzz::input_path("nsys"); }

bool write_input(const uint8_t* data, size_t size) { return gpuscope::fuzz::write_input(input_path(), data, size); }

void import_and_read_back(const std::string& path, int pid) {
  using namespace gpuscope;
  importer::TraceBuilder builder(importer::ImportSourceInfo{"nsys-sqlite", path, "", {}}, "");
  const importer::ImportResult r = importer::import_nsys(path, pid, builder);
  if (r.fd < 0) return;
  reader::TraceReader trace;
  std::string error;
  if (trace.open_file("/proc/self/fd/" + std::to_string(r.fd), &error)) {
    uint64_t records = 0;
    trace.read([&](const reader::ChunkView& c) { records += c.api_calls.size() + c.kernels.size(); });
    volatile uint64_t sink = records;
    (void)sink;
  }
  ::close(r.fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!write_input(data, size)) return 0;
  std::string error;
  const std::vector<int> pids = gpuscope::importer::nsys_processes(input_path(), &error);
  import_and_read_back(input_path(), 0);
  // pid 0 imported the busiest process; the last one listed takes the
  // other path (a process asked for by number).
  if (pids.size() > 1) import_and_read_back(input_path(), pids.back());
  return 0;
}
