// Call stacks: configuration, the hot-path capture, and the writer-side
// source that emits new stacks and the module map (stack_capture.h).
#include "stack_capture.h"

#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "chunk_builder.h"
#include "clock.h"
#include "fast_unwind.h"
#include "module_map.h"
#include "python/python_frames.h"
#include "recorder.h"
#include "session.h"
#include "signal_free_thread.h"
#include "stack_table.h"
#include "unwinder.h"

namespace gpuscope::stacks {
namespace {

// unw_backtrace leaves itself out: its first address is the return into
// capture_stack_id(), and the stack proper starts at the hook that called
// us (the tests check the frame after that is exactly its return address).
constexpr int kSkipFrames = 1;
constexpr uint32_t kMaxDepth = 64;  // GPUSCOPE_STACK_DEPTH's upper bound

// Capacity, mapped once and touched only as stacks arrive: 2^17 slots
// (98304 distinct stacks) and 4 Mi frames (32 MiB of address space; about
// 42 frames per stack on average at the id limit).
constexpr uint32_t kSlotsLog2 = 17;
constexpr uint64_t kArenaFrames = uint64_t{1} << 22;

static_assert(sizeof(void*) == sizeof(uint64_t), "frames are stored as 64-bit addresses");

// Hot-path state: trivially destructible, so nothing is torn down at exit
// under threads that still capture. A null unwinder means stacks are off.
std::atomic<BacktraceFn> g_backtrace{nullptr};
std::atomic<bool> g_fast{false};  // the fast walker first, libunwind when it cannot
std::atomic<uint64_t> g_fast_fallbacks{0};
std::atomic<uint32_t> g_depth{32};
std::atomic<uint64_t> g_unwind_failures{0};
std::atomic<bool> g_fallback_wanted{false};  // a stack needed libunwind before it was loaded
std::atomic<bool> g_modules_changed{false};
bool g_sampled_stacks = false;  // the CPU sampler interns stacks too (set at start-up)
StackTable* g_table = nullptr;  // never freed, for the same reason

// Set while this thread unwinds: a signal handler that lands inside the
// unwind and reaches a hook must not unwind again on top of libunwind's
// per-thread cache, which the interrupted walk is using.
thread_local bool t_unwinding __attribute__((tls_model("initial-exec"))) = false;

// Why stacks are off although wanted, for the trace (written by
// configure_stacks only; empty when the configuration switched them off).
std::string* g_off_reason = nullptr;

// libunwind, the fast walker's fallback, is loaded late and on a thread of
// its own (load_fallback_in_background): its dlopen and relocations were
// ~0.6 ms of every traced process's start (docs/performance.md), and a
// load beside the start still held up the program's own first dlopen
// (the CUDA runtime's of libcuda) on the loader's lock. The writer thread
// starts it at its first poll after the first stack the fast walker could
// not finish, or kFallbackLoadAfterNs into the capture, whichever is
// first. Until it lands, g_backtrace is this stand-in: such a stack is
// recorded as not unwound, never waited for.
int no_fallback_yet(void** /*buffer*/, int /*size*/) {
  g_fallback_wanted.store(true, std::memory_order_relaxed);
  return 0;
}
constexpr uint64_t kFallbackLoadAfterNs = 200'000'000;

enum class FallbackLoad : uint8_t { NotStarted, Loading, Loaded, Failed };
std::atomic<FallbackLoad> g_fallback{FallbackLoad::NotStarted};
std::string* g_fallback_missing = nullptr;  // why it failed; written before g_fallback says Failed
uint64_t g_configured_ns = 0;               // when stacks were configured (the load's clock)

}  // namespace

namespace {

bool make_table() {
  if (g_table != nullptr) return true;
  auto* table = new StackTable;
  if (!table->init(kSlotsLog2, kArenaFrames)) {
    delete table;
    return false;
  }
  g_table = table;
  return true;
}

}  // namespace

void sampled_stacks_wanted() {
  capture::InternalScope internal;
  g_sampled_stacks = make_table();
}

uint32_t intern_sampled_stack(const uint64_t* frames, uint32_t count) {
  return g_table == nullptr ? 0 : g_table->intern(frames, count);
}

namespace {

// On a thread nobody waits for: loading inside a hook, or joining this
// thread there, would take the loader's lock under a program thread that
// may hold it in a library constructor while it waits for the hooked
// thread (conformance.cublas_plugin deadlocked that way). Stacks switched
// off or reconfigured meanwhile keep their setting: the stand-in is only
// replaced while it is still the one in use.
void load_fallback_in_background() {
  FallbackLoad idle = FallbackLoad::NotStarted;
  if (!g_fallback.compare_exchange_strong(idle, FallbackLoad::Loading, std::memory_order_acq_rel)) return;
  const auto load = [] {
    std::string why;
    BacktraceFn loaded = load_unwinder(&why);
    if (loaded == nullptr) {
      g_fallback_missing = new std::string(std::move(why));
      g_fallback.store(FallbackLoad::Failed, std::memory_order_release);
      return;
    }
    BacktraceFn stand_in = &no_fallback_yet;
    g_backtrace.compare_exchange_strong(stand_in, loaded, std::memory_order_acq_rel);
    g_fallback.store(FallbackLoad::Loaded, std::memory_order_release);
  };
  try {
    capture::start_signal_free_thread(load).detach();
  } catch (...) {
    load();  // no thread to be had: load here, as before
  }
}

// The walker for stacks the fast walker cannot finish, or null (why in
// *g_off_reason) when there is none and the fast walker is off too.
BacktraceFn fallback_walker(bool fast) {
  if (!fast) return load_unwinder(g_off_reason);
  g_configured_ns = capture::monotonic_ns();
  // Loading (the writer starts it), or missing: the fast walker alone.
  return g_fallback.load(std::memory_order_acquire) == FallbackLoad::Loaded ? load_unwinder(nullptr) : &no_fallback_yet;
}

}  // namespace

void configure_stacks(bool enabled, uint32_t depth, bool fast_walker) {
  capture::InternalScope internal;
  g_backtrace.store(nullptr, std::memory_order_relaxed);
  if (g_off_reason == nullptr) g_off_reason = new std::string;
  g_off_reason->clear();
  if (!enabled) return;  // the configuration's choice: nothing to record
  g_depth.store(depth == 0 ? 1 : (depth > kMaxDepth ? kMaxDepth : depth), std::memory_order_relaxed);
  const bool fast = fast_walker && init_fast_unwind();
  g_fast.store(fast, std::memory_order_relaxed);
  if (!make_table()) {
    *g_off_reason = "no memory for the stack table";
    return;
  }
  BacktraceFn backtrace = fallback_walker(fast);
  if (backtrace == nullptr) return;
  // Release: a thread that sees the unwinder also sees the table.
  g_backtrace.store(backtrace, std::memory_order_release);
}

void start_fallback_unwinder_load() {
  if (g_backtrace.load(std::memory_order_acquire) == &no_fallback_yet) load_fallback_in_background();
}

bool fallback_unwinder_settled() {
  const FallbackLoad state = g_fallback.load(std::memory_order_acquire);
  return state == FallbackLoad::Loaded || state == FallbackLoad::Failed;
}

__attribute__((noinline)) uint32_t capture_stack_id() noexcept {
  const BacktraceFn backtrace = g_backtrace.load(std::memory_order_acquire);
  if (backtrace == nullptr) return 0;
  // A fork child: another thread of the parent may have held one of
  // libunwind's allocation locks at the fork, so never unwind there.
  if (capture::detail::g_phase.load(std::memory_order_relaxed) == capture::Phase::Disabled) return 0;
  if (t_unwinding) return 0;
  // Native frames (after the skipped ones), then the thread's Python frames.
  void* buffer[kMaxDepth + kSkipFrames + python::kMaxPythonFrames];
  const int want = static_cast<int>(g_depth.load(std::memory_order_relaxed)) + kSkipFrames;
  int n;
  {
    // libunwind calls only libc (dl_iterate_phdr, mmap, pthread_once and
    // pthread_setspecific on a thread's first unwind), none of which gpuscope
    // hooks; the scope makes sure that stays so for any hook added later.
    capture::InternalScope internal;
    t_unwinding = true;
    n = g_fast.load(std::memory_order_relaxed) ? fast_backtrace(buffer, want) : -1;
    if (n < 0) {
      if (g_fast.load(std::memory_order_relaxed)) g_fast_fallbacks.fetch_add(1, std::memory_order_relaxed);
      n = backtrace(buffer, want);
    }
    t_unwinding = false;
  }
  uint32_t native = n > kSkipFrames ? static_cast<uint32_t>(n - kSkipFrames) : 0;
  if (native == 0) g_unwind_failures.fetch_add(1, std::memory_order_relaxed);
  auto* frames = reinterpret_cast<uint64_t*>(buffer + kSkipFrames);
  const uint32_t py = python::append_python_frames(frames + native, python::kMaxPythonFrames);
  if (native + py == 0) return 0;
  bool inserted = false;
  const uint32_t id = g_table->intern(frames, native + py, &inserted);
  if (inserted && py != 0) python::remember_python_codes(frames + native, py);
  return id;
}

void note_modules_changed() noexcept {
  forget_unwind_rules();  // an address may now hold other code
  g_modules_changed.store(true, std::memory_order_release);
}

namespace {

// What the trace says about stack capture (Chunk.stack_capture).
container::StackCaptureData capture_status() {
  container::StackCaptureData d;
  const bool active = g_backtrace.load(std::memory_order_acquire) != nullptr;
  const bool wanted = active || (g_off_reason != nullptr && !g_off_reason->empty());
  d.state = static_cast<uint8_t>(active   ? fb::StackCaptureState::Active
                                 : wanted ? fb::StackCaptureState::Unavailable
                                          : fb::StackCaptureState::Off);
  if (!active && wanted) d.reason = *g_off_reason;
  if (active) d.depth = g_depth.load(std::memory_order_relaxed);
  d.unwind_failures = g_unwind_failures.load(std::memory_order_relaxed);
  d.table_full = g_table != nullptr ? g_table->full_drops() : 0;
  return d;
}

// Writer thread: at begin(), the module map and whatever stacks exist; at
// every poll, the module map again if the loader's list changed, and every
// stack published since.
class StackSource final : public capture::TraceSource {
 public:
  void begin(capture::ChunkBuilder& out) override {
    write_status(out);
    if (g_backtrace.load(std::memory_order_acquire) == nullptr && g_off_reason != nullptr && !g_off_reason->empty())
      note(out, "gpuscope: call stacks off: " + *g_off_reason);
    // The table also holds the CPU sampler's stacks when hooked calls' are off.
    if (g_table == nullptr || (g_backtrace.load(std::memory_order_acquire) == nullptr && !g_sampled_stacks)) return;
    active_ = true;
    g_modules_changed.store(false, std::memory_order_relaxed);
    emit_modules(out);
    emit_stacks(out);
  }

