// The device model's data: the driver's handle types and what the model
// keeps about streams, events, allocations and queued work.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <cuda.h>
#include <cupti_activity.h>

#include "../common/node.hpp"
#include "../common/shared_state.hpp"
#include "../common/simgpu_activity.h"
#include "host_worker.hpp"

namespace simgpu::drv {

enum class Engine { Compute, HostToDevice, DeviceToHost, Count };
// Array: the memory of a CUDA array (cuArrayCreate), device memory that
// only array copies and textures reach.
enum class MemKind { Device, Managed, HostPinned, HostRegistered, Array };

// What a free call may free: cuMemFree device memory, cuMemFreeHost pinned
// host memory, cuArrayDestroy/cuMipmappedArrayDestroy an array.
enum class FreeOf { Device, Host, Array };
enum class CopyDir { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

// One operation for a device engine: how long it runs once started, the
// least time between its submission and its start, what NVML sees, and the
// bytes it moves when its stream reaches it (copies and memsets; run by the
// HostWorker).
struct Work {
  Engine engine = Engine::Compute;
  Activity activity = Activity::KernelCompute;
  int64_t duration = 0, start_latency = 0;
  uint64_t bytes = 0;
  double sm_fraction = 1.0;
  std::function<void()> move;
  // A copy between two GPUs runs on the source's outbound and the
  // destination's inbound copy engine instead of `engine` (-1: not one).
  int peer_src = -1, peer_dst = -1;
  // What the simulated CUPTI records of it once scheduled (activity.hpp);
  // kind None: nothing (internal work, or no CUPTI listening).
  DeviceRecord traced;
};

// Where the model put an operation: its modeled start and end, and the
// HostWorker task that moves its bytes (when it has any).
struct Slot {
  int64_t start = 0, end = 0;
  TaskKey task;
};

// An instant in a stream that the model knows once everything ahead of it
// is scheduled: where an event was recorded, or an internal dependency.
struct Marker {
  bool resolved = false;
  int64_t time = 0;
};
using MarkerRef = std::shared_ptr<Marker>;

// Filled in when a submitted operation is scheduled, for a caller that
// waits for it (a synchronous copy queued behind a host function).
struct Scheduled {
  bool done = false;
  Slot slot;
};

// What a stream is asked to do, in its order.
struct StreamOp {
  enum class Kind {
    Work,          // occupies an engine
    HostFunction,  // runs `fn` on simgpu's host thread; later work waits for its return
    Record,        // resolves `marker` where the stream is
    Wait,          // later work waits for `marker`
    Task,          // runs `fn` (bytes) where the stream is, without engine time
  };
  Kind kind = Kind::Work;
  Work work;
  std::function<void()> fn;
  MarkerRef marker;
  std::shared_ptr<Scheduled> scheduled;
  int64_t submit = 0;  // when the host submitted it
};

struct CaptureSession;
struct StreamCapture;

}  // namespace simgpu::drv

// The driver's opaque handle types, defined here: a handle is a pointer to
// one of these, validated against the model's registries before use.
struct CUctx_st {
  int device;
  bool primary;
  unsigned long long id = 0;  // unique in the process (cuCtxGetId)
};

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;      // the device's NULL stream
  bool per_thread = false;  // a thread's per-thread default stream
  bool destroyed = false;   // the handle is gone; queued work still runs
  unsigned long long id = 0;  // unique in the process (cuStreamGetId)
  int64_t tail = 0;         // modeled completion of everything scheduled here
  // Submitted work the model cannot schedule yet: it follows a host function
  // that has not returned (`held`) or waits for an unresolved marker.
  bool held = false;
  std::deque<simgpu::drv::StreamOp> backlog;
  // While capturing, work goes into a graph instead (model_capture.cpp).
  std::shared_ptr<simgpu::drv::StreamCapture> capture;
  bool blocking() const { return !(flags & CU_STREAM_NON_BLOCKING); }
  bool unresolved() const { return held || !backlog.empty(); }
};

struct CUgraphNode_st;
struct CUevent_st {
  int device = 0;
  uint32_t id = 0;  // unique in the process: CUPTI's cudaEventId
  unsigned flags = 0;
  simgpu::drv::MarkerRef record;  // the latest record; null: never recorded
  // Last recorded in a capturing stream: the capture and the nodes it follows.
  std::shared_ptr<simgpu::drv::CaptureSession> captured;
  std::vector<CUgraphNode_st*> captured_deps;
};

// A stream-ordered memory pool: the memory it reserved from the device, of
// which some blocks are handed out and the rest wait, freed, for reuse.
struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false, destroyed = false;
  uint64_t release_threshold = 0;
  int follow_event_dependencies = 1, allow_opportunistic = 1, allow_internal_dependencies = 1;
  struct FreeBlock {
    uintptr_t base;
    size_t size;
    const CUstream_st* freed_on;          // only compared, never used
    simgpu::drv::MarkerRef freed_at;      // where that stream freed it
  };
  std::vector<FreeBlock> free_blocks;
  uint64_t reserved = 0, used = 0, reserved_high = 0, used_high = 0;
  std::map<int, CUmemAccess_flags> peer_access;
};

