// Writes damaged traces for the reader's damage benchmarks (docs/performance.md,
// "Reader"): the CLI is then timed on them (`time gpuscope info FILE`).
//   damaged_traces broken-frames FILE N   a good frame, N broken 24-byte frames
//     (intact headers, no payload: each fails its payload check), a good end frame
//   damaged_traces sparse-zeros FILE GIB  a good frame, then GIB GiB of zeros as a
//     hole (ftruncate: costs no disk)
//   damaged_traces dense-zeros FILE MIB   a good frame, then MIB MiB of written zeros
// Not a Google Benchmark: what is measured is the gpuscope command on the file.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "../support/sample_trace.h"

namespace {

using namespace gpuscope;

void append(std::ofstream& out, const void* data, size_t n) {
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

int broken_frames(const char* path, uint64_t n) {
  test::SampleTrace t = test::make_sample_trace(2, 2000);
  const auto broken = test::broken_frames(1, n);
  t.bytes.insert(t.bytes.begin() + static_cast<long>(t.frame_offsets[1]), broken.begin(), broken.end());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  append(out, t.bytes.data(), t.bytes.size());
  out.close();
  std::printf("wrote %s: %llu broken frames between two good ones\n", path, static_cast<unsigned long long>(n));
  return out ? 0 : 1;
}

int zeros(const char* path, uint64_t bytes, bool sparse) {
  const test::SampleTrace start = test::make_sample_trace(1, 2000);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    append(out, start.bytes.data(), start.bytes.size());
    const std::vector<char> block(1 << 20, 0);
    for (uint64_t left = sparse ? 0 : bytes; left > 0; left -= std::min<uint64_t>(left, block.size()))
      append(out, block.data(), std::min<uint64_t>(left, block.size()));
  }
  if (sparse && truncate(path, static_cast<off_t>(start.bytes.size() + bytes)) != 0) {
    std::perror(path);
    return 1;
  }
  std::printf("wrote %s: a good frame, then %llu bytes of zeros%s\n", path, static_cast<unsigned long long>(bytes),
              sparse ? " (a hole)" : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4) {
    const std::string mode = argv[1];
    const uint64_t n = std::strtoull(argv[3], nullptr, 10);
    if (mode == "broken-frames") return broken_frames(argv[2], n);
    if (mode == "sparse-zeros") return zeros(argv[2], n << 30, true);
    if (mode == "dense-zeros") return zeros(argv[2], n << 20, false);
  }
  std::fprintf(stderr, "usage: damaged_traces broken-frames|sparse-zeros|dense-zeros FILE N\n");
  return 2;
}
