#include "physical_allocations.h"

#include <algorithm>
#include <type_traits>

namespace gpuscope::registry {

size_t PhysicalAllocations::position(uint64_t handle) const {
  const auto* at = std::lower_bound(allocations_, allocations_ + count_, handle,
                                    [](const PhysicalAllocation& a, uint64_t h) { return a.handle < h; });
  return static_cast<size_t>(at - allocations_);
}

size_t PhysicalAllocations::first_mapping(uint64_t address) const {
  const auto* at = std::lower_bound(mappings_, mappings_ + mapping_count_, address,
                                    [](const Mapping& m, uint64_t a) { return m.address < a; });
  return static_cast<size_t>(at - mappings_);
}

size_t PhysicalAllocations::mappings_in(uint64_t address, uint64_t bytes, uint64_t handle) const {
  size_t n = 0;
  for (size_t m = first_mapping(address); m < mapping_count_ && mappings_[m].address < address + bytes; ++m)
    n += mappings_[m].handle == handle ? 1 : 0;
  return n;
}

void PhysicalAllocations::add(const PhysicalAllocation& allocation) {
  std::lock_guard lock(mu_);
  const size_t at = position(allocation.handle);
  if (at < count_ && allocations_[at].handle == allocation.handle) {  // a handle the driver reused
    allocations_[at] = allocation;
    return;
  }
  if (count_ == kCapacity) {
    ++overflows_;
    return;
  }
  std::move_backward(allocations_ + at, allocations_ + count_, allocations_ + count_ + 1);
  allocations_[at] = allocation;
  ++count_;
}

PhysicalAllocation PhysicalAllocations::find(uint64_t handle) const {
  std::lock_guard lock(mu_);
  const size_t at = position(handle);
  return at < count_ && allocations_[at].handle == handle ? allocations_[at] : PhysicalAllocation{handle};
}

bool PhysicalAllocations::release_frees(uint64_t handle) const {
  std::lock_guard lock(mu_);
  const size_t at = position(handle);
  return at < count_ && allocations_[at].handle == handle && allocations_[at].mappings == 0 &&
         allocations_[at].references <= 1;
}

void PhysicalAllocations::erase_allocation(size_t at) {
  std::move(allocations_ + at + 1, allocations_ + count_, allocations_ + at);
  --count_;
}

void PhysicalAllocations::retain(uint64_t handle) {
  std::lock_guard lock(mu_);
  const size_t at = position(handle);
  if (at < count_ && allocations_[at].handle == handle) ++allocations_[at].references;
}

void PhysicalAllocations::release(uint64_t handle) {
  std::lock_guard lock(mu_);
  const size_t at = position(handle);
  if (at == count_ || allocations_[at].handle != handle || allocations_[at].references == 0) return;
  if (--allocations_[at].references == 0 && allocations_[at].mappings == 0) erase_allocation(at);
}

PhysicalAllocation PhysicalAllocations::map(uint64_t address, uint64_t bytes, uint64_t handle) {
  std::lock_guard lock(mu_);
  const size_t at = position(handle);
  if (at == count_ || allocations_[at].handle != handle) return PhysicalAllocation{handle};
  if (mapping_count_ == kCapacity) {
    ++overflows_;  // the memory then stays in use until released
    return allocations_[at];
  }
  const size_t m = first_mapping(address);
  std::move_backward(mappings_ + m, mappings_ + mapping_count_, mappings_ + mapping_count_ + 1);
  mappings_[m] = Mapping{address, bytes, handle};
  ++mapping_count_;
  ++allocations_[at].mappings;
  return allocations_[at];
}

void PhysicalAllocations::unmap(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(mu_);
  const size_t first = first_mapping(address);
  size_t last = first;
  for (; last < mapping_count_ && mappings_[last].address < address + bytes; ++last) {
    const size_t at = position(mappings_[last].handle);
    if (at == count_ || allocations_[at].handle != mappings_[last].handle) continue;
    if (--allocations_[at].mappings == 0 && allocations_[at].references == 0) erase_allocation(at);
  }
  std::move(mappings_ + last, mappings_ + mapping_count_, mappings_ + first);
  mapping_count_ -= last - first;
}

uint64_t PhysicalAllocations::overflows() const {
  std::lock_guard lock(mu_);
  return overflows_;
}

// In .bss, like memory_registry(): still there for hooks that run at exit.
static_assert(std::is_trivially_destructible_v<PhysicalAllocations>);

PhysicalAllocations& physical_allocations() {
  static constinit PhysicalAllocations table;
  return table;
}

}  // namespace gpuscope::registry