  void poll(uint64_t now_ns, capture::ChunkBuilder& out) override {
    if (!active_) return;
    if (g_fallback_wanted.load(std::memory_order_relaxed) || now_ns >= g_configured_ns + kFallbackLoadAfterNs)
      start_fallback_unwinder_load();
    write_status(out);
    if (g_modules_changed.exchange(false, std::memory_order_acq_rel) ||
        loader_generation() != generation_)
      emit_modules(out);
    emit_stacks(out);
    if (!noted_full_ && g_table->full_drops() != 0) {
      noted_full_ = true;
      note(out, "gpuscope: stack table full; calls from new call sites are recorded without a stack");
    }
    if (!noted_fallback_ && g_fallback.load(std::memory_order_acquire) == FallbackLoad::Failed) {
      noted_fallback_ = true;
      note(out, "gpuscope: call stacks by the fast walker alone (" + *g_fallback_missing +
                    "): a stack it cannot follow to the end is recorded as not unwound");
    }
    if (!noted_unwind_ && g_unwind_failures.load(std::memory_order_relaxed) != 0) {
      noted_unwind_ = true;
      note(out, "gpuscope: some call stacks could not be unwound; those calls have no stack");
    }
  }

 private:
  void emit_modules(capture::ChunkBuilder& out) {
    generation_ = loader_generation();  // before the snapshot: a change during it is seen next time
    for (auto& m : ids_.assign(snapshot_modules())) out.add_module(std::move(m));
  }

