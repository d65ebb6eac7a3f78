// A reader's problems in words: each kind's name, and the one line every
// printer of problems uses (trace_reader.h, describe).
#include <string>

#include "trace_reader.h"

namespace gpuscope::reader {

const char* problem_kind_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::Truncated: return "truncated";
    case ProblemKind::CorruptFrame: return "corrupt frame";
    case ProblemKind::MissingFrames: return "missing frames";
    case ProblemKind::InvalidRecords: return "invalid records";
    case ProblemKind::NoTotals: return "no end record";
    case ProblemKind::NewerMinor: return "newer minor version";
    case ProblemKind::Unlisted: return "more problems";
  }
  return "problem";
}

std::string describe(const Problem& p) {
  switch (p.kind) {
    case ProblemKind::Unlisted: return p.message;
    case ProblemKind::NoTotals:
    case ProblemKind::NewerMinor: return std::string(problem_kind_name(p.kind)) + ": " + p.message;
    default:
      return std::string(problem_kind_name(p.kind)) + " at offset " + std::to_string(p.offset) + ": " + p.message;
  }
}

}  // namespace gpuscope::reader
