// Fuzz target: a `gpuscope doctor --baseline` file (analyzer/doctor/node_facts.h),
// which a user may hand over from anywhere. Nothing may crash, throw or run
// away; a file that is refused has a one-line reason naming it; a file that
// is accepted compares equal to itself, and writing its facts out and reading
// them back gives the same facts. Run under libFuzzer (GPUSCOPE_FUZZ=ON) or
// replayed over seeds by replay_main.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "node_facts.h"

namespace {

bool same(const gpuscope::doctor::NodeFacts& a, const gpuscope::doctor::NodeFacts& b) {
  if (a.node != b.node || a.gpus.size() != b.gpus.size()) return false;
  for (size_t i = 0; i < a.gpus.size(); ++i)
    if (a.gpus[i].index != b.gpus[i].index || a.gpus[i].facts != b.gpus[i].facts) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope::doctor;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  NodeFacts facts;
  std::string error;
  if (!parse_baseline_text(text, "fuzz.json", &facts, &error)) {
    if (error.find("fuzz.json") == std::string::npos || error.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  for (const FactDifference& d : compare_facts(facts, facts))
    if (!d.now.empty()) std::abort();  // only "not compared" (an empty value) may differ from itself
  const std::string written = nlohmann::ordered_json{{"facts", facts_json(facts)}}.dump();
  NodeFacts again;
  if (!parse_baseline_text(written, "written.json", &again, &error) || !same(facts, again)) std::abort();
  return 0;
}