  void emit_stacks(capture::ChunkBuilder& out) {
    scan_.scan(*g_table, [&](uint32_t id, std::span<const uint64_t> frames) {
      out.add_stack({id, {frames.begin(), frames.end()}});
    });
  }

  // The status when it changed since the last one written (the counts
  // only grow, so the last chunk holds the final one).
  void write_status(capture::ChunkBuilder& out) {
    container::StackCaptureData now = capture_status();
    if (written_ && *written_ == now) return;
    written_ = now;
    out.set_stack_capture(std::move(now));
  }

  // A process-wide instant marker in the "gpuscope" domain, on the timeline
  // (Chunk.stack_capture has the same facts as counts).
  static void note(capture::ChunkBuilder& out, const std::string& text) {
    capture::StringTable& strings = capture::session_strings();
    const uint32_t name = strings.intern(text);
    const uint32_t domain = strings.intern("gpuscope");
    out.add(fb::Marker(capture::monotonic_ns(), 0, 0, name, domain,
                       static_cast<uint32_t>(gettid()), fb::MarkerKind::Instant, 0, 0));
  }

  bool active_ = false;
  std::optional<container::StackCaptureData> written_;
  bool noted_full_ = false;    // each note once: the trace has no counter for them
  bool noted_unwind_ = false;
  bool noted_fallback_ = false;
  LoaderGeneration generation_;
  ModuleIds ids_;
  PublishedScan scan_;
};

}  // namespace

std::unique_ptr<capture::TraceSource> make_stack_source() { return std::make_unique<StackSource>(); }

}  // namespace gpuscope::stacks
