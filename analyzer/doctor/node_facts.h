// The node's configuration as doctor reads it: driver, CUDA, kernel, and per
// GPU its model, firmware, link, memory, MIG, persistence, power and clocks
// policy. `doctor --json` writes them ("facts"), so a known-good node's
// output is the baseline another node is compared against (--baseline):
// "works on one machine, fails on another" becomes a list of differences.
// Every value is text as a person would compare it ("Gen5 x16", "700 W"); a
// value the node cannot answer is left out, and is then not compared.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuscope::doctor {

// (name, value) in the order fact_rules() gives.
using Facts = std::vector<std::pair<std::string, std::string>>;

struct GpuFacts {
  unsigned index = 0;  // NVML's
  Facts facts;
};

struct NodeFacts {
  Facts node;
  std::vector<GpuFacts> gpus;
};

// How a difference from the baseline is judged.
enum class Drift {
  Identity,  // differs on every machine (a UUID, a bus id): recorded, never compared
  Warn,      // a version or setting that changed
  Fail,      // the hardware is not what the baseline had (another GPU model)
};

struct FactRule {
  const char* name;
  bool per_gpu;
  Drift drift;
  const char* meaning;  // what the value is, for docs/doctor.md and -v
};
const std::vector<FactRule>& fact_rules();

// The value of `name`, or nullptr when the node did not answer it.
const std::string* find_fact(const Facts& facts, const std::string& name);

// The "facts" object of doctor's JSON ({"node": {...}, "gpus": [{"index": 0, ...}]}).
nlohmann::ordered_json facts_json(const NodeFacts& facts);

// Reads the "facts" of a saved `doctor --json` document. The file is treated
// as hostile: false with one sentence naming the file and what is wrong
// (unreadable, not JSON and where, not doctor's, a value of the wrong type).
// Names gpuscope does not know are kept (a newer gpuscope's facts) and
// compared like the others.
bool load_baseline(const std::string& path, NodeFacts* facts, std::string* error);
// The same for a document already read; `source` names it in the error.
bool parse_baseline_text(std::string_view text, const std::string& source, NodeFacts* facts, std::string* error);

// One difference between a baseline and this node.
struct FactDifference {
  int gpu = -1;  // -1: the node
  std::string name, baseline, now;  // now "" when this node does not answer it
  Drift drift = Drift::Warn;
};

// What differs, in rule order: the node's facts, then GPUs the baseline
// has and this node lacks (name "gpu", now ""), then each GPU's facts. A
// fact the baseline has and this node does not answer comes back with now
// "" (not compared: the check says so); one only this node answers is not
// a difference.
std::vector<FactDifference> compare_facts(const NodeFacts& baseline, const NodeFacts& now);

}  // namespace gpuscope::doctor
