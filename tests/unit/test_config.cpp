#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>

#include "config.h"
#include "process_info.h"
#include "../support/temp_dir.h"

namespace gpuscope::capture {
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

TEST(Rank, FromTheLaunchersVariablesInOrder) {
  static std::map<std::string, std::string> env;
  const EnvLookup lookup = [](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(rank_from_environment(lookup).rank, -1);
  env = {{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"}};
  RankInfo r = rank_from_environment(lookup);
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.source, "SLURM_PROCID");
  env["RANK"] = "1";  // torchrun inside a Slurm step: the worker's rank wins
  env["OMPI_COMM_WORLD_RANK"] = "x";
  EXPECT_EQ(rank_from_environment(lookup).rank, 1);
  EXPECT_EQ(rank_from_environment(lookup).source, "RANK");
  env = {{"RANK", "-1"}, {"PMI_RANK", "5"}, {"PMI_SIZE", "6"}};  // not a rank: skipped
  r = rank_from_environment(lookup);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 6);
  EXPECT_EQ(r.source, "PMI_RANK");
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

TEST(CaptureConfig, ReadsAndBoundsVariables) {
  setenv("GPUSCOPE_BUFFER_KB", "64", 1);
  setenv("GPUSCOPE_FLUSH_MS", "5", 1);
  setenv("GPUSCOPE_MAX_THREADS", "0", 1);      // out of range: default kept
  setenv("GPUSCOPE_ZSTD_LEVEL", "3x", 1);      // not a number: default kept
  const CaptureConfig c = read_capture_config();
  EXPECT_EQ(c.options.ring_kb, 64u);
  EXPECT_EQ(c.options.flush_interval_ms, 5u);
  EXPECT_EQ(c.options.drain_interval_ms, 5u);  // never longer than a flush
  EXPECT_EQ(c.options.max_threads, 256u);
  EXPECT_EQ(c.options.zstd_level, -5);
  EXPECT_FALSE(c.secure_execution);
  for (const char* v : {"GPUSCOPE_BUFFER_KB", "GPUSCOPE_FLUSH_MS", "GPUSCOPE_MAX_THREADS", "GPUSCOPE_ZSTD_LEVEL"})
    unsetenv(v);
}

}  // namespace
}  // namespace gpuscope::capture
