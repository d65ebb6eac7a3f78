// The conventions users know from other command-line tools (issue 21):
// the program's name in usage lines, one version string, "did you mean",
// one error style with exit 2, conflicting flags refused, one overwrite
// rule for every output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

ProcessResult gpuscope(std::vector<std::string> args) {
  args.insert(args.begin(), gpuscope_exe());
  return run(args, clean_env());
}

// A finished trace of `behave`, which does no CUDA work.
std::string traced_run(const TempDir& dir, const std::string& name) {
  const std::string out = dir.file(name);
  const auto r = gpuscope({"run", "-q", "-o", out, "--", bin("behave"), "return:0"});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The CLI's RPATH had an empty entry ("$ORIGIN/../lib:"), which the loader
// reads as the current directory: gpuscope run in a directory holding a
// libz.so.1 (a downloaded trace bundle, a shared /tmp) loaded it.
TEST(CliConventions, NoLibraryIsLoadedFromTheWorkingDirectory) {
  TempDir dir;
  for (const char* name : {"libz.so.1", "libdw.so.1", "libelf.so.1", "libsqlite3.so.0", "libsimdjson.so.14"})
    std::filesystem::copy_file(GPUSCOPE_CWD_LIBRARY, dir.file(name));
  const auto r = run({"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" --version", dir.path(), gpuscope_exe()}, clean_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.err.find("working directory"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("gpuscope "), std::string::npos) << r.out;
}

TEST(CliConventions, UsageLinesNameTheProgramNotItsPath) {
  // gpuscope_exe() is an absolute path: CLI11 would name the program by it.
  for (const auto& args : std::vector<std::vector<std::string>>{{"run", "--help"}, {"help", "run"}}) {
    const auto r = gpuscope(args);
    EXPECT_EQ(r.exit_code(), 0) << args[0];
    EXPECT_EQ(r.out.rfind("Run a program under gpuscope", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("Usage: gpuscope run [OPTIONS]"), std::string::npos) << args[0] << ":\n" << r.out;
    EXPECT_EQ(r.out.find(gpuscope_exe()), std::string::npos) << r.out;
  }
  const auto top = gpuscope({"--help"});
  EXPECT_NE(top.out.find("Usage: gpuscope [OPTIONS] SUBCOMMAND"), std::string::npos) << top.out;
}

TEST(CliConventions, VersionCommandAndFlagsSayTheSame) {
  const auto command = gpuscope({"version"});
  EXPECT_EQ(command.exit_code(), 0);
  EXPECT_EQ(command.out.rfind("gpuscope ", 0), 0u) << command.out;
  for (const char* flag : {"-V", "--version"}) {
    const auto r = gpuscope({flag});
    EXPECT_EQ(r.exit_code(), 0) << flag;
    EXPECT_EQ(r.out, command.out) << flag;
  }
}

TEST(CliConventions, AnUnknownCommandSuggestsTheNearest) {
  auto r = gpuscope({"anlyze", "t.gpuscope"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuscope: error: unknown command 'anlyze' (did you mean analyze?)\n");
  r = gpuscope({"help", "exprot"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.err, "gpuscope: error: unknown command 'exprot' (did you mean export?)\n");
  r = gpuscope({"frobnicate"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.err, "gpuscope: error: unknown command 'frobnicate' (gpuscope help lists the commands)\n");
}

TEST(CliConventions, AMisusedOptionIsOneErrorLineNamingTheHelp) {
  const auto r = gpuscope({"analyze", "--top", "0", "t.gpuscope"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.err, "gpuscope: error: --top: Value 0 not in range 1 to 100 (gpuscope help analyze)\n");
}

// Each pair would otherwise run with one of the flags silently dropped.
TEST(CliConventions, ConflictingFlagsAreErrors) {
  TempDir dir;
  const std::string trace = traced_run(dir, "t.gpuscope");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"analyze", "--json", "--format", "prometheus", trace}, "excludes"},
      {{"analyze", "--job", "nightly", trace}, "--job labels Prometheus samples: it needs --format prometheus"},
      {{"analyze", "--job", "nightly", "--format", "json", trace}, "it needs --format prometheus"},
      {{"run", "-q", "-o", dir.file("a.gpuscope"), "--capture-range-end", "repeat", "--", bin("behave"), "return:0"},
       "--capture-range-end requires --capture-range"},
      {{"run", "-q", "-o", dir.file("b.gpuscope"), "--no-stacks", "--stack-depth", "4", "--", bin("behave"),
        "return:0"},
       "excludes"},
      {{"attach", "--list", "4242"}, "excludes"},
      {{"analyze", "-o", dir.file("x.prom"), trace}, "-o writes the Prometheus exposition: it needs --format prometheus"},
      {{"export", "--force", trace}, "--force requires --output"},
      {{"run", "--force", "--", bin("behave"), "return:0"}, "--force requires --output"},
  };
  for (const auto& [args, what] : cases) {
    const auto r = gpuscope(args);
    EXPECT_EQ(r.exit_code(), 2) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_EQ(r.err.rfind("gpuscope: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
    EXPECT_EQ(r.out, "") << args[0] << " " << args[1];
  }
}

// A script reading `analyze --json` of one trace gets that trace's
// document whether or not it could be analyzed.
TEST(CliConventions, AnalyzeJsonOfOneUnreadableTraceKeepsTheOneTraceShape) {
  TempDir dir;
  const std::string notes = dir.file("notes.txt");
  std::ofstream(notes) << "hello, not a trace at all";
  const auto r = gpuscope({"analyze", "--json", notes});
  EXPECT_EQ(r.exit_code(), 2);
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_EQ(doc.value("schema_version", 0), 1);
  EXPECT_EQ(doc.value("trace", ""), notes) << r.out;
  EXPECT_FALSE(doc.contains("traces")) << r.out;
  EXPECT_NE(doc.value("error", "").find("is not a gpuscope trace"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("gpuscope: error: " + notes + " is not a gpuscope trace"), std::string::npos) << r.err;
  const std::string source = GPUSCOPE_SOURCE_DIR;
  const auto valid = run({"python3", source + "/tests/verdicts/check_json_schema.py",
                          source + "/docs/analysis.schema.json", gpuscope_exe(), notes});
  EXPECT_EQ(valid.exit_code(), 0) << valid.out << valid.err;
}

// The rule `run -o` always had, for every command that writes a file: an
// existing file is refused (and left as it was) unless --force.
TEST(CliConventions, EveryOutputRefusesAnExistingFileUnlessForced) {
  TempDir dir;
  const std::string trace = traced_run(dir, "t.gpuscope");
  const std::string kineto = dir.file("k.pt.trace.json");
  const std::string source = GPUSCOPE_SOURCE_DIR;
  ASSERT_EQ(run({"python3", source + "/tests/import/gen_kineto.py", "healthy", kineto, "--steps", "2"}).exit_code(), 0);
  const std::vector<std::vector<std::string>> writers = {
      {"run", "-q", "-o", "OUT", "--", bin("behave"), "return:0"},
      {"export", "-o", "OUT", trace},
      {"report", trace, "-o", "OUT"},
      {"import", kineto, "-o", "OUT"},
      {"analyze", "--format", "prometheus", "-o", "OUT", trace},
  };
  for (auto args : writers) {
    const std::string out = dir.file(args[0] + ".out");
    std::replace(args.begin(), args.end(), std::string("OUT"), out);
    std::ofstream(out) << "old";
    auto r = gpuscope(args);
    EXPECT_EQ(r.exit_code(), 2) << args[0];
    EXPECT_EQ(r.err, "gpuscope: error: " + out + " already exists; pass --force to replace it\n") << args[0];
    EXPECT_EQ(slurp(out), "old") << args[0];
    args.insert(args.begin() + 1, "--force");
    r = gpuscope(args);
    EXPECT_EQ(r.exit_code(), 0) << args[0] << ": " << r.err;
    EXPECT_NE(slurp(out), "old") << args[0];
  }
}

// Runs gpuscope with its standard streams on a pseudo-terminal, as in an
// interactive shell; what it wrote there, CR LF and all.
ProcessResult on_a_terminal(std::vector<std::string> args) {
  static const char* kScript =
      "import os, pty, sys\n"
      "pid, fd = pty.fork()\n"
      "if pid == 0:\n"
      "    os.execv(sys.argv[1], sys.argv[1:])\n"
      "out = b''\n"
      "while True:\n"
      "    try:\n"
      "        chunk = os.read(fd, 65536)\n"
      "    except OSError:\n"
      "        break\n"
      "    if not chunk:\n"
      "        break\n"
      "    out += chunk\n"
      "sys.stdout.write(out.decode(errors='replace'))\n"
      "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n";
  args.insert(args.begin(), {"python3", "-c", kScript, gpuscope_exe()});
  return run(args, clean_env());
}

TEST(CliConventions, ExportRefusesToFillATerminal) {
  TempDir dir;
  const std::string trace = traced_run(dir, "t.gpuscope");
  auto r = on_a_terminal({"export", trace});
  EXPECT_EQ(r.exit_code(), 2) << r.out;
  EXPECT_EQ(r.out,
            "gpuscope: error: not writing the export to a terminal (give -o FILE, or -o - to print it anyway)\r\n");
  r = on_a_terminal({"export", "-o", "-", trace});  // asked for
  EXPECT_EQ(r.exit_code(), 0) << r.out;
  EXPECT_NE(r.out.find("\"traceEvents\""), std::string::npos) << r.out.substr(0, 500);
  r = gpuscope({"export", trace});  // a pipe: the default stays standard output
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("\"traceEvents\""), std::string::npos) << r.err;
}

// node_exporter's textfile collector may read the file at any moment: the
// exposition is renamed over it whole, never rewritten in place (a hard
// link to the old file keeps the old text), and no temporary file stays.
TEST(CliConventions, PrometheusOutputIsReplacedWhole) {
  TempDir dir;
  const std::string trace = traced_run(dir, "t.gpuscope");
  std::filesystem::create_directory(dir.file("textfile"));
  const std::string prom = dir.file("textfile/gpuscope.prom");
  auto r = gpuscope({"analyze", "--format", "prometheus", "--job", "nightly", "-o", prom, trace});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string first = slurp(prom);
  EXPECT_EQ(first.rfind("# HELP ", 0), 0u) << first;
  EXPECT_NE(first.find("job=\"nightly\""), std::string::npos) << first;
  ASSERT_EQ(link(prom.c_str(), dir.file("old.prom").c_str()), 0);
  r = gpuscope({"analyze", "--format", "prometheus", "--job", "again", "--force", "-o", prom, trace});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(slurp(prom).find("job=\"again\""), std::string::npos);
  EXPECT_EQ(slurp(dir.file("old.prom")), first);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.file("textfile"))) ++files;
  EXPECT_EQ(files, 1u);
}

// The progress bar: drawn on stderr only when asked for (a terminal, or
// GPUSCOPE_PROGRESS=always), erased when done, never with -q, and never in
// what the command prints.
TEST(CliConventions, TheProgressBarIsDrawnOnlyWhereItBelongsAndErasedAfter) {
  TempDir dir;
  const std::string trace = traced_run(dir, "t.gpuscope");
  auto with_progress = [&](const std::string& mode, std::vector<std::string> args) {
    args.insert(args.begin(), gpuscope_exe());
    return run(args, environment_with({"GPUSCOPE_PROGRESS=" + mode}));
  };
  const auto plain = gpuscope({"analyze", trace});
  ASSERT_EQ(plain.exit_code(), 0) << plain.err;
  EXPECT_EQ(plain.err, "");  // stderr is a pipe here: no bar in auto mode

  const auto drawn = with_progress("always", {"analyze", trace});
  EXPECT_EQ(drawn.exit_code(), 0);
  EXPECT_EQ(drawn.out, plain.out);
  EXPECT_EQ(drawn.err.rfind("\rreading t.gpuscope", 0), 0u) << drawn.err;
  EXPECT_NE(drawn.err.find("t.gpuscope [----------]   0%  0.0 kB/"), std::string::npos) << drawn.err;
  EXPECT_EQ(drawn.err.find('\n'), std::string::npos) << "the bar is one redrawn line";
  ASSERT_GE(drawn.err.size(), 4u);
  EXPECT_EQ(drawn.err.substr(drawn.err.size() - 4), "\r\033[K") << "the line is erased at the end";

  for (const char* command : {"analyze", "info", "export"}) {
    std::vector<std::string> args{command, "-q", trace};
    if (std::string(command) == "export") args.insert(args.end(), {"-o", dir.file("q.json")});
    const auto quiet = with_progress("always", args);
    EXPECT_EQ(quiet.exit_code(), 0) << command << ": " << quiet.err;
    EXPECT_EQ(quiet.err.find('\r'), std::string::npos) << command << ": " << quiet.err;
  }
  EXPECT_EQ(with_progress("never", {"analyze", trace}).err, "");
  const auto bogus = with_progress("sometimes", {"analyze", trace});
  EXPECT_EQ(bogus.err, "gpuscope: warning: GPUSCOPE_PROGRESS=sometimes: expected auto, always or never (no progress bar)\n");
}

}  // namespace
}  // namespace gpuscope::test
