// Writer-side cost: turning drained records into compressed frames, and the
// size of a realistic mix on disk. Figures: docs/performance.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "../support/sample_trace.h"
#include "session.h"

namespace {

using namespace gpuscope;

// Records in, frame bytes out: builder + delta coding + FlatBuffer + zstd,
// for one chunk of the size the writer builds (kChunkTargetBytes). Filling
// the builder (the drain's job, measured by BM_PipelineToFile) is outside
// the timed region.
void BM_EncodeFrame(benchmark::State& state) {
  capture::ChunkBuilder builder;
  capture::FrameEncoder encoder(static_cast<int>(state.range(0)));
  uint64_t frame_bytes = 0, events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    builder.clear();
    std::mt19937_64 rng(1);
    uint64_t clock = 1'000'000'000, corr = 0;
    events = 0;
    while (builder.approximate_bytes() < capture::kChunkTargetBytes)
      events += test::add_realistic_mix(builder, 64, &clock, &corr, rng);
    state.ResumeTiming();
    const auto frame = encoder.encode(builder.build(), 0);
    frame_bytes = frame.size();
    benchmark::DoNotOptimize(frame.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  state.counters["bytes_per_event"] = static_cast<double>(frame_bytes) / static_cast<double>(events);
}
BENCHMARK(BM_EncodeFrame)->Arg(-5)->Arg(-1)->Arg(-3)->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond);

// The whole capture pipeline on this machine: one producer thread pushes the
// mix through its ring while the writer drains, encodes and writes a real
// file; timed until the final frame is on disk.
void BM_PipelineToFile(benchmark::State& state) {
  constexpr uint64_t kEvents = 2'000'000;
  std::string dir = std::filesystem::temp_directory_path() / "gpuscope-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) std::abort();
  uint64_t written = 0, dropped = 0, file_bytes = 0;
  int round = 0;
  for (auto _ : state) {
    capture::SessionOptions o;
    o.ring_kb = 64 * 1024;
    o.max_threads = 4;
    o.drain_interval_ms = 1;
    o.cpu_sample_interval_ms = 0;
    const std::string path = dir + "/p" + std::to_string(round++) + ".gpuscope";
    std::string error;
    if (!capture::start_session(o, path, capture::collect_process_metadata(), &error)) std::abort();
    uint64_t ok = 0;
    for (uint64_t i = 0; i < kEvents; ++i) {  // cheap, varied values: the producer is not what is measured
      const uint64_t jitter = (i * 2654435761u) >> 20 & 4095;
      const uint64_t t = 1'000'000'000 + i * 3000 + jitter;
      ok += capture::record(fb::ApiCall(t, 900 + jitter, i, 0x7000, 1000, 1 + i % 8, 0, 1 + i % 12, 0, 0, 0, 0));
    }
    capture::stop_session(fb::EndKind::Exit, 0);
    written += ok;
    dropped += kEvents - ok;
    file_bytes += std::filesystem::file_size(path);
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<int64_t>(written));
  state.counters["dropped"] = static_cast<double>(dropped);
  state.counters["bytes_per_event"] = static_cast<double>(file_bytes) / static_cast<double>(std::max<uint64_t>(written, 1));
}
BENCHMARK(BM_PipelineToFile)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// The writer alone: rings are filled first (the writer asleep), then the
// timed stop drains them, converts, encodes and writes the file.
void BM_WriterDrainToFile(benchmark::State& state) {
  constexpr uint64_t kEvents = 1'000'000;  // fits one 64 MiB ring
  std::string dir = std::filesystem::temp_directory_path() / "gpuscope-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) std::abort();
  uint64_t written = 0, file_bytes = 0;
  int round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    capture::SessionOptions o;
    o.ring_kb = 64 * 1024;
    o.max_threads = 4;
    o.drain_interval_ms = 60'000;
    o.flush_interval_ms = 60'000;
    o.cpu_sample_interval_ms = 0;
    o.zstd_level = static_cast<int>(state.range(0));
    const std::string path = dir + "/w" + std::to_string(round++) + ".gpuscope";
    std::string error;
    if (!capture::start_session(o, path, capture::collect_process_metadata(), &error)) std::abort();
    const uint32_t fid = capture::session_strings().intern("cudaLaunchKernel");
    for (uint64_t i = 0; i < kEvents; ++i) written += capture::ApiCallScope(fid).finish(0) != 0;
    state.ResumeTiming();
    capture::stop_session(fb::EndKind::Exit, 0);
    state.PauseTiming();
    file_bytes += std::filesystem::file_size(path);
    state.ResumeTiming();
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<int64_t>(written));
  state.counters["bytes_per_event"] = static_cast<double>(file_bytes) / static_cast<double>(std::max<uint64_t>(written, 1));
}
// Argument: the zstd level (-5 is the default; docs/performance.md).
BENCHMARK(BM_WriterDrainToFile)->Arg(-5)->Arg(-1)->Arg(-3)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
