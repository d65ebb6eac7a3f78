// The device activity log NVML reads: totals at an instant must equal the
// plain sum over every logged interval of the part done by then, whatever
// mix of kinds, overlaps, out-of-order ends and ring wrap-around; and the
// engines processes sharing an id claim time on.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_process.hpp"
#include "clock.hpp"
#include "node.hpp"
#include "shared_state.hpp"

namespace {

struct Interval {
  simgpu::Activity kind;
  int64_t start, end;
  uint64_t bytes;
  double sm;
};

// What totals() must return: every interval's done part at `at`.
simgpu::ActivityTotals brute_force(const std::vector<Interval>& log, unsigned mask, int64_t at) {
  simgpu::ActivityTotals out;
  for (const Interval& r : log) {
    if (!(mask & simgpu::activity_bit(r.kind)) || at <= r.start || r.end <= r.start) continue;
    const double done = static_cast<double>(std::min(at, r.end) - r.start);
    out.busy_ns += done;
    out.bytes += r.bytes * (done / static_cast<double>(r.end - r.start));
    out.sm_busy_ns += done * static_cast<uint32_t>(r.sm * 1000.0) / 1000.0;
  }
  return out;
}

// The segment of an explicit SIMGPU_SHARED_ID of this test process's own:
// other tests' simulated work stays out, and processes it forks share it.
simgpu::SharedState& state_shared_by_this_test() {
  const std::string id = "test-" + std::to_string(getpid());
  setenv("SIMGPU_SHARED_ID", id.c_str(), 1);
  static const simgpu::NodeDesc node = simgpu::parse_node(R"({"name": "shared-state test"})", "test");
  return simgpu::SharedState::of(node);
}

TEST(SharedState, TotalsEqualTheSumOverEveryInterval) {
  // A private segment for this process: no other simgpu user shares it.
  simgpu::SharedState& state = state_shared_by_this_test();

  std::mt19937_64 rng(7);
  std::vector<Interval> log;
  const int64_t t0 = simgpu::now_ns() + 1'000'000'000;  // in the future: every interval starts after it is logged
  int64_t engine[2] = {t0, t0};
  // 20 000 intervals: more than the ring holds, so retired totals are used too.
  for (int i = 0; i < 20'000; ++i) {
    const auto kind = static_cast<simgpu::Activity>(rng() % static_cast<unsigned>(simgpu::Activity::Count));
    int64_t& free_at = engine[rng() % 2];  // two engines: ends out of order across them
    const int64_t start = free_at + static_cast<int64_t>(rng() % 3'000);
    const int64_t end = start + static_cast<int64_t>(rng() % 20'000);
    free_at = end;
    const Interval r{kind, start, end, rng() % 1'000'000, (rng() % 1000) / 1000.0};
    state.record(0, r.kind, r.start, r.end, r.bytes, r.sm);
    log.push_back(r);
  }
  const int64_t last = std::max(engine[0], engine[1]);
  // Intervals pushed out of the ring count in full: ask only once they are over.
  int64_t retired_over = 0;
  for (size_t i = 0; i + 16384 < log.size(); ++i) retired_over = std::max(retired_over, log[i].end);
  const unsigned masks[] = {simgpu::kAllActivities, simgpu::kKernelActivities,
                            simgpu::activity_bit(simgpu::Activity::CopyH2D),
                            simgpu::activity_bit(simgpu::Activity::Memset)};
  // Instants across the whole span, including inside the last ring's worth.
  for (int64_t at = retired_over; at <= last + 1000; at += (last - retired_over) / 997) {
    for (unsigned mask : masks) {
      const simgpu::ActivityTotals want = brute_force(log, mask, at);
      const simgpu::ActivityTotals got = state.totals(0, mask, at);
      ASSERT_NEAR(want.busy_ns, got.busy_ns, 1e-6 * want.busy_ns + 1e-3) << "at " << at - t0 << " mask " << mask;
      ASSERT_NEAR(want.bytes, got.bytes, 1e-6 * want.bytes + 1e-3) << "at " << at - t0 << " mask " << mask;
      ASSERT_NEAR(want.sm_busy_ns, got.sm_busy_ns, 1e-6 * want.sm_busy_ns + 1e-3) << "at " << at - t0;
    }
  }
}

// Work is logged when it is queued and starts later; asking about an
// instant between two queueings must see only what was queued by then.
// The log stamps a record inside record(), somewhere between the test's
// clock reads before and after the call; an instant inside that window is
// ambiguous only for a record already started by then (a stall of more than
// kLead inside record(), which a loaded machine can produce), so such
// instants are skipped, and most must remain.
TEST(SharedState, TotalsAtAnEarlierInstantSeeOnlyWhatWasQueuedByThen) {
  simgpu::SharedState& state = state_shared_by_this_test();
  constexpr int kDevice = 1;  // untouched by the other test
  constexpr int64_t kLead = 50'000'000;  // queued 50 ms ahead of its start
  std::vector<Interval> log;
  std::vector<int64_t> before, after;  // the clock around each record() call
  int64_t free_at = 0;
  for (int i = 0; i < 2'000; ++i) {
    const int64_t now = simgpu::now_ns();
    const int64_t start = std::max(free_at, now + kLead) + 100;
    const Interval r{simgpu::Activity::KernelCompute, start, start + 40'000 + i % 7 * 1000, 4096, 0.5};
    free_at = r.end;
    before.push_back(now);
    state.record(kDevice, r.kind, r.start, r.end, r.bytes, r.sm);
    after.push_back(simgpu::now_ns());
    log.push_back(r);
  }
  int checked = 0, queries = 0;
  for (size_t i = 1; i < log.size(); i += 37, ++queries) {
    // `at` later than everything queued so far, inside the work already started.
    const int64_t at = std::max(after[i], log[i / 2].end - 5'000);
    std::vector<Interval> seen;
    bool ambiguous = false;
    for (size_t j = 0; j < log.size(); ++j) {
      if (after[j] <= at) seen.push_back(log[j]);
      else if (before[j] <= at && log[j].start < at) ambiguous = true;
    }
    if (ambiguous) continue;
    const simgpu::ActivityTotals want = brute_force(seen, simgpu::kAllActivities, at);
    const simgpu::ActivityTotals got = state.totals(kDevice, simgpu::kAllActivities, at);
    ASSERT_NEAR(want.busy_ns, got.busy_ns, 1e-6 * want.busy_ns + 1e-3) << "record " << i;
    ASSERT_NEAR(want.bytes, got.bytes, 1e-6 * want.bytes + 1e-3) << "record " << i;
    ++checked;
  }
  EXPECT_GE(checked * 2, queries) << "too many instants fell inside a stalled record() call";
}

}  // namespace

// With an explicit SIMGPU_SHARED_ID, processes share the device's engines:
// work two processes claim on one engine at the same time never overlaps,
// and each claim starts no earlier than asked.
TEST(SharedState, ProcessesSharingAnIdQueueOnTheSameEngine) {
  simgpu::SharedState& state = state_shared_by_this_test();
  if (!state.is_shared()) GTEST_SKIP() << "no /dev/shm here";
  ASSERT_TRUE(state.shares_engines());
  constexpr int kDevice = 2, kEngine = 0, kClaims = 500;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const auto claim_all = [&](std::vector<std::pair<int64_t, int64_t>>* out) {
    for (int i = 0; i < kClaims; ++i) {
      const int64_t earliest = simgpu::now_ns();
      const int64_t start = state.claim(kDevice, kEngine, simgpu::Activity::KernelCompute, earliest, 1000, 0, 1.0);
      EXPECT_GE(start, earliest);
      out->push_back({start, start + 1000});
    }
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<std::pair<int64_t, int64_t>> mine;
    claim_all(&mine);
    const ssize_t n = static_cast<ssize_t>(mine.size() * sizeof mine[0]);
    _exit(write(fds[1], mine.data(), n) == n ? 0 : 1);
  }
  std::vector<std::pair<int64_t, int64_t>> all;
  claim_all(&all);
  std::vector<std::pair<int64_t, int64_t>> theirs(kClaims);
  size_t got = 0;
  const size_t want = theirs.size() * sizeof theirs[0];
  while (got < want) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(theirs.data()) + got, want - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(got, want);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  all.insert(all.end(), theirs.begin(), theirs.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) ASSERT_LE(all[i - 1].second, all[i].first) << "claims " << i - 1 << " and " << i << " overlap";
}


namespace {

constexpr int64_t kMs = 1'000'000;

simgpu::ProcessActivity activity_of(const simgpu::SharedState& state, int device, int pid, int64_t at) {
  for (const simgpu::ProcessActivity& p : state.process_activity(device, at))
    if (p.pid == pid) return p;
  ADD_FAILURE() << "process " << pid << " is not listed";
  return simgpu::ProcessActivity{};
}

// In a process with no work on `device` yet: queues a kernel, then a memset
// and a copy, 1 s ahead, and checks how much of each is done at instants
// along them. Returns whether every check held.
bool check_fresh_process(simgpu::SharedState& state, int device) {
  const int64_t before = simgpu::now_ns();
  const int64_t t0 = before + 1000 * kMs;
  state.record(device, simgpu::Activity::KernelCompute, t0, t0 + 10 * kMs, 0, 1.0);
  state.record(device, simgpu::Activity::Memset, t0 + 10 * kMs, t0 + 15 * kMs, 0, 0);
  state.record(device, simgpu::Activity::CopyH2D, t0 + 15 * kMs, t0 + 20 * kMs, 0, 0);
  const auto at = [&](int64_t when) { return activity_of(state, device, getpid(), when); };
  const simgpu::ProcessActivity queued = at(before);
  EXPECT_GE(queued.attached_ns, before);
  EXPECT_LE(queued.attached_ns, simgpu::now_ns());
  EXPECT_DOUBLE_EQ(0, queued.kernel_done_ns);
  EXPECT_DOUBLE_EQ(0, queued.copy_done_ns);
  const simgpu::ProcessActivity mid_kernel = at(t0 + 4 * kMs);
  EXPECT_DOUBLE_EQ(4 * kMs, mid_kernel.kernel_done_ns);
  EXPECT_DOUBLE_EQ(0, mid_kernel.copy_done_ns);
  const simgpu::ProcessActivity mid_copy = at(t0 + 17 * kMs);  // the memset and 2 ms of the copy
  EXPECT_DOUBLE_EQ(10 * kMs, mid_copy.kernel_done_ns);
  EXPECT_DOUBLE_EQ(7 * kMs, mid_copy.copy_done_ns);
  const simgpu::ProcessActivity over = at(t0 + 1000 * kMs);
  EXPECT_DOUBLE_EQ(10 * kMs, over.kernel_done_ns);
  EXPECT_DOUBLE_EQ(10 * kMs, over.copy_done_ns);
  EXPECT_EQ(queued.attached_ns, over.attached_ns);
  return !testing::Test::HasFailure();
}

}  // namespace

// Work is charged to the process that queued it, and what it queued to run
// after an instant is not done by then. The work is done in a forked child:
// a fresh process (so the test can repeat), and one whose inherited slot
// hint names its parent's slot.
TEST(SharedState, ProcessActivityChargesEachProcessItsOwnWork) {
  simgpu::SharedState& state = state_shared_by_this_test();
  constexpr int kDevice = 3;  // untouched by the other tests
  const int64_t now = simgpu::now_ns();
  state.record(kDevice, simgpu::Activity::KernelCompute, now - 2 * kMs, now - kMs, 0, 1.0);
  const simgpu::ProcessActivity mine = activity_of(state, kDevice, getpid(), now);
  simgpu::ProcessActivity mine_after{};
  std::vector<simgpu::ProcessActivity> all;
  const simgpu_test::ChildRun child = simgpu_test::run_child_while(
      [&] { return check_fresh_process(state, kDevice); },
      [&](pid_t) {
        mine_after = activity_of(state, kDevice, getpid(), now);
        all = state.process_activity(kDevice, now + 10'000 * kMs);
      });
  ASSERT_GT(child.pid, 0) << "fork failed";
  ASSERT_TRUE(child.ok) << "the child's checks failed";
  EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  EXPECT_DOUBLE_EQ(mine.kernel_done_ns, mine_after.kernel_done_ns);  // none of the child's work
  EXPECT_DOUBLE_EQ(mine.copy_done_ns, mine_after.copy_done_ns);
  if (!state.is_shared()) return;  // a process-local log: the child's work stayed in the child
  const auto theirs = std::find_if(all.begin(), all.end(), [&](const auto& p) { return p.pid == child.pid; });
  ASSERT_NE(all.end(), theirs) << "the child is not listed";
  EXPECT_DOUBLE_EQ(10 * kMs, theirs->kernel_done_ns);
  EXPECT_DOUBLE_EQ(10 * kMs, theirs->copy_done_ns);
}
