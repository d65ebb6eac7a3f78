// When `gpuscope run` gets no trace it says why, from what it checked: the
// exec error, the executable's ELF, secure execution, the library's own
// reason, a death by signal. "Statically linked" only for a static program.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

ProcessResult gpuscope_run(const std::string& out_dir, std::vector<std::string> command,
                           const std::vector<std::string>& env = clean_env()) {
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-o", out_dir + "/", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, env);
}

void expect_not_called_static(const ProcessResult& r) {
  EXPECT_EQ(r.err.find("statically linked"), std::string::npos) << r.err;
}

TEST(RunDiagnosis, ACommandNotInPath) {
  TempDir dir;
  const auto r = gpuscope_run(dir.path(), {"gpuscope-no-such-command"});
  EXPECT_EQ(r.exit_code(), 127);
  EXPECT_EQ(r.err, "gpuscope: error: cannot run gpuscope-no-such-command: command not found in PATH\n");
}

TEST(RunDiagnosis, AFileWithoutExecutePermission) {
  TempDir dir;
  const std::string script = dir.file("job.sh");
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  chmod(script.c_str(), 0644);
  const auto r = gpuscope_run(dir.path(), {script});
  EXPECT_EQ(r.exit_code(), 126);
  EXPECT_EQ(r.err, "gpuscope: error: cannot run " + script + ": Permission denied (not executable: mode 0644)\n");
}

TEST(RunDiagnosis, AScriptWhoseInterpreterIsMissing) {
  TempDir dir;
  const std::string script = dir.file("job.sh");
  std::ofstream(script) << "#!/no/such/interpreter\n";
  chmod(script.c_str(), 0755);
  const auto r = gpuscope_run(dir.path(), {script});
  EXPECT_EQ(r.exit_code(), 127);
  EXPECT_NE(r.err.find("(its interpreter /no/such/interpreter does not exist)"), std::string::npos) << r.err;
}

TEST(RunDiagnosis, AStaticallyLinkedProgram) {
  if (!std::filesystem::exists(bin("static_exit"))) GTEST_SKIP() << "no static libc to link one here";
  TempDir dir;
  const auto r = gpuscope_run(dir.path(), {bin("static_exit"), "7"});
  EXPECT_EQ(r.exit_code(), 7);
  EXPECT_NE(r.err.find("no trace was written for " + bin("static_exit") + ": " + bin("static_exit") +
                       " is statically linked (no program interpreter)"),
            std::string::npos)
      << r.err;
}

TEST(RunDiagnosis, AScriptRunByAStaticInterpreterNamesIt) {
  if (!std::filesystem::exists(bin("static_exit"))) GTEST_SKIP() << "no static libc to link one here";
  TempDir dir;
  const std::string script = dir.file("job");
  std::ofstream(script) << "#!" << bin("static_exit") << "\n";
  chmod(script.c_str(), 0755);
  const auto r = gpuscope_run(dir.path(), {script});
  EXPECT_NE(r.err.find(script + " (a script run by " + bin("static_exit") + ") is statically linked"),
            std::string::npos)
      << r.err;
}

// The case: a dynamically linked program that crashed before the
// library made its trace was called "statically linked".
TEST(RunDiagnosis, ADynamicProgramKilledBeforeItsTraceIsReportedByItsSignal) {
  TempDir dir;
  const auto r = gpuscope_run(dir.path(), {bin("start_crash")});
  EXPECT_EQ(r.exit_code(), 128 + SIGSEGV);
  expect_not_called_static(r);
  EXPECT_NE(r.err.find("gpuscope: " + bin("start_crash") + " was killed by SIGSEGV (signal 11)\n"), std::string::npos)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "(dynamically linked, interpreter "), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "was killed by SIGSEGV (signal 11) before its trace was created"), 1) << r.err;
}

TEST(RunDiagnosis, ASecureExecutionProgram) {
  if (geteuid() != 0) GTEST_SKIP() << "making a set-user-ID program of another user needs root";
  TempDir dir;
  const std::string program = dir.file("setuid_behave");
  std::filesystem::copy_file(bin("behave"), program);
  ASSERT_EQ(chown(program.c_str(), 65534, static_cast<gid_t>(-1)), 0);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  const auto r = gpuscope_run(dir.file("out"), {program, "out:hi", "exit:3"});
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_EQ(r.out, "hi\n");
  expect_not_called_static(r);
  EXPECT_NE(r.err.find(program + " runs with secure execution (set-user-ID uid 65534)"), std::string::npos) << r.err;
}

// GPUSCOPE_DISABLE is read as the library reads it (protocol/settings.h):
// when the library did not start for another reason (here the preloaded
// file is no library at all), "no" or a value the library ignores is not
// blamed for it; "1" is.
TEST(RunDiagnosis, GpuscopeDisableIsReadAsTheLibraryReadsIt) {
  TempDir dir;
  const std::string not_a_library = dir.file("libgpuscope.so");
  std::ofstream(not_a_library) << "not an ELF file\n";
  const auto run_with = [&](const std::string& disable) {
    const std::vector<std::string> env = environment_with(
        {"GPUSCOPE_LIBRARY=" + not_a_library, "GPUSCOPE_DISABLE=" + disable},
        {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID", "GPUSCOPE_PARENT_PID"});
    return gpuscope_run(dir.file("out"), {bin("behave"), "exit:5"}, env);
  };
  for (const std::string off : {"no", "off", "maybe"}) {
    const auto r = run_with(off);
    EXPECT_EQ(r.exit_code(), 5);
    EXPECT_EQ(r.err.find("the library stays inert"), std::string::npos) << off << ": " << r.err;
    EXPECT_NE(r.err.find("ended without creating one: the library did not start in it"), std::string::npos)
        << off << ": " << r.err;
  }
  const auto on = run_with("1");
  EXPECT_EQ(on.exit_code(), 5);
  EXPECT_NE(on.err.find("GPUSCOPE_DISABLE=1 is set in the environment: the library stays inert"), std::string::npos)
      << on.err;
}

// The library's own line, relayed: an output directory it cannot write to.
TEST(RunDiagnosis, ThePermissionErrorTheLibraryMet) {
  const auto r = gpuscope_run("/proc/1", {bin("behave"), "out:hi", "exit:4"});
  EXPECT_EQ(r.exit_code(), 4);
  EXPECT_EQ(r.out, "hi\n");
  expect_not_called_static(r);
  EXPECT_TRUE(r.err.find("gpuscope: no trace was written for pid ") != std::string::npos &&
              r.err.find(" (" + bin("behave") + "): cannot create trace /proc/1/") != std::string::npos)
      << r.err;
}

// ... and a full disk when the trace is created (the file-size limit stands
// in for it): the program is unchanged, no empty file is left, and the run
// says why.
TEST(RunDiagnosis, AFullDiskWhenTheTraceIsCreated) {
  TempDir dir;
  const std::string script = "ulimit -f 1 && exec '" + gpuscope_exe() + "' run -o '" + dir.file("out") +
                             "/' -- '" + bin("behave") + "' out:hi exit:42";
  const auto r = run({"sh", "-c", script}, clean_env());
  EXPECT_EQ(r.exit_code(), 42) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  expect_not_called_static(r);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: no trace was written for pid "), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "File too large (nothing readable was written: the file was removed)"), 2)
      << r.err;  // the library's line, and the run's
  EXPECT_TRUE(std::filesystem::is_empty(dir.file("out")));
}

}  // namespace
}  // namespace gpuscope::test
