#include "call_info.h"

#include "graph_execs.h"
#include "kernel_names.h"
#include "memory_registry.h"
#include "stacks/stack_capture.h"

namespace gpuscope::hooks {
namespace {

using fb::MemoryKind;

thread_local uint32_t t_launches __attribute__((tls_model("initial-exec"))) = 0;

// The range the innermost free on this thread removed: a runtime free and
// the driver free under it both end here, and the outer one (which records)
// still needs the size the inner one took out of the registry.
struct LastFreed {
  uint64_t address;
  uint64_t size;
};
thread_local LastFreed t_last_freed __attribute__((tls_model("initial-exec"))) = {0, 0};

uint64_t forget_range(uint64_t address) {
  const auto removed = registry::memory_registry().remove(address);
  if (removed.size != 0) {
    t_last_freed = {address, removed.size};
    return removed.size;
  }
  return t_last_freed.address == address ? t_last_freed.size : 0;
}

bool on_device(MemoryKind k) {
  return k == MemoryKind::Device || k == MemoryKind::Pool || k == MemoryKind::Array ||
         k == MemoryKind::DeviceStatic;
}

// A host pointer the registry does not know is ordinary pageable memory.
MemoryKind host_kind(const void* p) {
  const auto r = registry::memory_registry().find(reinterpret_cast<uint64_t>(p));
  return r.kind == MemoryKind::Unknown ? MemoryKind::Pageable : r.kind;
}

struct Endpoints {
  fb::CopyDirection direction;
  MemoryKind src, dst;
};

// cudaMemcpyDefault (unified addressing): the registry says where each side
// is; device memory of two devices is a peer copy.
Endpoints infer_endpoints(const void* dst, const void* src) {
  const auto& reg = registry::memory_registry();
  const registry::MemoryRange from = reg.find(reinterpret_cast<uint64_t>(src));
  const registry::MemoryRange to = reg.find(reinterpret_cast<uint64_t>(dst));
  const auto host_side = [](MemoryKind k) { return k == MemoryKind::Unknown ? MemoryKind::Pageable : k; };
  const MemoryKind s = host_side(from.kind), d = host_side(to.kind);
  if (s == MemoryKind::Managed || d == MemoryKind::Managed) return {fb::CopyDirection::Default, s, d};
  if (on_device(s) && on_device(d))
    return {from.device != to.device ? fb::CopyDirection::PeerToPeer : fb::CopyDirection::DeviceToDevice, s, d};
  if (on_device(s)) return {fb::CopyDirection::DeviceToHost, s, d};
  return {on_device(d) ? fb::CopyDirection::HostToDevice : fb::CopyDirection::HostToHost, s, d};
}

Endpoints endpoints(CopyKind kind, const void* dst, const void* src) {
  switch (kind) {
    case CopyKind::HostToDevice: return {fb::CopyDirection::HostToDevice, host_kind(src), MemoryKind::Device};
    case CopyKind::DeviceToHost: return {fb::CopyDirection::DeviceToHost, MemoryKind::Device, host_kind(dst)};
    case CopyKind::DeviceToDevice: return {fb::CopyDirection::DeviceToDevice, MemoryKind::Device, MemoryKind::Device};
    case CopyKind::HostToHost: return {fb::CopyDirection::HostToHost, host_kind(src), host_kind(dst)};
    case CopyKind::PeerToPeer: return {fb::CopyDirection::PeerToPeer, MemoryKind::Device, MemoryKind::Device};
    case CopyKind::Default: break;
  }
  return infer_endpoints(dst, src);
}

}  // namespace

uint64_t element_extent_bytes(const void* dst_array, const void* src_array, uint64_t width, uint64_t height,
                              uint64_t depth) noexcept {
  const void* array = dst_array != nullptr ? dst_array : src_array;
  uint64_t element = 1;
  if (array != nullptr) {
    const registry::MemoryRange r = registry::memory_registry().find(reinterpret_cast<uint64_t>(array));
    if (r.kind == MemoryKind::Array && r.element_bytes != 0) element = r.element_bytes;
  }
  return element * width * height * depth;
}

namespace detail {
thread_local constinit int16_t t_device __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail

// The unwind is gpuscope's time, not the call's, so the call's clock starts
// after it.
void CallInfo::unwind(capture::ApiCallScope& scope) noexcept {
  if (sample_stack && t_launches++ % kLaunchStackEvery != 0) return;
  stack = stacks::capture_stack_id();
  scope.restart_clock();
}

void CopyCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  finish_work(s, result, flags, captured(s, result, flags), [&](uint64_t end) {
    // A prefetch's pages are managed at both ends; only its destination is known.
    Endpoints e = endpoints(kind, dst, src);
    if (prefetch) e.src = e.dst = MemoryKind::Managed;
    const uint16_t copy_flags = (async ? container::kCopyAsync : 0) | (prefetch ? container::kCopyPrefetch : 0);
    return fb::Copy(s.start(), end - s.start(), s.correlation_id(), bytes, stream, e.direction, e.src, e.dst,
                    fb::Source::Host, current_device(), copy_flags);
  });
}

void MemsetCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  finish_work(s, result, flags, captured(s, result, flags), [&](uint64_t end) {
    const auto kind = registry::memory_registry().find(reinterpret_cast<uint64_t>(target)).kind;
    return fb::Memset(s.start(), end - s.start(), s.correlation_id(), bytes, stream, value,
                      kind == MemoryKind::Unknown ? MemoryKind::Device : kind, fb::Source::Host, current_device());
  });
}

