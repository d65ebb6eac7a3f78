// The call-frame-information interpreter behind the fast stack walker
// (preload/stacks/frame_rules.h): rows of a hand-written program, and
// random programs that must never make it read outside them (this file is
// also built under AddressSanitizer).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include "stacks/frame_rules.h"

namespace gpuscope::stacks {
namespace {

// The interpreter reads only inside the program it is given and always
// ends, whatever the bytes: 200 000 random programs, each over a buffer
// with nothing readable after it (ASan would see a read past the end).
TEST(FrameRules, RandomProgramsNeverReadPastTheirEnd) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200'000; ++round) {
    std::vector<uint8_t> cie(rng() % 24), fde(rng() % 48);
    for (auto& b : cie) b = static_cast<uint8_t>(rng());
    for (auto& b : fde) b = static_cast<uint8_t>(rng());
    const CfiProgram program{cie.data(), cie.data() + cie.size(), fde.data(), fde.data() + fde.size(),
                             1 + rng() % 4, -8, 16, 0x1b};
    const FrameRule r = run_cfi(program, 0x1000, 0x1000 + rng() % 256);
    if (r.cfa == FrameRule::Cfa::Rsp || r.cfa == FrameRule::Cfa::Rbp) ASSERT_NE(r.cfa_offset, INT32_MIN);
  }
}

// A hand-written CIE/FDE pair: the row in effect at each address.
TEST(FrameRules, RowsFollowTheProgram) {
  // CIE: def_cfa rsp+8; offset ra at cfa-8.
  const uint8_t cie[] = {0x0c, 7, 8, 0x90, 1};
  // FDE: advance 1; def_cfa_offset 16; offset rbp at cfa-16; advance 3;
  // def_cfa_register rbp; remember; advance 10; def_cfa rsp+8; advance 1; restore.
  const uint8_t fde[] = {0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x0a, 0x4a, 0x0c, 7, 8, 0x41, 0x0b};
  const CfiProgram p{cie, cie + sizeof cie, fde, fde + sizeof fde, 1, -8, 16, 0x1b};
  const auto at = [&](uintptr_t offset) { return run_cfi(p, 0x1000, 0x1000 + offset); };
  EXPECT_EQ(at(0).cfa, FrameRule::Cfa::Rsp);
  EXPECT_EQ(at(0).cfa_offset, 8);
  EXPECT_FALSE(at(0).rbp_saved);
  EXPECT_EQ(at(1).cfa_offset, 16);
  EXPECT_TRUE(at(1).rbp_saved);
  EXPECT_EQ(at(1).rbp_offset, -16);
  EXPECT_EQ(at(4).cfa, FrameRule::Cfa::Rbp);
  EXPECT_EQ(at(4).cfa_offset, 16);
  EXPECT_EQ(at(14).cfa, FrameRule::Cfa::Rsp);  // the epilogue
  EXPECT_EQ(at(14).cfa_offset, 8);
  EXPECT_EQ(at(15).cfa, FrameRule::Cfa::Rbp);  // restore_state brings the CFA rule back too
  EXPECT_EQ(at(15).cfa_offset, 16);
}

}  // namespace
}  // namespace gpuscope::stacks
