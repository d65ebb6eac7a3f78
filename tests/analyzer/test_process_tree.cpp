// Process trees from hand-built entries: links (traced parent, exec, missing
// parent, reused pids, ppid fallback), grouping by run id, the bottleneck
// rule and the PROCESS TREE section.
#include <gtest/gtest.h>

#include "report.h"

namespace gpuscope::analyzer {
namespace {

ProcessEntry entry(int pid, int trace_parent, uint64_t start, const std::string& run = "r1") {
  ProcessEntry e;
  e.trace_path = "t-" + std::to_string(pid) + "-" + std::to_string(start);
  e.pid = pid;
  e.ppid = 1;
  e.trace_parent_pid = trace_parent;
  e.run_id = run;
  e.boot_id = "boot";
  e.exe = "app";
  e.start_monotonic_ns = start;
  e.wall_s = 1.0;
  e.verdict_id = "inconclusive";
  e.verdict_label = "no dominant bottleneck";
  e.cuda_work = true;
  e.complete = true;
  return e;
}

ProcessEntry with_verdict(ProcessEntry e, const std::string& id, double share, double wall) {
  e.verdict_id = id;
  e.verdict_label = id;
  e.verdict_share = share;
  e.wall_s = wall;
  return e;
}

int index_of(const ProcessTree& t, int pid, uint64_t start) {
  for (size_t i = 0; i < t.processes.size(); ++i)
    if (t.processes[i].pid == pid && t.processes[i].start_monotonic_ns == start) return static_cast<int>(i);
  return -2;
}

TEST(ProcessTree, LinksThreeLevelsUnderTheirTracedParents) {
  // Given out of order: the tree is built by start time.
  const auto trees = build_process_trees({entry(30, 20, 300), entry(10, 0, 100), entry(21, 10, 210), entry(20, 10, 200)});
  ASSERT_EQ(trees.size(), 1u);
  const ProcessTree& t = trees[0];
  EXPECT_EQ(t.parent[index_of(t, 10, 100)], -1);
  EXPECT_EQ(t.parent[index_of(t, 20, 200)], index_of(t, 10, 100));
  EXPECT_EQ(t.parent[index_of(t, 21, 210)], index_of(t, 10, 100));
  EXPECT_EQ(t.parent[index_of(t, 30, 300)], index_of(t, 20, 200));
  EXPECT_EQ(t.roots(), std::vector<int>{index_of(t, 10, 100)});
  EXPECT_TRUE(t.notes.empty()) << t.notes.front();
}

TEST(ProcessTree, AnExecdImageHangsUnderTheImageItReplaced) {
  // sh (pid 10) starts a worker (20), then execs itself into app (pid 10 again),
  // which starts a helper (30): the helper belongs to the later image.
  const auto trees = build_process_trees({entry(10, 0, 100), entry(20, 10, 150), entry(10, 10, 200), entry(30, 10, 300)});
  const ProcessTree& t = trees[0];
  const int sh = index_of(t, 10, 100), app = index_of(t, 10, 200);
  EXPECT_EQ(t.parent[app], sh);
  EXPECT_EQ(t.link[app], Link::ExecOf);
  EXPECT_EQ(t.parent[index_of(t, 20, 150)], sh);
  EXPECT_EQ(t.parent[index_of(t, 30, 300)], app);
}

TEST(ProcessTree, AMissingParentIsARootWithANote) {
  const auto trees = build_process_trees({entry(10, 0, 100), entry(30, 20, 300)});
  const ProcessTree& t = trees[0];
  const int orphan = index_of(t, 30, 300);
  EXPECT_EQ(t.parent[orphan], -1);
  EXPECT_EQ(t.link[orphan], Link::MissingParent);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("traced parent pid 20 has no trace here"), std::string::npos) << t.notes[0];
  EXPECT_NE(tree_text(t).find("[parent 20 untraced]"), std::string::npos) << tree_text(t);
}

TEST(ProcessTree, AReusedPidThatStartedLaterIsNotTheParent) {
  // Pid 10 exits, its child 20 lives on; a later process reuses pid 10.
  const auto trees = build_process_trees({entry(10, 0, 100), entry(20, 10, 200), entry(10, 0, 900)});
  const ProcessTree& t = trees[0];
  EXPECT_EQ(t.parent[index_of(t, 20, 200)], index_of(t, 10, 100));
  EXPECT_EQ(t.parent[index_of(t, 10, 900)], -1);
}

TEST(ProcessTree, WithoutATracedParentTheOsParentLinks) {
  ProcessEntry child = entry(20, 0, 200, "");  // format 1.0 or preloaded by hand
  child.ppid = 10;
  ProcessEntry other_host = entry(30, 0, 300, "");
  other_host.ppid = 10;
  other_host.boot_id = "elsewhere";
  const auto trees = build_process_trees({entry(10, 0, 100, ""), child, other_host});
  ASSERT_EQ(trees.size(), 2u);  // no run id: one group per host boot
  EXPECT_EQ(trees[0].parent[index_of(trees[0], 20, 200)], index_of(trees[0], 10, 100));
  EXPECT_EQ(trees[1].processes.size(), 1u);
  EXPECT_EQ(trees[1].parent[0], -1);
}

TEST(ProcessTree, RunIdsAreSeparateTrees) {
  const auto trees = build_process_trees({entry(10, 0, 100, "a"), entry(20, 10, 200, "b"), entry(30, 10, 300, "a")});
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_EQ(trees[0].run_id, "a");
  EXPECT_EQ(trees[0].processes.size(), 2u);
  EXPECT_EQ(trees[1].run_id, "b");
  EXPECT_EQ(trees[1].link[0], Link::MissingParent);  // its parent is in run a
}

TEST(ProcessTree, TheBottleneckIsTheProcessLosingTheMostSeconds) {
  ProcessEntry launcher = with_verdict(entry(10, 0, 100), "cpu_bound", 0.9, 10.0);
  launcher.cuda_work = false;  // a shell busy waiting holds no GPU bottleneck
  const auto trees = build_process_trees({launcher, with_verdict(entry(20, 10, 200), "pcie_bound", 0.8, 1.0),
                                          with_verdict(entry(21, 10, 210), "sync_bound", 0.5, 4.0),
                                          with_verdict(entry(22, 10, 220), "healthy", 0.95, 9.0)});
  const ProcessTree& t = trees[0];
  ASSERT_GE(t.bottleneck, 0);
  EXPECT_EQ(t.processes[t.bottleneck].pid, 21);  // 2.0 s beats 0.8 s; healthy explains none
  EXPECT_DOUBLE_EQ(t.bottleneck_s, 2.0);
  EXPECT_DOUBLE_EQ(t.total_bottleneck_s, 2.8);
  const std::string text = tree_text(t);
  EXPECT_NE(text.find("BOTTLENECK: pid 21 (app): sync_bound, 2.000 s explained, 71% of the 2.800 s"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  app (pid 10)"), std::string::npos) << text;
  EXPECT_NE(text.find("    app (pid 21)"), std::string::npos) << text;
  const auto j = tree_json(t);
  EXPECT_EQ(j["bottleneck"]["pid"], 21);
  EXPECT_EQ(j["processes"][1]["parent_pid"], 10);
  EXPECT_TRUE(j["processes"][0]["parent"].is_null());
}

TEST(ProcessTree, NoBottleneckWhenNoProcessHasOne) {
  const auto trees = build_process_trees({entry(10, 0, 100), with_verdict(entry(20, 10, 200), "healthy", 0.9, 2)});
  EXPECT_EQ(trees[0].bottleneck, -1);
  EXPECT_NE(tree_text(trees[0]).find("BOTTLENECK: none"), std::string::npos);
}

TEST(ProcessTree, MissingRanksAndIncompleteTracesAreNoted) {
  ProcessEntry r0 = entry(20, 10, 200);
  r0.rank = 0;
  r0.world_size = 4;
  r0.complete = false;
  const auto trees = build_process_trees({entry(10, 0, 100), r0});
  const auto& notes = trees[0].notes;
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("no end record"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("1 of 4 ranks"), std::string::npos) << notes[1];
}

}  // namespace
}  // namespace gpuscope::analyzer
