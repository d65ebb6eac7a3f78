// Call stacks under concurrency and process events: eight threads capturing
// at once, threads that capture and exit, a fork child, a missing
// libunwind, and a whole recording session whose ApiCall records point at
// stacks the trace carries.
#include <gtest/gtest.h>

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "session.h"
#include "test_stacks_support.h"
#include "../support/subprocess.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::stacks {
namespace {

using test::module_containing;
using test::run_source;

template <int N> __attribute__((noinline)) uint32_t chain() {
  if constexpr (N == 0) {
    const uint32_t id = capture_stack_id();
    GPUSCOPE_KEEP_FRAME();
    return id;
  } else {
    const uint32_t id = chain<N - 1>();
    GPUSCOPE_KEEP_FRAME();
    return id;
  }
}

// Four call sites with different stacks.
uint32_t capture_at(int site) {
  switch (site) {
    case 0: return chain<0>();
    case 1: return chain<1>();
    case 2: return chain<5>();
    default: return chain<12>();
  }
}

// The process's mapped address space (VmSize).
uint64_t mapped_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7));
  return 0;
}

class StacksThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override { configure_stacks(true, 32); }
};

// All threads run the same code from the same thread entry, so each site
// has one stack across threads: every thread must get the same id for it,
// the first time and every time after, however the first inserts raced.
TEST_F(StacksThreadsTest, EightThreadsCapturingAtOnceAgreeOnIds) {
  constexpr int kThreads = 8, kSites = 4, kRounds = 2000;
  auto source = make_stack_source();
  const auto before = run_source(*source, true);
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kSites, 0));
  std::atomic<int> ready{0};
  std::atomic<bool> mismatch{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int r = 0; r < kRounds; ++r) {
        const int site = (r + t) % kSites;
        const uint32_t id = capture_at(site);
        if (ids[t][site] == 0) ids[t][site] = id;
        else if (ids[t][site] != id) mismatch = true;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_FALSE(mismatch);
  std::set<uint32_t> distinct;
  for (int s = 0; s < kSites; ++s) {
    ASSERT_NE(ids[0][s], 0u);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t][s], ids[0][s]) << "thread " << t << " site " << s;
    distinct.insert(ids[0][s]);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kSites));
  const auto out = run_source(*source, false);
  for (uint32_t id : distinct)
    EXPECT_TRUE(out.stacks.count(id) || before.stacks.count(id)) << "stack " << id << " never emitted";
}

// Threads that capture and exit: libunwind's per-thread cache is created on
// a thread's first unwind and released by its thread-exit destructor.
TEST_F(StacksThreadsTest, ThreadsThatCaptureAndExitLeaveWorkingStacks) {
  // One thread function for all, so that all stacks are the same.
  static std::atomic<uint32_t> first{0};
  static std::atomic<int> wrong{0};
  const auto body = [] {
    uint32_t expected = 0;
    const uint32_t id = capture_at(2);
    if (id == 0 || (!first.compare_exchange_strong(expected, id) && expected != id)) wrong.fetch_add(1);
  };
  const auto batches = [&](int n) {
    for (int batch = 0; batch < n; ++batch) {
      std::vector<std::thread> threads;
      for (int t = 0; t < 8; ++t) threads.emplace_back(body);
      for (auto& th : threads) th.join();
    }
  };
  // Address space is what a leaked cache would show in, but glibc adds a
  // 64 MiB malloc arena now and then for new threads: one arena for all.
  mallopt(M_ARENA_MAX, 1);
  batches(2);  // warm: glibc's cache of thread stacks, the first caches
  const uint64_t before = mapped_kib();
  batches(32);  // 256 threads
  const uint64_t after = mapped_kib();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_NE(first.load(), 0u);
  // Each thread's libunwind cache maps 256 KiB on its first unwind (1.6.2,
  // measured); 256 leaked ones would be 64 MiB.
  EXPECT_LT(after, before + 8 * 1024) << before << " KiB -> " << after << " KiB";
}

