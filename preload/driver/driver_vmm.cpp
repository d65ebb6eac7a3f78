// CUDA driver virtual memory management: address reservations, physical
// allocations (cuMemCreate, cuMemRelease) and their mappings. PyTorch's
// expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True),
// vLLM's sleep mode and NCCL allocate this way, never through cuMemAlloc:
// without these hooks their allocator churn and their device memory were
// invisible, and a copy to mapped memory looked like one to unknown memory.
//
// A physical allocation is an Alloc record keyed by its handle
// (container::kAllocPhysical): its memory is in use from creation to
// release, however often it is mapped. Mapping, access, unmapping and the
// address space are ApiCalls, counted as allocation and freeing time by
// name (analyzer/model/call_kinds.cpp). What is mapped where is kept
// whether or not gpuscope records (Tracker), so a capture window or an
// attach that opens later still classifies copies to it.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"
#include "memory_registry.h"
#include "physical_allocations.h"

namespace {

using gpuscope::capture::ApiCallScope;
using gpuscope::fb::AllocOp;
using gpuscope::fb::MemoryKind;
using gpuscope::hooks::CallInfo;
using gpuscope::registry::PhysicalAllocation;
using gpuscope::registry::physical_allocations;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;

// Allocation sites are what a churn finding names; these calls cost
// microseconds in the driver, so every one carries its stack.
CallInfo with_stack() {
  CallInfo c;
  c.wants_stack = true;
  return c;
}

gpuscope::fb::Alloc physical_record(const ApiCallScope& s, uint64_t end, AllocOp op, const PhysicalAllocation& a) {
  return gpuscope::fb::Alloc(s.start(), end - s.start(), s.correlation_id(), a.handle, a.bytes, op, a.kind,
                             gpuscope::fb::Source::Host, gpuscope::container::kAllocPhysical, a.device, 0);
}

// cuMemCreate (op Alloc) and cuMemRelease (op Free). A release frees the
// memory only when nothing maps it any more; otherwise the last cuMemUnmap
// does, and its hook writes the Free.
struct PhysicalCall : CallInfo {
  AllocOp op = AllocOp::Alloc;
  const CUmemGenericAllocationHandle* created = nullptr;
  PhysicalAllocation allocation;  // cuMemCreate: size and properties; cuMemRelease: the handle

  void after(ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
    const bool memory_changes =
        result == 0 && (op == AllocOp::Alloc || physical_allocations().release_frees(allocation.handle));
    if (!memory_changes) {
      finish(s, result, flags);
      return;
    }
    PhysicalAllocation a = op == AllocOp::Alloc ? allocation : physical_allocations().find(allocation.handle);
    if (op == AllocOp::Alloc) a.handle = *created;
    finish_work(s, result, flags, false, [&](uint64_t end) { return physical_record(s, end, op, a); });
  }
  // After after(), which reads the table as it was before the call.
  void track(int32_t result) noexcept {
    if (result != 0) return;
    if (op == AllocOp::Free) return physical_allocations().release(allocation.handle);
    allocation.handle = *created;
    physical_allocations().add(allocation);
  }
};

PhysicalCall creation(const CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop) {
  PhysicalCall c;
  c.wants_stack = true;
  c.created = handle;
  c.allocation.bytes = bytes;
  const bool on_device = prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  c.allocation.kind = on_device ? MemoryKind::Device : MemoryKind::Pinned;
  c.allocation.device = on_device ? static_cast<int16_t>(prop->location.id) : gpuscope::hooks::current_device();
  return c;
}

PhysicalCall release_of(CUmemGenericAllocationHandle handle) {
  PhysicalCall c;
  c.wants_stack = true;
  c.op = AllocOp::Free;
  c.allocation.handle = handle;
  return c;
}

// cuMemMap and cuMemUnmap: the memory registry follows the address space,
// so that copies to mapped memory are known as device (or pinned) memory.
struct MappingCall : CallInfo {
  uint64_t address = 0, bytes = 0;
  CUmemGenericAllocationHandle handle = 0;  // cuMemMap; 0 for cuMemUnmap

  // An unmap that drops the last mapping of a released allocation frees it.
  void after(ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
    const uint64_t end = finish(s, result, flags);
    if (handle != 0 || result != 0 || end == 0 || s.depth() != 0) return;
    physical_allocations().unmap_frees(address, bytes, [&](const PhysicalAllocation& a) {
      gpuscope::capture::record(s.slot(), physical_record(s, end, AllocOp::Free, a), s.record_flags());
    });
  }
  void track(int32_t result) noexcept {
    if (result != 0) return;
    auto& memory = gpuscope::registry::memory_registry();
    if (handle == 0) {
      physical_allocations().unmap(address, bytes);
      return memory.remove_within(address, bytes);
    }
    const PhysicalAllocation a = physical_allocations().map(address, bytes, handle);
    // Created before gpuscope was loaded: device memory is by far the likelier.
    const bool known = a.kind != MemoryKind::Unknown;
    memory.add(address, bytes, known ? a.kind : MemoryKind::Device, known ? a.device : gpuscope::hooks::current_device());
  }
};

// cuMemRetainAllocationHandle: one more reference, which the program
// releases with one more cuMemRelease.
struct RetainCall : CallInfo {
  const CUmemGenericAllocationHandle* handle = nullptr;
  void track(int32_t result) noexcept {
    if (result == 0) physical_allocations().retain(*handle);
  }
};

RetainCall retention(const CUmemGenericAllocationHandle* handle) {
  RetainCall c;
  c.handle = handle;
  return c;
}

MappingCall mapping(CUdeviceptr address, size_t bytes, CUmemGenericAllocationHandle handle) {
  MappingCall c;
  c.wants_stack = true;
  c.address = address;
  c.bytes = bytes;
  c.handle = handle;
  return c;
}

}  // namespace

#define GPUSCOPE_DRIVER_VMM(X)                                                                                   \
  X(CUresult, cuMemCreate, D,                                                                                    \
    (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp* prop, unsigned long long f),          \
    (h, n, prop, f), (creation(h, n, prop)))                                                                     \
  X(CUresult, cuMemRelease, D, (CUmemGenericAllocationHandle h), (h), (release_of(h)))                           \
  X(CUresult, cuMemMap, D,                                                                                       \
    (CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h, unsigned long long f),              \
    (p, n, offset, h, f), (mapping(p, n, h)))                                                                    \
  X(CUresult, cuMemUnmap, D, (CUdeviceptr p, size_t n), (p, n), (mapping(p, n, 0)))                              \
  X(CUresult, cuMemSetAccess, D, (CUdeviceptr p, size_t n, const CUmemAccessDesc* desc, size_t count),           \
    (p, n, desc, count), (with_stack()))                                                                         \
  X(CUresult, cuMemAddressReserve, D,                                                                            \
    (CUdeviceptr * p, size_t n, size_t alignment, CUdeviceptr addr, unsigned long long f),                        \
    (p, n, alignment, addr, f), (with_stack()))                                                                  \
  X(CUresult, cuMemAddressFree, D, (CUdeviceptr p, size_t n), (p, n), (with_stack()))                          \
  X(CUresult, cuMemRetainAllocationHandle, D, (CUmemGenericAllocationHandle * h, void* p), (h, p), (retention(h)))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_VMM, driver_vmm_hooks)
