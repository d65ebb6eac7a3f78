// `gpuscope diff`'s outputs: what changed between two runs of the same
// workload (verdict, figures, kernels, call sites, environment) and how
// each gate came out, as text for people and JSON for pipelines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gates.h"
#include "run_snapshot.h"

namespace gpuscope::analyzer {

struct DiffInput {
  const RunSnapshot& base;
  const RunSnapshot& next;
  const std::vector<GateResult>& gates;
  size_t top = 10;  // kernels and call sites listed, most changed first
};

std::string diff_text(const DiffInput& in);
nlohmann::ordered_json diff_json(const DiffInput& in);

inline constexpr int kDiffJsonSchemaVersion = 1;

}  // namespace gpuscope::analyzer
