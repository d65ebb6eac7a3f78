// Formats an analysis: the text report people read at 3 a.m., and the JSON
// document tools read (schema: docs/analysis.schema.json). Reports only
// format; every number comes from the metrics, every claim from a finding.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "metrics.h"
#include "process_tree.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace gpuscope::analyzer {

struct ReportInput {
  std::string trace_path;
  const TraceModel& model;
  const Metrics& metrics;
  const Analysis& analysis;
  const Symbolizer& symbols;
  size_t top = 5;  // findings and call sites shown
};

std::string text_report(const ReportInput& in);
// The coverage line about call stacks, which reports add after the
// analysis' own (it needs the symbolizer's counts); empty when none.
std::string stacks_coverage_line(const ReportInput& in);
// The coverage line about CPU stack samples (format 1.4); empty for older traces.
std::string host_samples_coverage_line(const ReportInput& in);
nlohmann::ordered_json json_report(const ReportInput& in);
// --requests (request_report.cpp): the REQUESTS section ("" without
// --requests) and the JSON "requests" member (null without it).
std::string requests_text(const ReportInput& in);
nlohmann::ordered_json requests_json(const ReportInput& in);

// Process trees (tree_report.cpp): what the tree needs of one analysis, and
// the PROCESS TREE section / JSON "tree" object of one run.
ProcessEntry process_entry(const ReportInput& in);
std::string tree_text(const ProcessTree& tree);
nlohmann::ordered_json tree_json(const ProcessTree& tree);

inline constexpr int kJsonSchemaVersion = 1;

}  // namespace gpuscope::analyzer
