// The call site of a recorded stack, as one line of text for the exporters:
// the innermost frame outside gpuscope, symbolized ("f (file.cu:12)") when
// a symbolizer is given, otherwise raw ("app+0x1234"). Cached per stack id,
// so the cost grows with distinct stacks, not with events.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "symbolizer.h"
#include "trace_summary.h"

namespace gpuscope::exporter {

class CallSites {
 public:
  // Raw frames, resolved against the modules of `live`: the summary being
  // built while the trace is read (a module is listed before its stacks).
  explicit CallSites(const reader::TraceSummary& live) : live_(live) {}
  // Symbolized, from `full`: a summary of a complete earlier pass.
  CallSites(const reader::TraceSummary& live, reader::TraceSummary full);
  ~CallSites();

  // "" for stack 0 or a stack the trace lost.
  const std::string& text(uint32_t stack_id);

 private:
  std::string raw(uint32_t stack_id) const;

  const reader::TraceSummary& live_;
  std::unique_ptr<reader::TraceSummary> full_;
  std::unique_ptr<analyzer::Symbolizer> symbolizer_;
  std::unordered_map<uint32_t, std::string> cache_;
};

}  // namespace gpuscope::exporter
