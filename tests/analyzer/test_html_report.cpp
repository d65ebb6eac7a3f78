// The HTML report's C++ side: timeline aggregation keeps the totals (busy
// time, span count) while capping blocks, and nothing a trace can hold — a
// kernel named "</script>", invalid UTF-8, a hostile path — can end the
// data element or break the page. The page's drawing is tested in a real
// browser (tests/report/check_report.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../support/sample_trace.h"
#include "chunk_builder.h"
#include "html_report.h"
#include "pipeline.h"
#include "timeline_aggregate.h"

namespace gpuscope::analyzer {
namespace {

using nlohmann::json;

struct Span {
  uint64_t start, duration;
};

// n disjoint spans over [0, span), in random order when `shuffle`.
std::vector<Span> disjoint_spans(size_t n, uint64_t span, bool shuffle, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::vector<Span> out;
  const uint64_t slot = span / n;
  for (size_t i = 0; i < n; ++i) out.push_back({i * slot + rng() % (slot / 2), 1 + rng() % (slot / 2)});
  if (shuffle) std::shuffle(out.begin(), out.end(), rng);
  return out;
}

uint64_t total_busy(const std::vector<Block>& blocks) {
  uint64_t ns = 0;
  for (const Block& b : blocks) ns += b.busy_ns;
  return ns;
}

void expect_sorted_and_disjoint(const std::vector<Block>& blocks) {
  for (size_t i = 1; i < blocks.size(); ++i) EXPECT_GT(blocks[i].start_ns, blocks[i - 1].end_ns) << i;
}

TEST(TimelineAggregate, MergedBlocksKeepTheSpansBusyTimeAndCount) {
  const auto spans = disjoint_spans(100'000, 10'000'000'000, true);
  LaneAggregator lane(0, 10'000'000'000);
  uint64_t busy = 0;
  for (const Span& s : spans) {
    lane.add(s.start, s.duration, SpanCategory::Kernel);
    busy += s.duration;
  }
  const std::vector<Block> blocks = lane.finish();
  EXPECT_EQ(total_busy(blocks), busy);
  uint64_t count = 0;
  for (const Block& b : blocks) count += b.count;
  EXPECT_EQ(count, spans.size());
  EXPECT_LE(blocks.size(), kMaxBlocksPerLane);
  expect_sorted_and_disjoint(blocks);
}

TEST(TimelineAggregate, TheBlockCapHoldsAndTotalsSurviveCoarsening) {
  // 5000 spans 200 us apart: farther than the merge distance (50 us), so
  // only the cap can merge most of them.
  const auto spans = disjoint_spans(5'000, 1'000'000'000, false);
  LaneAggregator lane(0, 1'000'000'000, kTimelineBins, 100);
  uint64_t busy = 0;
  for (const Span& s : spans) {
    lane.add(s.start, s.duration, SpanCategory::Sync);
    busy += s.duration;
  }
  const std::vector<Block> blocks = lane.finish();
  EXPECT_LE(blocks.size(), 100u);
  EXPECT_GT(blocks.size(), 90u);  // evenly busy: coarsened to about the cap, not to one block
  EXPECT_EQ(total_busy(blocks), busy);
  expect_sorted_and_disjoint(blocks);
}

TEST(TimelineAggregate, ACallersLowerCapWins) {
  LaneAggregator lane(0, 1'000'000'000);
  for (const Span& s : disjoint_spans(5'000, 1'000'000'000, false)) lane.add(s.start, s.duration, SpanCategory::Kernel);
  EXPECT_LE(lane.finish(40).size(), 40u);
  EXPECT_GT(lane.finish().size(), 1'000u);
}

TEST(TimelineAggregate, OrderOfArrivalDoesNotMatter) {
  LaneAggregator in_order(0, 1'000'000'000), shuffled(0, 1'000'000'000);
  for (const Span& s : disjoint_spans(20'000, 1'000'000'000, false)) in_order.add(s.start, s.duration, SpanCategory::Copy);
  for (const Span& s : disjoint_spans(20'000, 1'000'000'000, true)) shuffled.add(s.start, s.duration, SpanCategory::Copy);
  const auto a = in_order.finish(), b = shuffled.finish();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].start_ns, b[i].start_ns);
    EXPECT_EQ(a[i].end_ns, b[i].end_ns);
    EXPECT_EQ(a[i].busy_ns, b[i].busy_ns);
  }
}

TEST(TimelineAggregate, SparseSpansStayExactWithTheirNames) {
  LaneAggregator lane(0, 1'000'000'000);  // merge distance 50 us
  lane.add(100'000'000, 1'000, SpanCategory::Kernel, 3, 0);
  lane.add(500'000'000, 2'000, SpanCategory::CopyH2D, 4, 4096);
  lane.add(500'010'000, 1'000, SpanCategory::Kernel, 5, 0);  // 8 us later: merged with the copy
  const auto blocks = lane.finish();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].count, 1u);
  EXPECT_EQ(blocks[0].label, 3);
  EXPECT_EQ(blocks[0].end_ns - blocks[0].start_ns, 1'000u);
  EXPECT_EQ(blocks[1].count, 2u);
  EXPECT_EQ(blocks[1].label, -1);  // a merged block has no single name
  EXPECT_EQ(blocks[1].busy_ns, 3'000u);
  EXPECT_EQ(blocks[1].category, SpanCategory::CopyH2D);  // the most busy time
}

TEST(TimelineAggregate, OverlappingAndOutOfRangeSpansAreClamped) {
  LaneAggregator lane(1'000, 2'000);
  lane.add(1'100, 500, SpanCategory::Kernel);
  lane.add(1'200, 500, SpanCategory::Kernel);  // overlaps: the block is busy throughout, not more
  lane.add(0, 50, SpanCategory::Kernel);        // before the trace: at its start
  lane.add(5'000, 10, SpanCategory::Kernel);    // after it: at its end
  lane.add(1'900, UINT64_MAX, SpanCategory::Kernel);
  const auto blocks = lane.finish();
  for (const Block& b : blocks) {
    EXPECT_GE(b.start_ns, 1'000u);
    EXPECT_LE(b.end_ns, 2'000u);
    EXPECT_LE(b.busy_ns, b.end_ns - b.start_ns);
  }
  EXPECT_EQ(lane.spans(), 5u);
}

TEST(HtmlReport, ScriptSafeJsonCannotEndTheScriptElement) {
  const json j = {{"name", "</script><script>alert(1)</script><!-- x"}, {"bad", std::string("a\xff\xfe" "b")}};
  const std::string text = script_safe_json(j);
  EXPECT_EQ(text.find('<'), std::string::npos);
  const json back = json::parse(text);
  EXPECT_EQ(back["name"], j["name"]);
  EXPECT_EQ(back["bad"].get<std::string>().substr(0, 1), "a");  // invalid UTF-8 replaced, not thrown on
}

constexpr uint64_t kStart = 1'000'000'000, kMs = 1'000'000;
const std::string kHostile = "</script><script>alert(1)</script><!--";

std::vector<uint8_t> hostile_trace() {
  capture::ProcessMetadata meta;
  meta.pid = 1;
  meta.exe = "/app/</script>";
  meta.start_monotonic_ns = kStart;
  return test::one_frame_trace(meta, kStart + 100 * kMs, [](capture::ChunkBuilder& b) {
    b.add_strings({{1, "cudaLaunchKernel"}, {2, kHostile}, {3, std::string("cudaMemcpy\xff")}});
    for (uint64_t i = 0; i < 10; ++i) {
      b.add(fb::ApiCall(kStart + i * 10 * kMs, kMs, i + 1, 7, 42, 0, 0, 1, 0, 0, 0, 0));
      b.add(fb::Kernel(kStart + i * 10 * kMs, kMs, i + 1, 7, 2, 1, 1, 1, 1, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
      b.add(fb::ApiCall(kStart + i * 10 * kMs + 2 * kMs, kMs, 100 + i, 0, 42, 0, 0, 3, 0, 0, 0, 0));
    }
  });
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The hostile trace's section, its timeline read after the analysis. The
// bytes outlive the reader that reads them (memory_source does not copy).
json hostile_section(const std::string& path) {
  const std::vector<uint8_t> bytes = hostile_trace();
  const PipelineResult r = analyze_trace(reader::memory_source(bytes), path);
  EXPECT_NE(r.analysis, nullptr) << r.error.message;
  if (r.analysis == nullptr) return json();
  return html_section(r.analysis->report_input(5), r.analysis->reader());
}

TEST(HtmlReport, AHostileKernelNameDoesNotBreakThePage) {
  const std::string path = "dir/__GPUSCOPE_DATA__<b>.gpuscope";
  const json section = hostile_section(path);
  const std::string page = html_page(json::array({section}), path);

  const std::string empty_page = html_page(json::array(), "x");
  EXPECT_EQ(count(page, "</script>"), count(empty_page, "</script>"));  // only the template's own
  EXPECT_EQ(count(page, "<script"), count(empty_page, "<script"));
  EXPECT_EQ(count(page, "<b>"), 0u);                                  // the title is escaped
  const std::string open_tag = "<script type=\"application/json\" id=\"gpuscope-data\">";
  const size_t from = page.find(open_tag) + open_tag.size();
  const json data = json::parse(page.substr(from, page.find("</script>", from) - from));
  const json& names = data["sections"][0]["timeline"]["names"];
  EXPECT_NE(std::find(names.begin(), names.end(), kHostile), names.end()) << names.dump();
  EXPECT_EQ(data["sections"][0]["trace"], path);
}

TEST(HtmlReport, TheTimelineHasAThreadLaneAndAStreamLane) {
  const json tl = hostile_section("t")["timeline"];
  ASSERT_EQ(tl["lanes"].size(), 2u) << tl.dump();
  EXPECT_EQ(tl["lanes"][0]["kind"], "thread");
  EXPECT_EQ(tl["lanes"][0]["spans"], 20);  // launches and copies of thread 42
  EXPECT_EQ(tl["lanes"][1]["kind"], "stream");
  EXPECT_EQ(tl["lanes"][1]["spans"], 10);
  EXPECT_EQ(tl["spans"], 30);
}

}  // namespace
}  // namespace gpuscope::analyzer
