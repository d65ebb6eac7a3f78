// Call sites that read alike are one site: stacks that differ only below
// the frames a reader is shown merge (counts and time added, the heaviest
// stack kept); stacks that differ in a shown frame stay apart.
#include <gtest/gtest.h>

#include "site_merge.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kLoad = 0x400000;

// Stacks in a module whose file is gone: each frame reads "app+0xOFFSET".
reader::TraceSummary summary_with_stacks() {
  reader::TraceSummary s;
  container::ModuleDescription app;
  app.id = 1;
  app.path = "/nonexistent/dir/app";
  app.load_address = kLoad;
  app.low_address = kLoad;
  app.high_address = kLoad + 0x100000;
  s.modules.push_back(app);
  s.stacks[1] = {kLoad + 0x1010, kLoad + 0x2020, kLoad + 0x3030, kLoad + 0x4040};
  s.stacks[2] = {kLoad + 0x1010, kLoad + 0x2020, kLoad + 0x3030, kLoad + 0x5050};  // differs below the shown
  s.stacks[3] = {kLoad + 0x1010, kLoad + 0x6060, kLoad + 0x3030, kLoad + 0x4040};  // differs in a shown frame
  return s;
}

TEST(SiteMerge, SitesShownAlikeBecomeOneAndOthersStayApart) {
  const reader::TraceSummary s = summary_with_stacks();
  const Symbolizer symbols(s);
  ASSERT_EQ(symbols.site_frames(1, kSiteFramesShown).size(), kSiteFramesShown);
  Analysis a;
  Finding f;
  f.sites = {CallSite{"cudaMemcpy", 1, 10, 100}, CallSite{"cudaMemcpy", 3, 4, 90}, CallSite{"cudaMemcpy", 2, 20, 300},
             CallSite{"cudaMemcpyAsync", 2, 1, 5}, CallSite{"cudaMemcpy", 0, 2, 7}, CallSite{"cudaMemcpy", 0, 3, 8}};
  a.findings.push_back(f);
  merge_sites_shown_alike(symbols, &a);
  const auto& sites = a.findings[0].sites;
  ASSERT_EQ(sites.size(), 4u);
  EXPECT_EQ(sites[0].function, "cudaMemcpy");
  EXPECT_EQ(sites[0].stack_id, 2u);  // the heavier of stacks 1 and 2
  EXPECT_EQ(sites[0].count, 30u);
  EXPECT_EQ(sites[0].ns, 400u);
  EXPECT_EQ(sites[1].stack_id, 3u);
  EXPECT_EQ(sites[1].ns, 90u);
  EXPECT_EQ(sites[2].stack_id, 0u);  // no stack recorded: alike too
  EXPECT_EQ(sites[2].count, 5u);
  EXPECT_EQ(sites[2].ns, 15u);
  EXPECT_EQ(sites[3].function, "cudaMemcpyAsync");  // another function: apart
}

}  // namespace
}  // namespace gpuscope::analyzer
