// What `gpuscope diff` compares of one run: the figures of its analysis,
// per-kernel and per-call-site totals, and its environment, each under a
// stable name so two traces of the same workload line up. Built from an
// analysis (model, metrics, verdict); a figure the trace cannot support is
// absent, never zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report.h"

namespace gpuscope::analyzer {

// How a figure's change is read and gated.
enum class FigureUnit { Seconds, Share, Bytes, Count, Rate, GBps, Cores, Latency, Ratio };

struct FigureSpec {
  const char* name;   // as used in --fail-on: wall, sync_share, ...
  const char* label;  // as printed
  FigureUnit unit;
  bool per_request = false;  // known only with --requests NAME (request latency)
};
// Every figure a snapshot may hold, in report order.
const std::vector<FigureSpec>& figure_specs();
const FigureSpec* find_figure(const std::string& name);

// Environment keys, in report order; --fail-on takes "<key>-changed".
const std::vector<std::string>& environment_keys();

struct SiteTotal {
  uint64_t count = 0;
  double seconds = 0;
};

struct RunSnapshot {
  std::string path;
  std::string program;
  int pid = 0;
  std::string verdict_class;     // bottleneck id: sync_bound, ...
  std::string verdict_headline;  // as `gpuscope analyze` prints it
  std::map<std::string, double> figures;          // by FigureSpec::name; absent: unknown
  std::map<std::string, uint64_t> kernels;        // launches by kernel name
  std::map<std::string, SiteTotal> call_sites;    // "cudaMemcpy at main (app.cu:42)"
  std::map<std::string, std::string> environment; // by environment_keys(); "unknown" when not recorded
  std::vector<std::string> blind_spots;           // coverage lines worth repeating (drops, truncation)
  // --requests: the request name, and the part the tail's requests grew most
  // in ("none" without one cause, "not judged" on thin evidence; "" without
  // --requests), and " while other threads: PART" when other threads were
  // busy during the tail (concurrent_cause); the quantiles are figures (p50
  // ... p99.9, max_latency).
  std::string requests;
  std::string tail_cause;

  std::optional<double> figure(const std::string& name) const;
};

RunSnapshot snapshot_of(const ReportInput& in);

}  // namespace gpuscope::analyzer
