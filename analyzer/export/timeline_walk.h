// The walk over a trace that both timeline exporters share: which track
// each record goes to, how spans nest, their arguments and flows. It hands
// each event to a TimelineSink (JSON or protobuf). Split over
// timeline_walk.cpp (chunks, host calls, the end), timeline_walk_tracks.cpp
// (typed records, device, counters) and timeline_walk_nvtx.cpp (NVTX,
// capture windows, names).
#pragma once

#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "chrome_trace.h"
#include "timeline_sink.h"
#include "record_flags.h"
#include "trace_model.h"
#include "track_nesting.h"
#include "typed_index.h"
#include "dense_id_map.h"
#include "node_cache.h"

namespace gpuscope::exporter {

class CallSites;

// Pseudo-ids. Real pids and tids stay below 2^22 (pid_max), so tracks
// gpuscope makes up (NVTX rows, capture windows, GPUs) cannot collide.
// Every tid is unique across processes too: Perfetto, like the kernel,
// takes a tid seen under another pid for a new thread.
inline constexpr int64_t kUnknownPid = 0x3fffffff;      // the metadata frame was lost
inline constexpr int64_t kGpuPidBase = 0x7fff0000;      // + device ordinal (0xfff: unknown)
inline constexpr uint64_t kSyntheticTidBase = 0x40000000;
inline constexpr uint64_t kGpuTidBase = 0x50000000;     // + ordinal << 16 + row (0: counters)

class TimelineWalk {
 public:
  TimelineWalk(const reader::FileInfo& file, TimelineSink& sink, ExportOptions options);
  ~TimelineWalk();
  void add(const reader::ChunkView& v);
  ExportResult finish(const reader::TraceReader& reader);

 private:
  Label name(uint32_t id);
  Args& fresh_args();
  analyzer::CallKind kind_of(uint32_t function_id);
  void widen(const reader::ChunkView& v);

  // host
  void index_typed(const reader::ChunkView& v);
  void retire_typed();
  std::optional<TypedRecord> take_typed(uint64_t correlation);
  void typed_args(const TypedRecord& r);
  void graph_args(const fb::GraphLaunch& g);
  void unmatched_typed(const TypedRecord& r);
  void api_call(const fb::ApiCall& c);
  void api_call_args(const fb::ApiCall& c, bool placed_ok, const std::optional<TypedRecord>& typed);
  void live_memory(const fb::Alloc& a);
  uint64_t synthetic_track(const std::string& track_name);

  // device
  int64_t gpu_pid(int16_t device);
  uint64_t gpu_tid(int16_t device, uint64_t row);
  uint64_t stream_track(int16_t device, uint64_t stream, uint64_t start, uint64_t end, uint64_t* placed_start);
  Args& device_args(uint64_t stream, uint64_t correlation);
  void device_span(Label name, const char* cat, int16_t device, uint64_t stream, uint64_t start, uint64_t duration,
                   uint64_t correlation);
  void device_kernel(const fb::Kernel& k);
  void device_copy(const fb::Copy& c);
  void device_memset(const fb::Memset& m);
  void device_sync(const fb::Sync& s);
  void device_alloc(const fb::Alloc& a);
  void gpu_sample(const fb::GpuSample& g);

  // NVTX and capture windows
  void write_capture_windows();
  void write_windows(const std::map<uint64_t, uint64_t>& windows, const char* track, const char* slice);
  void write_process_names(const reader::TraceSummary& s);

  TimelineSink& sink_;
  Args args_;  // the current event's, reused
  reader::SummaryBuilder summary_;
  std::unique_ptr<CallSites> sites_;
  ExportStats stats_;
  uint64_t origin_ns_ = 0, last_ns_ = 0;
  bool origin_set_ = false, flows_ = false;
  int64_t pid_ = kUnknownPid;
  std::unordered_map<uint32_t, std::string> names_;  // string id -> text
  analyzer::DenseIdMap<analyzer::CallKind> kinds_;
  std::unordered_map<uint32_t, NestGuard> threads_;
  analyzer::NodeCache<decltype(threads_), 64> thread_guard_{threads_};
  TypedIndex typed_, previous_typed_;
  std::unordered_map<std::string, uint64_t> synthetic_tids_;
  analyzer::LiveAllocations live_;

  struct GpuTracks {
    std::unordered_map<uint64_t, StreamLanes> streams;
    std::map<std::pair<uint64_t, unsigned>, uint64_t> tids;  // (stream, lane) -> tid
    std::unordered_map<std::string, NestGuard> guards;       // by track name, for sync/alloc rows
  };
  std::map<int16_t, GpuTracks> gpus_;

  struct OpenRange {
    uint64_t start_ns;
    uint32_t name_id;
  };
  struct NvtxTrack {
    uint64_t tid = 0;
    std::vector<OpenRange> open;
    uint64_t too_deep = 0;  // pushes past kMaxNvtxDepth, their pops ignored
    NestGuard guard;
  };
  std::map<std::pair<uint32_t, uint32_t>, NvtxTrack> nvtx_;  // (tid, domain)
  struct OpenAsync {
    uint64_t start_ns;
    uint32_t name_id, domain_id, tid;
  };
  std::set<int16_t> gpu_sampled_;  // devices with NVML samples
  std::unordered_map<uint64_t, OpenAsync> async_;  // start/end ranges by id
  std::map<uint64_t, uint64_t> capture_windows_;   // start -> longest duration seen
  std::map<uint64_t, uint64_t> device_windows_;    // sampled device tracing's, the same way

  void marker(const fb::Marker& m);
  NvtxTrack& nvtx_track(uint32_t tid, uint32_t domain);
  void nvtx_push(const fb::Marker& m);
  void nvtx_pop(const fb::Marker& m);
  void range_span(NvtxTrack& t, const OpenRange& r, uint64_t end, uint32_t domain, bool unterminated);
  void nvtx_start(const fb::Marker& m);
  void nvtx_end(const fb::Marker& m);
  void async_range(uint64_t id, const OpenAsync& r, uint64_t end, bool unterminated);
  void close_nvtx(uint64_t end_ns);
};

}  // namespace gpuscope::exporter
