#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "config.h"
#include "process_info.h"

namespace gpuscope::capture {
namespace {

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

// Each test starts from an environment without GPUSCOPE_* variables (the
// runner's own are put back afterwards).
class CaptureConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).starts_with("GPUSCOPE_")) saved_.emplace_back(*e);
    for (const std::string& kv : saved_) unsetenv(kv.substr(0, kv.find('=')).c_str());
  }
  void TearDown() override {
    for (char** e = environ; *e != nullptr;) {
      const std::string_view kv(*e);
      if (kv.starts_with("GPUSCOPE_")) unsetenv(std::string(kv.substr(0, kv.find('='))).c_str());
      else ++e;
    }
    for (const std::string& kv : saved_) setenv(kv.substr(0, kv.find('=')).c_str(), kv.substr(kv.find('=') + 1).c_str(), 1);
  }
  std::vector<std::string> saved_;
};

TEST_F(CaptureConfigTest, ReadsAndBoundsVariables) {
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
  EXPECT_EQ(c.problems,
            (std::vector<std::string>{
                "GPUSCOPE_MAX_THREADS=0: expected a whole number from 1 to 65536; using the default, 256",
                "GPUSCOPE_ZSTD_LEVEL=3x: expected a whole number from -7 to 19; using the default, -5"}));
}

TEST_F(CaptureConfigTest, EveryBooleanSpellingInAnyCase) {
  for (const bool meant : {true, false}) {
    const auto spellings = meant ? std::vector<const char*>{"1", "yes", "YES", "true", "True", "on", "ON"}
                                 : std::vector<const char*>{"0", "no", "No", "false", "FALSE", "off", "Off"};
    for (const char* spelling : spellings) {
      setenv("GPUSCOPE_DISABLE", spelling, 1);
      setenv("GPUSCOPE_STACKS", spelling, 1);
      const CaptureConfig c = read_capture_config();
      EXPECT_EQ(c.disabled, meant) << spelling;
      EXPECT_EQ(c.stacks, meant) << spelling;
      EXPECT_TRUE(c.problems.empty()) << c.problems.front();
    }
  }
}

