// The coverage line about call stacks states the trace's actual reason
// (Chunk.stack_capture, format 1.3), never a guess such as "run without
// --no-stacks" for a run that never had it.
#include <gtest/gtest.h>

#include <optional>

#include "../support/sample_trace.h"
#include "metrics.h"
#include "report.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kStart = 1'000'000'000, kMs = 1'000'000;

struct TraceShape {
  std::optional<container::StackCaptureData> status;
  int calls = 0;                 // ApiCalls (cudaMemcpy), stack id 1 when `with_stack`
  bool with_stack = false;       // a stack table entry for id 1
  std::vector<std::pair<std::string, std::string>> environment;
};

container::StackCaptureData status(fb::StackCaptureState state, uint64_t failures = 0, std::string reason = "") {
  return {static_cast<uint8_t>(state), std::move(reason), 32, failures, 0};
}

// The coverage line about stacks, as `gpuscope analyze` prints it.
std::string stacks_line(const TraceShape& shape) {
  capture::ProcessMetadata meta;
  meta.pid = 7;
  meta.exe = "/app/serve";
  meta.start_monotonic_ns = kStart;
  meta.environment = shape.environment;
  const auto bytes = test::one_frame_trace(meta, kStart + 100 * kMs, [&](capture::ChunkBuilder& b) {
    b.add_strings({{1, "cudaMemcpy"}});
    if (shape.status) b.set_stack_capture(*shape.status);
    if (shape.with_stack) b.add_stack({1, {0x401000, 0x402000}});
    for (int i = 0; i < shape.calls; ++i)
      b.add(fb::ApiCall(kStart + i * kMs, kMs / 2, i + 1, 0, 42, shape.with_stack ? 1 : 0, 0, 1, 0, 0, 0, 0));
  });
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), "t.gpuscope", &error)) << error;
  const TraceModel model = build_model(r);
  const Metrics metrics = compute_metrics(model);
  const Analysis analysis = analyze(model, metrics);
  const Symbolizer symbols(model.summary);
  const std::string text = text_report(ReportInput{"t.gpuscope", model, metrics, analysis, symbols, 5});
  EXPECT_EQ(text.find("run without --no-stacks"), std::string::npos) << text;
  return stacks_coverage_line(ReportInput{"t.gpuscope", model, metrics, analysis, symbols, 5});
}

TEST(StackCoverage, OffByTheUserSaysSo) {
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Off), 5}),
            "call stacks: off (--no-stacks or GPUSCOPE_STACKS=0): findings have no call sites");
}

TEST(StackCoverage, OnButNoHookedCallWasMade) {
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Active), 0}),
            "call stacks: on, none recorded: the program made no hooked CUDA call");
}

TEST(StackCoverage, OnButTheUnwinderFailed) {
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Active, 5), 5}),
            "call stacks: on, none recorded: 5 calls could not be unwound");
}

TEST(StackCoverage, WantedButUnavailableNamesTheReason) {
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Unavailable, 0, "libunwind.so.8 not loaded"), 3}),
            "call stacks: unavailable: libunwind.so.8 not loaded");
}

TEST(StackCoverage, StacksPresentWithSomeCallsUnwoundNoneSaysWhichLack) {
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Active, 2), 4, true}),
            "call stacks: some calls have none: 2 calls could not be unwound");
  EXPECT_EQ(stacks_line({status(fb::StackCaptureState::Active), 4, true}), "");
}

TEST(StackCoverage, ATraceWithoutTheStatusDoesNotGuess) {
  EXPECT_EQ(stacks_line({std::nullopt, 3}),
            "call stacks: none in this trace, which does not record whether they were on (format 1.3 does)");
  EXPECT_EQ(stacks_line({std::nullopt, 3, false, {{"GPUSCOPE_STACKS", "0"}}}),
            "call stacks: off (GPUSCOPE_STACKS=0): findings have no call sites");
}

}  // namespace
}  // namespace gpuscope::analyzer
