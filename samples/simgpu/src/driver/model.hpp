// The simulated device: what libcuda.so.1 (simgpu) models behind the driver API.
//
// Work is queued on virtual streams and scheduled on per-device engines
// (compute, host-to-device copy, device-to-host copy) in simulated time, which
// is CLOCK_MONOTONIC: an operation completes at an absolute instant and a
// synchronize sleeps until then, so wall-clock timings match the model.
// Device memory is ordinary host memory; copies and memsets move real bytes
// when their stream reaches them (host_worker.hpp), kernels compute nothing.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <cuda.h>

#include "../common/node.hpp"
#include "../common/shared_state.hpp"
#include "host_worker.hpp"

// The driver's opaque handle types, defined here: a handle is a pointer to
// one of these, validated against the model's registries before use.
struct CUctx_st {
  int device;
  bool primary;
};

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;      // the device's NULL stream
  bool per_thread = false;  // a thread's per-thread default stream
  int64_t tail = 0;         // modeled completion of everything queued here
  bool blocking() const { return !(flags & CU_STREAM_NON_BLOCKING); }
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  bool recorded = false;
  int64_t time = 0;  // modeled instant the recorded work completes
};

struct CUfunc_st;
struct CUmod_st {
  const void* image = nullptr;
  bool is_ptx = false;
  std::map<std::string, std::unique_ptr<CUfunc_st>, std::less<>> functions;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;  // as given (mangled for C++ kernels)
  simgpu::KernelCost cost;  // the node's entry for this kernel, over the default
  int max_dynamic_shared = -1;  // cuFuncSetAttribute's opt-in; -1: the 48 KiB default
  int carveout = -1;            // preferred shared memory carveout, percent
};

namespace simgpu::drv {

enum class Engine { Compute, HostToDevice, DeviceToHost, Count };
enum class MemKind { Device, Managed, HostPinned, HostRegistered };
enum class CopyDir { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  int device = 0;
  MemKind kind = MemKind::Device;
  unsigned flags = 0;
  bool mapped = true;  // false for cuMemHostRegister'ed user memory
};

// One copy, 1D or 2D (height rows of `width` bytes at the given pitches).
struct CopyRequest {
  CopyDir dir = CopyDir::HostToDevice;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t width = 0, height = 1, dst_pitch = 0, src_pitch = 0;
  CUstream stream = nullptr;
  bool per_thread = false;  // the _ptsz/_ptds entry point was called
  bool async = false;       // the *Async entry point was called
};

struct KernelTiming {
  int64_t duration_ns = 0;
  Activity activity = Activity::KernelCompute;
  uint64_t dram_bytes = 0;
  double sm_fraction = 1.0;
};

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
};

// Where the model put an operation: its modeled start and end, and the
// HostWorker task that moves its bytes (when it has any).
struct Slot {
  int64_t start = 0, end = 0;
  TaskKey task;
};

struct DeviceState {
  const DeviceDesc* desc = nullptr;
  int node_index = 0;
  std::array<int64_t, static_cast<size_t>(Engine::Count)> engine_free{};
  CUstream_st legacy;
  int64_t blocking_tail = 0;  // newest completion queued on any blocking stream
  uint64_t memory_used = 0;
  CUctx_st primary;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  std::multiset<int64_t> in_flight;  // completion times of queued operations
};

// Operations a device accepts before submitting more blocks the host, as a
// real GPU's launch queue does once it is full.
constexpr size_t kQueueDepth = 1024;

// What one SM of a Hopper-class GPU offers thread blocks (compute capability
// 9.0; the node gives the SM count and threads per SM), as the device
// attributes report it and the occupancy calculator uses it.
namespace sm {
constexpr int kWarpSize = 32, kMaxThreadsPerBlock = 1024, kMaxBlocks = 32;
constexpr int kRegisters = 65536, kMaxRegistersPerThread = 255, kRegisterAllocUnit = 256;
constexpr int kSharedBytes = 233472;           // 228 KiB usable per SM
constexpr int kSharedPerBlockOptin = 232448;   // 227 KiB with cuFuncSetAttribute
constexpr int kSharedPerBlock = 49152;         // without opting in
constexpr int kReservedSharedPerBlock = 1024;  // the system's share of each block
constexpr int kSharedAllocUnit = 128;
}  // namespace sm

// A kernel's resources after the node's defaults: registers per thread,
// static and dynamic shared memory per block, threads per block.
struct FunctionResources {
  int registers = 32, shared_bytes = 0, local_bytes = 0, max_threads = sm::kMaxThreadsPerBlock;
  int max_dynamic_shared = sm::kSharedPerBlock;
};
FunctionResources function_resources(const CUfunc_st& f);
// Thread blocks of `block_size` threads and `dynamic_shared` bytes that fit
// on one SM at once; 0 when one does not fit.
int blocks_per_sm(const FunctionResources& r, int max_threads_per_sm, int block_size, size_t dynamic_shared);

// How long kernel `f` runs when launched with this many blocks and threads.
KernelTiming kernel_timing(const NodeDesc& node, const DeviceDesc& dev, const KernelCost& cost,
                           uint64_t blocks, uint64_t threads_per_block);
