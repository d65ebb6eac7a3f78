// Writes seed traces for the reader fuzzer: intact traces of a few shapes
// and two damaged ones, built with the real encoder (never committed:
// generated at build time).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../support/sample_trace.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const struct { int frames; int steps; } shapes[] = {{1, 0}, {1, 5}, {3, 20}, {8, 50}};
  int n = 0;
  const auto write = [&](const std::vector<uint8_t>& bytes) {
    std::ofstream(dir + "/seed-" + std::to_string(n++) + ".gpuscope", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  for (const auto& s : shapes)
    write(gpuscope::test::make_sample_trace(s.frames, static_cast<uint64_t>(s.steps), 7 + n).bytes);
  // Damaged stretches: broken frames between good ones, and zeros after the last.
  auto t = gpuscope::test::make_sample_trace(3, 10, 99);
  const auto broken = gpuscope::test::broken_frames(1, 40);
  auto damaged = t.bytes;
  damaged.insert(damaged.begin() + static_cast<long>(t.frame_offsets[1]), broken.begin(), broken.end());
  write(damaged);
  t.bytes.resize(t.bytes.size() + 4096, 0);
  write(t.bytes);
  return 0;
}
