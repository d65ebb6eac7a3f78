// Process trees (issue 7): every way a program starts a child that execs
// gives the child its own trace, linked to its traced parent; a launcher
// script with ranked workers and a helper is one tree in `gpuscope run`'s
// summary and in `gpuscope analyze DIR`, and the program behaves as without
// gpuscope.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

using json = nlohmann::json;

// Neither the caller's gpuscope settings nor a batch system's rank may leak in.
std::vector<std::string> tree_env(std::vector<std::string> extra = {}) {
  return environment_with(extra, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID",
                                  "GPUSCOPE_PARENT_PID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                                  "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                                  "SIMGPU_NODE", "CUDA_VISIBLE_DEVICES"});
}

std::vector<TraceContents> read_all(const std::string& dir) {
  std::vector<TraceContents> out;
  for (const auto& path : traces_in(dir)) out.push_back(read_trace_file(path));
  return out;
}

struct Mechanism {
  const char* name;
  const char* child_line;  // what the exec'd child prints
};

// Named in ctest by name, not its bytes (which change with every build).
void PrintTo(const Mechanism& m, std::ostream* os) { *os << m.name; }

class SpawnMechanisms : public ::testing::TestWithParam<Mechanism> {};

TEST_P(SpawnMechanisms, ChildIsTracedIntoItsOwnFileLinkedToItsParent) {
  TempDir dir;
  const std::string mech = GetParam().name;
  const auto r = run({gpuscope_exe(), "run", "-o", dir.path(), "--", bin("behave"), mech + ":6", "spin:50", "return:0"},
                     tree_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, std::string(GetParam().child_line) + "\nchild exited 6\n");
  const auto traces = read_all(dir.path());
  ASSERT_EQ(traces.size(), 2u) << r.err;
  const TraceContents* parent = nullptr;
  const TraceContents* child = nullptr;
  for (const auto& t : traces) (t.summary.process->trace_parent_pid == 0 ? parent : child) = &t;
  ASSERT_TRUE(parent && child);
  const auto& p = *parent->summary.process;
  const auto& c = *child->summary.process;
  EXPECT_EQ(c.trace_parent_pid, p.pid);
  EXPECT_EQ(c.ppid, p.pid);
  EXPECT_EQ(c.run_id, p.run_id);
  ASSERT_TRUE(child->summary.end.has_value());
  EXPECT_EQ(child->summary.end->exit_status, 6);
  // The parent's trace is whole: it ended from main, nothing was damaged.
  ASSERT_TRUE(parent->summary.end.has_value());
  EXPECT_EQ(parent->summary.end->kind, fb::EndKind::ReturnFromMain);
  EXPECT_TRUE(parent->summary.problems.empty()) << parent->summary.problems.front().message;
  EXPECT_NE(r.err.find("gpuscope: process tree of run " + p.run_id + " (2 traced processes)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(fmt::format("  pid {} (parent {}) behave", c.pid, p.pid)), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, SpawnMechanisms,
                         ::testing::Values(Mechanism{"fork_exec", "exec-child"}, Mechanism{"vfork_exec", "exec-child"},
                                           Mechanism{"spawn", "spawned-child"}, Mechanism{"spawnp", "spawned-child"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A grandchild whose parent exits at once is reparented; its trace still
// names the process it belongs under.
TEST(ProcessTree, AnOrphanStillLinksToItsTracedAncestor) {
  TempDir dir;
  const auto r = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("behave"), "orphan:700", "return:0"},
                     tree_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  // Our pipe reader waited for the orphan's end of stdout; its trace may lag.
  std::vector<TraceContents> traces;
  for (int i = 0; i < 100; ++i) {
    traces = read_all(dir.path());
    if (traces.size() == 2 && traces[0].summary.end && traces[1].summary.end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(traces.size(), 2u);
  const auto& a = *traces[0].summary.process;
  const auto& b = *traces[1].summary.process;
  const auto& root = a.trace_parent_pid == 0 ? a : b;
  const auto& orphan = a.trace_parent_pid == 0 ? b : a;
  EXPECT_EQ(orphan.trace_parent_pid, root.pid);
  EXPECT_NE(orphan.ppid, root.pid);  // its OS parent was the fork-only middle process
  const auto analysis = run({gpuscope_exe(), "analyze", "--json", dir.path()}, tree_env());
  const json j = json::parse(analysis.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("trees")) << analysis.out.substr(0, 300);
  ASSERT_EQ(j["trees"].size(), 1u);
  for (const auto& p : j["trees"][0]["processes"]) {
    if (p["pid"] == orphan.pid) {
      EXPECT_EQ(p["parent_pid"], root.pid) << p.dump();
    }
  }
}

// The acceptance run: a launcher script, two ranked workers, one helper.
class LauncherTree : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built() || !std::filesystem::exists(bin("tree_worker"))) GTEST_SKIP() << "samples not built";
  }
  static std::vector<std::string> env() { return tree_env({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}); }
  static std::vector<std::string> sorted_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
};

TEST_F(LauncherTree, OutputAndExitStatusAreUnchanged) {
  for (const std::string status : {"", "7"}) {
    std::vector<std::string> cmd = {bin("tree_launcher.sh")};
    if (!status.empty()) cmd.push_back(status);
    const auto plain = run(cmd, env());
    TempDir dir;
    std::vector<std::string> traced_cmd = {gpuscope_exe(), "run", "-q", "-o", dir.path(), "--"};
    traced_cmd.insert(traced_cmd.end(), cmd.begin(), cmd.end());
    const auto traced = run(traced_cmd, env());
    EXPECT_EQ(plain.exit_code(), status.empty() ? 0 : 7) << plain.err;
    EXPECT_EQ(traced.exit_code(), plain.exit_code()) << traced.err;
    // Workers run concurrently: the lines are the same, their order is the scheduler's.
    EXPECT_EQ(sorted_lines(traced.out), sorted_lines(plain.out));
    EXPECT_EQ(traced.err, plain.err);
    EXPECT_EQ(sorted_lines(plain.out).size(), 4u) << plain.out;
  }
}

TEST_F(LauncherTree, IsOneTreeWithRanksAndParentLinks) {
  TempDir dir;
  const auto r = run({gpuscope_exe(), "run", "-o", dir.path(), "--", bin("tree_launcher.sh")}, env());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto traces = read_all(dir.path());
  ASSERT_EQ(traces.size(), 4u) << r.err;
  const reader::ProcessInfo* launcher = nullptr;
  const reader::ProcessInfo* rank[2] = {nullptr, nullptr};
  const reader::ProcessInfo* helper = nullptr;
  for (const auto& t : traces) {
    const auto& p = *t.summary.process;
    const bool is_helper = std::find(p.argv.begin(), p.argv.end(), "--as-helper") != p.argv.end();
    if (p.rank < 0) launcher = &p;
    else if (is_helper) helper = &p;
    else if (p.rank == 0 || p.rank == 1) rank[p.rank] = &p;
    EXPECT_TRUE(t.summary.end.has_value()) << p.exe;
  }
  ASSERT_TRUE(launcher && rank[0] && rank[1] && helper);
  EXPECT_EQ(launcher->trace_parent_pid, 0);
  EXPECT_EQ(rank[0]->trace_parent_pid, launcher->pid);
  EXPECT_EQ(rank[1]->trace_parent_pid, launcher->pid);
  EXPECT_EQ(helper->trace_parent_pid, rank[0]->pid);
  EXPECT_EQ(helper->rank, 0);  // inherited from its worker
  EXPECT_EQ(rank[1]->world_size, 2);
  EXPECT_EQ(rank[1]->local_rank, 1);
  EXPECT_EQ(rank[1]->rank_source, "RANK");
  // Per-rank file names in the run's directory.
  for (int k : {0, 1}) {
    const std::string name = fmt::format("gpuscope-tree_worker-rank{}-{}.gpuscope", k, rank[k]->pid);
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/" + name)) << name;
  }
  const std::string helper_trace = dir.path() + fmt::format("/gpuscope-tree_worker-rank0-{}.gpuscope", helper->pid);
  const auto info = run({gpuscope_exe(), "info", helper_trace}, env());
  EXPECT_NE(info.out.find(fmt::format("tree:        traced parent pid {}, rank 0 (from RANK), local rank 0, world size 2",
                                      rank[0]->pid)),
            std::string::npos)
      << info.out;
  // run's summary: the tree, indented by parent.
  EXPECT_NE(r.err.find("(4 traced processes)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(fmt::format("gpuscope:       pid {} (parent {}, rank 0) tree_worker", helper->pid, rank[0]->pid)),
            std::string::npos) << r.err;

  const auto text = run({gpuscope_exe(), "analyze", dir.path()}, env());
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_EQ(count_lines_with(text.out, "PROCESS TREE ("), 1) << text.out;
  EXPECT_NE(text.out.find(fmt::format("      tree_worker (pid {})", helper->pid)), std::string::npos) << text.out;
  // Which worker holds the bottleneck is timing (tests/analyzer/test_process_tree.cpp
  // pins the rule); e2e runs share the cores, so only its form is checked here.
  EXPECT_LE(count_lines_with(text.out, "<- bottleneck"), 1) << text.out;
  EXPECT_EQ(count_lines_with(text.out, "BOTTLENECK: "), 1) << text.out;

  const auto analysis = run({gpuscope_exe(), "analyze", "--json", dir.path()}, env());
  const json j = json::parse(analysis.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << analysis.out.substr(0, 300);
  EXPECT_EQ(j["traces"].size(), 4u);
  ASSERT_EQ(j["trees"].size(), 1u);
  const json& tree = j["trees"][0];
  EXPECT_EQ(tree["run_id"], launcher->run_id);
  ASSERT_EQ(tree["processes"].size(), 4u);
  for (const auto& p : tree["processes"]) {
    const int pid = p["pid"];
    const int want = pid == launcher->pid ? 0 : pid == helper->pid ? rank[0]->pid : launcher->pid;
    EXPECT_EQ(p["parent_pid"].is_null() ? 0 : p["parent_pid"].get<int>(), want) << p.dump();
  }
  if (!tree["bottleneck"].is_null()) {
    EXPECT_NE(tree["bottleneck"]["pid"], launcher->pid) << tree.dump();  // a shell holds no GPU bottleneck
  }
  for (const auto& p : tree["processes"]) {
    EXPECT_EQ(p["cuda_work"], p["pid"] != launcher->pid) << p.dump();
  }
  for (const auto& t : j["traces"]) EXPECT_TRUE(t["process"].is_object()) << t["trace"];

  const std::string source = GPUSCOPE_SOURCE_DIR;
  const auto valid = run({"python3", source + "/tests/verdicts/check_json_schema.py",
                          source + "/docs/analysis.schema.json", gpuscope_exe(), dir.path()},
                         env());
  EXPECT_EQ(valid.exit_code(), 0) << valid.out << valid.err;
}

}  // namespace
}  // namespace gpuscope::test
