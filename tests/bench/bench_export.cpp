// The exporters' throughput: a synthesized trace (the realistic mix of
// tests/support/sample_trace.h: API calls with copies, syncs, launches and
// allocations) read from a file and written as Chrome JSON, Perfetto
// protobuf or CSV to /dev/null. Items are records read. Figures: docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "../support/sample_trace.h"
#include "chrome_trace.h"

namespace {

using namespace gpuscope;

constexpr uint64_t kStepsPerFrame = 60'000;  // ~1.8 records per step, ~2 MiB chunks as the writer makes

// The trace file for `events` records (about), made once per size.
const std::string& trace_file(uint64_t events) {
  static std::map<uint64_t, std::string> files;
  auto& path = files[events];
  if (path.empty()) {
    path = (std::filesystem::temp_directory_path() / ("gpuscope-bench-export-" + std::to_string(events) + ".gpuscope"));
    const int frames = static_cast<int>(events / (kStepsPerFrame * 9 / 5) + 1);
    const test::SampleTrace t = test::make_sample_trace(frames, kStepsPerFrame);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
  return path;
}

using ExportFunction = exporter::ExportResult (*)(reader::TraceReader&, exporter::Output&, exporter::ExportOptions);

template <ExportFunction kWrite> void BM_Export(benchmark::State& state) {
  const std::string& path = trace_file(static_cast<uint64_t>(state.range(0)));
  std::FILE* sink = std::fopen("/dev/null", "wb");
  uint64_t records = 0, events = 0;
  for (auto _ : state) {
    reader::TraceReader r;
    std::string error;
    if (!r.open_file(path, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    exporter::Output out(sink);
    const auto result = kWrite(r, out, {});
    records = result.stats.records;
    events = result.stats.events;
  }
  std::fclose(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * records));
  state.counters["events_out"] = static_cast<double>(events);
}
BENCHMARK(BM_Export<exporter::write_chrome_trace>)
    ->Name("BM_ExportChromeJson")
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Export<exporter::write_perfetto_trace>)
    ->Name("BM_ExportPerfetto")
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Export<exporter::write_csv>)
    ->Name("BM_ExportCsv")
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
