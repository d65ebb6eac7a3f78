// Writes seed traces for the reader fuzzer: intact traces of a few shapes
// built with the real encoder (never committed: generated at build time).
#include <cstdio>
#include <fstream>
#include <string>

#include "../support/sample_trace.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const struct { int frames; int steps; } shapes[] = {{1, 0}, {1, 5}, {3, 20}, {8, 50}};
  int n = 0;
  for (const auto& s : shapes) {
    const auto t = gpuscope::test::make_sample_trace(s.frames, static_cast<uint64_t>(s.steps), 7 + n);
    std::ofstream(dir + "/seed-" + std::to_string(n++) + ".gpuscope", std::ios::binary)
        .write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
  return 0;
}
