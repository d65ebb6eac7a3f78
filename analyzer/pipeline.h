// The analysis pipeline: one trace, read -> model -> metrics -> rules, scoped
// as `gpuscope analyze` scopes it (the capture windows it was recorded in,
// NVTX ranges, --window and --range). Every command that gives a verdict
// (analyze, report, diff, run's and attach's summaries, the Prometheus
// writer) goes through here, so the passes over a trace are decided in one
// place: one pass, and a second only when the trace has NVTX ranges or
// capture windows (host calls are placed in ranges, samples outside the
// windows left out, once all of them are known). A consumer that needs an
// analysis before it reads the records (the HTML report's timeline) rides
// along that second pass when it can. Errors come back as values naming
// what was wrong and where; printing them is the caller's.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "byte_source.h"
#include "metrics.h"
#include "report.h"
#include "request_tally.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"
#include "trace_reader.h"

namespace gpuscope::analyzer {

// The part of a trace to analyze: analyze's --window and --range.
struct AnalysisScope {
  TimeWindow window;  // the whole trace by default
  std::string range;  // an NVTX range message: only the time inside such ranges; "" = all of it
  // --requests: the NVTX range message each request is wrapped in ("" =
  // none), and the quantile above which requests are the tail (--tail).
  std::string requests;
  double tail_quantile = kDefaultTailQuantile;
  // With --requests, the GPU occupancy of every trace given together
  // (co_tenants.h): those of other processes on the same GPU are set
  // against the requests. Null: one trace alone.
  std::shared_ptr<const GpuTenants> tenants;
  // Several traces analyzed together: one without such requests (a
  // launcher shell, the co-tenant itself) is analyzed whole instead of
  // failing; the caller says so when none has any.
  bool requests_optional = false;
};

// With --requests over several traces: each one's GPU occupancy
// (co_tenants.h), read in one pass each; a trace that cannot be opened is
// left out (its own analysis says why).
std::shared_ptr<const GpuTenants> read_gpu_tenants(const std::vector<std::string>& paths);

// Why there is no analysis, in one line that names the input or option it
// is about: "--range X: T has no NVTX range with that message", "T is not a
// gpuscope trace (...)".
struct PipelineError {
  std::string message;
};

// --window's text ("2:10", "5:", ":3", "" for all) and --range's message as
// a scope, or the error naming the option.
std::optional<PipelineError> parse_scope(const std::string& window, const std::string& range, AnalysisScope* out);

// A pass over the records that needs an analysis first: made from a model
// and its metrics, it returns the visitor to hand every chunk to. The
// pipeline calls it once. When the trace needs a second pass for its NVTX
// ranges alone (no capture windows, no --range), it is made from the first
// pass's model, which differs from the final one only in the time each
// range holds, and fed during that pass; otherwise it is made from the
// final analysis and fed one more pass.
using FollowingPass = std::function<reader::ChunkVisitor(const TraceModel& model, const Metrics& metrics)>;

// How much of the analysis a command shows. The verdict (its class, share,
// confidence and headline) rests on the records alone; the names of code
// addresses (call sites, CPU samples' functions) only word the evidence,
// and naming them reads each module's symbols and DWARF, which costs more
// than the model on a short trace. `Verdict` leaves addresses unnamed
// ("module+0xoffset"): for a command that prints the headline and nothing
// it cites (run's and attach's summary lines).
enum class Detail { Full, Verdict };

struct PipelineResult;

// One trace's analysis, and the reader it came from. Lives as long as the
// report inputs made from it.
class TraceAnalysis {
 public:
  ~TraceAnalysis();
  TraceAnalysis(const TraceAnalysis&) = delete;
  TraceAnalysis& operator=(const TraceAnalysis&) = delete;

  const std::string& path() const { return path_; }
  const TraceModel& model() const { return model_; }
  const Metrics& metrics() const { return metrics_; }
  const Analysis& analysis() const { return analysis_; }
  const Symbolizer& symbols() const { return *symbols_; }
  // What the reader found wrong with the file (damage, no end record).
  const std::vector<reader::Problem>& problems() const { return model_.summary.problems; }
  // An imported trace whose source was damaged: where the import stopped
  // (what came before it is what was analyzed); null otherwise.
  const std::string* import_damage() const {
    const auto& im = model_.summary.import_source;
    return im && !im->complete ? &im->damage : nullptr;
  }
  ReportInput report_input(size_t top) const;

  // The same trace for one more pass by a consumer that needs the finished
  // analysis first (the HTML report's timeline); damage the analysis found
  // is jumped over, not read again.
  reader::TraceReader& reader() { return *reader_; }
  // Passes over the trace so far.
  uint32_t passes() const { return reader_->passes(); }

 private:
  friend PipelineResult analyze_trace(std::unique_ptr<reader::ByteSource>, const std::string&, const AnalysisScope&,
                                      const FollowingPass&, Detail);
  TraceAnalysis(std::string path, std::unique_ptr<reader::TraceReader> reader);
  std::optional<PipelineError> build_model(const AnalysisScope& scope, const FollowingPass& following);
  void run_rules(Detail detail);

  std::string path_;
  std::unique_ptr<reader::TraceReader> reader_;
  TraceModel model_;
  Metrics metrics_;
  Analysis analysis_;
  RequestLatency requests_;  // until the rules run: then analysis_.requests
  std::unique_ptr<Symbolizer> symbols_;
  // The first pass's model and metrics, when a following pass was made
  // from them: it may refer to them as long as it lives.
  std::unique_ptr<TraceModel> first_model_;
  std::unique_ptr<Metrics> first_metrics_;
};

// The analysis, or (when it is null) the error.
struct PipelineResult {
  std::unique_ptr<TraceAnalysis> analysis;
  PipelineError error;
};

// Opens the file at `path` (a regular file only: the reader's rule) and
// analyzes it; `following`, when set, has been fed every chunk once when
// this returns an analysis.
PipelineResult analyze_trace(const std::string& path, const AnalysisScope& scope = {},
                             const FollowingPass& following = {}, Detail detail = Detail::Full);
// The same for a trace from any source; `name` stands for it in messages.
PipelineResult analyze_trace(std::unique_ptr<reader::ByteSource> source, const std::string& name,
                             const AnalysisScope& scope = {}, const FollowingPass& following = {},
                             Detail detail = Detail::Full);

}  // namespace gpuscope::analyzer
