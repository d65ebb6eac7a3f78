// What touching memory costs on this machine after the program sat idle:
// the per-call and launch-bound figures write a 1 MiB ring and a trace.
// On this project's CI VM it moves by two orders of magnitude from one
// minute to the next (5 to 1300 ns per 64-byte line; writes more often
// than reads): the host's memory management (dirty-page tracking for
// snapshots, reclaim of idle guest memory) or a neighbour saturating memory.
// A gpuscope figure measured while this reads high is that cost, not ours.
//
//   write_after_idle [PAUSE_MS]   (default 50, the per-call benchmark's pause)
//
// docs/performance.md ("Twelfth session") has the figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = 1 << 20;  // a thread's ring
constexpr size_t kLine = 64;
constexpr size_t kLinesPerRound = 10'000;  // as many records as one run of the per-call benchmark
constexpr int kRounds = 8;
constexpr double kSlowNsPerLine = 20;  // streaming through cache misses on bare metal: 2-6 ns

double ns_per_line(std::chrono::steady_clock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) / kLinesPerRound;
}

// Writes (or reads) the next kLinesPerRound lines after each pause, as the
// ring's producer does, wrapping at the end; returns the median ns per line.
template <class Touch> double after_pauses(std::vector<unsigned char>& memory, int pause_ms, Touch touch) {
  std::vector<double> rounds;
  size_t pos = 0;
  for (int r = 0; r < kRounds; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kLinesPerRound; ++i, pos = (pos + kLine) % kBytes) touch(memory.data() + pos, i);
    rounds.push_back(ns_per_line(std::chrono::steady_clock::now() - start));
  }
  std::nth_element(rounds.begin(), rounds.begin() + kRounds / 2, rounds.end());
  return rounds[kRounds / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int pause_ms = argc > 1 ? std::atoi(argv[1]) : 50;
  std::vector<unsigned char> memory(kBytes, 1);
  volatile unsigned sink = 0;
  const double reads = after_pauses(memory, pause_ms, [&](unsigned char* line, size_t) { sink = sink + line[0] + line[32]; });
  const double writes = after_pauses(memory, pause_ms, [](unsigned char* line, size_t i) {
    std::memset(line, static_cast<int>(i), kLine);
  });
  std::printf("memory after %d ms idle: writes %.1f ns per 64-byte line, reads %.1f (medians of %d rounds of %zu lines)\n",
              pause_ms, writes, reads, kRounds, kLinesPerRound);
  if (std::max(writes, reads) > kSlowNsPerLine)
    std::printf("memory after idle is slow on this machine now: per-call and launch-bound figures measured "
                "now carry that cost, not gpuscope's alone\n");
  return 0;
}
