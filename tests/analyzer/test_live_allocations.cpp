// The live-memory rule shared by the model, the Chrome export and the HTML
// report (live_allocations.h).
#include <gtest/gtest.h>

#include "live_allocations.h"
#include "record_flags.h"

namespace gpuscope::analyzer {
namespace {

fb::Alloc alloc(uint64_t address, uint64_t bytes, fb::MemoryKind kind = fb::MemoryKind::Device) {
  return fb::Alloc(0, 0, 0, address, bytes, fb::AllocOp::Alloc, kind, fb::Source::Host, 0, 0, 0);
}
fb::Alloc release(uint64_t address) {
  return fb::Alloc(0, 0, 0, address, 0, fb::AllocOp::Free, fb::MemoryKind::Device, fb::Source::Host, 0, 0, 0);
}

TEST(LiveAllocations, FollowsDeviceMemoryUpAndDown) {
  LiveAllocations live;
  EXPECT_TRUE(live.apply(alloc(0x1000, 100)));
  EXPECT_TRUE(live.apply(alloc(0x2000, 50, fb::MemoryKind::Pool)));
  EXPECT_TRUE(live.apply(alloc(0x3000, 25, fb::MemoryKind::Managed)));
  EXPECT_EQ(live.live_bytes(), 175);
  EXPECT_TRUE(live.apply(release(0x1000)));
  EXPECT_EQ(live.live_bytes(), 75);
  EXPECT_EQ(live.peak_bytes(), 175);
  EXPECT_EQ(live.allocations(), 3u);
}

TEST(LiveAllocations, IgnoresHostMemoryNullAndUnknownFrees) {
  LiveAllocations live;
  EXPECT_FALSE(live.apply(alloc(0x1000, 100, fb::MemoryKind::Pinned)));
  EXPECT_FALSE(live.apply(alloc(0, 100)));  // a failed allocation
  EXPECT_FALSE(live.apply(release(0x9000)));
  EXPECT_EQ(live.live_bytes(), 0);
  EXPECT_EQ(live.allocations(), 0u);
}

// A trace that misses a free (a dropped event, a window edge) must not
// count the address twice when it comes back.
TEST(LiveAllocations, AnAddressAllocatedAgainReplacesItsSize) {
  LiveAllocations live;
  live.apply(alloc(0x1000, 100));
  live.apply(alloc(0x1000, 40));
  EXPECT_EQ(live.live_bytes(), 40);
  EXPECT_EQ(live.peak_bytes(), 100);
  live.apply(release(0x1000));
  EXPECT_EQ(live.live_bytes(), 0);
}

// cuMemCreate's handles are small numbers that may equal a device address
// in the same trace: each is its own allocation.
TEST(LiveAllocations, PhysicalHandlesAndDeviceAddressesAreKeptApart) {
  constexpr uint8_t kPhysical = container::kAllocPhysical;
  LiveAllocations live;
  live.apply(alloc(0x1000, 100));
  live.apply(fb::Alloc(0, 0, 0, 0x1000, 30, fb::AllocOp::Alloc, fb::MemoryKind::Device, fb::Source::Host, kPhysical,
                       0, 0));
  EXPECT_EQ(live.live_bytes(), 130);
  live.apply(fb::Alloc(0, 0, 0, 0x1000, 0, fb::AllocOp::Free, fb::MemoryKind::Device, fb::Source::Host, kPhysical, 0,
                       0));
  EXPECT_EQ(live.live_bytes(), 100);
  live.apply(release(0x1000));
  EXPECT_EQ(live.live_bytes(), 0);
}

TEST(LiveAllocations, CountsWhatItCannotFollowPastTheCap) {
  LiveAllocations live;
  for (uint64_t i = 0; i < kMaxTrackedAllocations; ++i) ASSERT_TRUE(live.apply(alloc(0x1000 + i * 16, 1)));
  EXPECT_FALSE(live.apply(alloc(0x10, 1)));
  EXPECT_EQ(live.untracked(), 1u);
  EXPECT_TRUE(live.apply(alloc(0x1000, 2)));  // a followed address still updates
  EXPECT_EQ(live.live_bytes(), static_cast<int64_t>(kMaxTrackedAllocations) + 1);
}

}  // namespace
}  // namespace gpuscope::analyzer
