// Requests (--requests, analyzer/requests/): nearest-rank quantiles, which
// requests are the tail and the median band, the thin-evidence rule, and
// the tail's cause from the two groups' parts (rules/tail_rules.cpp).
#include <gtest/gtest.h>

#include "request_latency.h"
#include "rules.h"

namespace gpuscope::analyzer {
namespace {

std::vector<RangeInstance> requests_lasting(const std::vector<uint64_t>& durations) {
  std::vector<RangeInstance> out;
  uint64_t at = 1000;
  for (const uint64_t d : durations) {
    out.push_back(RangeInstance{at, at + d, 1, 0, 7, 0, false, false});
    at += d + 10;
  }
  return out;
}

TEST(RequestLatency, NearestRankIsADurationARequestTook) {
  const std::vector<uint64_t> sorted = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(sorted, 0.5), 50u);   // rank ceil(5) = 5
  EXPECT_EQ(nearest_rank(sorted, 0.95), 100u); // rank ceil(9.5) = 10
  EXPECT_EQ(nearest_rank(sorted, 0.9), 90u);
  EXPECT_EQ(nearest_rank(sorted, 0.999), 100u);
  EXPECT_EQ(nearest_rank({}, 0.5), 0u);
  EXPECT_EQ(nearest_rank({42}, 0.5), 42u);
}

TEST(RequestLatency, TheTailIsRankedAboveTheQuantileAndTheBandAroundTheMedian) {
  std::vector<uint64_t> durations;
  for (uint64_t i = 100; i >= 1; --i) durations.push_back(i * 1000);  // slowest first
  auto requests = requests_lasting(durations);
  requests.push_back(RangeInstance{1, 999999999, 1, 0, 7, 0, false, true});  // unterminated: no latency
  RequestLatency r;
  const std::vector<uint8_t> group = rank_requests(requests, 0.95, &r);
  EXPECT_EQ(r.count, 100u);
  EXPECT_EQ(r.unterminated, 1u);
  EXPECT_EQ(r.max_ns, 100000u);
  EXPECT_EQ(r.tail_from_ns, 96000u);  // ranks 96..100 (1-based)
  ASSERT_EQ(r.quantiles.size(), 5u);
  EXPECT_EQ(r.quantiles[0].ns, 50000u);
  EXPECT_EQ(r.quantiles[3].ns, 99000u);
  EXPECT_EQ(r.slowest.front().duration_ns, 100000u);
  EXPECT_EQ(r.slowest.front().start_ns, requests.front().start_ns);
  EXPECT_TRUE(r.thin_evidence.empty());
  size_t tail = 0, band = 0;
  for (size_t i = 0; i < durations.size(); ++i) {
    const uint64_t d = durations[i];
    EXPECT_EQ(group[i], d > 95000 ? 1 : (d > 40000 && d <= 60000) ? 2 : 0) << d;
    tail += group[i] == 1;
    band += group[i] == 2;
  }
  EXPECT_EQ(tail, 5u);
  EXPECT_EQ(band, 20u);
  EXPECT_EQ(group.back(), 0);
}

TEST(RequestLatency, TooFewRequestsOrTooFewInTheTailAreThinEvidence) {
  RequestLatency few;
  rank_requests(requests_lasting(std::vector<uint64_t>(19, 5)), 0.95, &few);
  EXPECT_NE(few.thin_evidence.find("only 19 request(s)"), std::string::npos) << few.thin_evidence;
  RequestLatency enough;
  rank_requests(requests_lasting(std::vector<uint64_t>(100, 5)), 0.95, &enough);
  EXPECT_TRUE(enough.thin_evidence.empty());
  RequestLatency thin_tail;  // 99 requests above p95: 4 in the tail
  rank_requests(requests_lasting(std::vector<uint64_t>(99, 5)), 0.95, &thin_tail);
  EXPECT_NE(thin_tail.thin_evidence.find("only 4 request(s) in the tail"), std::string::npos)
      << thin_tail.thin_evidence;
}

RequestGroup group_of(uint64_t requests, std::initializer_list<std::pair<RequestPart, uint64_t>> parts_ns) {
  RequestGroup g;
  g.requests = requests;
  for (const auto& [part, ns] : parts_ns) {
    g.part_ns[static_cast<size_t>(part)] = ns * requests;
    g.total_ns += ns * requests;
  }
  return g;
}

// `grew_most`: how many tail requests grew most in each part.
RequestLatency compared(RequestGroup tail, RequestGroup median,
                        std::initializer_list<std::pair<RequestPart, uint64_t>> grew_most) {
  RequestLatency r;
  r.name = "request";
  r.tail = std::move(tail);
  r.median_band = std::move(median);
  for (const auto& [part, n] : grew_most) r.tail_grew_most[static_cast<size_t>(part)] = n;
  return r;
}

TEST(TailCause, ATailFromAnotherPartThanTheMediansIsACause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 1000}, {RequestPart::CopyToDevicePageable, 4000}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}, {RequestPart::OutsideCuda, 100}}),
                          {{RequestPart::CopyToDevicePageable, 3}, {RequestPart::ExplicitSync, 2},
                           {RequestPart::OutsideCuda, 1}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->part, RequestPart::CopyToDevicePageable);
  EXPECT_EQ(c->median_part, RequestPart::ExplicitSync);
  EXPECT_TRUE(c->differs);
  EXPECT_DOUBLE_EQ(c->request_share, 0.5);  // at kTailCauseShare
  EXPECT_NEAR(c->slowdown, 5000.0 / 1100, 1e-9);
  EXPECT_NEAR(c->growth_share, 4000.0 / 3900, 1e-9);
}

TEST(TailCause, MoreOfTheMediansOwnPartIsNotADifferentCause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 3000}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::ExplicitSync, 6}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->differs);
}

// One slow request (a first request that starts the GPU) moves the tail's
// mean, not its cause: the cause is where most tail requests grew.
TEST(TailCause, OneOutlierIsNoCause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 1100}, {RequestPart::CopyToDevicePinned, 1100}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}}),
                          {{RequestPart::CopyToDevicePinned, 1}, {RequestPart::ExplicitSync, 5}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->part, RequestPart::ExplicitSync);
  EXPECT_FALSE(c->differs);
}

TEST(TailCause, ATightDistributionOrASpreadGrowthHasNone) {
  // 1.4x: below kTailSlowdown.
  EXPECT_FALSE(tail_cause(compared(group_of(6, {{RequestPart::Alloc, 1400}}),
                                   group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::Alloc, 6}})));
  // 2x, but the tail requests grew in three parts, none holding half of them.
  EXPECT_FALSE(tail_cause(compared(
      group_of(6, {{RequestPart::ExplicitSync, 1000}, {RequestPart::Alloc, 340}, {RequestPart::Free, 330},
                   {RequestPart::OutsideCuda, 330}}),
      group_of(24, {{RequestPart::ExplicitSync, 1000}}),
      {{RequestPart::Alloc, 2}, {RequestPart::Free, 2}, {RequestPart::OutsideCuda, 2}})));
  RequestLatency thin = compared(group_of(6, {{RequestPart::Alloc, 9000}}),
                                 group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::Alloc, 6}});
  thin.thin_evidence = "only 10 request(s)";
  EXPECT_FALSE(tail_cause(thin));
}

}  // namespace
}  // namespace gpuscope::analyzer
