// The table of GPUSCOPE_* variables (protocol/settings.h), which the library
// reads its settings by and the CLI checks values against.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "environment.h"
#include "settings.h"

namespace gpuscope::protocol {
namespace {

TEST(Settings, EveryNameOnceAndFoundByName) {
  std::set<std::string_view> seen;
  for (const Setting& s : settings()) {
    EXPECT_TRUE(s.name.starts_with(env::kPrefix)) << s.name;
    EXPECT_TRUE(seen.insert(s.name).second) << s.name << " twice";
    EXPECT_EQ(find_setting(s.name), &s);
  }
  // The names `gpuscope run` passes down are all known to the library.
  for (const char* name : env::kPerRun) EXPECT_NE(find_setting(name), nullptr) << name;
  for (const char* name : {env::kStacks, env::kStackDepth, env::kCpuSampleMs, env::kNvmlHz, env::kDelayMs,
                           env::kDurationMs, env::kCaptureRange, env::kCaptureRangeEnd, env::kMode, env::kLibrary})
    EXPECT_NE(find_setting(name), nullptr) << name;
  EXPECT_EQ(find_setting("GPUSCOPE_NOTHING"), nullptr);
}

TEST(Settings, ValuesTheCliPassesAreAccepted) {
  EXPECT_TRUE(acceptable(*find_setting(env::kMode), env::kModeStandby));
  EXPECT_TRUE(acceptable(*find_setting(env::kStacks), "0"));
  EXPECT_TRUE(acceptable(*find_setting(env::kCaptureRange), "nvtx:step@train"));
  EXPECT_FALSE(acceptable(*find_setting(env::kCaptureRange), "nvtx:"));
  EXPECT_TRUE(acceptable(*find_setting(env::kCaptureRangeEnd), "repeat:2"));
  EXPECT_FALSE(acceptable(*find_setting(env::kStackDepth), "65"));
  EXPECT_EQ(expectation(*find_setting(env::kStackDepth)), "a whole number from 1 to 64");
  EXPECT_EQ(expectation(*find_setting(env::kClock)), "monotonic or tsc");
}

TEST(Settings, ATypoFindsTheNameItMeant) {
  EXPECT_EQ(closest_setting("GPUSCOPE_STAKCS")->name, env::kStacks);
  EXPECT_EQ(closest_setting("GPUSCOPE_SOMETHING_ELSE"), nullptr);
}

TEST(Settings, FlagSpellings) {
  bool on = false;
  EXPECT_TRUE(parse_flag("Yes", &on) && on);
  EXPECT_TRUE(parse_flag("OFF", &on) && !on);
  EXPECT_FALSE(parse_flag("maybe", &on));
  EXPECT_FALSE(parse_flag("", &on));
}

TEST(Environment, EntriesAndWhatTheySet) {
  EXPECT_EQ(env::entry(env::kMode, env::kModeStandby), "GPUSCOPE_MODE=standby");
  EXPECT_TRUE(env::sets("GPUSCOPE_OUTPUT=/t/", env::kOutput));
  EXPECT_TRUE(env::sets("GPUSCOPE_OUTPUT=", env::kOutput));
  EXPECT_FALSE(env::sets("GPUSCOPE_OUTPUT_X=1", env::kOutput));
  EXPECT_FALSE(env::sets("GPUSCOPE_OUTPUT", env::kOutput));
}

}  // namespace
}  // namespace gpuscope::protocol
