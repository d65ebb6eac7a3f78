#include "site_merge.h"

#include <algorithm>
#include <map>
#include <string>

namespace gpuscope::analyzer {
namespace {

std::string shown_as(const Symbolizer& symbols, const CallSite& site) {
  std::string key = site.function;
  if (site.stack_id == 0) return key;  // "no call stack recorded": alike
  for (const Frame& f : symbols.site_frames(site.stack_id, kSiteFramesShown)) key += "\n" + f.text();
  return key;
}

void merge(const Symbolizer& symbols, std::vector<CallSite>* sites) {
  std::vector<CallSite> merged;
  std::vector<uint64_t> heaviest;  // ns of the stack each merged site keeps
  std::map<std::string, size_t> index;
  for (const CallSite& s : *sites) {
    const auto [it, inserted] = index.emplace(shown_as(symbols, s), merged.size());
    if (inserted) {
      merged.push_back(s);
      heaviest.push_back(s.ns);
      continue;
    }
    CallSite& m = merged[it->second];
    if (s.ns > heaviest[it->second]) {
      m.stack_id = s.stack_id;
      heaviest[it->second] = s.ns;
    }
    m.count += s.count;
    m.ns += s.ns;
  }
  std::stable_sort(merged.begin(), merged.end(), [](const CallSite& a, const CallSite& b) { return a.ns > b.ns; });
  *sites = std::move(merged);
}

}  // namespace

void merge_sites_shown_alike(const Symbolizer& symbols, Analysis* analysis) {
  for (Finding& f : analysis->findings) merge(symbols, &f.sites);
}

}  // namespace gpuscope::analyzer
