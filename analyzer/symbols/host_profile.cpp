#include "host_profile.h"

#include <algorithm>
#include <map>

namespace gpuscope::analyzer {
namespace {

// Frames compared when stacks are merged: samples of one loop land on many
// instructions, each a stack of its own; by function they are one.
constexpr size_t kFramesCompared = 8;

std::string frame_name(const Frame& f) { return f.function.empty() ? f.text() : f.function; }

struct Merged {
  HostStackShare share;
  uint64_t representative_samples = 0;  // of the stack shown for the group
};

}  // namespace

void profile_host_samples(const Symbolizer& symbols, HostSampleStats* stats, size_t top_stacks) {
  HostProfile profile;
  std::map<std::string, Merged> by_path;
  std::map<std::string, uint64_t> by_function;
  for (const auto& [id, samples] : stats->by_stack) {
    const std::vector<Frame> frames = id == 0 ? std::vector<Frame>{} : symbols.stack(id, kFramesCompared, Symbolizer::Walk::Sampled);
    std::string path;
    for (const Frame& f : frames) path += frame_name(f) + "\n";
    Merged& m = by_path[path];
    m.share.samples += samples;
    if (samples > m.representative_samples) {
      m.representative_samples = samples;
      m.share.stack_id = id;
    }
    m.share.leaf = frames.empty() ? "(no stack)" : frames.front().text();
    m.share.cost = frames.empty() ? HostCost::Unknown : classify_host_function(frames.front().function);
    profile.by_cost[static_cast<size_t>(m.share.cost)] += samples;
    if (!frames.empty()) by_function[frame_name(frames.front())] += samples;
  }
  std::vector<HostStackShare> stacks;
  for (auto& [path, m] : by_path) stacks.push_back(std::move(m.share));
  std::sort(stacks.begin(), stacks.end(), [](const HostStackShare& a, const HostStackShare& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.stack_id < b.stack_id;
  });
  if (stacks.size() > top_stacks) stacks.resize(top_stacks);
  profile.top = std::move(stacks);
  for (const auto& [function, samples] : by_function)
    if (samples > profile.hottest_samples) {
      profile.hottest_function = function;
      profile.hottest_samples = samples;
    }
  stats->profile = std::move(profile);
}

}  // namespace gpuscope::analyzer
