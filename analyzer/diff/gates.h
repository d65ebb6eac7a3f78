// Regression gates for `gpuscope diff --fail-on`: a comma-separated list of
//   FIGURE>+N%   FIGURE<-N%   relative change (wall>+5%, copy_gbps<-10%)
//   FIGURE>+Npp  FIGURE<-Npp  change of a share in percentage points (sync_share>+3pp)
//   FIGURE>+N    FIGURE<-N    absolute change, in the figure's unit (dropped>+0)
//   verdict-changed, KEY-changed (driver, runtime, cupti, gpu, pcie_link,
//   mig, visible_devices), env-changed (any of them)
//   with --requests NAME: p50 ... p99.9, max_latency, requests and
//   tail_slowdown as figures (p99>+10%), and tail-cause-changed
// A gate whose figure is unknown in either run is not evaluated, and says so.
#pragma once

#include <string>
#include <vector>

#include "run_snapshot.h"

namespace gpuscope::analyzer {

struct Gate {
  enum class Kind { Relative, Points, Absolute, VerdictChanged, EnvironmentChanged, TailCauseChanged };
  std::string text;    // as written
  Kind kind = Kind::Relative;
  std::string subject;  // figure name or environment key ("" = any)
  bool above = true;    // '>' (fails when the change exceeds threshold) or '<'
  double threshold = 0; // signed: +5 for >+5%, -10 for <-10%
};

// False with a one-line reason naming the offending gate.
bool parse_gates(const std::string& spec, std::vector<Gate>* out, std::string* error);

// True when the gate judges requests (a latency figure, tail-cause-changed):
// it needs --requests NAME.
bool gate_needs_requests(const Gate& g);

struct GateResult {
  enum class Status { Pass, Fail, NotEvaluated };
  Gate gate;
  Status status = Status::Pass;
  std::string detail;  // the change that decided it, or why it was not evaluated
};

std::vector<GateResult> evaluate_gates(const std::vector<Gate>& gates, const RunSnapshot& base,
                                       const RunSnapshot& next);

}  // namespace gpuscope::analyzer
