// A one-pass summary of a trace: who wrote it, how many records of each
// kind, what was dropped, how it ended, and what was wrong with the file.
// `gpuscope info` prints it; tests assert on it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "process_metadata.h"
#include "side_tables.h"
#include "trace_reader.h"

namespace gpuscope::reader {

// The process a trace came from: the struct the library wrote it from
// (protocol/process_metadata.h).
using ProcessInfo = protocol::ProcessMetadata;

struct EndInfo {
  fb::EndKind kind = fb::EndKind::Unknown;
  int exit_status = 0;
  // Format 1.3: the first step of a two-step end (main returned 0, then an
  // atexit handler called exit(8)); Unknown for a one-step end.
  fb::EndKind began_kind = fb::EndKind::Unknown;
  int began_status = 0;
  uint64_t end_monotonic_ns = 0;
  uint64_t events_written = 0;
  uint32_t frames_written = 0;
  uint64_t bytes_written = 0;
  std::string message;
  uint32_t tick_rate_restarts = 0;  // format 2.3
};

// One count per DropReason this reader knows, then one for reasons a newer
// writer added: they are still drops, and the total must say so.
inline constexpr size_t kDropReasons = static_cast<size_t>(fb::DropReason::MAX) + 2;
inline constexpr size_t kUnknownDropReason = kDropReasons - 1;

struct RecordCounts {
  uint64_t api_calls = 0, copies = 0, memsets = 0, kernels = 0, syncs = 0, allocs = 0,
           cpu_samples = 0, markers = 0, gpu_samples = 0, graph_launches = 0, host_samples = 0,
           process_gpu_samples = 0;
  // Of the typed records above, those the device reported (CUPTI,
  // source = Device); the rest are the hooks'.
  struct {
    uint64_t copies = 0, memsets = 0, kernels = 0, syncs = 0, allocs = 0;
    uint64_t total() const { return copies + memsets + kernels + syncs + allocs; }
  } device;
  uint64_t total() const {
    return api_calls + copies + memsets + kernels + syncs + allocs + cpu_samples + markers + gpu_samples +
           graph_launches + host_samples + process_gpu_samples;
  }
};

// CUDA graph launches (format 1.3): what they ran, from the nodes of the
// graphs they launched.
struct GraphWork {
  uint64_t kernels = 0, copies = 0, memsets = 0, other_nodes = 0;
  uint64_t unknown_launches = 0;      // launches of a graph gpuscope did not see instantiated
  uint64_t conditional_launches = 0;  // launches of graphs with conditional nodes (bodies not counted)
  void add(const fb::GraphLaunch& g);
};

struct TraceSummary {
  FileInfo file;
  std::optional<ProcessInfo> process;
  RecordCounts counts;
  uint64_t first_ns = 0;  // earliest record start
  uint64_t last_ns = 0;   // latest record end
  std::array<uint64_t, kDropReasons> drops{};  // as of the last frame read
  std::optional<EndInfo> end;                  // the last Totals frame
  std::unordered_map<uint32_t, std::string> strings;
  // Every call by function: ApiCall records plus the nested calls that
  // were only counted (CallCount).
  std::map<std::string, uint64_t> calls_by_function;
  uint64_t counted_calls = 0;  // of those, counted rather than recorded
  // Calls that returned non-zero, by function and result code (outermost
  // calls only: a runtime call's own driver call says the same thing).
  std::map<std::pair<std::string, int>, uint64_t> nonzero_results;
  GraphWork graphs;
  // Outermost calls a stream capture turned into graph nodes instead of
  // running them (ApiCall flag, format 1.3).
  uint64_t captured_calls = 0;
  // Consecutive "not ready" polls of one query on one handle, recorded as
  // one ApiCall each run (ApiCall.repeat, format 1.3): how many polls, in
  // how many records. The polls are in calls_by_function.
  uint64_t coalesced_polls = 0, coalesced_records = 0;
  std::vector<container::DeviceDescription> devices;   // the latest description of each
  std::vector<container::LibraryLoadEvent> loads;
  std::optional<container::EnvironmentProbeData> probe;
  std::optional<container::DeviceCollectionData> device_collection;  // the latest one (format 1.1)
  std::optional<container::StackCaptureData> stack_capture;          // the latest one (format 1.3)
  std::optional<container::HostSamplingData> host_sampling;          // the latest one (format 1.4)
  std::optional<container::ImportSourceData> import_source;          // imported traces (format 1.5)
  std::vector<container::ModuleDescription> modules;
  std::unordered_map<uint32_t, std::vector<uint64_t>> stacks;  // id -> frames
  std::unordered_map<uint64_t, container::PythonCodeDescription> python_codes;  // by key (format 1.6)
  std::optional<container::PythonStacksData> python_stacks;                     // the latest one (format 1.6)
  ReadStats stats;
  std::vector<Problem> problems;

