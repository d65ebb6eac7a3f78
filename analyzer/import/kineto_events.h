// One Kineto (PyTorch profiler) trace event, parsed with simdjson's
// on-demand API, and what it becomes in the TraceBuilder. Categories, old
// and new spellings, as Kineto writes them (docs/import.md, "Kineto"):
//   cuda_runtime, cuda_driver, Runtime, Driver   host CUDA calls
//   kernel, Kernel                                device kernels
//   gpu_memcpy, Memcpy / gpu_memset, Memset       device copies, memsets
//   user_annotation, ProfilerStep#N               ranges (the NVTX domain)
//   gpu_user_annotation                           device-side ranges
//   cpu_op, Operator / python_function            host ranges of their own domains
//   cpu_instant_event "[memory]"                  caching-allocator events
//   cuda_sync with a stream                       device-side waits (Sync, source Device)
//   ph "M" process_name / thread_name             names
// Everything else (flows, overhead, context-wide syncs, Trace spans) is counted as
// skipped: the correlation ids already link what flows link.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trace_builder.h"

namespace gpuscope::importer {

// Domains the imported ranges are kept apart in.
inline constexpr std::string_view kCpuOpDomain = "pytorch.cpu_op";
inline constexpr std::string_view kPythonDomain = "pytorch.python";
inline constexpr std::string_view kGpuAnnotationDomain = "pytorch.gpu_annotation";

class KinetoEventMapper {
 public:
  explicit KinetoEventMapper(TraceBuilder& builder);
  ~KinetoEventMapper();
  KinetoEventMapper(const KinetoEventMapper&) = delete;
  KinetoEventMapper& operator=(const KinetoEventMapper&) = delete;

  // One traceEvents element (with kElementPadding readable bytes after
  // it). False with *error when it is not a JSON object.
  bool add_event(std::string_view element, std::string* error);
  // A top-level member: deviceProperties, distributedInfo, schemaVersion, ...
  void add_member(std::string_view key, std::string_view value);
  // What the events said about the process, into the builder.
  void finish();

  uint64_t events() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscope::importer
