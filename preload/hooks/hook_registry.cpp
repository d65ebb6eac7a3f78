#include <dlfcn.h>

#include <cstdio>

#include "call_counts.h"
#include "hook_support.h"
#include "instance.h"
#include "loader/entry_points.h"
#include "loader/object_of.h"

namespace gpuscope::hooks {

bool HookSlot::adopt(void* p) noexcept {
  if (p == nullptr || p == wrapper()) return false;
  if (void* held = real.load(std::memory_order_acquire); held != nullptr) return held == p;
  // Another copy's hook hands the call back to the primary: never chain to it.
  if (preload::is_primary_instance() && preload::in_other_instance(p)) return false;
  void* expected = nullptr;
  if (real.compare_exchange_strong(expected, p, std::memory_order_acq_rel)) return true;
  return expected == p;
}

namespace {
constexpr size_t kMaxHandles = 16;
std::atomic<void*> g_handles[kMaxHandles];
}  // namespace

void remember_library_handle(void* handle) noexcept {
  for (auto& slot : g_handles) {
    void* expected = nullptr;
    if (slot.load(std::memory_order_acquire) == handle) return;
    if (slot.compare_exchange_strong(expected, handle, std::memory_order_acq_rel) || expected == handle) return;
  }
}

namespace {

// The primary copy's hook for this slot's name (and version) when this copy
// stands down (instance.h); null otherwise.
void* primary_hook(const HookSlot& slot) {
  const preload::InstanceMarker* primary = preload::primary_instance_marker();
  if (primary == nullptr) return nullptr;
  if (slot.version == nullptr) return primary->hook_address(slot.name);
  char versioned[160];
  const int n = std::snprintf(versioned, sizeof versioned, "%s@%s", slot.name, slot.version);
  return n > 0 && static_cast<size_t>(n) < sizeof versioned ? primary->hook_address(versioned) : nullptr;
}

void* lookup_in(void* handle, const HookSlot& slot) {
  return slot.version != nullptr ? dlvsym(handle, slot.name, slot.version) : capture::real_dlsym()(handle, slot.name);
}

}  // namespace

void* HookSlot::resolve_next() noexcept {
  void* const own = wrapper();
  // A copy standing down passes every call to the primary's hook (instance.h).
  void* p = primary_hook(*this);
  if (p == nullptr) p = version != nullptr ? preload::next_definition(name, version) : preload::next_definition(name);
  for (size_t i = 0; (p == nullptr || p == own) && i < kMaxHandles; ++i) {
    void* handle = g_handles[i].load(std::memory_order_acquire);
    if (handle == nullptr) break;
    p = lookup_in(handle, *this);
  }
  if (p == nullptr || p == own) p = preload::definition_in_any_object(name, version);
  if (p == nullptr || p == own) return nullptr;
  adopt(p);
  return real.load(std::memory_order_acquire);
}

uint32_t HookSlot::intern_name() {
  const uint32_t v = capture::session_strings().intern(name);  // once per function: interning is idempotent
  function_id.store(v, std::memory_order_relaxed);
  return v;
}

uint16_t HookSlot::assign_counter() {
  const uint16_t assigned = capture::assign_call_counter(id(), flags);
  uint16_t expected = 0;
  // A racing thread may have assigned one first: use its index (ours stays unused).
  if (!counter.compare_exchange_strong(expected, assigned != 0 ? assigned : kNoCounter, std::memory_order_relaxed))
    return expected == kNoCounter ? 0 : expected;
  return assigned;
}

namespace {

constexpr HookFamily kFamilies[] = {runtime_copy_hooks,      runtime_memset_hooks, runtime_alloc_hooks,
                                runtime_sync_hooks,      runtime_launch_hooks, runtime_device_hooks,
                                runtime_graph_hooks,     runtime_memory_hooks, runtime_host_work_hooks,
                                driver_copy_hooks,       driver_alloc_hooks,   driver_sync_hooks,
                                driver_launch_hooks,     driver_entry_hooks,   driver_graph_hooks,
                                driver_memory_hooks,     driver_host_work_hooks, driver_vmm_hooks};

}  // namespace

// A scan of the families' constant slot arrays, comparing 64-bit hashes: a
// few hundred loads, against the several allocations of dlsym itself.
HookSlot* find_hook(std::string_view name) {
  const uint64_t hash = hook_name_hash(name);
  for (const HookFamily family : kFamilies)
    for (HookSlot* slot : family())
      if (slot->name_hash == hash && name == slot->name) return slot;
  return nullptr;
}

std::span<const HookFamily> hook_families() { return kFamilies; }

namespace {
constexpr HookFamily kAliasFamilies[] = {
    runtime_copy_hooks_aliases,   runtime_memset_hooks_aliases, runtime_alloc_hooks_aliases,
    runtime_sync_hooks_aliases,   runtime_launch_hooks_aliases, runtime_device_hooks_aliases,
    runtime_graph_hooks_aliases,  runtime_memory_hooks_aliases, runtime_host_work_hooks_aliases};
}  // namespace

std::span<const HookFamily> runtime_alias_families() { return kAliasFamilies; }

HookSlot* find_versioned_hook(std::string_view name, std::string_view version) {
  HookSlot* const hook = find_hook(name);
  if (hook == nullptr || (hook->flags & kDriverApi) != 0) return nullptr;
  if (version == GPUSCOPE_CUDART_DEFAULT_VERSION) return hook;
  const uint64_t hash = hook_name_hash(name);
  for (const HookFamily family : kAliasFamilies)
    for (HookSlot* slot : family())
      if (slot->name_hash == hash && name == slot->name && version == slot->version) return slot;
  return nullptr;
}

// A real function whose object a dlclose unloaded would be a jump into
// unmapped memory, or into whatever the loader maps there next (a plugin
// that links the runtime, unloaded and loaded again elsewhere): such slots
// resolve again on their next call. Handles lookups were remembered through
// may be among the unloaded ones, and no such handle may reach dlsym: all
// are dropped (the next lookups remember theirs again).
void forget_unloaded_reals() noexcept {
  const auto forget = [](std::span<const HookFamily> families) {
    for (const HookFamily family : families)
      for (HookSlot* slot : family()) {
        void* p = slot->real.load(std::memory_order_acquire);
        if (p != nullptr && loader::object_of(p) == nullptr)
          slot->real.compare_exchange_strong(p, nullptr, std::memory_order_acq_rel);
      }
  };
  forget(hook_families());
  forget(runtime_alias_families());
  for (auto& handle : g_handles) handle.store(nullptr, std::memory_order_release);
}

}  // namespace gpuscope::hooks

// `name`, or `name@version` for a runtime hook's alias (asked by a copy
// standing down, whose own alias was bound).
void* gpuscope::preload::hook_address(const char* name) {
  if (name == nullptr) return nullptr;
  const std::string_view full(name);
  const size_t at = full.find('@');
  hooks::HookSlot* slot = at == std::string_view::npos ? hooks::find_hook(full)
                                                       : hooks::find_versioned_hook(full.substr(0, at), full.substr(at + 1));
  return slot != nullptr ? slot->wrapper() : nullptr;
}
