// The container's shared pieces: CRC-32C and byte shuffling, each checked
// against its portable reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "byte_shuffle.h"
#include "container.h"
#include "utc_time.h"

namespace gpuscope::container {
namespace {

// Both sides' UTC text of a trace's wall-clock time: file names (%t) and
// gpuscope info. Milliseconds are cut, not rounded (123.456789 ms -> 123).
TEST(UtcTime, CompactForFileNamesAndMillisecondsForPeople) {
  constexpr uint64_t kNs = 1'764'614'102'123'456'789ull;
  EXPECT_EQ(container::utc_time(kNs, container::UtcStyle::Compact), "20251201T183502Z");
  EXPECT_EQ(container::utc_time(kNs, container::UtcStyle::Milliseconds), "2025-12-01T18:35:02.123Z");
  EXPECT_EQ(container::utc_time(0, container::UtcStyle::Milliseconds), "1970-01-01T00:00:00.000Z");
}

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
    for (size_t count : {0u, 1u, 15u, 16u, 17u, 31u, 32u, 33u, 48u, 63u, 255u, 256u, 257u, 1000u}) {
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
      // For another core (non-temporal stores where the CPU has AVX2).
      std::fill(back.begin(), back.end(), 0);
      unshuffle_records(fast.data(), count, size, back.data(), true);
      EXPECT_EQ(back, in) << "streaming, " << size << "x" << count;
    }
  }
}

// Every transpose this CPU can run, alone on a block, against the scalar
// layout: the dispatch above only ever exercises the widest one.
TEST(ByteShuffle, EveryTransposeWidthGivesTheSameBytes) {
  std::mt19937 rng(11);
  for (size_t size : {40u, 56u, 64u}) {
    const size_t n = 64;  // two AVX2 groups, four SSE2 groups
    std::vector<uint8_t> in(n * size), want(in.size()), got(in.size()), back(in.size());
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    detail::shuffle_scalar(in.data(), 0, n, size, want.data());
#if defined(__SSE2__)
    EXPECT_EQ(detail::shuffle_sse2(in.data(), 0, n, size, got.data()), n);
    EXPECT_EQ(got, want) << "SSE2, " << size;
    EXPECT_EQ(detail::unshuffle_sse2(want.data(), 0, n, size, back.data()), n);
    EXPECT_EQ(back, in) << "SSE2, " << size;
#endif
#if defined(GPUSCOPE_SHUFFLE_AVX2)
    if (!detail::has_avx2()) continue;
    std::fill(got.begin(), got.end(), 0);
    std::fill(back.begin(), back.end(), 0);
    EXPECT_EQ(detail::shuffle_avx2(in.data(), n, size, got.data()), n);
    EXPECT_EQ(got, want) << "AVX2, " << size;
    EXPECT_EQ(detail::unshuffle_avx2<false>(want.data(), n, size, back.data()), n);
    EXPECT_EQ(back, in) << "AVX2, " << size;
    std::fill(back.begin(), back.end(), 0);
    EXPECT_EQ(detail::unshuffle_avx2<true>(want.data(), n, size, back.data()), n);
    EXPECT_EQ(back, in) << "AVX2 streaming, " << size;
#endif
  }
}

}  // namespace
}  // namespace gpuscope::container
