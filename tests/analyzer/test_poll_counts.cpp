// Coalesced polls (ApiCall.repeat, format 1.3) in the analysis, on a
// hand-built trace: a record of a run of "not ready" answers counts as its
// polls wherever calls are counted (the summary behind `gpuscope info`, the
// model and metrics behind `analyze`, `report`, `diff` and the Prometheus
// figures, both exports), and its span is the time they held the thread.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/exported.h"
#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "call_repeats.h"
#include "metrics.h"

namespace gpuscope::test {
namespace {

constexpr uint64_t kT0 = 9'000'000'000, kMs = 1'000'000;
constexpr uint32_t kEventQuery = 1, kStreamQuery = 2, kLaunch = 3, kTid = 42;
constexpr uint64_t kEvent = 0xE0, kStream = 0x50;
constexpr int32_t kNotReady = 600;

fb::ApiCall call(uint64_t corr, uint32_t function, uint64_t start, uint64_t duration, int32_t result,
                 uint32_t repeat) {
  return fb::ApiCall(start, duration, corr, 0, kTid, 0, result, function, 0, 0, 0, repeat);
}

fb::Sync sync(uint64_t corr, fb::SyncKind kind, uint64_t object, uint64_t start, uint64_t duration, int32_t result) {
  return fb::Sync(start, duration, corr, object, kind, fb::Source::Host, 0, result);
}

// A launch, 500 "not ready" event polls in one record (4 ms) and the ready
// one; 30 stream polls in two records (a flush split them) and the ready
// one, as an older writer would have written it (repeat 0).
std::vector<uint8_t> poll_trace() {
  capture::ProcessMetadata meta;
  meta.pid = 9;
  meta.exe = "/app/async_api";
  meta.start_monotonic_ns = kT0;
  return one_frame_trace(meta, kT0 + 20 * kMs, [](capture::ChunkBuilder& b) {
    b.add_strings({{kEventQuery, "cudaEventQuery"}, {kStreamQuery, "cudaStreamQuery"}, {kLaunch, "cudaLaunchKernel"}});
    b.add(call(1, kLaunch, kT0 + kMs, 10'000, 0, 0));
    b.add(call(2, kEventQuery, kT0 + 2 * kMs, 4 * kMs, kNotReady, 500));
    b.add(sync(2, fb::SyncKind::EventQuery, kEvent, kT0 + 2 * kMs, 4 * kMs, kNotReady));
    b.add(call(502, kEventQuery, kT0 + 6 * kMs, 1'000, 0, 0));
    b.add(sync(502, fb::SyncKind::EventQuery, kEvent, kT0 + 6 * kMs, 1'000, 0));
    b.add(call(503, kStreamQuery, kT0 + 7 * kMs, kMs, kNotReady, 20));
    b.add(sync(503, fb::SyncKind::StreamQuery, kStream, kT0 + 7 * kMs, kMs, kNotReady));
    b.add(call(523, kStreamQuery, kT0 + 8 * kMs, kMs, kNotReady, 10));
    b.add(sync(523, fb::SyncKind::StreamQuery, kStream, kT0 + 8 * kMs, kMs, kNotReady));
    b.add(call(533, kStreamQuery, kT0 + 9 * kMs, 1'000, 0, 0));
    b.add(sync(533, fb::SyncKind::StreamQuery, kStream, kT0 + 9 * kMs, 1'000, 0));
  });
}

TEST(PollCounts, TheSummaryCountsEveryPollAndSaysHowTheyWereRecorded) {
  const reader::TraceSummary s = model_of(poll_trace()).summary;
  EXPECT_EQ(s.counts.api_calls, 6u);  // records
  EXPECT_EQ(s.calls_by_function.at("cudaEventQuery"), 501u);
  EXPECT_EQ(s.calls_by_function.at("cudaStreamQuery"), 31u);
  EXPECT_EQ(s.calls_by_function.at("cudaLaunchKernel"), 1u);
  EXPECT_EQ((s.nonzero_results.at({"cudaEventQuery", kNotReady})), 500u);
  EXPECT_EQ((s.nonzero_results.at({"cudaStreamQuery", kNotReady})), 30u);
  EXPECT_EQ(s.coalesced_polls, 530u);
  EXPECT_EQ(s.coalesced_records, 3u);
  EXPECT_EQ(s.stats.records_invalid, 0u);
}

TEST(PollCounts, TheModelCountsPollsAndTimesTheirSpans) {
  const analyzer::TraceModel m = model_of(poll_trace());
  const auto& event_query = m.host_by_function.at("cudaEventQuery");
  EXPECT_EQ(event_query.count, 501u);
  EXPECT_EQ(event_query.ns, 4 * kMs + 1'000);
  EXPECT_EQ(m.host_by_function.at("cudaStreamQuery").count, 31u);
  EXPECT_EQ(m.host_by_kind[static_cast<size_t>(analyzer::CallKind::Sync)].count, 532u);
  EXPECT_EQ(m.host_by_kind[static_cast<size_t>(analyzer::CallKind::Sync)].ns, 6 * kMs + 2'000);
  EXPECT_EQ(m.syncs_by_kind[static_cast<size_t>(fb::SyncKind::EventQuery)].count, 501u);
  EXPECT_EQ(m.syncs_by_kind[static_cast<size_t>(fb::SyncKind::StreamQuery)].count, 31u);
  EXPECT_EQ(m.threads.at(kTid).cuda_calls, 533u);
  EXPECT_EQ((m.sites.at(analyzer::SiteKey{kEventQuery, 0}).calls.count), 501u);
  const analyzer::Metrics x = analyzer::compute_metrics(m);
  EXPECT_EQ(x.syncs, 532u);  // what `analyze`, `diff` and the Prometheus figures report
  ASSERT_FALSE(x.sync_calls.empty());
  EXPECT_EQ(x.sync_calls.front().first, "cudaEventQuery");
  EXPECT_EQ(x.sync_calls.front().second.count, 501u);
}

TEST(PollCounts, ASyncFindsItsCoalescedCallInTheChunkBefore) {
  const fb::ApiCall run = call(7, kEventQuery, kT0, kMs, kNotReady, 250);
  const fb::Sync run_sync = sync(7, fb::SyncKind::EventQuery, kEvent, kT0, kMs, kNotReady);
  const fb::Sync other = sync(8, fb::SyncKind::EventQuery, kEvent, kT0 + kMs, 10, 0);
  reader::CallRepeats repeats;
  reader::ChunkView with_call, with_sync, later;
  with_call.api_calls = std::span(&run, 1);
  repeats.add(with_call);
  repeats.add(with_sync);  // a drain fell between the call and its Sync
  EXPECT_EQ(repeats.calls_of(run_sync), 250u);
  EXPECT_EQ(repeats.calls_of(other), 1u);
  repeats.add(later);
  repeats.add(later);
  EXPECT_EQ(repeats.calls_of(run_sync), 1u);  // two chunks later it is no longer its pair
  const fb::Sync from_device(kT0, kMs, 7, kEvent, fb::SyncKind::EventQuery, fb::Source::Device, 0, 0);
  repeats.add(with_call);
  EXPECT_EQ(repeats.calls_of(from_device), 1u);
}

TEST(PollCounts, ExportsCarryEachRecordsCalls) {
  const Exported csv = export_bytes(poll_trace(), true);
  EXPECT_EQ(csv.text.rfind("time_ns,duration_ns,pid,tid,kind,source,name,bytes,copy_kind,stream,device,correlation,"
                           "error,call_site,detail,calls\r\n",
                           0),
            0u);
  EXPECT_NE(csv.text.find(",cudaEventQuery,,,,0,2,600,,\"depth 0, 500 polls coalesced\",500\r\n"), std::string::npos)
      << csv.text;
  EXPECT_NE(csv.text.find(",sync,host,EventQuery,,,,0,2,600,,object 0xe0,500\r\n"), std::string::npos) << csv.text;
  EXPECT_NE(csv.text.find(",cudaEventQuery,,,,0,502,0,,depth 0,1\r\n"), std::string::npos) << csv.text;
  EXPECT_EQ(csv.result.stats.records, 11u);  // one row per record

  const auto doc = nlohmann::json::parse(export_bytes(poll_trace()).text);
  uint64_t polls = 0, events = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.value("name", "") == "cudaEventQuery") {
      ++events;
      polls += e["args"].value("polls_coalesced", 0u);
    }
  EXPECT_EQ(events, 2u);
  EXPECT_EQ(polls, 500u);
}

}  // namespace
}  // namespace gpuscope::test
