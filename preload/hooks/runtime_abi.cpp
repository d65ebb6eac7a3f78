#include "runtime_abi.h"

#include <atomic>
#include <cstdlib>

#include "instance.h"
#include "loader/object_of.h"

namespace gpuscope::hooks {
namespace {

// The release of the runtime that defines `real`, remembered for the last
// runtime asked (a default export's real function changes only when its
// runtime is unloaded).
int runtime_major(const void* real) noexcept {
  static std::atomic<uint64_t> known{0};  // the runtime's link map (low 48 bits), then its major + 1
  constexpr uint64_t kMapBits = (uint64_t{1} << 48) - 1;
  link_map* const map = loader::object_of(real);
  if (map == nullptr) return 0;
  const auto key = reinterpret_cast<uint64_t>(map) & kMapBits;
  if (const uint64_t k = known.load(std::memory_order_relaxed); (k & kMapBits) == key) return int(k >> 48) - 1;
  using VersionFn = int (*)(int*);
  const auto version =
      reinterpret_cast<VersionFn>(preload::ObjectLookup(map->l_name).find("cudaRuntimeGetVersion"));
  int v = 0;
  const int major = version != nullptr && version(&v) == 0 ? v / 1000 : 0;
  known.store(key | (uint64_t(major + 1) << 48), std::memory_order_relaxed);
  return major;
}

}  // namespace

int caller_cuda_major(const HookSlot& slot, const void* real) noexcept {
  constexpr size_t kPrefix = sizeof("libcudart.so.") - 1;  // then "12", "11.0"...
  if (slot.version != nullptr) return std::atoi(slot.version + kPrefix);
  return runtime_major(real);
}

}  // namespace gpuscope::hooks