struct CUfunc_st;
struct CUmod_st {
  const void* image = nullptr;
  bool is_ptx = false;
  std::map<std::string, std::unique_ptr<CUfunc_st>, std::less<>> functions;
  // __device__ and __constant__ variables the runtime declared: name -> (address, bytes).
  std::map<std::string, std::pair<uintptr_t, size_t>, std::less<>> globals;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;  // as given (mangled for C++ kernels)
  simgpu::KernelCost cost;  // the node's entry for this kernel, over the default
  int max_dynamic_shared = -1;  // cuFuncSetAttribute's opt-in; -1: the 48 KiB default
  int carveout = -1;            // preferred shared memory carveout, percent
};

namespace simgpu::drv {

// Where managed memory lives, per 2 MiB chunk (-1: host memory, else a
// device), and the advice given about it.  Shared by every copy of its
// Allocation.
struct ManagedState {
  static constexpr size_t kChunk = 2u << 20;
  std::vector<int> where;
  bool read_mostly = false;
  int preferred = CU_DEVICE_INVALID, last_prefetch = CU_DEVICE_INVALID;
  std::set<int> accessed_by;
  unsigned attach = CU_MEM_ATTACH_GLOBAL;
};

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  int device = 0;
  MemKind kind = MemKind::Device;
  unsigned flags = 0;
  bool mapped = true;  // false for cuMemHostRegister'ed user memory
  bool graph = false;  // a graph's memory-allocation node owns it
  CUmemoryPool pool = nullptr;  // the pool it came from, if any,
  size_t block_size = 0;        // and the size of the pool's block
  CUmemGenericAllocationHandle vmm = 0;  // a cuMemMap of this physical allocation
  std::shared_ptr<ManagedState> managed;  // managed memory only
};

// A physical allocation of the virtual memory management API (cuMemCreate):
// a memfd, so that cuMemMap can place it at any reserved address. Its memory
// goes when it is released and no mapping of it is left.
struct VmmAllocation {
  int fd = -1;
  size_t size = 0;
  int device = 0;  // CU_DEVICE_CPU for host memory
  CUmemAllocationProp prop{};
  int mappings = 0;
  bool released = false;
};

// One copy, 1D, 2D or 3D: depth slices of height rows of `width` bytes, rows
// `pitch` bytes apart and slices `slice` bytes apart on each side.
struct CopyRequest {
  CopyDir dir = CopyDir::HostToDevice;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t width = 0, height = 1, depth = 1;
  size_t dst_pitch = 0, src_pitch = 0, dst_slice = 0, src_slice = 0;
  CUstream stream = nullptr;
  bool per_thread = false;  // the _ptsz/_ptds entry point was called
  bool async = false;       // the *Async entry point was called
  bool dst_array = false, src_array = false;  // a side is a CUDA array (CUPTI's HtoA, AtoD, ...)
  size_t bytes() const { return width * height * depth; }
};

// A CUDA array: dense rows of width elements, height rows a slice (1 for a
// 1D array), depth slices, at `base` in device memory. Its handle is not an
// address of it: like a real driver's, it is a small object in the
// process's heap (so profilers meet handles where real programs have them).
// A mipmapped array's levels lie end to end in one allocation, each level
// an array of its own handle whose `mipmap` is the chain's handle.
struct ArrayShape {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  size_t row_bytes = 0, height = 1, depth = 1;
  uintptr_t base = 0;
  uintptr_t mipmap = 0;
  size_t bytes() const { return row_bytes * height * depth; }
};

// A mipmapped array: its one allocation and its levels' handles, in order.
struct MipmapChain {
  uintptr_t base = 0;
  std::vector<uintptr_t> levels;
};

// One memset of `elem_size`-byte elements: height rows of `width` elements,
// rows `pitch` bytes apart.
struct MemsetRequest {
  void* dst = nullptr;
  unsigned value = 0, elem_size = 1;
  size_t width = 0, height = 1, pitch = 0;
  CUstream stream = nullptr;
  bool per_thread = false;
  bool async = false;  // cuMemset*Async: never holds the host
  size_t bytes() const { return width * elem_size * height; }
};

// Bytes from the first to the last byte a strided region touches.
inline size_t span(size_t width, size_t height, size_t depth, size_t pitch, size_t slice) {
  return height == 0 || depth == 0 ? 0 : (depth - 1) * slice + (height - 1) * pitch + width;
}

struct KernelTiming {
  int64_t duration_ns = 0;
  Activity activity = Activity::KernelCompute;
  uint64_t dram_bytes = 0;
  double sm_fraction = 1.0;
};

struct DeviceState {
  const DeviceDesc* desc = nullptr;
  int node_index = 0;
  std::array<int64_t, static_cast<size_t>(Engine::Count)> engine_free{};
  CUstream_st legacy;
  int64_t blocking_tail = 0;  // newest completion queued on any blocking stream
  int64_t host_tail = 0;      // newest return of a host function
  uint64_t memory_used = 0;
  CUctx_st primary;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  std::multiset<int64_t> in_flight;      // completion times of queued operations
  std::set<CUstream_st*> unresolved;     // streams with a backlog or a running host function
  size_t backlog_ops = 0;                // operations in those backlogs
  std::set<int> peers;                   // devices this one has enabled peer access to
  CUmemoryPool default_pool = nullptr;   // created on first use
  CUmemoryPool current_pool = nullptr;   // what cudaMallocAsync draws from
  // cuCtxSetLimit's values, by CUlimit (the defaults a Hopper GPU reports),
  // and the cache preference; the model keeps them, nothing depends on them.
  std::array<size_t, CU_LIMIT_PERSISTING_L2_CACHE_SIZE + 1> limits{1024, 1 << 20, 8 << 20, 2, 2048, 0, 0};
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
};

}  // namespace simgpu::drv
