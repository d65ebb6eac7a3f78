// Golden reports: the text and JSON analysis of a deterministic synthetic
// trace (tests/support/sample_trace.h) must match the files in golden/
// exactly. A deliberate change to a report regenerates them with
//   GPUSCOPE_UPDATE_GOLDEN=1 build/bin/gpuscope_analyzer_tests --gtest_filter='GoldenReports*'
// and the diff is reviewed like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/sample_trace.h"
#include "metrics.h"
#include "report.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace gpuscope::analyzer {
namespace {

std::string golden_path(const std::string& name) { return std::string(GPUSCOPE_GOLDEN_DIR) + "/" + name; }

void expect_matches_golden(const std::string& actual, const std::string& name) {
  if (std::getenv("GPUSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path(name)) << actual;
    GTEST_SKIP() << "regenerated " << name;
  }
  std::ifstream in(golden_path(name));
  ASSERT_TRUE(in) << "missing " << golden_path(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "report differs from golden/" << name;
}

struct Analyzed {
  TraceModel model;
  Metrics metrics;
  Analysis analysis;
};

Analyzed analyze_sample() {
  const test::SampleTrace t = test::make_sample_trace(3, 20'000);
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(t.bytes), "sample.gpuscope", &error)) << error;
  Analyzed a{build_model(r), {}, {}};
  a.metrics = compute_metrics(a.model);
  a.analysis = analyze(a.model, a.metrics);
  return a;
}

TEST(GoldenReports, TextReportOfTheSyntheticTrace) {
  const Analyzed a = analyze_sample();
  const Symbolizer symbols(a.model.summary);
  expect_matches_golden(text_report(ReportInput{"sample.gpuscope", a.model, a.metrics, a.analysis, symbols, 5}),
                        "sample_trace.txt");
}

TEST(GoldenReports, JsonReportOfTheSyntheticTrace) {
  const Analyzed a = analyze_sample();
  const Symbolizer symbols(a.model.summary);
  expect_matches_golden(json_report(ReportInput{"sample.gpuscope", a.model, a.metrics, a.analysis, symbols, 5}).dump(2) + "\n",
                        "sample_trace.json");
}

}  // namespace
}  // namespace gpuscope::analyzer
