// The gpuscope command line as a user meets it.
#include <gtest/gtest.h>
#include <signal.h>

#include <fnmatch.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "container.h"
#include "e2e_support.h"

namespace gpuscope::test {
namespace {

// The format this gpuscope writes and reads, "1.1".
const std::string kFormat = std::to_string(container::kFormatMajor) + "." + std::to_string(container::kFormatMinor);

ProcessResult gpuscope(std::vector<std::string> args) {
  args.insert(args.begin(), gpuscope_exe());
  return run(args, clean_env());
}

TEST(Cli, VersionNamesToolAndFormatVersions) {
  const auto r = gpuscope({"--version"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^gpuscope \d+\.\d+\.\d+ \(trace format )"))) << r.out;
  EXPECT_NE(r.out.find("(trace format " + kFormat + ")"), std::string::npos) << r.out;
}

TEST(Cli, HelpForACommand) {
  const auto r = gpuscope({"help", "run"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_NE(r.out.find("--output"), std::string::npos) << r.out;
  EXPECT_EQ(gpuscope({"help", "nosuch"}).exit_code(), 2);
}

TEST(Cli, RunPassesExitStatusAndSaysWhereTheTraceIs) {
  TempDir dir;
  const auto r = gpuscope({"run", "-o", dir.path(), "--", bin("behave"), "out:hi", "exit:17"});
  EXPECT_EQ(r.exit_code(), 17);
  EXPECT_EQ(r.out, "hi\n");
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_NE(r.err.find("gpuscope: trace " + traces[0]), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit status 17"), std::string::npos) << r.err;
}

TEST(Cli, RunReportsDeathBySignalAs128PlusN) {
  TempDir dir;
  const auto r = gpuscope({"run", "-o", dir.path(), "--", bin("behave"), "spin:300", "signal:9"});
  EXPECT_EQ(r.exit_code(), 128 + SIGKILL);
  EXPECT_NE(r.err.find("was killed by SIGKILL (signal 9)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no end record"), std::string::npos) << r.err;
}

TEST(Cli, RunForwardsTerminationSignals) {
  TempDir dir;
  Spawned p = spawn({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("behave"), "sleep:20000"},
                    clean_env());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  kill(p.pid, SIGTERM);
  const ProcessResult r = finish(p);
  EXPECT_EQ(r.exit_code(), 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// nohup starts a program with SIGHUP ignored, a non-interactive shell's
// background job with SIGINT and SIGQUIT ignored: the traced program must
// inherit them ignored, as it does without gpuscope.
TEST(Cli, RunKeepsTheSignalsItsCallerIgnored) {
  struct sigaction ignore{}, old_int{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGHUP, &ignore, &old_hup);
  const std::vector<std::string> show = {"/bin/sh", "-c", "grep SigIgn /proc/$$/status"};
  const auto plain = run(show, clean_env());
  TempDir dir;
  std::vector<std::string> traced_argv = {"run", "-q", "-o", dir.path(), "--"};
  traced_argv.insert(traced_argv.end(), show.begin(), show.end());
  const auto traced = gpuscope(traced_argv);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  ASSERT_EQ(plain.out.rfind("SigIgn:\t", 0), 0u) << plain.out;
  const unsigned long long ignored = std::stoull(plain.out.substr(8), nullptr, 16);
  EXPECT_EQ(ignored & 0x3, 0x3u) << plain.out;  // SIGHUP (1) and SIGINT (2)
  EXPECT_EQ(traced.out, plain.out) << traced.err;
}

TEST(Cli, RunOfAMissingProgramSaysSo) {
  const auto r = gpuscope({"run", "-q", "--", "/no/such/program"});
  EXPECT_EQ(r.exit_code(), 127);
  EXPECT_NE(r.err.find("gpuscope: error: cannot run /no/such/program: No such file or directory"), std::string::npos)
      << r.err;
}

TEST(Cli, RunRefusesToReplaceAFileUnlessForced) {
  TempDir dir;
  const std::string out = dir.file("mine.gpuscope");
  std::ofstream(out) << "old";
  auto r = gpuscope({"run", "-o", out, "--", bin("behave"), "return:0"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("already exists; pass --force"), std::string::npos) << r.err;
  r = gpuscope({"run", "--force", "-o", out, "--", bin("behave"), "return:0"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_TRUE(read_trace_file(out).summary.process.has_value());
}

TEST(Cli, RunWithAFileAndAnExecingWrapperKeepsBothImages) {
  TempDir dir;
  const std::string out = dir.file("run.gpuscope");
  const auto r = gpuscope({"run", "-q", "-o", out, "--", "sh", "-c", "exec '" + bin("behave") + "' out:app"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.out, "app\n");
  EXPECT_EQ(r.err, "");
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 2u);  // run.gpuscope (sh) and run-exec2.gpuscope (behave)
  const TraceContents app = read_trace_file(traces[0] == out ? traces[1] : traces[0]);
  ASSERT_TRUE(app.summary.process.has_value());
  EXPECT_NE(app.summary.process->exe.find("behave"), std::string::npos);
}

TEST(Cli, InfoShowsMetadataCountsAndEnd) {
  TempDir dir;
  const std::string out = dir.file("t.gpuscope");
  ASSERT_EQ(gpuscope({"run", "-q", "-o", out, "--", bin("behave"), "spin:100", "return:5"}).exit_code(), 5);
  const auto r = gpuscope({"info", out});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("format:      " + kFormat), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("command:     " + bin("behave") + " spin:100 return:5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LD_PRELOAD="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CPU samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped:     none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("end:         returned from main, exit status 5"), std::string::npos) << r.out;
}

// The issue's case: "run without --no-stacks" for a run that never had it.
TEST(Cli, AnalyzeSaysWhyARunHasNoCallStacks) {
  TempDir dir;
  const std::string on = dir.file("on.gpuscope"), off = dir.file("off.gpuscope");
  ASSERT_EQ(gpuscope({"run", "-q", "-o", on, "--", bin("behave"), "return:0"}).exit_code(), 0);
  ASSERT_EQ(gpuscope({"run", "-q", "--no-stacks", "-o", off, "--", bin("behave"), "return:0"}).exit_code(), 0);
  const auto with_stacks = gpuscope({"analyze", on});
  EXPECT_NE(with_stacks.out.find("  - call stacks: on, none recorded: the program made no hooked CUDA call\n"),
            std::string::npos)
      << with_stacks.out;
  EXPECT_EQ(with_stacks.out.find("--no-stacks"), std::string::npos) << with_stacks.out;
  const auto without = gpuscope({"analyze", off});
  EXPECT_NE(without.out.find("  - call stacks: off (--no-stacks or GPUSCOPE_STACKS=0)"), std::string::npos)
      << without.out;
}

TEST(Cli, InfoOnANonTraceIsOneLineAndExit2) {
  TempDir dir;
  std::ofstream(dir.file("notes.txt")) << "hello, not a trace at all";
  const auto r = gpuscope({"info", dir.file("notes.txt")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.err, "gpuscope: error: " + dir.file("notes.txt") +
                       " is not a gpuscope trace (no gpuscope file header at offset 0), nor PyTorch profiler (Kineto) "
                       "JSON or an Nsight Systems SQLite export (judged by its first bytes)\n");
}

TEST(Cli, InfoOnANewerFormatNamesBothVersions) {
  TempDir dir;
  container::FileHeader h = container::make_file_header();
  h.format_major = 7;
  h.format_minor = 0;
  h.header_crc = container::crc32c(&h, offsetof(container::FileHeader, header_crc));
  std::ofstream(dir.file("new.gpuscope"), std::ios::binary).write(reinterpret_cast<const char*>(&h), sizeof h);
  const auto r = gpuscope({"info", dir.file("new.gpuscope")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("trace format 7.0 is newer than this gpuscope supports (" + kFormat + ")"), std::string::npos)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1);
}

TEST(Cli, InfoOnACorruptFramePrintsWhatItReadThenTheOffset) {
  TempDir dir;
  const std::string out = dir.file("t.gpuscope");
  ASSERT_EQ(gpuscope({"run", "-q", "-o", out, "--", bin("behave"), "spin:400", "return:0"}).exit_code(), 0);
  std::fstream f(out, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(out) / 2));
  f.put('\xff').put('\x00').put('\xff');
  f.close();
  const auto r = gpuscope({"info", out});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.out.find("process:"), std::string::npos) << r.out;  // what precedes the damage
  EXPECT_TRUE(std::regex_search(r.err, std::regex("corrupt frame at offset [0-9]+"))) << r.err;
}

// The names (and fnmatch patterns) libgpuscope.so may export without a
// symbol version: preload/unversioned_exports.txt.
std::vector<std::string> unversioned_exports() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/preload/unversioned_exports.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') names.push_back(line);
  return names;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

// Every exported symbol is a hook or an entry point: unversioned ones are
// listed; versioned ones are CUDA runtime hooks, each under the default
// version and every alias version (preload/hooks/runtime_versions.h).
TEST(Cli, LibraryExportsOnlyHookSymbols) {
  const auto r = run({"nm", "-D", "--defined-only", "--with-symbol-versions", capture_library()}, clean_env());
  ASSERT_EQ(r.exit_code(), 0);
  const auto unversioned = unversioned_exports();
  ASSERT_FALSE(unversioned.empty());
  std::map<std::string, std::set<std::string>> versions_of;  // runtime hook -> its symbol versions
  std::istringstream lines(r.out);
  std::string line;
  int exported = 0;
  while (std::getline(lines, line)) {
    const std::string sym = line.substr(line.rfind(' ') + 1);
    if (line.find(" A ") != std::string::npos) continue;  // the version definitions themselves
    EXPECT_NE(sym.rfind("_Z", 0), 0u) << "a C++ symbol leaks: " << line;
    ++exported;
    const size_t at = sym.find('@');
    if (at == std::string::npos) {
      EXPECT_TRUE(matches_any(unversioned, sym)) << "exported but not in unversioned_exports.txt: " << line;
      continue;
    }
    const std::string name = sym.substr(0, at), version = sym.substr(sym.find_first_not_of('@', at));
    EXPECT_TRUE(matches_any({"cuda*", "__cuda*"}, name)) << "versioned but no runtime hook: " << line;
    EXPECT_EQ(version.rfind("libcudart.so.", 0), 0u) << line;
    EXPECT_EQ(sym.find("@@") != std::string::npos, version == "libcudart.so.13") << "default version: " << line;
    versions_of[name].insert(version);
  }
  EXPECT_GE(exported, 12);
  ASSERT_TRUE(versions_of.count("cudaMalloc"));
  const std::set<std::string> all = versions_of["cudaMalloc"];
  EXPECT_TRUE(all.count("libcudart.so.11.0") && all.count("libcudart.so.12") && all.count("libcudart.so.13"));
  for (const auto& [name, versions] : versions_of) EXPECT_EQ(versions, all) << name;
  const auto deps = run({"readelf", "-d", capture_library()}, clean_env());
  EXPECT_EQ(deps.out.find("libstdc++"), std::string::npos) << "libstdc++ must be linked statically";
}

// A service environment that preloads the library reaches the CLI too
// (`LD_PRELOAD=... gpuscope run -- app`): the CLI, which exports
// protocol::kToolMarkerSymbol, is never traced itself; its program is.
TEST(Cli, APreloadedLibraryTracesTheProgramNotTheCli) {
  TempDir dir;
  const std::string inherited = dir.path() + "/inherited/", out = dir.path() + "/run/";
  std::filesystem::create_directories(inherited);
  const auto env = environment_with({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_OUTPUT=" + inherited},
                                    {"GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID", "GPUSCOPE_PARENT_PID"});
  const auto r = run({gpuscope_exe(), "run", "-q", "-o", out, "--", bin("behave"), "return:3"}, env);
  EXPECT_EQ(r.exit_code(), 3) << r.err;
  EXPECT_EQ(traces_in(out).size(), 1u);
  EXPECT_TRUE(traces_in(inherited).empty()) << "the CLI traced itself: " << traces_in(inherited).at(0);
  EXPECT_EQ(run({gpuscope_exe(), "--version"}, env).exit_code(), 0);
  EXPECT_TRUE(traces_in(inherited).empty());
}

TEST(Cli, RealCudaRuntimeWithoutADriverIsTracedAndUnchanged) {
  if (!std::filesystem::exists(bin("minimal_cuda"))) GTEST_SKIP() << "samples not built";
  const auto plain = run({bin("minimal_cuda")}, clean_env());
  TempDir dir;
  const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("minimal_cuda")}, clean_env());
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.err, plain.err);
  EXPECT_EQ(traced.status, plain.status);
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 1u);
  const TraceContents t = read_trace_file(traces[0]);
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.end->exit_status, plain.exit_code());
  // What an on-call engineer reads: the init error and the missing driver.
  const auto info = gpuscope({"info", traces[0]});
  EXPECT_NE(info.out.find("non-zero:    cudaGetDeviceCount returned 35 (1x)"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("libcuda.so.1 NOT LOADABLE"), std::string::npos) << info.out;
}

}  // namespace
}  // namespace gpuscope::test
