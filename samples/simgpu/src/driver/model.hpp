// The simulated device: what libcuda.so.1 (simgpu) models behind the driver API.
//
// Work is queued on virtual streams and scheduled on per-device engines
// (compute, host-to-device copy, device-to-host copy) in simulated time, which
// is CLOCK_MONOTONIC: an operation completes at an absolute instant and a
// synchronize sleeps until then, so wall-clock timings match the model.
// Device memory is ordinary host memory; copies and memsets move real bytes
// when their stream reaches them (host_worker.hpp), kernels compute nothing.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "model_graph.hpp"
#include "model_types.hpp"

namespace simgpu::drv {

inline bool is_device_kind(MemKind k) { return k == MemKind::Device || k == MemKind::Managed || k == MemKind::Array; }
inline bool is_pinned_kind(MemKind k) { return k == MemKind::HostPinned || k == MemKind::HostRegistered; }
void* map_memory(size_t bytes, bool populate = false);
void unmap_memory(const Allocation& a);

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
  CUresult ctx_limit(CUlimit limit, size_t* value, bool set);
  CUresult ctx_cache_config(CUfunc_cache* config, bool set);
  CUresult ctx_id(CUcontext ctx, unsigned long long* id);
  // A stream's id, device and context (the device's primary context).
  CUresult stream_identity(CUstream s, bool per_thread, unsigned long long* id, int* device, CUcontext* ctx);

  // Streams, events and host functions (model_streams.cpp).
  CUresult stream_create(unsigned flags, int priority, CUstream* out);
  CUresult stream_destroy(CUstream s);
  CUresult stream_query(CUstream s, bool per_thread);
  // `traced`: a program's synchronize, which CUPTI reports; the model's own
  // waits (a host-to-host copy's) are not.
  CUresult stream_synchronize(CUstream s, bool per_thread, bool traced = true);
  CUresult stream_wait_event(CUstream s, CUevent e, bool per_thread, unsigned flags = 0);
  CUresult stream_get(CUstream s, bool per_thread, unsigned* flags, int* priority);
  CUresult event_create(unsigned flags, CUevent* out);
  CUresult event_destroy(CUevent e);
  CUresult event_record(CUevent e, CUstream s, bool per_thread, unsigned flags = 0);
  CUresult event_query(CUevent e);
  CUresult event_synchronize(CUevent e);
  CUresult event_elapsed(float* ms, CUevent start, CUevent end);
  // Runs fn on simgpu's host thread when the stream reaches it; the stream's
  // later work waits for its return (cuStreamAddCallback, cuLaunchHostFunc).
  // A capturing stream records `node` as a host node instead; without one
  // (a stream callback) it refuses, as CUDA does.
  CUresult host_function(CUstream s, bool per_thread, std::function<void()> fn,
                         const CUDA_HOST_NODE_PARAMS* node = nullptr);

  // Memory (model_memory.cpp).
  CUresult mem_alloc(size_t bytes, MemKind kind, unsigned flags, void** out);
  // A null pool: the device's current pool (model_pool.cpp).
  CUresult mem_alloc_async(size_t bytes, CUstream s, bool per_thread, CUmemoryPool pool, void** out);
  CUresult mem_free(void* p, FreeOf what);
  CUresult mem_free_async(void* p, CUstream s, bool per_thread);
  CUresult host_register(void* p, size_t bytes, unsigned flags);
  CUresult host_unregister(void* p);
  CUresult mem_info(size_t* free_bytes, size_t* total_bytes);  // the current context's device
  CUresult device_mem_info(int dev, size_t* free_bytes, size_t* total_bytes) const;
  CUresult mem_alloc_pitch(size_t width, size_t height, void** out, size_t* pitch);
  // CUDA arrays and mipmapped arrays (model_arrays.cpp).
  CUresult array_create(const CUDA_ARRAY3D_DESCRIPTOR& d, CUarray* out);
  CUresult mipmapped_create(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned levels, CUmipmappedArray* out);
  CUresult array_destroy(CUarray a);
  CUresult mipmapped_destroy(CUmipmappedArray m);
  CUresult array_descriptor(CUarray a, CUDA_ARRAY3D_DESCRIPTOR* out);
  CUresult mipmapped_level(CUmipmappedArray m, unsigned level, CUarray* out);
  char* array_memory(CUarray a);  // where its elements are; null for no array
  // Texture and surface objects: handles over an array or device memory
  // that kernels would read (kernels compute nothing here); checked, kept,
  // destroyed.
  CUresult texture_create(const CUDA_RESOURCE_DESC& r, bool surface, unsigned long long* out);
  CUresult texture_destroy(unsigned long long handle, bool surface);
  // Device memory for a graph's memory-allocation node, with mu_ held.
  CUresult reserve_graph_memory(size_t bytes, int dev, void** out);