// The node's cost entry for a kernel name (mangled or not), over the default.
KernelCost resolve_kernel_cost(const NodeDesc& node, const std::string& name);

class Model {
 public:
  // cuInit: builds the model once from the node description.
  static CUresult init();
  static Model* instance();  // nullptr until init succeeded

  const NodeDesc& node() const { return node_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  const DeviceDesc& desc(int dev) const { return *devices_[dev].desc; }
  SharedState& shared() const { return shared_; }

  // Contexts.
  CUresult primary_retain(int dev, CUcontext* out);
  CUresult primary_release(int dev);
  CUresult primary_state(int dev, unsigned* flags, int* active);
  CUresult primary_set_flags(int dev, unsigned flags);
  CUresult ctx_create(int dev, CUcontext* out);
  CUresult ctx_destroy(CUcontext ctx);
  CUresult set_current(CUcontext ctx);
  static CUcontext current();
  CUresult current_device(int* dev);
  CUresult context_device(CUcontext ctx, int* dev);
  CUresult ctx_synchronize(CUcontext ctx);

  // Streams and events.
  CUresult stream_create(unsigned flags, int priority, CUstream* out);
  CUresult stream_destroy(CUstream s);
  CUresult stream_query(CUstream s, bool per_thread);
  CUresult stream_synchronize(CUstream s, bool per_thread);
  CUresult stream_wait_event(CUstream s, CUevent e, bool per_thread);
  CUresult stream_get(CUstream s, bool per_thread, unsigned* flags, int* priority);
  CUresult event_create(unsigned flags, CUevent* out);
  CUresult event_destroy(CUevent e);
  CUresult event_record(CUevent e, CUstream s, bool per_thread);
  CUresult event_query(CUevent e);
  CUresult event_synchronize(CUevent e);
  CUresult event_elapsed(float* ms, CUevent start, CUevent end);

  // Memory (model_memory.cpp).
  CUresult mem_alloc(size_t bytes, MemKind kind, unsigned flags, void** out);
  CUresult mem_alloc_async(size_t bytes, CUstream s, bool per_thread, void** out);
  CUresult mem_free(void* p, bool host);
  CUresult mem_free_async(void* p, CUstream s, bool per_thread);
  CUresult host_register(void* p, size_t bytes, unsigned flags);
  CUresult host_unregister(void* p);
  CUresult mem_info(size_t* free_bytes, size_t* total_bytes);
  CUresult copy(const CopyRequest& req);
  CUresult memset(CUdeviceptr dst, unsigned value, unsigned elem_size, size_t count, CUstream s,
                  bool per_thread, bool async);
  CUresult pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr p);
  bool find_allocation(const void* p, size_t bytes, Allocation* out);
  CUresult host_flags(void* p, unsigned* flags);

  // Modules and launches (model_kernels.cpp).
  CUresult module_load(const void* image, CUmodule* out);
  CUresult module_unload(CUmodule m);
  CUresult module_get_function(CUmodule m, const char* name, CUfunction* out);
  CUresult function_name(CUfunction f, const char** name);
  CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared_mem,
                  CUstream s, bool per_thread);

  // Kernel attributes and occupancy (model_occupancy.cpp).
  CUresult function_attribute(CUfunction f, CUfunction_attribute attr, int* value);
  CUresult set_function_attribute(CUfunction f, CUfunction_attribute attr, int value);
  CUresult occupancy(CUfunction f, int block_size, size_t dynamic_shared, int* blocks);
  CUresult occupancy_dynamic_shared(CUfunction f, int blocks, int block_size, size_t* bytes);

 private:
  explicit Model(const NodeDesc& node, std::vector<int> visible);
  static std::vector<int> visible_devices(const NodeDesc& node);

  // Blocks while the current device's queue is full (called without mu_).
  void wait_for_queue_slot();

  // Everything below runs with mu_ held.
  CUresult resolve_stream(CUstream s, bool per_thread, CUstream_st** out);
  CUstream_st* per_thread_stream(int dev);
  int64_t stream_ready(const CUstream_st& s, int64_t submit) const;
  Slot enqueue(CUstream_st& s, Work work);
  int64_t device_idle_time(int dev) const;
  CUresult free_locked(void* p, bool host, Allocation* freed);
  bool find_locked(const void* p, size_t bytes, Allocation* out) const;
  CUresult plan_copy(const CopyRequest& req, Slot* slot, int64_t* host_until, bool* caller_moves);
  int64_t max_idle_time() const;

  NodeDesc node_;
  SharedState& shared_;
  mutable std::mutex mu_;
  std::vector<DeviceState> devices_;
  std::set<CUctx_st*> contexts_;
  std::set<CUstream_st*> streams_;
  std::set<CUevent_st*> events_;
  std::set<CUmod_st*> modules_;
  std::set<CUfunc_st*> functions_;
  std::map<uintptr_t, Allocation> allocations_;  // by base address
};

}  // namespace simgpu::drv