  uint64_t dropped_total() const;
  // The interned string, or "<unknown #id>" when the trace lost it.
  std::string name_of(uint32_t id) const;
  // Whether the GPU was simgpu, the project's simulated GPU: a device says so
  // in its name, as simgpu names every device ("simgpu H200 (simulated)";
  // every node file's names end in "(simulated)"). The rule of every output
  // that labels a trace simulated (export, HTML report).
  bool on_simulated_gpu() const;
};

// The per-record half of a summary: record counts, calls per function and
// result, and the time the records span. It needs nothing but each chunk's
// records, so a pass that reads ahead tallies them on the reading thread
// (TraceReader::read_overlapped's `on_reading_thread`), off the model's.
class RecordTally {
 public:
  void add(const ChunkView& chunk);
  // Into `s`, whose strings name the functions (all chunks read).
  void finish_into(TraceSummary* s) const;

 private:
  void add_calls(uint32_t function_id, uint64_t n);
  RecordCounts counts_;
  GraphWork graphs_;
  uint64_t counted_calls_ = 0, captured_calls_ = 0, coalesced_polls_ = 0, coalesced_records_ = 0;
  uint64_t first_ = UINT64_MAX, last_ = 0;
  // Calls by function name id: ids below kDenseIds index the vector (the
  // string table numbers names densely; a hash per call was 2 % of
  // `analyze`), a damaged trace's far ids go to the map.
  static constexpr uint32_t kDenseIds = 1u << 16;
  std::vector<std::optional<uint64_t>> calls_by_id_;
  std::unordered_map<uint32_t, uint64_t> calls_by_far_id_;
  std::map<std::pair<uint32_t, int>, uint64_t> results_by_id_;
};

// Builds a TraceSummary chunk by chunk, so that other passes over the
// records (the analyzer's model) share one read of the file.
class SummaryBuilder {
 public:
  explicit SummaryBuilder(const FileInfo& file);
  void add(const ChunkView& chunk) {
    add_tables(chunk);
    records_.add(chunk);
  }
  // add() in two halves, for a pass that tallies the records on another
  // thread: the chunk's tables (strings, metadata, drops, totals) here,
  // the records through records().
  void add_tables(const ChunkView& chunk);
  RecordTally& records() { return records_; }
  // The summary so far: strings of every chunk added are already in it.
  const TraceSummary& current() const { return s_; }
  TraceSummary finish(const TraceReader& reader);

 private:
  TraceSummary s_;
  RecordTally records_;
};

// Reads the whole trace through `reader` (already opened).
TraceSummary summarize(TraceReader& reader);

ProcessInfo to_process_info(const fb::ProcessMetadata& m);

// The first frame of the trace at `path`, read without the rest of the
// file: how `gpuscope run` tells its own traces from others in a directory.
struct FirstFrame {
  bool is_trace = false;               // the file opened as a trace
  bool whole = false;                  // its first frame was whole (one being written is not yet)
  std::optional<ProcessInfo> process;  // that frame's metadata, when it had any
};
FirstFrame read_first_frame(const std::string& path);

const char* end_kind_text(fb::EndKind kind);
// How the process ended, in words: "exit(), exit status 8, called while the
// process was already ending (returned from main, exit status 0)".
std::string end_text(const EndInfo& end);
const char* drop_reason_text(fb::DropReason reason);

}  // namespace gpuscope::reader
