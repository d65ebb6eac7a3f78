// What a hooked call means, built from its arguments before the call and
// turned into records after it. One type per family; the runtime and driver
// tables share them. `after()` always records the ApiCall (a nested one that
// succeeds is only counted: call_counts.h); the typed record (Copy, Memset,
// Alloc, Sync, Kernel, GraphLaunch) is written only for the outermost
// gpuscope-visible call on the thread, so a runtime call and the driver call
// it makes count once, and it goes into the ring together with its ApiCall
// (ApiCallScope::finish_with): a full buffer drops both or neither. Work
// records are written only for work that happened (finish_work).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "capture_window.h"
#include "open_captures.h"
#include "record_flags.h"
#include "recorder.h"

namespace gpuscope::hooks {

// The device the calling thread works on, as far as cudaSetDevice told us
// (0 until then, like CUDA itself). Driver-API context switches
// (cuCtxSetCurrent, cuCtxPushCurrent) are not followed yet: a driver-API
// program on several devices has its records on device 0.
namespace detail {
extern thread_local constinit int16_t t_device __attribute__((tls_model("initial-exec")));
}  // namespace detail
inline int16_t current_device() noexcept { return detail::t_device; }
inline void set_current_device(int device) noexcept { detail::t_device = static_cast<int16_t>(device); }

// Whether `stream` (0: the legacy default stream, or with kPerThreadStream
// in `flags` the thread's own) is capturing into a CUDA graph right now, as
// the API the call came through (runtime, or kDriverApi) says.
// hooks/stream_capture.cpp.
bool stream_is_capturing(uint64_t stream, uint8_t flags) noexcept;

// A 32-frame unwind costs ~350 ns, a tenth of a kernel launch; launches
// therefore carry a stack every 64th time per thread (the first included),
// which still shows every launch site that matters, at ~6 ns per launch.
inline constexpr uint32_t kLaunchStackEvery = 64;

// Plain API call: just the ApiCall record.
struct CallInfo {
  // after() must run for nested calls that succeed too (traced_nested).
  static constexpr bool kNestedSideEffects = false;

  uint64_t stream = 0;
  bool wants_stack = false;
  bool sample_stack = false;  // launches: unwind only every kLaunchStackEvery-th one
  uint32_t stack = 0;

  // Only the outermost call unwinds (the driver call under a runtime call
  // has the same call site plus libcudart's frames); calls without a stack
  // pay one branch here.
  void before(capture::ApiCallScope& scope) noexcept {
    if (wants_stack && scope.depth() == 0) unwind(scope);
  }
  // Always inlined into the hook: out of line, the scope had to live in
  // memory and every field of it was stored and loaded again.
  __attribute__((always_inline)) uint64_t finish(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept {
    return scope.finish(result, stream, flags, current_device(), stack);
  }
  // The ApiCall and, for the outermost call, the typed record make(end)
  // builds: one ring push, so both are kept or both dropped.
  template <class MakeTyped>
  __attribute__((always_inline)) uint64_t finish_with(capture::ApiCallScope& scope, int32_t result, uint8_t flags,
                                                      MakeTyped&& make) noexcept {
    return scope.finish_with(result, stream, flags, current_device(), stack, make);
  }
  __attribute__((always_inline)) void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept {
    finish(scope, result, flags);
  }
  // For calls that put work on `stream`: the outermost call's work went
  // into a graph being captured, not to the device; it runs when that graph
  // is launched (GraphLaunch counts it then). Costs one relaxed load unless
  // some capture is open.
  bool captured(const capture::ApiCallScope& scope, int32_t result, uint8_t flags) const noexcept {
    return result == 0 && scope.depth() == 0 && registry::open_captures().any() && stream_is_capturing(stream, flags);
  }
  // The ApiCall's flags: the slot's, plus kCallCaptured when `in_graph`.
  static uint8_t call_flags(uint8_t flags, bool in_graph) noexcept {
    return in_graph ? flags | container::kCallCaptured : flags;
  }
  // For calls that do work (copies, memsets, allocations, launches): the
  // typed record only when the work happened - the call succeeded and no
  // stream capture took it into a graph. A failing call is its ApiCall
  // alone (the result is the evidence); its bytes were never moved.
  template <class MakeTyped>
  void finish_work(capture::ApiCallScope& scope, int32_t result, uint8_t flags, bool in_graph,
                   MakeTyped&& make) noexcept {
    if (in_graph || result != 0) finish(scope, result, call_flags(flags, in_graph));
    else finish_with(scope, result, flags, make);
  }

 private:
  // The call stack, every time or (launches) every kLaunchStackEvery-th.
  void unwind(capture::ApiCallScope& scope) noexcept;
};

// cudaProfilerStart/Stop and their driver twins: plain calls that also
// open and close capture windows (capture_window.h) when the capture range
// is the profiler API. Start opens before the call, so the call is the
// window's first event; stop closes after it, its last.
struct ProfilerStartCall : CallInfo {
  static void before_any() noexcept { capture::on_profiler_start(); }
  static void after_any() noexcept {}
};
struct ProfilerStopCall : CallInfo {
  static void before_any() noexcept { capture::on_profiler_stop_begin(); }
  static void after_any() noexcept { capture::on_profiler_stop_end(); }
};

// cudaMemcpyKind values (driver copies map to them too).
enum class CopyKind : uint8_t { HostToHost = 0, HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3, Default = 4,
                                PeerToPeer = 5 };

struct CopyCall : CallInfo {
  uint64_t bytes = 0;
  const void* dst = nullptr;
  const void* src = nullptr;
  CopyKind kind = CopyKind::Default;
  bool async = false;
  bool prefetch = false;  // managed memory migrated toward `kind`'s destination

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;
};

struct MemsetCall : CallInfo {
  uint64_t bytes = 0;
  const void* target = nullptr;
  uint32_t value = 0;
  bool async = false;

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;
};

// Allocations read their result (the new address, a pitch) after the call
// through these pointers; frees say which address went away.
struct AllocCall : CallInfo {
  static constexpr bool kNestedSideEffects = true;  // the registry follows every level
  fb::AllocOp op = fb::AllocOp::Alloc;
  fb::MemoryKind kind = fb::MemoryKind::Device;
  void* const* out_pointer = nullptr;      // runtime allocations: void**
  const uint64_t* out_address = nullptr;   // driver allocations: CUdeviceptr*
  const size_t* out_pitch = nullptr;       // pitched allocations: bytes = pitch * rows
  uint64_t rows = 1;
  const void* address = nullptr;           // frees, registrations
  uint64_t bytes = 0;
  uint32_t element_bytes = 0;  // arrays: bytes of one element, what copies' extents count
  bool async = false;

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;

