#include "call_sites.h"

#include <fmt/format.h>

namespace gpuscope::exporter {
CallSites::CallSites(const reader::TraceSummary& live, reader::TraceSummary full)
    : live_(live), full_(std::make_unique<reader::TraceSummary>(std::move(full))) {
  symbolizer_ = std::make_unique<analyzer::Symbolizer>(*full_);
}

CallSites::~CallSites() = default;

const std::string& CallSites::text(uint32_t stack_id) {
  static const std::string kNone;
  if (stack_id == 0) return kNone;
  auto it = cache_.find(stack_id);
  if (it != cache_.end()) return it->second;
  std::string t;
  if (symbolizer_) {
    t = symbolizer_->caller_text(stack_id);
  } else {
    t = raw(stack_id);
  }
  return cache_.emplace(stack_id, std::move(t)).first->second;
}

std::string CallSites::raw(uint32_t stack_id) const {
  auto it = live_.stacks.find(stack_id);
  if (it == live_.stacks.end()) return {};
  for (const uint64_t pc : it->second) {
    const container::ModuleDescription* module = nullptr;
    for (const auto& m : live_.modules)
      if (pc >= m.low_address && pc < m.high_address) module = &m;
    if (module == nullptr) return fmt::format("0x{:x}", pc);
    const std::string name = module->path.substr(module->path.rfind('/') + 1);
    if (name.starts_with("libgpuscope")) continue;  // the hook's own frames
    return fmt::format("{}+0x{:x}", name, pc - module->load_address);
  }
  return {};
}

}  // namespace gpuscope::exporter
