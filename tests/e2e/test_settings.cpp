// GPUSCOPE_* settings as a user types them (issue 16, item 12): every
// boolean spelling works, and a value the library cannot use, or a name it
// does not know, is said once on stderr while the program runs unchanged.
#include <gtest/gtest.h>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

const std::vector<std::string> kProgram = {bin("behave"), "out:hello", "err:warning", "return:3"};

// Preloaded, with no GPUSCOPE_* variable but these settings and the output.
std::vector<std::string> with_settings(const std::string& output, const std::vector<std::string>& settings) {
  std::vector<std::string> env = clean_env();
  std::erase_if(env, [](const std::string& kv) { return kv.starts_with("GPUSCOPE_"); });
  env.push_back("LD_PRELOAD=" + capture_library());
  env.push_back("GPUSCOPE_OUTPUT=" + output);
  env.insert(env.end(), settings.begin(), settings.end());
  return env;
}

TEST(Settings, DisableTakesEveryBooleanSpelling) {
  const ProcessResult plain = run(kProgram, clean_env());
  for (const char* yes : {"1", "yes", "YES", "true", "On"}) {
    TempDir dir;
    const ProcessResult r = run(kProgram, with_settings(dir.path() + "/", {std::string("GPUSCOPE_DISABLE=") + yes}));
    EXPECT_EQ(r.status, plain.status) << yes;
    EXPECT_EQ(r.out, plain.out) << yes;
    EXPECT_EQ(r.err, plain.err) << yes;
    EXPECT_TRUE(traces_in(dir.path()).empty()) << "GPUSCOPE_DISABLE=" << yes << " still traced";
  }
  TempDir dir;
  const ProcessResult traced = run(kProgram, with_settings(dir.path() + "/", {"GPUSCOPE_DISABLE=off"}));
  EXPECT_EQ(traced.err, plain.err);
  EXPECT_EQ(traces_in(dir.path()).size(), 1u);
}

TEST(Settings, UnusableValuesAndUnknownNamesAreSaidOnceAndTheRunGoesOn) {
  const ProcessResult plain = run(kProgram, clean_env());
  TempDir dir;
  const ProcessResult r = run(kProgram, with_settings(dir.path() + "/", {"GPUSCOPE_BUFFER_KB=lots",
                                                                         "GPUSCOPE_STACKS=maybe", "GPUSCOPE_STAKCS=0"}));
  EXPECT_EQ(r.status, plain.status);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: "), 3) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: GPUSCOPE_BUFFER_KB=lots: expected a whole number from 4 to 1048576; "
                                    "using the default, 1024"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: GPUSCOPE_STACKS=maybe: expected 1, yes, true or on; 0, no, false or "
                                    "off; using the default, on"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: GPUSCOPE_STAKCS: not a gpuscope setting, ignored; did you mean "
                                    "GPUSCOPE_STACKS?"),
            1)
      << r.err;
  EXPECT_EQ(count_lines_with(r.err, "warning"), 1);  // the program's own line is still there
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 1u);
  const TraceContents t = read_trace_file(traces.front());
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.end->exit_status, 3);
}

}  // namespace
}  // namespace gpuscope::test