 private:
  struct Range {
    uint64_t address, size;
  };
  Range update_registry(int32_t result) const noexcept;
};

struct SyncCall : CallInfo {
  fb::SyncKind kind = fb::SyncKind::Unknown;
  const void* object = nullptr;  // stream or event

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;
  fb::Sync record(const capture::ApiCallScope& scope, uint64_t end, int32_t result) const noexcept;
};

// cudaErrorNotReady and CUDA_ERROR_NOT_READY: a query's "not yet".
inline constexpr int32_t kNotReady = 600;

// cudaEventQuery, cudaStreamQuery(_ptsz), cuEventQuery, cuStreamQuery(_ptsz).
// "Not ready" is what a wait loop hears until the work is done, not a
// failure: consecutive such answers on one thread from the same function on
// the same handle become one record that counts them (ApiCall.repeat,
// docs/interception.md "Poll loops"), and one made under another hooked
// call (the driver query under the runtime's) is counted like a success.
// Any other answer is recorded as a sync like any other.
struct PollCall : SyncCall {
  static bool counted_when_nested(int32_t result) noexcept { return result == 0 || result == kNotReady; }
  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept {
    if (result != kNotReady || scope.depth() != 0) return SyncCall::after(scope, result, flags);
    scope.finish_not_ready(result, stream, flags, current_device(),
                           [&](uint64_t end) { return record(scope, end, result); });
  }
};

struct LaunchCall : CallInfo {
  const void* function = nullptr;  // host stub (runtime) or CUfunction (driver)
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;
};

// cudaGraphLaunch / cuGraphLaunch: a GraphLaunch record with what the
// executable graph runs (registry/graph_execs.h).
struct GraphLaunchCall : CallInfo {
  uint64_t exec = 0;

  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept;
};

// Constructors for the tables: a stream handle as a number, and the common
// shapes, so table rows stay one line each.
inline uint64_t stream_id(const void* stream) noexcept { return reinterpret_cast<uint64_t>(stream); }

// The bytes of a batch of copies or prefetches (sizes may be null).
inline uint64_t batch_bytes(const size_t* sizes, size_t count) noexcept {
  uint64_t total = 0;
  for (size_t i = 0; sizes != nullptr && i < count; ++i) total += sizes[i];
  return total;
}

// The bytes of a copy whose extent counts elements of the array on either
// side (bytes when neither side is an array): the runtime's 3D copies and
// every batched 3D copy. An array gpuscope did not see allocated (a mipmap
// level, a graphics interop array) counts 1-byte elements: undercounted,
// never guessed (docs/interception.md).
uint64_t element_extent_bytes(const void* dst_array, const void* src_array, uint64_t width, uint64_t height,
                              uint64_t depth) noexcept;

// The bytes of a batch of 3D copies, runtime or driver operations (ops may
// be null); kArray is the API's operand type of an array.
template <auto kArray, class Op>
uint64_t batch_3d_bytes(const Op* ops, size_t count) noexcept {
  const auto array = [](const auto& o) -> const void* { return o.type == kArray ? o.op.array.array : nullptr; };
  uint64_t total = 0;
  for (size_t i = 0; ops != nullptr && i < count; ++i)
    total += element_extent_bytes(array(ops[i].dst), array(ops[i].src), ops[i].extent.width, ops[i].extent.height,
                                  ops[i].extent.depth);
  return total;
}

// The bytes of a CUDA array of w x h x d elements (a height or depth of 0:
// a dimension the array does not have), runtime or driver.
inline uint64_t array_extent_bytes(uint64_t element_bytes, size_t w, size_t h, size_t d) noexcept {
  return element_bytes * w * (h == 0 ? 1 : h) * (d == 0 ? 1 : d);
}

// Every level of a mipmapped array, each half the last in every dimension.
inline uint64_t mipmap_chain_bytes(uint64_t element_bytes, size_t w, size_t h, size_t d, unsigned levels) noexcept {
  const auto halved = [](size_t n, unsigned level) -> size_t { return n == 0 ? 0 : std::max<size_t>(n >> level, 1); };
  uint64_t bytes = 0;
  for (unsigned l = 0; l < std::max(levels, 1u) && l < 32; ++l)
    bytes += array_extent_bytes(element_bytes, std::max<size_t>(w >> l, 1), halved(h, l), halved(d, l));
  return bytes;
}

inline CallInfo plain(const void* stream = nullptr) noexcept {
  CallInfo c;
  c.stream = stream_id(stream);
  return c;
}

// The calls that ask whether a GPU is there (cudaGetDeviceCount, cuInit,
// cuDeviceGetCount): when they fail, their call site is what a silent CPU
// fallback's finding names (torch.cuda.is_available(), docs/pytorch.md).
// Programs ask once or cache the answer, so the unwind is rare.
inline CallInfo availability_query() noexcept {
  CallInfo c;
  c.wants_stack = true;
  return c;
}

// A call that only puts work on a stream (a host function, a callback): an
// ApiCall, flagged when a stream capture took the work.
struct StreamWorkCall : CallInfo {
  void after(capture::ApiCallScope& scope, int32_t result, uint8_t flags) noexcept {
    finish(scope, result, call_flags(flags, captured(scope, result, flags)));
  }
};
inline StreamWorkCall stream_work(const void* stream) noexcept {
  StreamWorkCall c;
  c.stream = stream_id(stream);
  return c;
}

CopyCall copy(const void* dst, const void* src, uint64_t bytes, int kind, const void* stream, bool async) noexcept;
// Managed memory moved to a device (`to_device`) or to the host.
CopyCall prefetch(const void* address, uint64_t bytes, bool to_device, const void* stream) noexcept;
// Prefetches of `n` ranges (runtime pointers or CUdeviceptrs) to `nto`
// locations, runtime or driver (`device_location`: its "a device" type),
// as one call: their bytes together, the first range and destination. A
// single prefetch is a batch of one.
template <class Pointer, class Location>
CopyCall prefetches(const Pointer* ranges, const size_t* sizes, size_t n, const Location* to, size_t nto,
                    int device_location, const void* stream) noexcept {
  const bool to_device = to != nullptr && nto != 0 && static_cast<int>(to[0].type) == device_location;
  const void* first = ranges != nullptr && n != 0 ? reinterpret_cast<const void*>(ranges[0]) : nullptr;
  return prefetch(first, batch_bytes(sizes, n), to_device, stream);
}
GraphLaunchCall graph_launch(const void* exec, const void* stream) noexcept;
MemsetCall memset_of(const void* target, uint32_t value, uint64_t bytes, const void* stream, bool async) noexcept;
SyncCall sync_of(fb::SyncKind kind, const void* object) noexcept;
PollCall poll_of(fb::SyncKind kind, const void* object) noexcept;
AllocCall allocation(void* const* out, uint64_t bytes, fb::MemoryKind kind, const void* stream = nullptr,
                     bool async = false) noexcept;
AllocCall release(const void* address, fb::MemoryKind kind, const void* stream = nullptr, bool async = false) noexcept;
// A CUDA array (or mipmapped array) of `bytes`, elements of `element` bytes.
inline AllocCall array_allocation(void* const* out, uint64_t element, uint64_t bytes) noexcept {
  AllocCall c = allocation(out, bytes, fb::MemoryKind::Array);
  c.element_bytes = static_cast<uint32_t>(element);
  return c;
}
AllocCall registration(const void* address, uint64_t bytes) noexcept;
AllocCall unregistration(const void* address) noexcept;
// Inline: built on every launch, in the hook's own frame.
inline LaunchCall launch(const void* function, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by,
                         uint32_t bz, uint32_t shared, const void* stream) noexcept {
  LaunchCall c;
  c.stream = stream_id(stream);
  c.wants_stack = true;
  c.sample_stack = true;
  c.function = function;
  c.grid[0] = gx, c.grid[1] = gy, c.grid[2] = gz;
  c.block[0] = bx, c.block[1] = by, c.block[2] = bz;
  c.shared_bytes = shared;
  return c;
}

}  // namespace gpuscope::hooks
