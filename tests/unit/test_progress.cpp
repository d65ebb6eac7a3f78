// What long reads tell the progress bar: each pass over a trace is one
// stage named after the file, counting up to its size; a streamed source
// reports the furthest byte read; nothing is reported without a sink.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "progress.h"
#include "trace_reader.h"
#include "../support/sample_trace.h"

namespace gpuscope::reader {
namespace {

struct Recorded {
  std::string what;
  uint64_t total = 0;
  std::vector<uint64_t> done;
  bool ended = false;
};

class RecordingSink final : public ProgressSink {
 public:
  RecordingSink() { set_progress_sink(this); }
  ~RecordingSink() override { set_progress_sink(nullptr); }
  void begin(std::string_view what, uint64_t total, ProgressUnit) override {
    stages.push_back(Recorded{std::string(what), total, {}, false});
    ++open;
  }
  void advance(uint64_t done) override { stages.back().done.push_back(done); }
  void end() override {
    --open;
    stages.back().ended = true;
  }
  std::vector<Recorded> stages;
  int open = 0;
};

TEST(Progress, EachPassOverATraceIsOneStageCountingToItsSize) {
  const auto trace = test::make_sample_trace(6, 50);
  RecordingSink sink;
  TraceReader r;
  std::string error;
  ASSERT_TRUE(r.open(memory_source(trace.bytes), "/data/runs/big.gpuscope", &error)) << error;
  r.read([](const ChunkView&) {});
  r.read([](const ChunkView&) {});
  ASSERT_EQ(sink.stages.size(), 2u);
  EXPECT_EQ(sink.open, 0);
  EXPECT_EQ(sink.stages[0].what, "reading big.gpuscope");
  EXPECT_EQ(sink.stages[1].what, "reading big.gpuscope (pass 2)");
  for (const Recorded& s : sink.stages) {
    EXPECT_TRUE(s.ended);
    EXPECT_EQ(s.total, trace.bytes.size());
    ASSERT_EQ(s.done.size(), trace.frame_ends.size());  // one step per frame
    for (size_t i = 0; i < s.done.size(); ++i) EXPECT_EQ(s.done[i], trace.frame_ends[i]);
  }
}

TEST(Progress, AStreamedSourceReportsTheFurthestByteRead) {
  const std::vector<uint8_t> bytes(1000, 7);
  RecordingSink sink;
  {
    ProgressStage stage("importing x.json", bytes.size());
    auto source = progress_source(memory_source(bytes), stage);
    uint8_t buf[300];
    ASSERT_TRUE(source->read(0, buf, 300));
    ASSERT_TRUE(source->read(600, buf, 300));
    ASSERT_TRUE(source->read(100, buf, 100));  // behind the furthest: nothing new
    EXPECT_FALSE(source->read(900, buf, 300));  // past the end: not read
    EXPECT_EQ(source->size(), bytes.size());
  }
  ASSERT_EQ(sink.stages.size(), 1u);
  EXPECT_EQ(sink.stages[0].done, (std::vector<uint64_t>{300, 900}));
  EXPECT_TRUE(sink.stages[0].ended);
}

TEST(Progress, WithoutASinkNothingIsObservedOrWrapped) {
  const std::vector<uint8_t> bytes(10, 1);
  ProgressStage stage("reading", bytes.size());
  EXPECT_FALSE(stage.observed());
  auto plain = memory_source(bytes);
  const ByteSource* before = plain.get();
  EXPECT_EQ(progress_source(std::move(plain), stage).get(), before);
}

}  // namespace
}  // namespace gpuscope::reader