  // Virtual memory management (model_vmm.cpp): reserved address ranges,
  // physical allocations (memfds) and their mappings, which are device
  // allocations like any other while mapped. Access rights are checked for
  // shape, not enforced.
  static size_t vmm_granularity() { return 2u << 20; }
  CUresult vmm_check_prop(const CUmemAllocationProp* prop, int* dev) const;
  CUresult vmm_create(size_t bytes, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle* out);
  CUresult vmm_release(CUmemGenericAllocationHandle h);
  CUresult vmm_properties(CUmemGenericAllocationHandle h, CUmemAllocationProp* out);
  CUresult vmm_reserve(size_t bytes, size_t alignment, CUdeviceptr hint, CUdeviceptr* out);
  CUresult vmm_free_address(CUdeviceptr p, size_t bytes);
  CUresult vmm_map(CUdeviceptr p, size_t bytes, size_t offset, CUmemGenericAllocationHandle h);
  CUresult vmm_unmap(CUdeviceptr p, size_t bytes);
  CUresult vmm_set_access(CUdeviceptr p, size_t bytes, const CUmemAccessDesc* desc, size_t count);

  // Copies and memsets (model_copies.cpp).
  CUresult copy(const CopyRequest& req);
  CUresult copy_3d(const CUDA_MEMCPY3D& c, CUstream s, bool per_thread, bool async);
  CUresult memset(const MemsetRequest& req);
  CUresult pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr p);
  bool find_allocation(const void* p, size_t bytes, Allocation* out);
  CUresult host_flags(void* p, unsigned* flags);

  // Modules and launches (model_kernels.cpp).
  CUresult module_load(const void* image, CUmodule* out);
  CUresult module_unload(CUmodule m);
  CUresult module_get_function(CUmodule m, const char* name, CUfunction* out);
  // Module globals: device memory the module holds, not an allocation of
  // the program's (no allocation record), freed when it is unloaded.
  CUresult module_declare_global(CUmodule m, const char* name, size_t bytes, const void* initial);
  CUresult module_get_global(CUmodule m, const char* name, CUdeviceptr* address, size_t* bytes);
  CUresult function_name(CUfunction f, const char** name);
  CUresult launch(const KernelNodeParams& k, CUstream s, bool per_thread);

  // Graphs (model_graph.cpp, model_graph_exec.cpp).  Node parameters are
  // in the model's terms (model_graph.hpp); graph_add_node fills in the
  // address of a memory-allocation node.
  CUresult graph_create(CUgraph* out);
  CUresult graph_destroy(CUgraph g);
  CUresult graph_add_node(CUgraph g, const CUgraphNode* deps, size_t count, NodeParams* params, CUgraphNode* out);
  CUresult graph_node_params(CUgraphNode n, CUgraphNodeType type, NodeParams* out);
  CUresult graph_set_node_params(CUgraphNode n, const NodeParams& params);
  CUresult graph_node_type(CUgraphNode n, CUgraphNodeType* type);
  CUresult graph_nodes(CUgraph g, bool roots_only, CUgraphNode* nodes, size_t* count);
  CUresult graph_edges(CUgraph g, CUgraphNode* from, CUgraphNode* to, size_t* count);
  CUresult graph_node_neighbours(CUgraphNode n, bool dependents, CUgraphNode* out, size_t* count);
  CUresult graph_change_edges(CUgraph g, const CUgraphNode* from, const CUgraphNode* to, size_t count, bool add);
  CUresult graph_destroy_node(CUgraphNode n);
  CUresult graph_clone(CUgraph g, CUgraph* out);
  CUresult graph_find_in_clone(CUgraphNode original, CUgraph clone, CUgraphNode* out);
  CUresult graph_child(CUgraphNode n, CUgraph* out);
  CUresult graph_instantiate(CUgraph g, unsigned long long flags, CUgraphExec* out, CUgraphNode* error_node);
  CUresult graph_exec_destroy(CUgraphExec e);
  CUresult graph_exec_flags(CUgraphExec e, unsigned long long* flags);
  CUresult graph_exec_update(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info);
  CUresult graph_exec_set_params(CUgraphExec e, CUgraphNode n, const NodeParams& params);
  CUresult graph_launch(CUgraphExec e, CUstream s, bool per_thread);
  CUresult graph_memory(int dev, uint64_t* current, uint64_t* high);

  // Stream capture (model_capture.cpp).
  CUresult capture_begin(CUstream s, bool per_thread, CUstreamCaptureMode mode, CUgraph into,
                         const CUgraphNode* deps, size_t count);
  CUresult capture_end(CUstream s, bool per_thread, CUgraph* out);
  CUresult capture_info(CUstream s, bool per_thread, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                        const CUgraphNode** deps, size_t* count);
  CUresult capture_update_deps(CUstream s, bool per_thread, const CUgraphNode* deps, size_t count, unsigned flags);
  static CUresult exchange_capture_mode(CUstreamCaptureMode* mode);

  // Managed memory (model_managed.cpp).
  CUresult prefetch(CUdeviceptr p, size_t count, CUmemLocation to, unsigned flags, CUstream s, bool per_thread);
  CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice, CUmemLocation where);
  CUresult range_attribute(void* data, size_t size, CUmem_range_attribute attr, CUdeviceptr p, size_t count);
  CUresult attach_memory(CUstream s, bool per_thread, CUdeviceptr p, size_t length, unsigned flags);

  // Memory pools (model_pool.cpp).
  CUresult pool_create(const CUmemPoolProps* props, CUmemoryPool* out);
  CUresult pool_destroy(CUmemoryPool pool);
  CUresult device_pool(int dev, bool default_pool, CUmemoryPool* out);
  CUresult set_device_pool(int dev, CUmemoryPool pool);
  CUresult pool_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value, bool set);
  CUresult pool_trim(CUmemoryPool pool, size_t keep);
  CUresult pool_set_access(CUmemoryPool pool, const CUmemAccessDesc* descs, size_t count);
  CUresult pool_get_access(CUmemoryPool pool, const CUmemLocation* location, CUmemAccess_flags* flags);

  // Peer access and copies between devices (model_peer.cpp).
  CUresult can_access_peer(int dev, int peer, int* can);
  CUresult set_peer_access(CUcontext peer, unsigned flags, bool enable);
  CUresult p2p_attribute(int* value, CUdevice_P2PAttribute attr, int src, int dst);
  CUresult peer_copy(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                     CUstream s, bool per_thread, bool async);

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
  // `orders`: the caller queues work on it or waits for it, which the legacy
  // stream cannot do while a blocking stream captures.
  CUresult resolve_stream(CUstream s, bool per_thread, CUstream_st** out, bool orders = true);
  CUstream_st* per_thread_stream(int dev);
  int64_t stream_ready(const CUstream_st& s, int64_t submit) const;
  // Submits an operation to s: scheduled at once when s and the streams it
  // implicitly follows are resolved, else queued on s's backlog.
  std::shared_ptr<Scheduled> submit(CUstream_st& s, StreamOp op);
  void add_implicit_waits(CUstream_st& s, int64_t submit);
  void schedule(CUstream_st& s, StreamOp& op);
  void drain_backlogs();
  void host_function_returned(CUstream_st* s);
  void advance_tail(CUstream_st& s, int64_t t);
  // Whether stream_ready(s) is final: nothing it follows is still unresolved.
  bool ready_known(const CUstream_st& s) const;
  void wait_until_ready_known(std::unique_lock<std::mutex>& lock, const CUstream_st& s);
  void wait_until_scheduled(const std::shared_ptr<Scheduled>& op);
  Slot enqueue(CUstream_st& s, Work work, int64_t submit);
  int64_t device_idle_time(int dev) const;
  CUresult free_locked(void* p, FreeOf what, Allocation* freed);
  bool find_locked(const void* p, size_t bytes, Allocation* out) const;
  uint8_t memory_kind_at(const void* p, size_t len) const;
  enum class HostHold { None, Staging, UntilDone };
  CUresult describe_copy_locked(const CUDA_MEMCPY3D& c, CopyRequest* out) const;
  struct CopySide {
    const char* at = nullptr;
    size_t pitch = 0, rows = 0;
    bool array = false;
  };
  CUresult copy_side_locked(const CUDA_MEMCPY3D& c, bool source, CopySide* out) const;
  bool texture_resource_ok(const CUDA_RESOURCE_DESC& r, bool surface) const;
  CUresult plan_copy(const CopyRequest& req, CUstream_st* st, Work* work, HostHold* hold);
  CUresult plan_memset(const MemsetRequest& req, int device, Work* work, bool* holds = nullptr);
  CUresult plan_kernel(const KernelNodeParams& k, int device, Work* work);
  bool peer_capable(int dev, int peer) const;
  CUmemoryPool pool_of(int dev, bool default_pool);
  CUresult pool_alloc(CUmemoryPool pool, size_t bytes, CUstream_st& s, void** out, int64_t* host_cost);
  void pool_free(const Allocation& a, const CUstream_st* s, MarkerRef freed_at);
  void trim_pool(CUmemoryPool pool, uint64_t keep);
  void retire_pool(CUmemoryPool pool);
  void release_pool_memory();  // at a synchronize: pools keep only their release threshold
  void synchronized();         // (without mu_)
  CUresult managed_range(CUdeviceptr p, size_t count, Allocation* out) const;
  CUresult location_device(const CUmemLocation& l, int* dev) const;
  bool vmm_range_reserved(uintptr_t p, size_t bytes) const;
  void vmm_drop_if_unused(CUmemGenericAllocationHandle h);
  CUresult check_access(CUdeviceptr p, size_t bytes, const CUmemAccessDesc* desc, size_t count);
  void plan_peer_copy(int src, int dst, size_t bytes, Work* w) const;

  // Graphs and capture, with mu_ held.
  CUresult check_node(const NodeParams& p) const;
  CUgraphNode_st* add_node(CUgraph_st& g, const std::vector<CUgraphNode_st*>& deps, NodeParams params);
  void register_graph(CUgraph_st* g);
  void forget_graph(CUgraph_st* g);
  void forget_node(CUgraphNode_st* n);
  CUresult build_exec(const CUgraph_st& g, CUgraphExec_st& e, CUgraphNode* error_node);
  CUresult plan_node(const NodeParams& p, CUstream_st& s, std::vector<StreamOp>* ops);
  void retire_stream(CUstream_st* s);
  void release_graph_memory();
  CUresult check_unsafe_call();
  CUresult check_implicit_sync(const CUstream_st& s);
  CUresult check_not_capturing(const CUstream_st& s);
  CUresult capture_node(CUstream_st& s, NodeParams params, CUgraphNode_st** out = nullptr);
  void invalidate(CaptureSession& session);
  CUresult capture_alloc(CUstream_st& s, size_t bytes, void** out);
  CUresult capture_free(CUstream_st& s, void* p);
  CUresult capture_record_event(CUstream_st& s, CUevent e, unsigned flags);
  CUresult capture_wait_event(CUstream_st& s, CUevent e, unsigned flags);
  int64_t max_idle_time() const;

  NodeDesc node_;
  SharedState& shared_;
  mutable std::mutex mu_;
  std::condition_variable resolved_;  // a backlog drained or a host function returned
  std::vector<DeviceState> devices_;
  std::set<CUctx_st*> contexts_;
  std::set<CUstream_st*> streams_;
  std::vector<CUstream_st*> per_thread_streams_;
  std::set<CUevent_st*> events_;
  std::set<CUmod_st*> modules_;
  std::set<CUfunc_st*> functions_;
  std::map<uintptr_t, Allocation> allocations_;  // by base address
  std::map<uintptr_t, ArrayShape> arrays_;       // by handle (a heap object, as a real driver's)
  std::map<uintptr_t, MipmapChain> mipmaps_;     // by handle
  std::map<unsigned long long, bool> textures_;  // texture (false) and surface (true) objects
  unsigned long long next_texture_ = 1;
  std::set<CUgraph_st*> graphs_;
  std::set<CUgraphNode_st*> nodes_;
  std::set<CUgraphExec_st*> execs_;
  std::set<CaptureSession*> captures_;  // in progress
  std::array<uint64_t, SharedState::kMaxDevices> graph_memory_high_{};
  std::set<CUmemoryPool> pools_;
  std::set<CUmemoryPool> retired_pools_;  // destroyed, with memory still out
  std::map<CUmemGenericAllocationHandle, VmmAllocation> vmm_allocations_;
  CUmemGenericAllocationHandle next_vmm_handle_ = 0x5100000;
  std::map<uintptr_t, size_t> reservations_;  // cuMemAddressReserve: base -> bytes

 public:
  // Graph memory a GraphMemory gave back (its destructor runs with mu_ held);
  // release_graph_memory() frees it.
  struct FreedRange {
    uintptr_t base;
    size_t bytes;
    int device;
  };
  std::vector<FreedRange> released_graph_memory_;
};

}  // namespace simgpu::drv
