// Device model: modules, functions and the cost of a kernel launch.
#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "activity.hpp"
#include "../common/clock.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;         // fatbin image header
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;  // __fatBinC_Wrapper_t
constexpr size_t kMaxPtxScan = 64u << 20;

std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return result;
}

// "void ns::scale<float>(float*, int)" -> "ns::scale": drops the return
// type, template arguments, parameters and anonymous namespaces so node files
// can name kernels the way their source spells them.
std::string short_name(std::string demangled) {
  // Kernels in an anonymous namespace are named as if it were not there.
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (size_t at; (at = demangled.find(kAnonymous)) != std::string::npos;) demangled.erase(at, kAnonymous.size());
  std::string flat;
  int depth = 0;
  for (char c : demangled) {
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    if (depth == 0) flat += c;
    if (c == '>' && depth > 0) --depth;
  }
  const size_t space = flat.rfind(' ');
  return space == std::string::npos ? flat : flat.substr(space + 1);
}

bool looks_like_ptx(const char* text) {
  const size_t len = strnlen(text, kMaxPtxScan);
  const std::string_view view(text, len);
  return view.find(".entry") != std::string_view::npos && view.find(".version") != std::string_view::npos;
}

// PTX declares kernels as ".entry name(": a name it does not declare cannot
// be looked up, as with the real JIT.
bool ptx_declares(const char* text, const char* name) {
  const std::string_view view(text, strnlen(text, kMaxPtxScan));
  const std::string needle = std::string(".entry ") + name;
  for (size_t pos = view.find(needle); pos != std::string_view::npos; pos = view.find(needle, pos + 1)) {
    const size_t after = pos + needle.size();
    if (after < view.size() && (view[after] == '(' || view[after] == ' ' || view[after] == '\n')) return true;
  }
  return false;
}

}  // namespace

KernelCost resolve_kernel_cost(const NodeDesc& node, const std::string& name) {
  const std::string flat = short_name(demangle(name));
  const size_t colon = flat.rfind("::");
  const std::string unqualified = colon == std::string::npos ? flat : flat.substr(colon + 2);
  KernelCost cost = node.kernel_default;
  if (const KernelCost* o = node.kernel_override(name, flat, unqualified)) {
    if (o->kind) cost.kind = o->kind;
    if (o->fixed_us >= 0) cost.fixed_us = o->fixed_us;
    if (o->min_us >= 0) cost.min_us = o->min_us;
    if (o->flops_per_thread >= 0) cost.flops_per_thread = o->flops_per_thread;
    if (o->bytes_per_thread >= 0) cost.bytes_per_thread = o->bytes_per_thread;
    if (o->registers >= 0) cost.registers = o->registers;
    if (o->shared_bytes >= 0) cost.shared_bytes = o->shared_bytes;
    if (o->local_bytes >= 0) cost.local_bytes = o->local_bytes;
    if (o->max_threads_per_block > 0) cost.max_threads_per_block = o->max_threads_per_block;
  }
  return cost;
}

KernelTiming kernel_timing(const NodeDesc& node, const DeviceDesc& dev, const KernelCost& cost,
                           uint64_t blocks, uint64_t threads_per_block) {
  const double threads = static_cast<double>(blocks) * static_cast<double>(threads_per_block);
  const double clock = std::max(dev.compute_clock_ratio(), 0.01);
  const double flops = std::max(cost.flops_per_thread, 0.0) * threads;
  const double bytes = std::max(cost.bytes_per_thread, 0.0) * threads;
  // ns = work / (units per ns): TFLOP/s = 1e3 flop/ns, GB/s = 1 byte/ns.
  const double compute_ns = flops / (dev.fp32_tflops * 1e3 * clock);
  const double memory_ns = bytes / dev.dram_gbps;
  KernelTiming t;
  const bool memory_bound = cost.kind ? *cost.kind == KernelClass::Memory : memory_ns > compute_ns;
  double ns = std::max(compute_ns, memory_ns);
  if (cost.fixed_us >= 0) ns = cost.fixed_us * 1e3 / (memory_bound ? 1.0 : clock);
  ns = std::max(ns, std::max(cost.min_us, 0.0) * 1e3);
  (void)node;
  t.duration_ns = static_cast<int64_t>(std::llround(ns));
  t.activity = memory_bound ? Activity::KernelMemory : Activity::KernelCompute;
  t.dram_bytes = static_cast<uint64_t>(bytes);
  // A grid smaller than the machine leaves SMs idle: "busy" but not "full".
  t.sm_fraction = std::min(1.0, static_cast<double>(blocks) / std::max(dev.sm_count, 1));
  return t;
}

CUresult Model::module_load(const void* image, CUmodule* out) {
  if (!image || !out) return CUDA_ERROR_INVALID_VALUE;
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  const auto* bytes = static_cast<const unsigned char*>(image);
  const bool elf = bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
  const bool ptx = !elf && magic != kFatbinMagic && magic != kFatbinWrapperMagic &&
                   looks_like_ptx(static_cast<const char*>(image));
  if (!elf && !ptx && magic != kFatbinMagic && magic != kFatbinWrapperMagic) return CUDA_ERROR_INVALID_IMAGE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  auto* m = new CUmod_st;
  m->image = image;
  m->is_ptx = ptx;
  modules_.insert(m);
  *out = m;
  return CUDA_SUCCESS;
}