// Every variable the library reads, with a value it cannot use: one line
// each, naming the variable, the value, what is accepted and what is used
// instead; the setting keeps its default.
TEST_F(CaptureConfigTest, EveryUnusableValueGetsOneLine) {
  struct Bad {
    const char* name;
    const char* value;
    const char* says;  // what the line says after "NAME=VALUE: expected "
  };
  const Bad bad[] = {
      {"GPUSCOPE_DISABLE", "maybe", "1, yes, true or on; 0, no, false or off; using the default, off"},
      {"GPUSCOPE_STACKS", "2", "1, yes, true or on; 0, no, false or off; using the default, on"},
      {"GPUSCOPE_MODE", "stanby", "standby; tracing the whole run"},
      {"GPUSCOPE_ROOT_PID", "-4", "a whole number from 0 to 1073741824; using the default, 0"},
      {"GPUSCOPE_PARENT_PID", "me", "a whole number from 0 to 1073741824; recording no traced parent"},
      {"GPUSCOPE_CONTROL_DIR", "run/gpuscope", "an absolute path; using the default control directory"},
      {"GPUSCOPE_BUFFER_KB", "1M", "a whole number from 4 to 1048576; using the default, 1024"},
      {"GPUSCOPE_MAX_THREADS", "100000", "a whole number from 1 to 65536; using the default, 256"},
      {"GPUSCOPE_FLUSH_MS", "0", "a whole number from 1 to 60000; using the default, 100"},
      {"GPUSCOPE_CPU_SAMPLE_MS", "10ms", "a whole number from 0 to 60000; using the default, 10"},
      {"GPUSCOPE_ZSTD_LEVEL", "20", "a whole number from -7 to 19; using the default, -5"},
      {"GPUSCOPE_EXIT_TIMEOUT_MS", "1e3", "a whole number from 0 to 600000; using the default, 3000"},
      {"GPUSCOPE_STACK_DEPTH", "65", "a whole number from 1 to 64; using the default, 32"},
      {"GPUSCOPE_UNWINDER", "gdb", "libunwind; using gpuscope's own unwinder (libunwind as fallback)"},
      {"GPUSCOPE_NVML_HZ", "fast", "a whole number from 0 to 1000; using the default, 20"},
      {"GPUSCOPE_CLOCK", "rdtsc", "monotonic or tsc; using the TSC where it is usable"},
      {"GPUSCOPE_DELAY_MS", "1.5", "a whole number from 0 to 31536000000; capturing the whole run, without capture windows"},
      {"GPUSCOPE_DURATION_MS", "-1", "a whole number from 0 to 31536000000; capturing the whole run, without capture windows"},
      {"GPUSCOPE_CAPTURE_RANGE", "nvtx:", "cudaProfilerApi or nvtx:MESSAGE[@DOMAIN]; capturing the whole run, without capture windows"},
      {"GPUSCOPE_CAPTURE_RANGE_END", "repeat:0", "stop, repeat or repeat:N (N > 0); capturing the whole run, without capture windows"},
  };
  const CaptureConfig defaults = read_capture_config();
  for (const Bad& b : bad) setenv(b.name, b.value, 1);
  const CaptureConfig c = read_capture_config();
  std::vector<std::string> expected;
  for (const Bad& b : bad) expected.push_back(std::string(b.name) + "=" + b.value + ": expected " + b.says);
  std::vector<std::string> got = c.problems;
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(c.disabled, defaults.disabled);
  EXPECT_EQ(c.stacks, defaults.stacks);
  EXPECT_EQ(c.mode, "");
  EXPECT_EQ(c.options.ring_kb, defaults.options.ring_kb);
  EXPECT_EQ(c.options.flush_interval_ms, defaults.options.flush_interval_ms);
  EXPECT_EQ(c.stack_depth, defaults.stack_depth);
  EXPECT_EQ(c.fast_unwinder, defaults.fast_unwinder);
  EXPECT_EQ(c.nvml_hz, defaults.nvml_hz);
}

TEST_F(CaptureConfigTest, GoodValuesAndEmptyOnesSayNothing) {
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{
           {"GPUSCOPE_MODE", "standby"}, {"GPUSCOPE_UNWINDER", "libunwind"}, {"GPUSCOPE_CLOCK", "monotonic"},
           {"GPUSCOPE_DELAY_MS", "250"}, {"GPUSCOPE_CAPTURE_RANGE", "nvtx:step@train"},
           {"GPUSCOPE_CAPTURE_RANGE_END", "repeat:3"}, {"GPUSCOPE_CONTROL_DIR", "/run/user/1/gpuscope"},
           {"GPUSCOPE_OUTPUT", "any thing/%p"}, {"GPUSCOPE_RUN_ID", "0123abcd"}, {"GPUSCOPE_ZSTD_LEVEL", "-7"},
           {"GPUSCOPE_BUFFER_KB", ""}, {"GPUSCOPE_LIBRARY", "/opt/gpuscope/lib/libgpuscope.so"}})
    setenv(name, value, 1);
  const CaptureConfig c = read_capture_config();
  EXPECT_TRUE(c.problems.empty()) << c.problems.front();
  EXPECT_EQ(c.mode, "standby");
  EXPECT_FALSE(c.fast_unwinder);
  EXPECT_EQ(c.options.zstd_level, -7);
  EXPECT_EQ(c.options.ring_kb, 1024u);
}

TEST_F(CaptureConfigTest, AnUnknownNameIsATypoWorthALine) {
  setenv("GPUSCOPE_STAKCS", "0", 1);
  setenv("GPUSCOPE_SOMETHING_ELSE", "1", 1);
  const CaptureConfig c = read_capture_config();
  std::vector<std::string> got = c.problems;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "GPUSCOPE_SOMETHING_ELSE: not a gpuscope setting, ignored",
                     "GPUSCOPE_STAKCS: not a gpuscope setting, ignored; did you mean GPUSCOPE_STACKS?"}));
  EXPECT_TRUE(c.stacks);
}

}  // namespace
}  // namespace gpuscope::capture
