#include "node_facts.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuscope::doctor {
namespace {

using json = nlohmann::json;

// A baseline is a few kilobytes; anything far larger is not one.
constexpr std::streamoff kMaxBaselineBytes = std::streamoff{16} << 20;

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string without_tag(const std::string& what) {
  const size_t end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

// The string members of `object` as facts; false naming the first that is not a string.
bool read_facts(const json& object, const char* skip, Facts* facts, std::string* bad) {
  for (const auto& [name, value] : object.items()) {
    if (name == skip) continue;
    if (!value.is_string()) {
      *bad = name;
      return false;
    }
    facts->emplace_back(name, value.get<std::string>());
  }
  return true;
}

const GpuFacts* find_gpu(const NodeFacts& facts, unsigned index) {
  for (const GpuFacts& g : facts.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

bool parse_gpus(const json& gpus, NodeFacts* facts, std::string* error) {
  if (!gpus.is_array()) {
    *error = "\"facts\".\"gpus\" is not an array";
    return false;
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    const json& gpu = gpus[i];
    const auto index = gpu.is_object() ? gpu.find("index") : gpu.end();
    if (!gpu.is_object() || index == gpu.end() || !index->is_number_unsigned() ||
        index->get<unsigned long long>() > std::numeric_limits<unsigned>::max()) {
      *error = fmt::format("\"facts\".\"gpus\"[{}] is not an object with an unsigned \"index\"", i);
      return false;
    }
    GpuFacts g;
    g.index = index->get<unsigned>();
    if (find_gpu(*facts, g.index) != nullptr) {  // which one would this node's GPU be compared with?
      *error = fmt::format("\"facts\".\"gpus\"[{}] repeats GPU index {}", i, g.index);
      return false;
    }
    std::string bad;
    if (!read_facts(gpu, "index", &g.facts, &bad)) {
      *error = fmt::format("\"facts\".\"gpus\"[{}].\"{}\" is not a string", i, bad);
      return false;
    }
    facts->gpus.push_back(std::move(g));
  }
  return true;
}

bool parse_baseline(const json& doc, NodeFacts* facts, std::string* error) {
  const auto found = doc.is_object() ? doc.find("facts") : doc.end();
  if (found == doc.end() || !found->is_object()) {
    *error = "no \"facts\" object: not the output of `gpuscope doctor --json` (or of one older than --baseline)";
    return false;
  }
  const auto node = found->find("node");
  const auto gpus = found->find("gpus");
  std::string bad;
  if (node == found->end() || !node->is_object()) {
    *error = "\"facts\".\"node\" is not an object";
    return false;
  }
  if (!read_facts(*node, "", &facts->node, &bad)) {
    *error = fmt::format("\"facts\".\"node\".\"{}\" is not a string", bad);
    return false;
  }
  return gpus == found->end() || parse_gpus(*gpus, facts, error);
}

Drift drift_of(const std::string& name) {
  for (const FactRule& rule : fact_rules())
    if (name == rule.name) return rule.drift;
  return Drift::Warn;  // a fact a newer gpuscope wrote: a difference is worth a look
}

// The differences between two sets of facts, the baseline's order first.
void compare(int gpu, const Facts& baseline, const Facts& now, std::vector<FactDifference>& out) {
  for (const auto& [name, was] : baseline) {
    const Drift drift = drift_of(name);
    if (drift == Drift::Identity) continue;
    const std::string* is = find_fact(now, name);
    if (is == nullptr) out.push_back({gpu, name, was, "", drift});
    else if (*is != was) out.push_back({gpu, name, was, *is, drift});
  }
}

}  // namespace

const std::vector<FactRule>& fact_rules() {
  static const std::vector<FactRule> rules = {
      {"kernel", false, Drift::Warn, "the Linux kernel release (uname -r)"},
      {"driver", false, Drift::Warn, "the NVIDIA driver version (nvmlSystemGetDriverVersion)"},
      {"cuda_driver", false, Drift::Warn, "the CUDA version the driver supports (nvmlSystemGetCudaDriverVersion_v2)"},
      {"cuda_runtime", false, Drift::Warn, "the version of the CUDA runtime on the library path (cudaRuntimeGetVersion)"},
      {"cuda_runtime_library", false, Drift::Identity, "where that runtime was loaded from"},
      {"gpu_count", false, Drift::Warn, "how many GPUs the driver counts (nvmlDeviceGetCount_v2)"},
      {"name", true, Drift::Fail, "the GPU model (nvmlDeviceGetName)"},
      {"uuid", true, Drift::Identity, "the GPU's UUID"},
      {"bus_id", true, Drift::Identity, "the GPU's PCI address"},
      {"vbios", true, Drift::Warn, "the GPU's firmware (nvmlDeviceGetVbiosVersion)"},
      {"memory", true, Drift::Warn, "the GPU's memory (nvmlDeviceGetMemoryInfo total)"},
      {"pcie_link_max", true, Drift::Warn, "the PCIe generation and width the link can train to"},
      {"mig_mode", true, Drift::Warn, "MIG mode (nvmlDeviceGetMigMode)"},
      {"mig_devices", true, Drift::Warn, "the MIG devices by profile, with MIG on (nvidia-smi -L)"},
      {"nvlinks_active", true, Drift::Warn, "NVLinks up of those the GPU has (nvmlDeviceGetNvLinkState)"},
      {"persistence_mode", true, Drift::Warn, "persistence mode (nvmlDeviceGetPersistenceMode)"},
      {"power_limit", true, Drift::Warn, "the enforced power limit (nvmlDeviceGetEnforcedPowerLimit)"},
      {"applications_clocks", true, Drift::Warn, "the clocks applications run at (nvidia-smi -ac)"},
      {"max_clocks", true, Drift::Warn, "the GPU's maximum clocks (nvmlDeviceGetMaxClockInfo)"},
  };
  return rules;
}

const std::string* find_fact(const Facts& facts, const std::string& name) {
  for (const auto& [key, value] : facts)
    if (key == name) return &value;
  return nullptr;
}

nlohmann::ordered_json facts_json(const NodeFacts& facts) {
  nlohmann::ordered_json node = nlohmann::ordered_json::object();
  for (const auto& [name, value] : facts.node) node[name] = value;
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const GpuFacts& g : facts.gpus) {
    nlohmann::ordered_json gpu = {{"index", g.index}};
    for (const auto& [name, value] : g.facts) gpu[name] = value;
    gpus.push_back(std::move(gpu));
  }
  return nlohmann::ordered_json{{"node", std::move(node)}, {"gpus", std::move(gpus)}};
}

bool load_baseline(const std::string& path, NodeFacts* facts, std::string* error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    *error = fmt::format("cannot read the baseline {}", path);
    return false;
  }
  if (in.tellg() > kMaxBaselineBytes) {
    *error = fmt::format("the baseline {} is {} bytes: not a `gpuscope doctor --json` output", path,
                         static_cast<long long>(in.tellg()));
    return false;
  }
  in.seekg(0);
  std::stringstream text;
  text << in.rdbuf();
  return parse_baseline_text(text.str(), path, facts, error);
}

bool parse_baseline_text(std::string_view text, const std::string& source, NodeFacts* facts, std::string* error) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    *error = fmt::format("the baseline {} is not JSON (byte {}): {}", source, e.byte, without_tag(e.what()));
    return false;
  } catch (const json::exception& e) {  // found by fuzzing: a number too large for a double is out_of_range
    *error = fmt::format("the baseline {} is not JSON gpuscope can read: {}", source, without_tag(e.what()));
    return false;
  }
  *facts = NodeFacts{};
  std::string why;
  if (!parse_baseline(doc, facts, &why)) {
    *error = fmt::format("the baseline {}: {}", source, why);
    return false;
  }
  return true;
}

std::vector<FactDifference> compare_facts(const NodeFacts& baseline, const NodeFacts& now) {
  std::vector<FactDifference> out;
  compare(-1, baseline.node, now.node, out);
  for (const GpuFacts& was : baseline.gpus) {
    const GpuFacts* is = find_gpu(now, was.index);
    if (is == nullptr) {
      const std::string* name = find_fact(was.facts, "name");
      out.push_back({static_cast<int>(was.index), "gpu", name != nullptr ? *name : "a GPU", "", Drift::Fail});
    } else {
      compare(static_cast<int>(was.index), was.facts, is->facts, out);
    }
  }
  return out;
}

}  // namespace gpuscope::doctor
