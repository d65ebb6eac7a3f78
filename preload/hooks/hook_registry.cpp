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

void* HookSlot::resolve_next() noexcept {
  void* const own = wrapper();
  // A copy standing down passes every call to the primary's hook (instance.h).
  const preload::InstanceMarker* primary = preload::primary_instance_marker();
  void* p = primary != nullptr ? primary->hook_address(name) : nullptr;
  if (p == nullptr) p = preload::next_definition(name);
  for (size_t i = 0; (p == nullptr || p == own) && i < kMaxHandles; ++i) {
    void* handle = g_handles[i].load(std::memory_order_acquire);
    if (handle == nullptr) break;
    p = capture::real_dlsym()(handle, name);
  }
  if (p == nullptr || p == own) p = preload::definition_in_any_object(name);
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

// A real function whose object a dlclose unloaded would be a jump into
// unmapped memory, or into whatever the loader maps there next (a plugin
// that links the runtime, unloaded and loaded again elsewhere): such slots
// resolve again on their next call. Handles lookups were remembered through
// may be among the unloaded ones, and no such handle may reach dlsym: all
// are dropped (the next lookups remember theirs again).
void forget_unloaded_reals() noexcept {
  for (const HookFamily family : hook_families())
    for (HookSlot* slot : family()) {
      void* p = slot->real.load(std::memory_order_acquire);
      if (p != nullptr && loader::object_of(p) == nullptr)
        slot->real.compare_exchange_strong(p, nullptr, std::memory_order_acq_rel);
    }
  for (auto& handle : g_handles) handle.store(nullptr, std::memory_order_release);
}

}  // namespace gpuscope::hooks

void* gpuscope::preload::hook_address(const char* name) {
  hooks::HookSlot* slot = name != nullptr ? hooks::find_hook(name) : nullptr;
  return slot != nullptr ? slot->wrapper() : nullptr;
}
