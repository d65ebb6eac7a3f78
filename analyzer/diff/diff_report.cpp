#include "diff_report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "units.h"

namespace gpuscope::analyzer {
namespace {

using json = nlohmann::ordered_json;

std::string format_value(FigureUnit unit, double v) {
  switch (unit) {
    case FigureUnit::Seconds: return fmt::format("{:.3f} s", v);
    case FigureUnit::Share: return pct(v);
    case FigureUnit::Bytes: return mib(v);
    case FigureUnit::Count: return fmt::format("{:.0f}", v);
    case FigureUnit::Rate: return fmt::format("{:.1f}/s", v);
    case FigureUnit::GBps: return fmt::format("{:.2f} GB/s", v);
    case FigureUnit::Cores: return fmt::format("{:.2f} cores", v);
    case FigureUnit::Latency: return v < 1 ? fmt::format("{:.3f} ms", v * 1e3) : fmt::format("{:.3f} s", v);
    case FigureUnit::Ratio: return fmt::format("{:.2f}x", v);
  }
  return fmt::format("{}", v);
}

// Shares change in points; everything else relatively.
std::string format_change(FigureUnit unit, double b, double n) {
  if (unit == FigureUnit::Share) return fmt::format("{:+.1f} pp", (n - b) * 100);
  if (b == n) return "=";
  if (b == 0) return "new";
  return fmt::format("{:+.1f}%", (n - b) / std::fabs(b) * 100);
}

// Keys of both maps, the largest absolute change first.
template <class Map, class Magnitude>
std::vector<std::string> most_changed(const Map& a, const Map& b, Magnitude&& magnitude, size_t top) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& k : keys) {
    const auto ia = a.find(k), ib = b.find(k);
    const double change = magnitude(ia == a.end() ? nullptr : &ia->second, ib == b.end() ? nullptr : &ib->second);
    if (change != 0) ranked.emplace_back(change, k);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& l, const auto& r) { return l.first > r.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < ranked.size() && i < top; ++i) out.push_back(ranked[i].second);
  return out;
}

double kernel_change(const uint64_t* a, const uint64_t* b) {
  return std::fabs(static_cast<double>(b ? *b : 0) - static_cast<double>(a ? *a : 0));
}
double site_change(const SiteTotal* a, const SiteTotal* b) {
  return std::fabs((b ? b->seconds : 0) - (a ? a->seconds : 0)) + (a == nullptr || b == nullptr ? 1e-9 : 0);
}

const char* status_word(GateResult::Status s) {
  switch (s) {
    case GateResult::Status::Pass: return "pass";
    case GateResult::Status::Fail: return "FAIL";
    case GateResult::Status::NotEvaluated: return "skip";
  }
  return "?";
}

void figures_text(std::string& out, const DiffInput& in) {
  out += fmt::format("FIGURES {:>27} {:>16} {:>12}\n", "base", "new", "change");
  for (const FigureSpec& f : figure_specs()) {
    const auto b = in.base.figure(f.name), n = in.next.figure(f.name);
    if (!b && !n) continue;
    out += fmt::format("  {:<31} {:>16} {:>16} {:>12}\n", f.label, b ? format_value(f.unit, *b) : "unknown",
                       n ? format_value(f.unit, *n) : "unknown", b && n ? format_change(f.unit, *b, *n) : "");
  }
  out += "\n";
}

void kernels_and_sites_text(std::string& out, const DiffInput& in) {
  const auto kernels = most_changed(in.base.kernels, in.next.kernels, kernel_change, in.top);
  if (!kernels.empty()) {
    out += "KERNELS (launches, most changed first)\n";
    for (const auto& k : kernels) {
      const auto b = in.base.kernels.count(k) ? in.base.kernels.at(k) : 0;
      const auto n = in.next.kernels.count(k) ? in.next.kernels.at(k) : 0;
      out += fmt::format("  {:<40} {:>10} -> {:<10}\n", k, b, n);
    }
    out += "\n";
  }
  const auto sites = most_changed(in.base.call_sites, in.next.call_sites, site_change, in.top);
  if (!sites.empty()) {
    out += "CALL SITES (host time in CUDA calls, most changed first)\n";
    for (const auto& s : sites) {
      const SiteTotal b = in.base.call_sites.count(s) ? in.base.call_sites.at(s) : SiteTotal{};
      const SiteTotal n = in.next.call_sites.count(s) ? in.next.call_sites.at(s) : SiteTotal{};
      out += fmt::format("  {}\n      {:.3f} s in {} calls -> {:.3f} s in {} calls\n", s, b.seconds, b.count,
                         n.seconds, n.count);
    }
    out += "\n";
  }
}

