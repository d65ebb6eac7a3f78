#include "process_tree.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gpuscope::analyzer {
namespace {

// The latest image of `pid` on the child's host that started before the
// child (earlier in start order): the one alive when the child was created.
// A pid reused later, or an image exec'd after the child started, is never
// chosen, and a parent always precedes its child, so no cycle can form.
int latest_image_before(const std::vector<ProcessEntry>& ps, int pid, size_t child) {
  for (size_t i = child; i-- > 0;)
    if (ps[i].pid == pid && ps[i].boot_id == ps[child].boot_id) return static_cast<int>(i);
  return -1;
}

void link_processes(ProcessTree* t) {
  const auto& ps = t->processes;
  t->parent.assign(ps.size(), -1);
  t->link.assign(ps.size(), Link::Root);
  for (size_t i = 0; i < ps.size(); ++i) {
    const ProcessEntry& p = ps[i];
    if (p.trace_parent_pid == p.pid) {  // this image replaced a traced one (exec)
      t->parent[i] = latest_image_before(ps, p.pid, i);
      t->link[i] = t->parent[i] >= 0 ? Link::ExecOf : Link::MissingParent;
      continue;
    }
    // The traced ancestor when the trace names one; else (format 1.0, or a
    // library preloaded by hand) the OS parent, which is often untraced.
    const int wanted = p.trace_parent_pid > 0 ? p.trace_parent_pid : p.ppid;
    t->parent[i] = latest_image_before(ps, wanted, i);
    if (t->parent[i] >= 0) t->link[i] = Link::Parent;
    else if (p.trace_parent_pid > 0) t->link[i] = Link::MissingParent;
  }
}

void choose_bottleneck(ProcessTree* t) {
  for (size_t i = 0; i < t->processes.size(); ++i) {
    const ProcessEntry& p = t->processes[i];
    if (!p.cuda_work) continue;  // a launcher's shell holds no GPU bottleneck
    const double s = bottleneck_seconds(p);
    t->total_bottleneck_s += s;
    if (s > t->bottleneck_s) {
      t->bottleneck_s = s;
      t->bottleneck = static_cast<int>(i);
    }
  }
}

void add_notes(ProcessTree* t) {
  for (size_t i = 0; i < t->processes.size(); ++i) {
    const ProcessEntry& p = t->processes[i];
    if (t->link[i] == Link::MissingParent)
      t->notes.push_back(fmt::format("pid {} ({}): its traced parent pid {} has no trace here (removed, not written, "
                                     "or another directory); shown as a root",
                                     p.pid, p.exe, p.trace_parent_pid));
    if (!p.complete)
      t->notes.push_back(fmt::format("pid {} ({}): no end record (killed, crashed or still running): its figures stop "
                                     "at its last flush",
                                     p.pid, p.exe));
  }
  std::map<int, int> per_rank;
  for (const ProcessEntry& p : t->processes)
    if (p.rank >= 0 && p.cuda_work) ++per_rank[p.rank];
  int world = -1;
  for (const ProcessEntry& p : t->processes) {
    if (p.world_size <= 0) continue;
    if (world > 0 && p.world_size != world) return;  // nested launchers disagree: no census
    world = p.world_size;
  }
  if (world > 0 && static_cast<int>(per_rank.size()) < world)
    t->notes.push_back(fmt::format("{} of {} ranks (WORLD_SIZE) have a trace with CUDA work here; the others ran "
                                   "elsewhere or were not traced",
                                   per_rank.size(), world));
}

}  // namespace

double bottleneck_seconds(const ProcessEntry& e) {
  for (const char* not_a_bottleneck : {"healthy", "inconclusive", "too_short", "no_cuda_work"})
    if (e.verdict_id == not_a_bottleneck) return 0;
  return e.verdict_share * e.wall_s;
}

std::vector<int> ProcessTree::children(int index) const {
  std::vector<int> out;
  for (size_t i = 0; i < parent.size(); ++i)
    if (parent[i] == index) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> ProcessTree::roots() const { return children(-1); }

std::vector<ProcessTree> build_process_trees(std::vector<ProcessEntry> entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const ProcessEntry& a, const ProcessEntry& b) {
    return a.start_monotonic_ns < b.start_monotonic_ns;
  });
  // Without a run id the traces were preloaded by hand: pids link them only
  // on one host, so each host (boot) is its own group.
  std::map<std::string, ProcessTree> groups;
  std::vector<std::string> order;
  for (ProcessEntry& e : entries) {
    const std::string key = e.run_id.empty() ? "\x01" + e.boot_id : e.run_id;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.run_id = e.run_id;
    it->second.processes.push_back(std::move(e));
  }
  std::vector<ProcessTree> trees;
  for (const std::string& key : order) {
    ProcessTree& t = groups[key];
    link_processes(&t);
    choose_bottleneck(&t);
    add_notes(&t);
    trees.push_back(std::move(t));
  }
  return trees;
}

size_t ProcessTree::process_count() const {
  std::set<std::pair<std::string, int>> pids;
  for (const auto& p : processes) pids.emplace(p.boot_id + "/" + p.host, p.pid);
  return pids.size();
}

}  // namespace gpuscope::analyzer
