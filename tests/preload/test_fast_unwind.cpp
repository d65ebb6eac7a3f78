// The fast stack walker (stacks/fast_unwind.h) against libunwind on the
// same stacks: deep chains, frames addressed through rbp (alloca), frames
// inside libc (qsort's callback), other threads, a dlopen'ed library's
// frames; and the cases it must hand back to libunwind (a signal frame).
#include <gtest/gtest.h>

#include <alloca.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stacks/fast_unwind.h"
#include "stacks/frame_rules.h"
#include "stacks/unwinder.h"

namespace gpuscope::stacks {
namespace {

constexpr int kMax = 64;

struct Stacks {
  std::vector<void*> fast, reference;
  int fast_n = 0;
};

// Both walks from one function, so each list's frame 0 is a different
// return address into it and everything from frame 1 on must match.
__attribute__((noinline)) void walk_both(Stacks* out) {
  static BacktraceFn libunwind = load_unwinder(nullptr);
  void* a[kMax];
  void* b[kMax];
  out->fast_n = fast_backtrace(a, kMax);
  const int n = libunwind(b, kMax);
  if (out->fast_n > 0) out->fast.assign(a + 1, a + out->fast_n);
  if (n > 0) out->reference.assign(b + 1, b + n);
  asm volatile("" ::: "memory");
}

template <int N> __attribute__((noinline)) void chain(Stacks* out) {
  if constexpr (N == 0) walk_both(out);
  else chain<N - 1>(out);
  asm volatile("" ::: "memory");  // no tail call: a real frame per level
}

// A frame whose CFA is addressed through rbp (its stack pointer moves by a
// run-time amount), with a caller that keeps rbp for itself.
__attribute__((noinline)) void dynamic_frame(Stacks* out, int bytes) {
  volatile char* scratch = static_cast<char*>(alloca(static_cast<size_t>(bytes)));
  scratch[0] = 1;
  chain<3>(out);
  asm volatile("" ::: "memory");
}

class FastUnwind : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_NE(load_unwinder(&why), nullptr) << why;
    ASSERT_TRUE(init_fast_unwind());
  }
};

void expect_same(const Stacks& s) {
  ASSERT_GT(s.fast_n, 0) << "the fast walker gave up on an ordinary stack";
  ASSERT_GE(s.reference.size(), 3u);
  EXPECT_EQ(s.fast, s.reference);
}

TEST_F(FastUnwind, DeepChainMatchesLibunwind) {
  Stacks s;
  chain<40>(&s);
  expect_same(s);
  EXPECT_GE(s.fast.size(), 40u);
  Stacks again;  // warm: every rule now comes from the cache
  chain<40>(&again);
  expect_same(again);
}

TEST_F(FastUnwind, FramesAddressedThroughRbpMatchLibunwind) {
  for (int bytes : {16, 4000, 100000}) {
    Stacks s;
    dynamic_frame(&s, bytes);
    expect_same(s);
  }
}

Stacks* g_sort_out = nullptr;
int compare_and_walk(const void* a, const void* b) {
  if (g_sort_out != nullptr && g_sort_out->reference.empty()) chain<2>(g_sort_out);
  return std::memcmp(a, b, sizeof(int));
}

TEST_F(FastUnwind, FramesInsideLibcMatchLibunwind) {
  Stacks s;
  g_sort_out = &s;
  int values[] = {5, 3, 9, 1, 7, 2, 8};
  qsort(values, 7, sizeof(int), compare_and_walk);
  g_sort_out = nullptr;
  expect_same(s);
}

TEST_F(FastUnwind, OtherThreadsMatchLibunwind) {
  std::vector<Stacks> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&r] { chain<20>(&r); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) expect_same(r);
}

Stacks g_in_handler;
void handler(int) { chain<2>(&g_in_handler); }

TEST_F(FastUnwind, SignalFramesAreLeftToLibunwind) {
  struct sigaction sa{}, old{};
  sa.sa_handler = handler;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(g_in_handler.fast_n, -1) << "walked across a signal frame it cannot follow";
  EXPECT_GE(g_in_handler.reference.size(), 4u);  // libunwind does
}

TEST_F(FastUnwind, RulesOfOrdinaryCodeAreUnderstood) {
  // A return address inside this test: rsp- or rbp-based, RA at CFA - 8.
  const auto here = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const FrameRule r = frame_rule_at(here - 1);
  EXPECT_TRUE(r.cfa == FrameRule::Cfa::Rsp || r.cfa == FrameRule::Cfa::Rbp);
  EXPECT_GT(r.cfa_offset, 0);
  // No unwind information at all: unsupported, never a guess.
  EXPECT_EQ(frame_rule_at(1).cfa, FrameRule::Cfa::Unsupported);
}

}  // namespace
}  // namespace gpuscope::stacks
