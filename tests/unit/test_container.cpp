// The container's shared pieces: CRC-32C and byte shuffling, each checked
// against its portable reference.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "byte_shuffle.h"
#include "container.h"

namespace gpuscope::container {
namespace {

TEST(Crc32c, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLength) {
  std::mt19937 rng(5);
  std::vector<uint8_t> data(1000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t n = 0; n <= data.size(); n += 7) EXPECT_EQ(crc32c(data.data(), n), crc32c_portable(data.data(), n)) << n;
}

TEST(ByteShuffle, MatchesTheScalarLayoutAndRoundTrips) {
  std::mt19937 rng(9);
  for (size_t size : {32u, 40u, 48u, 56u, 64u}) {
    for (size_t count : {0u, 1u, 15u, 16u, 17u, 255u, 256u, 257u, 1000u}) {
      std::vector<uint8_t> in(count * size), fast(in.size()), slow(in.size()), back(in.size());
      for (auto& b : in) b = static_cast<uint8_t>(rng());
      shuffle_records(in.data(), count, size, fast.data());
      for (size_t first = 0; first < count; first += kShuffleBlock) {  // the documented layout
        const size_t n = std::min(kShuffleBlock, count - first);
        detail::shuffle_scalar(in.data() + first * size, 0, n, size, slow.data() + first * size);
      }
      EXPECT_EQ(fast, slow) << size << "x" << count;
      unshuffle_records(fast.data(), count, size, back.data());
      EXPECT_EQ(back, in) << size << "x" << count;
    }
  }
}

}  // namespace
}  // namespace gpuscope::container
