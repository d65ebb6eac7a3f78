// Runs the fuzz target over every file in the given directories, and over
// deterministic mutations of each (truncations, bit flips, byte runs, size
// fields set to extremes), for builds without libFuzzer.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

uint64_t mutate_and_run(const std::vector<uint8_t>& seed, std::mt19937_64& rng, int rounds) {
  uint64_t runs = 0;
  std::vector<uint8_t> m;
  for (int i = 0; i < rounds; ++i) {
    m = seed;
    switch (i % 4) {
      case 0: m.resize(rng() % (m.size() + 1)); break;                        // truncate
      case 1: for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k)       // flip bits
                if (!m.empty()) m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
              break;
      case 2: if (!m.empty()) {                                               // overwrite a run
                const size_t at = rng() % m.size();
                const uint8_t v = static_cast<uint8_t>(rng());
                for (size_t k = at; k < std::min(m.size(), at + 1 + rng() % 16); ++k) m[k] = v;
              }
              break;
      default: if (m.size() >= 8) {                                           // extreme 32-bit field
                 const size_t at = (rng() % (m.size() / 4)) * 4;
                 const uint32_t v = (rng() & 1) ? 0xFFFFFFFFu : 0;
                 for (int k = 0; k < 4 && at + k < m.size(); ++k) m[at + k] = static_cast<uint8_t>(v >> (8 * k));
               }
    }
    LLVMFuzzerTestOneInput(m.data(), m.size());
    ++runs;
  }
  return runs;
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937_64 rng(12345);
  uint64_t runs = 0, files = 0;
  for (int a = 1; a < argc; ++a) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[a])) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      const std::vector<uint8_t> seed((std::istreambuf_iterator<char>(in)), {});
      LLVMFuzzerTestOneInput(seed.data(), seed.size());
      runs += 1 + mutate_and_run(seed, rng, 2000);
      ++files;
    }
  }
  std::printf("replayed %llu inputs from %llu seed files\n", static_cast<unsigned long long>(runs),
              static_cast<unsigned long long>(files));
  return files == 0 ? 1 : 0;
}