void environment_text(std::string& out, const DiffInput& in) {
  out += "ENVIRONMENT\n";
  for (const auto& key : environment_keys()) {
    const std::string& b = in.base.environment.at(key);
    const std::string& n = in.next.environment.at(key);
    out += b == n ? fmt::format("  {:<16} {}\n", key, b) : fmt::format("  {:<16} {} -> {}   CHANGED\n", key, b, n);
  }
  out += "\n";
}

}  // namespace

std::string diff_text(const DiffInput& in) {
  std::string out = fmt::format("gpuscope diff\n  base: {} ({}, pid {})\n  new:  {} ({}, pid {})\n\n", in.base.path,
                                in.base.program, in.base.pid, in.next.path, in.next.program, in.next.pid);
  if (in.base.program != in.next.program)
    out += "note: the two runs are of different programs; the comparison may not mean much\n\n";
  const bool changed = in.base.verdict_class != in.next.verdict_class;
  out += fmt::format("VERDICT{}\n  base: {}\n  new:  {}\n\n", changed ? " CHANGED" : "", in.base.verdict_headline,
                     in.next.verdict_headline);
  figures_text(out, in);
  if (!in.base.requests.empty()) {
    const bool cause_changed = in.base.tail_cause != in.next.tail_cause;
    out += fmt::format("REQUESTS \"{}\"\n  tail cause: {}{}\n\n", in.base.requests,
                       cause_changed ? in.base.tail_cause + " -> " + in.next.tail_cause : in.base.tail_cause,
                       cause_changed ? "   CHANGED" : "");
  }
  kernels_and_sites_text(out, in);
  environment_text(out, in);
  for (const auto* run : {&in.base, &in.next})
    for (const auto& b : run->blind_spots) out += fmt::format("blind spot ({}): {}\n", run == &in.base ? "base" : "new", b);
  if (in.gates.empty()) return out;
  out += "\nGATES\n";
  for (const GateResult& g : in.gates)
    out += fmt::format("  [{}] {}: {}\n", status_word(g.status), g.gate.text, g.detail);
  return out;
}

json diff_json(const DiffInput& in) {
  json figures = json::array();
  for (const FigureSpec& f : figure_specs()) {
    const auto b = in.base.figure(f.name), n = in.next.figure(f.name);
    if (!b && !n) continue;
    figures.push_back(json{{"name", f.name}, {"base", b ? json(*b) : json(nullptr)}, {"new", n ? json(*n) : json(nullptr)}});
  }
  json kernels = json::array();
  for (const auto& k : most_changed(in.base.kernels, in.next.kernels, kernel_change, in.top))
    kernels.push_back(json{{"name", k}, {"base", in.base.kernels.count(k) ? in.base.kernels.at(k) : 0},
                           {"new", in.next.kernels.count(k) ? in.next.kernels.at(k) : 0}});
  json sites = json::array();
  for (const auto& s : most_changed(in.base.call_sites, in.next.call_sites, site_change, in.top)) {
    const SiteTotal b = in.base.call_sites.count(s) ? in.base.call_sites.at(s) : SiteTotal{};
    const SiteTotal n = in.next.call_sites.count(s) ? in.next.call_sites.at(s) : SiteTotal{};
    sites.push_back(json{{"site", s}, {"base_s", b.seconds}, {"base_calls", b.count}, {"new_s", n.seconds},
                         {"new_calls", n.count}});
  }
  json environment = json::array();
  for (const auto& key : environment_keys())
    environment.push_back(json{{"name", key}, {"base", in.base.environment.at(key)}, {"new", in.next.environment.at(key)},
                               {"changed", in.base.environment.at(key) != in.next.environment.at(key)}});
  json gates = json::array();
  bool failed = false;
  for (const GateResult& g : in.gates) {
    gates.push_back(json{{"gate", g.gate.text}, {"status", status_word(g.status)}, {"detail", g.detail}});
    failed |= g.status == GateResult::Status::Fail;
  }
  return json{{"schema_version", kDiffJsonSchemaVersion},
              {"base", json{{"trace", in.base.path}, {"program", in.base.program}, {"pid", in.base.pid},
                            {"verdict", in.base.verdict_class}, {"blind_spots", in.base.blind_spots}}},
              {"new", json{{"trace", in.next.path}, {"program", in.next.program}, {"pid", in.next.pid},
                           {"verdict", in.next.verdict_class}, {"blind_spots", in.next.blind_spots}}},
              {"verdict_changed", in.base.verdict_class != in.next.verdict_class},
              {"requests", in.base.requests.empty()
                               ? json(nullptr)
                               : json{{"name", in.base.requests}, {"base_tail_cause", in.base.tail_cause},
                                      {"new_tail_cause", in.next.tail_cause}}},
              {"figures", figures}, {"kernels", kernels}, {"call_sites", sites}, {"environment", environment},
              {"gates", gates}, {"failed", failed}};
}

}  // namespace gpuscope::analyzer
