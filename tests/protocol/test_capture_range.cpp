// The capture-range grammar (protocol/capture_range.h) that `gpuscope run`
// checks its options with and the library reads its variables with.
#include <gtest/gtest.h>

#include "capture_range.h"
#include "device_sampling.h"

namespace gpuscope::protocol {
namespace {

TEST(CaptureRange, ProfilerApiAndNvtxRanges) {
  CaptureRange r;
  ASSERT_TRUE(parse_capture_range("cudaProfilerApi", &r));
  EXPECT_EQ(r.range, CaptureRange::Range::ProfilerApi);
  ASSERT_TRUE(parse_capture_range("nvtx:step", &r));
  EXPECT_EQ(r.range, CaptureRange::Range::Nvtx);
  EXPECT_EQ(r.nvtx_message, "step");
  EXPECT_EQ(r.nvtx_domain, "");
  ASSERT_TRUE(parse_capture_range("nvtx:user@host@train", &r));  // the domain follows the last '@'
  EXPECT_EQ(r.nvtx_message, "user@host");
  EXPECT_EQ(r.nvtx_domain, "train");
  ASSERT_TRUE(parse_capture_range("", &r));
  EXPECT_EQ(r.range, CaptureRange::Range::None);
}

TEST(CaptureRange, RefusesWhatItCannotHonour) {
  for (const char* bad : {"nvtx", "nvtx:", "nvtx:@io", "cudaprofilerapi", "cudaProfilerApi ", "profiler"}) {
    CaptureRange r;
    EXPECT_FALSE(parse_capture_range(bad, &r)) << bad;
    EXPECT_FALSE(is_capture_range(bad)) << bad;
  }
}

TEST(CaptureRange, TextReadsBackAsTheSameRange) {
  for (const char* text : {"cudaProfilerApi", "nvtx:step", "nvtx:step@train", "nvtx:a@b@c", "nvtx:a@b@", ""}) {
    CaptureRange r, again;
    ASSERT_TRUE(parse_capture_range(text, &r)) << text;
    ASSERT_TRUE(parse_capture_range(capture_range_text(r), &again)) << text;
    EXPECT_EQ(again.range, r.range) << text;
    EXPECT_EQ(again.nvtx_message, r.nvtx_message) << text;
    EXPECT_EQ(again.nvtx_domain, r.nvtx_domain) << text;
  }
  CaptureRange r;
  r.range = CaptureRange::Range::Nvtx;
  r.nvtx_message = "a@b";  // no domain: the separator stays, or "b" would read as one
  EXPECT_EQ(capture_range_text(r), "nvtx:a@b@");
}

TEST(CaptureRange, EndPolicies) {
  uint32_t windows = 99;
  ASSERT_TRUE(parse_range_end("", &windows));
  EXPECT_EQ(windows, 1u);
  ASSERT_TRUE(parse_range_end("stop", &windows));
  EXPECT_EQ(windows, 1u);
  ASSERT_TRUE(parse_range_end("repeat", &windows));
  EXPECT_EQ(windows, 0u);  // no limit
  ASSERT_TRUE(parse_range_end("repeat:3", &windows));
  EXPECT_EQ(windows, 3u);
  for (const char* bad : {"repeat:0", "repeat:00", "repeat:", "repeat:-1", "repeat:3x", "repeat:99999999999", "Stop"})
    EXPECT_FALSE(is_range_end(bad)) << bad;
}

}  // namespace
// Sampled device tracing's schedule: the CLI and the library read it with
// this one parser.
TEST(DeviceSampling, WindowShorterThanItsPeriod) {
  const auto s = parse_device_sampling("20/2000");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->window_ms, 20u);
  EXPECT_EQ(s->period_ms, 2000u);
  EXPECT_EQ(describe(*s), "20 ms every 2000 ms");
  EXPECT_TRUE(is_device_sampling("1/3600000"));
  for (const char* bad : {"", "20", "/2000", "20/", "0/100", "100/100", "200/100", "1/3600001", "20/2000x", "-1/5",
                          " 20/2000", "20 / 2000", "99999999999/1"})
    EXPECT_FALSE(is_device_sampling(bad)) << bad;
}

}  // namespace gpuscope::protocol
