// How the analyzer writes shares and sizes in evidence and reports: one
// place, so a rule's evidence and the report around it read alike.
#pragma once

#include <string>

#include <fmt/format.h>

namespace gpuscope::analyzer {

inline std::string pct(double share) { return fmt::format("{:.0f}%", share * 100); }
inline std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

}  // namespace gpuscope::analyzer
