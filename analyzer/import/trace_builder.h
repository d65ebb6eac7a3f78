// Builds a native gpuscope trace from another profiler's events, so that
// everything downstream (model, metrics, rules, reports, diff, export) reads
// an imported trace exactly as it reads a captured one. The importers
// (kineto_import, nsys_import) only parse their source and hand the events
// here in source-neutral form; how an event becomes records is decided once,
// in this file's implementation:
//
// - a host CUDA call becomes an ApiCall; a synchronization call also a host
//   Sync record, an allocation call a host Alloc record;
// - a device kernel, copy or memset becomes a Device-source record, and the
//   host call with the same correlation id gets the host-side record the
//   capture hooks would have written (Kernel, Copy, Memset: name, grid,
//   bytes, direction, memory kinds), joined by correlation id in a table of
//   bounded size (kMaxPendingJoins): events whose partner is further away
//   in the file than that are counted (unjoined), never kept without bound;
// - ranges (NVTX, profiler steps, CPU operators) become Range markers.
//
// Records are written in chunks as they come; the process metadata, which
// needs the earliest timestamp and whatever the source says last, goes in
// the first frame once everything is read (finish()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpuscope_generated.h"
#include "process_metadata.h"
#include "side_tables.h"

namespace gpuscope::importer {

// Where the events came from, written into the trace (Chunk.import_source)
// so that coverage can say what the source could and could not see.
struct ImportSourceInfo {
  std::string format;        // "kineto", "nsys-sqlite"
  std::string path;          // the file as the user named it
  std::string producer;      // "PyTorch Profiler (Kineto) schema 1.0.2", "Nsight Systems 2024.5"
  std::vector<std::string> notes;  // what the source did not hold: "no NVML samples", ...
  bool mid_run = false;            // recording began after the program started (a profiler window)
};

struct HostCall {
  std::string_view name;  // cudaLaunchKernel, cuMemcpyHtoDAsync_v2, ...
  uint64_t start_ns = 0, duration_ns = 0;
  uint64_t correlation = 0;  // 0: none
  uint32_t tid = 0;
  int32_t result = 0;        // cudaError_t / CUresult where the source has it
  bool driver = false;       // a driver API call (cu*)
};

struct DeviceKernel {
  std::string_view name;
  uint64_t start_ns = 0, duration_ns = 0, correlation = 0, stream = 0;
  int16_t device = -1;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
};

struct DeviceCopy {
  uint64_t start_ns = 0, duration_ns = 0, correlation = 0, stream = 0, bytes = 0;
  fb::CopyDirection direction = fb::CopyDirection::Unknown;
  fb::MemoryKind src_kind = fb::MemoryKind::Unknown, dst_kind = fb::MemoryKind::Unknown;
  int16_t device = -1;
};

struct DeviceMemset {
  uint64_t start_ns = 0, duration_ns = 0, correlation = 0, stream = 0, bytes = 0;
  uint32_t value = 0;
  fb::MemoryKind kind = fb::MemoryKind::Unknown;
  int16_t device = -1;
};

// A wait on the device timeline: a stream waiting for an event or for
// the host (Kineto's cuda_sync events, CUPTI synchronization records).
struct DeviceSync {
  uint64_t start_ns = 0, duration_ns = 0, correlation = 0, stream = 0;
  fb::SyncKind kind = fb::SyncKind::Unknown;
  int16_t device = -1;
};

// A named span of time: an NVTX range, a profiler step, a CPU operator or
// Python function, a user annotation. `domain` keeps kinds apart
// (range_model.h): "" is the NVTX default domain.
struct HostRange {
  std::string_view name, domain;
  uint64_t start_ns = 0, duration_ns = 0;
  uint32_t tid = 0;
};

// An allocator event outside the CUDA API (PyTorch's caching allocator):
// bytes > 0 allocates at `address`, bytes < 0 frees there.
struct AllocatorEvent {
  uint64_t time_ns = 0, address = 0;
  int64_t bytes = 0;
  int16_t device = -1;
  fb::MemoryKind kind = fb::MemoryKind::Pool;
};

// What an import counted that the trace cannot show record by record.
struct ImportCounts {
  uint64_t events = 0;             // source events read
  uint64_t records = 0;            // native records written
  uint64_t skipped = 0;            // events of kinds that have no native record
  uint64_t unjoined = 0;           // host calls never matched to their device record (or the reverse)
  uint64_t out_of_range = 0;       // events with negative or absurd timestamps, dropped
};

// Events are joined by correlation id within this many pending entries.
inline constexpr size_t kMaxPendingJoins = 1u << 20;

class TraceBuilder {
 public:
  // Writes to `out_path` (created, never overwritten unless `force`); the
  // frames are staged in an unlinked temporary file next to it until
  // finish(). An empty out_path writes an unlinked temporary file whose
  // descriptor finish() hands back (analysis without `gpuscope import`).
  TraceBuilder(ImportSourceInfo info, std::string out_path, bool force = false);
  ~TraceBuilder();
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // False (with the reason in error()) when the output cannot be made.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // The process: pid, exe, argv, rank, hostname... start_monotonic_ns is
  // filled by finish() from the earliest event when left 0.
  protocol::ProcessMetadata& process() { return process_; }
  void add_device(container::DeviceDescription device);
  void add_note(std::string note) { info_.notes.push_back(std::move(note)); }
  void set_producer(std::string producer) { info_.producer = std::move(producer); }
  void set_mid_run(bool mid_run) { info_.mid_run = mid_run; }
  // The wall-clock time of timestamp 0, when the source says it (Kineto's
  // baseTimeNanoseconds); sources whose timestamps are wall-clock need none.
  void set_realtime_base_ns(uint64_t ns) { realtime_base_ns_ = ns; }
  void set_thread_name(uint32_t tid, std::string_view name);

  void add(const HostCall& call);
  void add(const DeviceKernel& kernel);
  void add(const DeviceCopy& copy);
  void add(const DeviceMemset& memset);
  void add(const DeviceSync& sync);
  void add(const HostRange& range);
  void add(const AllocatorEvent& event);
  void count_event() { ++counts_.events; }
  void count_skipped() { ++counts_.skipped; }
  void count_out_of_range() { ++counts_.out_of_range; }

  // Writes what is pending and the end record, then puts the metadata
  // frame first. Returns the finished file's descriptor (read-only, for the
  // caller to own) or -1 with error() set. `complete`: the source was read
  // to its end (otherwise the trace says where the damage stopped it).
  int finish(bool complete, const std::string& damage = {});
  const ImportCounts& counts() const { return counts_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ImportSourceInfo info_;
  protocol::ProcessMetadata process_;
  ImportCounts counts_;
  uint64_t realtime_base_ns_ = 0;
  std::string error_;
};

}  // namespace gpuscope::importer
