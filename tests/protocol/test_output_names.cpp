// Where a trace is written (protocol/output_names.h): the names the library
// gives its processes and the CLI's attach gives its windows.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "output_names.h"
#include "utc_time.h"
#include "../support/temp_dir.h"

namespace gpuscope::protocol {
namespace {

NameFields fields() { return {4242, "node7", "serve", 1'764'442'560'000'000'000ull}; }

TEST(OutputPath, DefaultIsExeAndPidInWorkingDirectory) {
  EXPECT_EQ(resolve_output_path("", 0, fields()), "gpuscope-serve-4242.gpuscope");
}

TEST(OutputPath, DirectoryGetsDefaultName) {
  test::TempDir dir;
  EXPECT_EQ(resolve_output_path(dir.path(), 0, fields()), dir.path() + "/gpuscope-serve-4242.gpuscope");
  EXPECT_EQ(resolve_output_path("/not/yet/made/", 0, fields()), "/not/yet/made/gpuscope-serve-4242.gpuscope");
}

TEST(OutputPath, PatternExpandsEveryField) {
  EXPECT_EQ(resolve_output_path("/t/%n.%h.%p.%t.%%.%x", 0, fields()),
            "/t/serve.node7.4242.20251129T185600Z.%.%x");
}

TEST(OutputPath, PlainFileBelongsToTheRootProcessOnly) {
  EXPECT_EQ(resolve_output_path("/t/run.gpuscope", 4242, fields()), "/t/run.gpuscope");
  EXPECT_EQ(resolve_output_path("/t/run.gpuscope", 1, fields()), "/t/run-4242.gpuscope");
  EXPECT_EQ(resolve_output_path("/t.d/run", 1, fields()), "/t.d/run-4242");
  EXPECT_EQ(resolve_output_path("/t/%n.gpuscope", 1, fields()), "/t/serve-4242.gpuscope");
  EXPECT_EQ(resolve_output_path("/t/%n-%p.gpuscope", 1, fields()), "/t/serve-4242.gpuscope");
}

NameFields ranked(int rank) {
  NameFields f = fields();
  f.rank = rank;
  return f;
}

TEST(OutputPath, RankedProcessesGetTheRankInTheDefaultName) {
  EXPECT_EQ(resolve_output_path("/d/", 1, ranked(3)), "/d/gpuscope-serve-rank3-4242.gpuscope");
  EXPECT_EQ(resolve_output_path("/t/%n-r%r-%p.gpuscope", 1, ranked(0)), "/t/serve-r0-4242.gpuscope");
  EXPECT_EQ(resolve_output_path("/t/%n-r%r-%p.gpuscope", 1, fields()), "/t/serve-rnorank-4242.gpuscope");
}

TEST(OutputPath, ARankNameBelongsToTheFirstProcessOfThatRank) {
  test::TempDir dir;
  const std::string pattern = dir.path() + "/rank%r.gpuscope";
  EXPECT_EQ(resolve_output_path(pattern, 1, ranked(2)), dir.path() + "/rank2.gpuscope");
  std::ofstream(dir.path() + "/rank2.gpuscope") << "the worker's";
  EXPECT_EQ(resolve_output_path(pattern, 1, ranked(2)), dir.path() + "/rank2-4242.gpuscope");
  // Without a rank the name is shared like any name without %p.
  EXPECT_EQ(resolve_output_path(pattern, 1, fields()), dir.path() + "/ranknorank-4242.gpuscope");
}

TEST(OutputPath, ExecSuccessorsNumberTheImagesOfAName) {
  test::TempDir dir;
  const std::string name = dir.file("run.gpuscope");
  EXPECT_EQ(exec_successor_path(name), name);  // free: the natural name
  std::ofstream(name) << "image 1";
  EXPECT_EQ(exec_successor_path(name), dir.file("run-exec2.gpuscope"));
  std::ofstream(dir.file("run-exec2.gpuscope")) << "image 2";
  EXPECT_EQ(exec_successor_path(name), dir.file("run-exec3.gpuscope"));
  std::ofstream(dir.file("trace")) << "image 1";
  EXPECT_EQ(exec_successor_path(dir.file("trace")), dir.file("trace-exec2"));
  // Not an earlier image's trace: returned for the creation to refuse.
  ASSERT_EQ(symlink("/etc/passwd", dir.file("run-exec3.gpuscope").c_str()), 0);
  EXPECT_EQ(exec_successor_path(name), dir.file("run-exec3.gpuscope"));
}

TEST(OutputPath, FormsOfTheSetting) {
  test::TempDir dir;
  EXPECT_EQ(output_form(""), OutputForm::Default);
  EXPECT_EQ(output_form("/not/yet/made/"), OutputForm::Directory);
  EXPECT_EQ(output_form(dir.path()), OutputForm::Directory);  // an existing directory, no slash
  EXPECT_EQ(output_form("/t/%n-%p.gpuscope"), OutputForm::Pattern);
  EXPECT_EQ(output_form("/t/%p/"), OutputForm::Directory);  // a directory is never expanded
  EXPECT_EQ(output_form(dir.file("run.gpuscope")), OutputForm::File);
}

TEST(OutputPath, SuffixGoesBeforeTheExtension) {
  EXPECT_EQ(with_suffix("/d/app.gpuscope", "-2"), "/d/app-2.gpuscope");
  EXPECT_EQ(with_suffix("/d.x/trace", "-2"), "/d.x/trace-2");
  EXPECT_EQ(with_suffix("/d/.hidden", "-2"), "/d/.hidden-2");
  EXPECT_EQ(with_suffix("gpuscope-python3.11-7.gpuscope", "-exec2"), "gpuscope-python3.11-7-exec2.gpuscope");
}

// An attach names its trace like `gpuscope run` would (without a rank),
// then numbers later attaches; anything at a name, even a dangling
// symlink, takes it.
TEST(OutputPath, AttachTracesTakeTheRunNameThenNumbers) {
  test::TempDir dir;
  EXPECT_EQ(attach_trace_path(dir.path(), "serve", 4242), dir.file("gpuscope-serve-4242.gpuscope"));
  EXPECT_EQ(attach_trace_path(dir.path() + "/", "serve", 4242), dir.file("gpuscope-serve-4242.gpuscope"));
  std::ofstream(dir.file("gpuscope-serve-4242.gpuscope")) << "first attach";
  EXPECT_EQ(attach_trace_path(dir.path(), "serve", 4242), dir.file("gpuscope-serve-4242-2.gpuscope"));
  ASSERT_EQ(symlink("/nonexistent", dir.file("gpuscope-serve-4242-2.gpuscope").c_str()), 0);
  EXPECT_EQ(attach_trace_path(dir.path(), "serve", 4242), dir.file("gpuscope-serve-4242-3.gpuscope"));
  // The same name the library gives the process when -o names a directory.
  NameFields f;
  f.pid = 4242;
  f.exe = "serve";
  EXPECT_EQ(resolve_output_path(dir.path() + "/", 0, f), dir.file("gpuscope-serve-4242.gpuscope"));
}

TEST(OutputPath, UtcTimes) {
  // %t in a name: the one UTC formatter (schemas/utc_time.h), file-name style.
  using container::utc_time;
  using container::UtcStyle;
  EXPECT_EQ(utc_time(1'764'442'560'123'000'000ull, UtcStyle::Compact), "20251129T185600Z");
  EXPECT_EQ(utc_time(0, UtcStyle::Milliseconds), "1970-01-01T00:00:00.000Z");
  NameFields f;
  f.pid = 7;
  f.exe = "app";
  f.start_realtime_ns = 1'764'442'560'123'000'000ull;
  EXPECT_EQ(expand_name_pattern("%n-%t", f), "app-20251129T185600Z");
}

}  // namespace
}  // namespace gpuscope::protocol