// The child of fork() is disabled by the core (pthread_atfork in the
// preload front-end); from then on it never unwinds.
TEST_F(StacksThreadsTest, ForkChildCapturesNothingOnceDisabled) {
  ASSERT_NE(capture_at(1), 0u);
  const pid_t pid = fork();
  if (pid == 0) {
    capture::disable_after_fork();
    _exit(capture_at(1) == 0 && capture_at(3) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(capture_at(1), 0u);  // the parent goes on
}

// Run in a child whose library path puts a broken libunwind.so.8 first.
// Without the fast walker, libunwind walks every stack: none at all.
TEST(StacksOff, MissingLibunwindTurnsStacksOffAndSaysSo) {
  if (std::getenv("GPUSCOPE_TEST_BROKEN_LIBUNWIND") != nullptr) {
    configure_stacks(true, 32, false);
    ASSERT_EQ(capture_at(1), 0u);
    auto source = make_stack_source();
    const auto out = run_source(*source, true);
    EXPECT_TRUE(out.stacks.empty());
    EXPECT_TRUE(out.modules.empty());
    ASSERT_EQ(out.markers.size(), 1u);
    EXPECT_EQ(out.markers[0].kind(), fb::MarkerKind::Instant);
    std::string text;
    for (const auto& [id, s] : capture::session_strings().take_pending())
      if (id == out.markers[0].name_id()) text = s;
    EXPECT_EQ(text.rfind("gpuscope: call stacks off: libunwind.so.8 not loaded", 0), 0u) << text;
    ASSERT_TRUE(out.status.has_value());
    EXPECT_EQ(out.status->state, static_cast<uint8_t>(fb::StackCaptureState::Unavailable));
    EXPECT_EQ(out.status->reason.rfind("libunwind.so.8 not loaded", 0), 0u) << out.status->reason;
    return;
  }
  gpuscope::test::TempDir dir;
  std::ofstream(dir.file("libunwind.so.8")) << "not an ELF file";
  const auto result = gpuscope::test::run(
      {"/proc/self/exe", "--gtest_filter=StacksOff.MissingLibunwindTurnsStacksOffAndSaysSo"},
      gpuscope::test::environment_with({"LD_LIBRARY_PATH=" + dir.path(), "GPUSCOPE_TEST_BROKEN_LIBUNWIND=1"}));
  EXPECT_EQ(result.exit_code(), 0) << result.out << result.err;
  EXPECT_NE(result.out.find("[  PASSED  ] 1 test"), std::string::npos) << result.out;
}

// The fast walker does not wait for libunwind (loaded on a thread of its
// own) and goes on without it, the trace saying so once the load failed.
TEST(StacksOff, MissingLibunwindLeavesTheFastWalkerAndSaysSo) {
  if (std::getenv("GPUSCOPE_TEST_BROKEN_LIBUNWIND") != nullptr) {
    configure_stacks(true, 32);
    EXPECT_NE(capture_at(1), 0u);  // before the load
    start_fallback_unwinder_load();
    for (int i = 0; i < 5000 && !fallback_unwinder_settled(); ++i) usleep(1000);
    ASSERT_TRUE(fallback_unwinder_settled());
    EXPECT_NE(capture_at(3), 0u);
    auto source = make_stack_source();
    const auto out = run_source(*source, true);
    EXPECT_FALSE(out.stacks.empty());
    ASSERT_TRUE(out.status.has_value());
    EXPECT_EQ(out.status->state, static_cast<uint8_t>(fb::StackCaptureState::Active));
    std::string notes;
    const auto strings = capture::session_strings().take_pending();
    for (const auto& m : out.markers)
      for (const auto& [id, text] : strings)
        if (id == m.name_id()) notes += text + "\n";
    EXPECT_NE(notes.find("gpuscope: call stacks by the fast walker alone (libunwind.so.8 not loaded"),
              std::string::npos)
        << notes;
    return;
  }
  gpuscope::test::TempDir dir;
  std::ofstream(dir.file("libunwind.so.8")) << "not an ELF file";
  const auto result = gpuscope::test::run(
      {"/proc/self/exe", "--gtest_filter=StacksOff.MissingLibunwindLeavesTheFastWalkerAndSaysSo"},
      gpuscope::test::environment_with({"LD_LIBRARY_PATH=" + dir.path(), "GPUSCOPE_TEST_BROKEN_LIBUNWIND=1"}));
  EXPECT_EQ(result.exit_code(), 0) << result.out << result.err;
  EXPECT_NE(result.out.find("[  PASSED  ] 1 test"), std::string::npos) << result.out;
}

std::atomic<uint32_t> g_in_handler{0};
void capture_in_handler(int) { g_in_handler.store(capture_at(1)); }

uint32_t capture_across_a_signal_frame() {
  struct sigaction sa{}, old{};
  sa.sa_handler = capture_in_handler;
  sigaction(SIGUSR1, &sa, &old);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  return g_in_handler.load();
}

// A stack the fast walker cannot finish (across a signal frame) before
// libunwind is loaded is not unwound and never waited for; the stack
// source's next poll starts the load, and from then on such a stack is
// libunwind's. In a fresh process: nothing loaded libunwind before.
TEST(StacksFallback, AStackNeedingLibunwindStartsItsLoadAtTheNextPoll) {
  if (std::getenv("GPUSCOPE_TEST_FRESH_STACKS") != nullptr) {
    configure_stacks(true, 32);
    EXPECT_NE(capture_at(1), 0u);
    EXPECT_EQ(capture_across_a_signal_frame(), 0u);
    EXPECT_FALSE(fallback_unwinder_settled());
    auto source = make_stack_source();
    const auto out = run_source(*source, true);  // a poll at time 0: only the want starts it
    ASSERT_TRUE(out.status.has_value());
    EXPECT_EQ(out.status->unwind_failures, 1u);
    for (int i = 0; i < 5000 && !fallback_unwinder_settled(); ++i) usleep(1000);
    ASSERT_TRUE(fallback_unwinder_settled());
    EXPECT_NE(capture_across_a_signal_frame(), 0u);
    return;
  }
  const auto result = gpuscope::test::run(
      {"/proc/self/exe", "--gtest_filter=StacksFallback.AStackNeedingLibunwindStartsItsLoadAtTheNextPoll"},
      gpuscope::test::environment_with({"GPUSCOPE_TEST_FRESH_STACKS=1"}));
  EXPECT_EQ(result.exit_code(), 0) << result.out << result.err;
  EXPECT_NE(result.out.find("[  PASSED  ] 1 test"), std::string::npos) << result.out;
}

// Through the writer, the file and the reader: every stack id an ApiCall
// carries is in the trace's stack table, and its frames fall in modules of
// the trace's module map.
TEST_F(StacksThreadsTest, RecordedCallsCarryStacksTheTraceResolves) {
  gpuscope::test::TempDir dir;
  capture::SessionOptions o;
  o.cpu_sample_interval_ms = 0;
  o.drain_interval_ms = 5;
  auto source = make_stack_source();
  std::string error;
  ASSERT_TRUE(capture::start_session(o, dir.file("t.gpuscope"), capture::collect_process_metadata(),
                                     &error, {source.get()}))
      << error;
  const uint32_t fid = capture::session_strings().intern("cudaStreamSynchronize");
  for (int i = 0; i < 20; ++i) {
    capture::ApiCallScope scope(fid);
    scope.finish(0, 0, 0, -1, capture_at(i % 4));
  }
  capture::stop_session(fb::EndKind::Exit, 0);
  const auto trace = gpuscope::test::read_trace_file(dir.file("t.gpuscope"));
  ASSERT_EQ(trace.api_calls.size(), 20u);
  std::set<uint32_t> used;
  for (const auto& call : trace.api_calls) used.insert(call.stack_id());
  EXPECT_EQ(used.size(), 4u);
  for (uint32_t id : used) {
    ASSERT_NE(id, 0u);
    ASSERT_TRUE(trace.summary.stacks.count(id)) << "stack " << id;
    const auto& frames = trace.summary.stacks.at(id);
    for (size_t i = 0; i + 1 < frames.size(); ++i)  // the outermost may be past the last module
      EXPECT_NE(module_containing(trace.summary.modules, frames[i]), nullptr) << std::hex << frames[i];
  }
}

}  // namespace
}  // namespace gpuscope::stacks
