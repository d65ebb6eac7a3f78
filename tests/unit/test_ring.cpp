#include <gtest/gtest.h>

#include <vector>

#include "ring.h"

namespace gpuscope::capture {
namespace {

struct Ring {
  alignas(64) std::byte memory[256];
  SpscRing ring;
  Ring() { ring.attach(memory, sizeof memory); }
};

std::vector<uint64_t> drain_values(SpscRing& ring) {
  std::vector<uint64_t> out;
  ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t) {
    EXPECT_EQ(type, RecordType::CpuSample);
    EXPECT_EQ(size, 8u);
    uint64_t v;
    std::memcpy(&v, p, 8);
    out.push_back(v);
  });
  return out;
}

TEST(Ring, DeliversRecordsInOrder) {
  Ring r;
  for (uint64_t v = 1; v <= 5; ++v) ASSERT_TRUE(r.ring.try_push(RecordType::CpuSample, &v, 8));
  EXPECT_EQ(drain_values(r.ring), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(r.ring.empty());
}

TEST(Ring, RefusesWhenFullAndAcceptsAfterDrain) {
  Ring r;  // 256 bytes = 16 records of 16 bytes
  uint64_t v = 0;
  int accepted = 0;
  while (r.ring.try_push(RecordType::CpuSample, &v, 8)) ++accepted, ++v;
  EXPECT_EQ(accepted, 16);
  EXPECT_FALSE(r.ring.try_push(RecordType::CpuSample, &v, 8));
  EXPECT_EQ(drain_values(r.ring).size(), 16u);
  EXPECT_TRUE(r.ring.try_push(RecordType::CpuSample, &v, 8));
}

TEST(Ring, WrapsWithPaddingAndNeverSplitsARecord) {
  Ring r;
  // 24-byte records (8 header + 16 payload) do not divide 256: every lap
  // ends in padding that the consumer must skip.
  uint64_t produced = 0, consumed = 0;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 7; ++i, ++produced) {
      const uint64_t payload[2] = {produced, ~produced};
      ASSERT_TRUE(r.ring.try_push(RecordType::Marker, payload, 16)) << "round " << round;
    }
    r.ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t) {
      ASSERT_EQ(type, RecordType::Marker);
      ASSERT_EQ(size, 16u);
      uint64_t payload[2];
      std::memcpy(payload, p, 16);
      EXPECT_EQ(payload[0], consumed);
      EXPECT_EQ(payload[1], ~consumed);
      ++consumed;
    });
  }
  EXPECT_EQ(consumed, produced);
}

}  // namespace
}  // namespace gpuscope::capture