CUresult Model::module_unload(CUmodule m) {
  std::lock_guard lock(mu_);
  if (!modules_.erase(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, f] : m->functions) functions_.erase(f.get());
  for (const auto& [name, global] : m->globals) {
    const auto it = allocations_.find(global.first);
    if (it == allocations_.end()) continue;
    const Allocation a = it->second;
    allocations_.erase(it);
    devices_[a.device].memory_used -= std::min<uint64_t>(devices_[a.device].memory_used, a.size);
    shared_.add_process_memory(devices_[a.device].node_index, -static_cast<int64_t>(a.size));
    unmap_memory(a);
  }
  delete m;
  return CUDA_SUCCESS;
}

CUresult Model::module_declare_global(CUmodule m, const char* name, size_t bytes, const void* initial) {
  if (!name || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!modules_.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  if (m->globals.contains(name)) return CUDA_SUCCESS;
  void* p = map_memory(bytes);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  if (initial) std::memcpy(p, initial, bytes);  // the module image's initial values
  const auto base = reinterpret_cast<uintptr_t>(p);
  allocations_[base] = Allocation{base, bytes, dev, MemKind::Device, 0, true};
  devices_[dev].memory_used += bytes;
  shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
  m->globals.emplace(name, std::pair{base, bytes});
  return CUDA_SUCCESS;
}

CUresult Model::module_get_global(CUmodule m, const char* name, CUdeviceptr* address, size_t* bytes) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!modules_.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  const auto it = m->globals.find(name);
  if (it == m->globals.end()) return CUDA_ERROR_NOT_FOUND;
  if (address) *address = static_cast<CUdeviceptr>(it->second.first);
  if (bytes) *bytes = it->second.second;
  return CUDA_SUCCESS;
}

CUresult Model::module_get_function(CUmodule m, const char* name, CUfunction* out) {
  if (!name || !out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!modules_.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  if (auto it = m->functions.find(name); it != m->functions.end()) {
    *out = it->second.get();
    return CUDA_SUCCESS;
  }
  // Compiled images are not parsed (they may be compressed); PTX is checked.
  if (m->is_ptx && !ptx_declares(static_cast<const char*>(m->image), name)) return CUDA_ERROR_NOT_FOUND;
  auto f = std::make_unique<CUfunc_st>();
  f->module = m;
  f->name = name;
  f->cost = resolve_kernel_cost(node_, f->name);
  *out = f.get();
  functions_.insert(f.get());
  m->functions.emplace(name, std::move(f));
  return CUDA_SUCCESS;
}

CUresult Model::function_name(CUfunction f, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!functions_.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name.c_str();
  return CUDA_SUCCESS;
}

CUresult Model::plan_kernel(const KernelNodeParams& k, int device, Work* work) {
  const uint64_t threads_per_block = uint64_t{k.block[0]} * k.block[1] * k.block[2];
  const uint64_t blocks = uint64_t{k.grid[0]} * k.grid[1] * k.grid[2];
  if (threads_per_block == 0 || threads_per_block > 1024 || k.block[2] > 64 || blocks == 0 ||
      k.grid[1] > 65535 || k.grid[2] > 65535 || k.grid[0] > 0x7fffffffu)
    return CUDA_ERROR_INVALID_VALUE;
  if (!functions_.count(k.func)) return CUDA_ERROR_INVALID_HANDLE;
  const FunctionResources res = function_resources(*k.func);
  if (threads_per_block > static_cast<uint64_t>(res.max_threads) ||
      k.shared_mem > static_cast<unsigned>(res.max_dynamic_shared))
    return CUDA_ERROR_INVALID_VALUE;
  if (uint64_t(res.registers) * threads_per_block > uint64_t(sm::kRegisters)) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  // A cooperative grid must fit on the device at once.
  const DeviceDesc& dd = desc(device);
  if (k.cooperative && blocks > uint64_t(blocks_per_sm(res, dd.max_threads_per_sm, static_cast<int>(threads_per_block),
                                                       k.shared_mem)) * uint64_t(dd.sm_count))
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  const KernelTiming t = kernel_timing(node_, desc(device), k.func->cost, blocks, threads_per_block);
  *work = Work{Engine::Compute, t.activity, t.duration_ns, us_to_ns(node_.costs.kernel_start_latency),
               t.dram_bytes, t.sm_fraction, nullptr};
  work->traced.kind = DeviceRecord::Kernel;
  work->traced.name = k.func->name.c_str();
  for (int i = 0; i < 3; ++i) work->traced.grid[i] = k.grid[i], work->traced.block[i] = k.block[i];
  return CUDA_SUCCESS;
}

CUresult Model::launch(const KernelNodeParams& k, CUstream s, bool per_thread) {
  // The CPU cost of the launch call comes first: the GPU cannot start a
  // kernel the host has not finished submitting.
  spend_host_time(us_to_ns(node_.costs.launch));
  wait_for_queue_slot();
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  Work w;
  if (CUresult r = plan_kernel(k, st->device, &w)) return r;
  if (st->capture) {
    NodeParams p;
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    p.device = st->device;
    p.kernel = k;
    return capture_node(*st, std::move(p));
  }
  w.traced.correlation = activity_enter();
  submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, now_ns()});
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