// The registry follows every level (adding or removing twice is harmless);
// returns the range the call made or ended.
AllocCall::Range AllocCall::update_registry(int32_t result) const noexcept {
  Range r{reinterpret_cast<uint64_t>(address), bytes};
  if (result != 0) return r;
  auto& reg = registry::memory_registry();
  if (op == fb::AllocOp::Alloc || op == fb::AllocOp::Register) {
    if (out_pointer != nullptr) r.address = reinterpret_cast<uint64_t>(*out_pointer);
    if (out_address != nullptr) r.address = *out_address;
    if (out_pitch != nullptr) r.size = *out_pitch * rows;
    reg.add(r.address, r.size, kind, current_device(), element_bytes);
  } else {
    const uint64_t removed = forget_range(r.address);
    if (r.size == 0) r.size = removed;
  }
  return r;
}

void AllocCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  // A stream-ordered allocation captured into a graph reserves its address
  // now (copies may name it) but allocates only when the graph runs.
  const bool in_graph = async && captured(s, result, flags);
  const Range r = update_registry(result);
  // A free of null frees nothing (cudaFree(0) is how programs create their
  // context): the call, not a free that would count as allocator churn.
  if (op == fb::AllocOp::Free && r.address == 0) {
    finish(s, result, flags);
    return;
  }
  finish_work(s, result, flags, in_graph, [&](uint64_t end) {
    return fb::Alloc(s.start(), end - s.start(), s.correlation_id(), r.address, r.size, op, kind, fb::Source::Host,
                     async ? container::kAllocAsync : 0, current_device(), 0);
  });
}

// A failing synchronize still held the thread: its record carries the result.
void SyncCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  finish_with(s, result, flags, [&](uint64_t end) { return record(s, end, result); });
}

fb::Sync SyncCall::record(const capture::ApiCallScope& s, uint64_t end, int32_t result) const noexcept {
  return fb::Sync(s.start(), end - s.start(), s.correlation_id(), reinterpret_cast<uint64_t>(object), kind,
                  fb::Source::Host, current_device(), result);
}

void LaunchCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  finish_work(s, result, flags, captured(s, result, flags), [&](uint64_t end) {
    const auto clamp16 = [](uint32_t v) { return static_cast<uint16_t>(v > 0xFFFF ? 0xFFFF : v); };
    return fb::Kernel(s.start(), end - s.start(), s.correlation_id(), stream, registry::kernel_names().find(function),
                      grid[0], clamp16(grid[1]), clamp16(grid[2]), clamp16(block[0]), clamp16(block[1]),
                      clamp16(block[2]), current_device(), shared_bytes, fb::Source::Host, 0, 0, 0);
  });
}

