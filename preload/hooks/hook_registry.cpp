#include <algorithm>
#include <cstring>
#include <vector>

#include "call_counts.h"
#include "hook_support.h"

namespace gpuscope::hooks {

bool HookSlot::adopt(void* p) noexcept {
  if (p == nullptr || p == wrapper) return false;
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
  void* p = preload::next_symbol(name);
  for (size_t i = 0; (p == nullptr || p == wrapper) && i < kMaxHandles; ++i) {
    void* handle = g_handles[i].load(std::memory_order_acquire);
    if (handle == nullptr) break;
    p = preload::real_dlsym()(handle, name);
  }
  if (p == nullptr || p == wrapper) return nullptr;
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

std::vector<HookSlot*> sorted_hooks() {
  std::vector<HookSlot*> all;
  for (auto family : {runtime_copy_hooks, runtime_memset_hooks, runtime_alloc_hooks, runtime_sync_hooks,
                      runtime_launch_hooks, runtime_device_hooks, runtime_graph_hooks, runtime_memory_hooks,
                      runtime_host_work_hooks, driver_copy_hooks, driver_alloc_hooks, driver_sync_hooks,
                      driver_launch_hooks, driver_entry_hooks, driver_graph_hooks, driver_memory_hooks,
                      driver_host_work_hooks})
    for (HookSlot* slot : family()) all.push_back(slot);
  std::sort(all.begin(), all.end(), [](const HookSlot* a, const HookSlot* b) { return std::strcmp(a->name, b->name) < 0; });
  return all;
}

}  // namespace

HookSlot* find_hook(std::string_view name) {
  // Never destroyed: dlsym is still called while the process tears down.
  static const std::vector<HookSlot*>& all = *new std::vector<HookSlot*>(sorted_hooks());
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const HookSlot* slot, std::string_view n) { return std::string_view(slot->name) < n; });
  return it != all.end() && std::string_view((*it)->name) == name ? *it : nullptr;
}

}  // namespace gpuscope::hooks
