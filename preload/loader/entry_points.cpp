#include "entry_points.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "hooks/hook_support.h"
#include "instance.h"
#include "object_of.h"

namespace gpuscope::hooks {
namespace {

// One loaded object's hooked definitions. Built once, then read-only;
// never freed (a reader may hold it while another thread replaces it).
struct EntryTable {
  uintptr_t low = 0, high = 0;  // the object's loaded segments
  uint32_t epoch = 0;           // forget_entry_points() count when built
  std::vector<std::pair<uintptr_t, HookSlot*>> by_address;

  HookSlot* find(uintptr_t a) const {
    const auto it = std::lower_bound(by_address.begin(), by_address.end(), std::pair<uintptr_t, HookSlot*>{a, nullptr});
    return it != by_address.end() && it->first == a ? it->second : nullptr;
  }
};

constexpr size_t kMaxTables = 8;  // objects answering cuGetProcAddress: the driver, a shim or two
std::atomic<EntryTable*> g_tables[kMaxTables];
std::atomic<uint32_t> g_epoch{0};

// The address range of the object whose link map is `map`.
void object_range(const link_map* map, EntryTable& table) {
  struct Search {
    const link_map* map;
    EntryTable* table;
  } search{map, &table};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_addr != s->map->l_addr) return 0;
        uintptr_t low = UINTPTR_MAX, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          low = std::min<uintptr_t>(low, info->dlpi_addr + ph.p_vaddr);
          high = std::max<uintptr_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (low >= high) return 0;
        s->table->low = low, s->table->high = high;
        return 1;
      },
      &search);
}

// The table of the object containing `p`; null when p is in no object.
EntryTable* build_table(void* p) {
  link_map* const map = loader::object_of(p);
  if (map == nullptr) return nullptr;
  auto* table = new EntryTable;
  table->epoch = g_epoch.load(std::memory_order_acquire);
  object_range(map, *table);
  // glibc's dlsym, not ours: this is no lookup of the program's; through a
  // handle of the object's own (a preloaded interposer's link map is none).
  // cuGetProcAddress answers with driver entry points only: the runtime's
  // names (half the hooks) are never asked for, a dlsym each saved.
  const preload::ObjectLookup object(map->l_name);
  for (const HookFamily family : hook_families())
    for (HookSlot* slot : family()) {
      if (std::string_view(slot->name).starts_with("cuda")) continue;
      const auto a = reinterpret_cast<uintptr_t>(object.find(slot->name));
      if (a != 0 && a >= table->low && a < table->high) table->by_address.emplace_back(a, slot);
    }
  // Two hooked names at one address keep the first (the families' order).
  std::stable_sort(table->by_address.begin(), table->by_address.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  return table;
}

// dladdr's answer, for an address no table can hold.
HookSlot* named_by_dladdr(void* p) {
  Dl_info info{};
  if (dladdr(p, &info) == 0 || info.dli_sname == nullptr || info.dli_saddr != p) return nullptr;
  return find_hook(info.dli_sname);
}

}  // namespace

HookSlot* hook_defined_at(void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uint32_t epoch = g_epoch.load(std::memory_order_acquire);
  for (auto& entry : g_tables) {
    const EntryTable* t = entry.load(std::memory_order_acquire);
    if (t != nullptr && t->epoch == epoch && a >= t->low && a < t->high) return t->find(a);
  }
  EntryTable* built = build_table(p);
  if (built == nullptr || built->low >= built->high) {
    delete built;
    return named_by_dladdr(p);
  }
  HookSlot* const slot = built->find(a);
  for (auto& entry : g_tables) {  // an empty place, or one a dlclose made stale
    EntryTable* seen = entry.load(std::memory_order_acquire);
    while (seen == nullptr || seen->epoch != epoch)
      if (entry.compare_exchange_weak(seen, built, std::memory_order_acq_rel)) return slot;
  }
  delete built;  // all places taken: answered, not kept
  return slot;
}

void forget_entry_points() noexcept { g_epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace gpuscope::hooks