// The graph's work as counted when it was instantiated (flagged unknown
// when it never was).
void GraphLaunchCall::after(capture::ApiCallScope& s, int32_t result, uint8_t flags) noexcept {
  finish_work(s, result, flags, captured(s, result, flags), [&](uint64_t end) {
    const registry::GraphWork w = registry::graph_execs().find(exec);
    const uint8_t graph_flags = (w.known ? 0 : container::kGraphContentsUnknown) |
                                (w.conditional ? container::kGraphHasConditional : 0);
    return fb::GraphLaunch(s.start(), end - s.start(), s.correlation_id(), stream, exec, w.kernels, w.copies,
                           w.memsets, w.other, current_device(), fb::Source::Host, graph_flags, 0);
  });
}

CopyCall copy(const void* dst, const void* src, uint64_t bytes, int kind, const void* stream, bool async) noexcept {
  CopyCall c;
  c.stream = stream_id(stream);
  c.wants_stack = true;
  c.bytes = bytes;
  c.dst = dst;
  c.src = src;
  c.kind = kind >= 0 && kind <= 5 ? static_cast<CopyKind>(kind) : CopyKind::Default;
  c.async = async;
  return c;
}

CopyCall prefetch(const void* address, uint64_t bytes, bool to_device, const void* stream) noexcept {
  const CopyKind kind = to_device ? CopyKind::HostToDevice : CopyKind::DeviceToHost;
  CopyCall c = copy(address, address, bytes, static_cast<int>(kind), stream, true);
  c.prefetch = true;
  return c;
}

GraphLaunchCall graph_launch(const void* exec, const void* stream) noexcept {
  GraphLaunchCall c;
  c.stream = stream_id(stream);
  c.wants_stack = true;
  c.sample_stack = true;
  c.exec = reinterpret_cast<uint64_t>(exec);
  return c;
}

MemsetCall memset_of(const void* target, uint32_t value, uint64_t bytes, const void* stream, bool async) noexcept {
  MemsetCall c;
  c.stream = stream_id(stream);
  c.wants_stack = true;  // a memset of host-visible memory synchronizes: its call site is evidence
  c.bytes = bytes;
  c.target = target;
  c.value = value;
  c.async = async;
  return c;
}

SyncCall sync_of(fb::SyncKind kind, const void* object) noexcept {
  SyncCall c;
  c.wants_stack = kind != fb::SyncKind::StreamQuery && kind != fb::SyncKind::EventQuery;
  c.kind = kind;
  c.object = object;
  if (kind == fb::SyncKind::Stream || kind == fb::SyncKind::StreamQuery || kind == fb::SyncKind::StreamWaitEvent)
    c.stream = stream_id(object);
  return c;
}

PollCall poll_of(fb::SyncKind kind, const void* object) noexcept {
  PollCall c;
  static_cast<SyncCall&>(c) = sync_of(kind, object);
  return c;
}

AllocCall allocation(void* const* out, uint64_t bytes, fb::MemoryKind kind, const void* stream, bool async) noexcept {
  AllocCall c;
  c.stream = stream_id(stream);
  c.wants_stack = true;
  c.out_pointer = out;
  c.bytes = bytes;
  c.kind = kind;
  c.async = async;
  return c;
}

AllocCall release(const void* address, fb::MemoryKind kind, const void* stream, bool async) noexcept {
  AllocCall c = allocation(nullptr, 0, kind, stream, async);
  c.op = fb::AllocOp::Free;
  c.address = address;
  return c;
}

AllocCall registration(const void* address, uint64_t bytes) noexcept {
  AllocCall c = allocation(nullptr, bytes, MemoryKind::Registered);
  c.op = fb::AllocOp::Register;
  c.address = address;
  return c;
}

AllocCall unregistration(const void* address) noexcept {
  AllocCall c = release(address, MemoryKind::Registered);
  c.op = fb::AllocOp::Unregister;
  return c;
}

}  // namespace gpuscope::hooks
