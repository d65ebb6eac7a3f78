// The tables behind the virtual memory management hooks (driver_vmm.cpp):
// physical allocations by handle with their mappings, and the memory
// registry losing every mapping an unmap covers. Each test uses its own
// instance, on the heap: both are large.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "memory_registry.h"
#include "physical_allocations.h"

namespace gpuscope::registry {
namespace {

constexpr uint64_t kPage = 2u << 20;

PhysicalAllocation on_device(uint64_t handle, uint64_t bytes = kPage) {
  return PhysicalAllocation{handle, bytes, fb::MemoryKind::Device, 1};
}

std::vector<uint64_t> freed_by_unmap(const PhysicalAllocations& t, uint64_t address, uint64_t bytes) {
  std::vector<uint64_t> handles;
  t.unmap_frees(address, bytes, [&](const PhysicalAllocation& a) { handles.push_back(a.handle); });
  return handles;
}

TEST(PhysicalAllocations, AReleaseWithoutMappingsFreesAtOnce) {
  auto t = std::make_unique<PhysicalAllocations>();
  t->add(on_device(7));
  EXPECT_EQ(kPage, t->find(7).bytes);
  EXPECT_EQ(fb::MemoryKind::Device, t->find(7).kind);
  EXPECT_TRUE(t->release_frees(7));
  t->release(7);
  EXPECT_EQ(fb::MemoryKind::Unknown, t->find(7).kind);
  EXPECT_FALSE(t->release_frees(7));  // unknown handles free nothing we saw
}

// The CUDA samples release the handle right after mapping it: the memory
// goes with the unmap, and only then.
TEST(PhysicalAllocations, AReleasedAllocationGoesWithItsLastMapping) {
  auto t = std::make_unique<PhysicalAllocations>();
  t->add(on_device(7, 2 * kPage));
  EXPECT_EQ(1, t->map(0x100000000, kPage, 7).device);
  t->map(0x100000000 + kPage, kPage, 7);  // the same memory mapped twice
  EXPECT_FALSE(t->release_frees(7));
  t->release(7);
  EXPECT_EQ(2u * kPage, t->find(7).bytes);  // still in use
  EXPECT_TRUE(freed_by_unmap(*t, 0x100000000, kPage).empty());  // one mapping is left
  t->unmap(0x100000000, kPage);
  EXPECT_EQ((std::vector<uint64_t>{7}), freed_by_unmap(*t, 0x100000000 + kPage, kPage));
  t->unmap(0x100000000 + kPage, kPage);
  EXPECT_EQ(fb::MemoryKind::Unknown, t->find(7).kind);
}

TEST(PhysicalAllocations, OneUnmapOverSeveralReleasedAllocationsFreesEachOnce) {
  auto t = std::make_unique<PhysicalAllocations>();
  for (uint64_t h : {11, 12, 13}) {
    t->add(on_device(h));
    t->map(0x200000000 + (h - 11) * kPage, kPage, h);
  }
  t->release(11);
  t->release(13);  // 12 is not released: its memory stays after the unmap
  EXPECT_EQ((std::vector<uint64_t>{11, 13}), freed_by_unmap(*t, 0x200000000, 3 * kPage));
  t->unmap(0x200000000, 3 * kPage);
  EXPECT_EQ(fb::MemoryKind::Unknown, t->find(11).kind);
  EXPECT_EQ(0u, t->find(12).mappings);
  EXPECT_TRUE(t->release_frees(12));
}

// A retained handle (cuMemRetainAllocationHandle) is released twice: the
// memory goes with the second release, not the first.
TEST(PhysicalAllocations, ARetainedHandleNeedsOneMoreRelease) {
  auto t = std::make_unique<PhysicalAllocations>();
  t->add(on_device(5));
  t->map(0x500000000, kPage, 5);
  t->retain(5);
  t->release(5);
  t->unmap(0x500000000, kPage);
  EXPECT_EQ(kPage, t->find(5).bytes);  // one reference left
  EXPECT_TRUE(t->release_frees(5));
  t->release(5);
  EXPECT_EQ(fb::MemoryKind::Unknown, t->find(5).kind);
}

TEST(PhysicalAllocations, AMappingOfAnUnknownHandleSaysSo) {
  auto t = std::make_unique<PhysicalAllocations>();
  EXPECT_EQ(fb::MemoryKind::Unknown, t->map(0x300000000, kPage, 99).kind);
  EXPECT_TRUE(freed_by_unmap(*t, 0x300000000, kPage).empty());
}

TEST(PhysicalAllocations, PastItsCapacityItCountsWhatItCouldNotKeep) {
  auto t = std::make_unique<PhysicalAllocations>();
  for (uint64_t h = 1; h <= PhysicalAllocations::kCapacity + 3; ++h) t->add(on_device(h));
  EXPECT_EQ(3u, t->overflows());
  EXPECT_EQ(kPage, t->find(PhysicalAllocations::kCapacity).bytes);
}

// Allocator threads each create, map, release and unmap their own pages
// at once: every change lands, and nothing is left.
TEST(PhysicalAllocations, ThreadsChangingItAtOnceLoseNothing) {
  auto t = std::make_unique<PhysicalAllocations>();
  constexpr uint64_t kThreads = 4, kRounds = 2000;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> freed{0};
  for (uint64_t n = 0; n < kThreads; ++n)
    threads.emplace_back([&, n] {
      for (uint64_t i = 0; i < kRounds; ++i) {
        const uint64_t handle = 1 + n * kRounds + i, at = 0x10000000000 + handle * kPage;
        t->add(on_device(handle));
        t->map(at, kPage, handle);
        t->release(handle);
        t->unmap_frees(at, kPage, [&](const PhysicalAllocation&) { freed.fetch_add(1); });
        t->unmap(at, kPage);
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(kThreads * kRounds, freed.load());
  for (uint64_t h = 1; h <= kThreads * kRounds; ++h) ASSERT_EQ(fb::MemoryKind::Unknown, t->find(h).kind) << h;
  EXPECT_EQ(0u, t->overflows());
}

TEST(MemoryRegistry, RemovingARangeRemovesEveryRangeThatStartsInIt) {
  auto r = std::make_unique<MemoryRegistry>();
  for (uint64_t i = 0; i < 4; ++i) r->add(0x400000000 + i * kPage, kPage, fb::MemoryKind::Device);
  r->add(0x400000000 + 8 * kPage, kPage, fb::MemoryKind::Pinned);
  r->remove_within(0x400000000 + kPage, 2 * kPage);
  EXPECT_EQ(fb::MemoryKind::Device, r->find(0x400000000).kind);
  EXPECT_EQ(fb::MemoryKind::Unknown, r->find(0x400000000 + kPage).kind);
  EXPECT_EQ(fb::MemoryKind::Unknown, r->find(0x400000000 + 2 * kPage + 5).kind);
  EXPECT_EQ(fb::MemoryKind::Device, r->find(0x400000000 + 3 * kPage).kind);
  EXPECT_EQ(fb::MemoryKind::Pinned, r->find(0x400000000 + 8 * kPage).kind);
  EXPECT_EQ(3u, r->size());
}

// A real driver's array handles point into the program's heap: an array is
// found at its handle and nowhere else, so the pageable buffers the program
// allocates after it stay pageable, and its free still gets its size back.
TEST(MemoryRegistry, AnArrayIsItsHandleNotARangeOfAddresses) {
  auto r = std::make_unique<MemoryRegistry>();
  constexpr uint64_t kHandle = 0x5555'5555'a000, kBytes = 64 << 20;
  r->add(kHandle, kBytes, fb::MemoryKind::Array, 0, 16);
  r->add(kHandle + 0x100000, kPage, fb::MemoryKind::Pinned);
  const MemoryRange found = r->find(kHandle);
  EXPECT_EQ(fb::MemoryKind::Array, found.kind);
  EXPECT_EQ(16u, found.element_bytes);
  EXPECT_EQ(fb::MemoryKind::Unknown, r->find(kHandle + 1).kind);
  EXPECT_EQ(fb::MemoryKind::Unknown, r->find(kHandle + 0x4000).kind);
  EXPECT_EQ(fb::MemoryKind::Pinned, r->find(kHandle + 0x100010).kind);
  const MemoryRange freed = r->remove(kHandle);
  EXPECT_EQ(kBytes, freed.size);
  EXPECT_EQ(16u, freed.element_bytes);
  EXPECT_EQ(fb::MemoryKind::Unknown, r->find(kHandle).kind);
}

}  // namespace
}  // namespace gpuscope::registry
