// The PROCESS TREE section and the JSON "tree" object: the processes of one
// run, indented under their traced parent, with each one's wall time, GPU
// busy and verdict, and the process that holds the bottleneck. The tree and
// the bottleneck rule are analyzer/model/process_tree.h's; this only formats.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "report.h"
#include "units.h"

namespace gpuscope::analyzer {
namespace {

using json = nlohmann::ordered_json;

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string end_text(const reader::TraceSummary& s) {
  if (!s.end) return "no end record";
  switch (s.end->kind) {
    case fb::EndKind::Exec: return "exec'd";
    case fb::EndKind::Detached: return "capture ended before the program";
    case fb::EndKind::OutputFailed: return "capture failed";
    default: return fmt::format("exit status {}", s.end->exit_status);
  }
}

std::string verdict_text(const ProcessEntry& p) {
  if (!p.cuda_work) return "no CUDA work";
  if (p.verdict_id == "inconclusive") return p.verdict_label;
  return fmt::format("{} ({})", p.verdict_label, pct(p.verdict_share));
}

std::string rank_text(const ProcessEntry& p) { return p.rank >= 0 ? std::to_string(p.rank) : "-"; }

// Depth-first order with each process's depth, roots and children by start.
std::vector<std::pair<int, int>> display_order(const ProcessTree& t) {
  std::vector<std::pair<int, int>> out;
  std::function<void(int, int)> visit = [&](int i, int depth) {
    out.emplace_back(i, depth);
    for (int c : t.children(i)) visit(c, depth + 1);
  };
  for (int r : t.roots()) visit(r, 0);
  return out;
}

std::string process_label(const ProcessTree& t, int i) {
  const ProcessEntry& p = t.processes[i];
  std::string label = fmt::format("{} (pid {})", p.exe, p.pid);
  if (t.link[i] == Link::ExecOf) label += " exec'd";
  if (t.link[i] == Link::MissingParent) label += fmt::format(" [parent {} untraced]", p.trace_parent_pid);
  return label;
}

std::string bottleneck_line(const ProcessTree& t) {
  if (t.bottleneck < 0)
    return "BOTTLENECK: none of the processes has a bottleneck verdict (each is healthy, inconclusive, too short to "
           "judge or does no CUDA work)\n";
  const ProcessEntry& p = t.processes[t.bottleneck];
  return fmt::format("BOTTLENECK: pid {} ({}{}): {}, {:.3f} s explained, {} of the {:.3f} s that bottleneck verdicts "
                     "explain across the tree\n",
                     p.pid, p.exe, p.rank >= 0 ? fmt::format(", rank {}", p.rank) : "", p.verdict_label,
                     t.bottleneck_s, pct(t.bottleneck_s / std::max(t.total_bottleneck_s, 1e-12)),
                     t.total_bottleneck_s);
}

}  // namespace

ProcessEntry process_entry(const ReportInput& in) {
  const reader::TraceSummary& s = in.model.summary;
  ProcessEntry e;
  e.trace_path = in.trace_path;
  if (s.process) {
    const reader::ProcessInfo& p = *s.process;
    e.pid = p.pid;
    e.ppid = p.ppid;
    e.trace_parent_pid = p.trace_parent_pid;
    e.rank = p.rank;
    e.local_rank = p.local_rank;
    e.world_size = p.world_size;
    e.run_id = p.run_id;
    e.host = p.hostname;
    e.boot_id = p.boot_id;
    e.exe = base_name(p.exe);
    e.start_monotonic_ns = p.start_monotonic_ns;
  }
  e.wall_s = in.metrics.wall_s;
  e.gpu_busy = in.metrics.gpu_util;
  const Verdict& v = in.analysis.verdict;
  e.verdict_id = bottleneck_id(v.cls);
  e.verdict_label = bottleneck_label(v.cls);
  e.verdict_share = v.share;
  e.verdict_headline = v.headline;
  e.cuda_work = is_cuda_verdict(v.cls);
  e.complete = s.end.has_value();
  e.end = end_text(s);
  return e;
}

std::string tree_text(const ProcessTree& t) {
  const auto order = display_order(t);
  size_t width = 7;
  for (const auto& [i, depth] : order) width = std::max(width, 2 * depth + process_label(t, i).size());
  std::string out = fmt::format("PROCESS TREE ({}, {} traced process{})\n",
                                t.run_id.empty() ? "no run id: linked by pid" : "run " + t.run_id,
                                t.processes.size(), t.processes.size() == 1 ? "" : "es");
  out += fmt::format("  {:<{}}  {:>4}  {:>9}  {:>8}  {}\n", "process", width, "rank", "wall", "GPU busy", "verdict");
  for (const auto& [i, depth] : order) {
    const ProcessEntry& p = t.processes[i];
    const std::string name = std::string(2 * depth, ' ') + process_label(t, i);
    out += fmt::format("  {:<{}}  {:>4}  {:>7.3f} s  {:>8}  {}{}\n", name, width, rank_text(p), p.wall_s,
                       p.gpu_busy ? pct(*p.gpu_busy) : "-", verdict_text(p),
                       i == t.bottleneck ? "  <- bottleneck" : "");
  }
  out += bottleneck_line(t);
  out += "  rule: the process whose verdict explains the most seconds (verdict share x wall); healthy, "
         "inconclusive and processes without CUDA work hold none (docs/rules.md)\n";
  out += "NOTES\n";
  for (const std::string& n : t.notes) out += "  - " + n + "\n";
  out += "  - not in any tree: fork-only children and statically linked programs (never traced), and processes "
         "whose trace is not among the inputs\n";
  return out;
}

nlohmann::ordered_json tree_json(const ProcessTree& t) {
  json processes = json::array();
  for (size_t i = 0; i < t.processes.size(); ++i) {
    const ProcessEntry& p = t.processes[i];
    static constexpr const char* kLinks[] = {"root", "parent", "exec", "missing_parent"};
    processes.push_back(json{
        {"trace", p.trace_path}, {"pid", p.pid}, {"ppid", p.ppid},
        {"trace_parent_pid", p.trace_parent_pid > 0 ? json(p.trace_parent_pid) : json(nullptr)},
        {"parent", t.parent[i] >= 0 ? json(t.parent[i]) : json(nullptr)},
        {"parent_pid", t.parent[i] >= 0 ? json(t.processes[t.parent[i]].pid) : json(nullptr)},
        {"parent_trace", t.parent[i] >= 0 ? json(t.processes[t.parent[i]].trace_path) : json(nullptr)},
        {"link", kLinks[static_cast<int>(t.link[i])]},
        {"rank", p.rank >= 0 ? json(p.rank) : json(nullptr)},
        {"local_rank", p.local_rank >= 0 ? json(p.local_rank) : json(nullptr)},
        {"world_size", p.world_size >= 0 ? json(p.world_size) : json(nullptr)},
        {"program", p.exe}, {"wall_s", p.wall_s},
        {"gpu_busy_share", p.gpu_busy ? json(*p.gpu_busy) : json(nullptr)},
        {"verdict", p.verdict_id}, {"verdict_share", p.verdict_share}, {"cuda_work", p.cuda_work},
        {"bottleneck_s", p.cuda_work ? bottleneck_seconds(p) : 0.0}, {"end", p.end}});
  }
  json bottleneck = nullptr;
  if (t.bottleneck >= 0)
    bottleneck = json{{"pid", t.processes[t.bottleneck].pid}, {"trace", t.processes[t.bottleneck].trace_path},
                      {"verdict", t.processes[t.bottleneck].verdict_id}, {"seconds", t.bottleneck_s},
                      {"share", t.bottleneck_s / std::max(t.total_bottleneck_s, 1e-12)}};
  return json{{"run_id", t.run_id.empty() ? json(nullptr) : json(t.run_id)},
              {"processes", processes},
              {"bottleneck", bottleneck},
              {"bottleneck_total_s", t.total_bottleneck_s},
              {"notes", t.notes}};
}

}  // namespace gpuscope::analyzer
