#include "session.h"

#include <pthread.h>
#include <unistd.h>

#include <bit>
#include <memory>
#include <mutex>

#include "writer.h"

namespace gpuscope::capture {

namespace detail {
std::atomic<Phase> g_phase{Phase::Idle};
std::atomic<uint32_t> g_generation{0};
std::atomic<uint32_t> g_capture_epoch{0};
thread_local constinit ThreadContext t_context __attribute__((tls_model("initial-exec"))) = {};
}  // namespace detail

namespace {

// Everything below is touched by start/stop (serialized by g_lifecycle) and
// by the slow path of the hot path (read-only after start).
std::timed_mutex g_lifecycle;
std::atomic<SlotPool*> g_pool{nullptr};
std::atomic<uint64_t> g_unslotted_drops{0};
Writer* g_writer = nullptr;
// g_writer is set, for readers without g_lifecycle (capture_may_record).
std::atomic<bool> g_session_running{false};
std::atomic<bool> g_in_standby{false};
TraceOutput* g_output = nullptr;
SessionOptions g_options;
// Heap objects made on first use and never destroyed: C++ static
// destructors of a shared library run before its destructor functions, and
// the writer (stopped from one) still uses them; and first use may come
// from a constructor that runs before this file's static initializers.
std::string& session_path_storage() {
  static auto* path = new std::string();
  return *path;
}
pid_t g_owner_pid = 0;
uint32_t g_sessions_started = 0;

pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

std::atomic<int> g_lazy_state{0};  // 0 not run, 1 running, 2 done

constexpr uint16_t kClaimBackoff = 1024;

std::mutex g_loads_mutex;
std::vector<container::LibraryLoadEvent>& pending_loads() {
  static auto* loads = new std::vector<container::LibraryLoadEvent>();
  return *loads;
}

StringTable& strings_instance() {
  // Never destroyed: hooks may intern during static destruction. Default-
  // initialized, not value-initialized (`new StringTable()`): that zeroed the
  // hot strings' 1 MiB arena at every start, ~300 page faults, the largest
  // part of a traced process's fixed cost (docs/performance.md).
  static StringTable* table = new StringTable;
  return *table;
}

// Thread exit (pthread key destructor; runs after C++ thread_local
// destructors): hand the buffer to the writer for a last drain.
void on_thread_exit(void*) {
  ThreadContext& t = detail::t_context;
  t.exited = 1;
  if (t.slot != nullptr && t.generation == detail::g_generation.load(std::memory_order_acquire))
    t.slot->state.store(SlotState::Retired, std::memory_order_release);
  t.slot = nullptr;
}

void make_exit_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

void run_lazy_initializer_once() {
  int expected = 0;
  if (!g_lazy_state.compare_exchange_strong(expected, 1)) return;
  {
    InternalScope internal;
    initialize_capture_early();
  }
  g_lazy_state.store(2, std::memory_order_release);
}

// The thread buffers outlive sessions: a later session in the same process
// keeps every thread's buffer. Only a different geometry (tests) replaces
// the pool, which bumps the generation so threads claim anew; the old pool
// is freed, so that must happen with no thread recording.
SlotPool* pool_for(const SessionOptions& o) {
  const size_t ring_bytes = std::bit_ceil(std::max<size_t>(o.ring_kb * 1024ull, 4096));
  SlotPool* pool = g_pool.load(std::memory_order_acquire);
  if (pool != nullptr && pool->size() == o.max_threads && pool->ring_bytes() == ring_bytes) {
    for (uint32_t i = 0; i < pool->size(); ++i)
      for (auto& counter : pool->at(i).drops) counter.value.store(0, std::memory_order_relaxed);
    return pool;
  }
  auto fresh = std::make_unique<SlotPool>();
  if (!fresh->create(o.max_threads, ring_bytes)) return nullptr;
  delete g_pool.exchange(fresh.get(), std::memory_order_acq_rel);
  detail::g_generation.fetch_add(1, std::memory_order_acq_rel);
  return fresh.release();
}

// A call that began before the previous session stopped may have pushed
// its record after that session's last drain; it belongs to no trace (an
// attach's trace holds its window only). No writer runs now, so this
// thread is the rings' only consumer.
void discard_leftovers(SlotPool& pool) {
  for (uint32_t i = 0; i < pool.size(); ++i) {
    ThreadSlot& slot = pool.at(i);
    if (slot.state.load(std::memory_order_acquire) == SlotState::Free) continue;
    slot.ring.drain([](RecordType, const std::byte*, uint32_t, uint8_t) {});
    slot.poll.reset();
  }
}

// Recording stops before the last drain. A detach (the last capture window
// closed) leaves the hooks paused: the program's later calls are not part
// of the capture, not drops.
void stop_recording(fb::EndKind kind) {
  Phase expected = Phase::Recording;
  const Phase after = kind == fb::EndKind::Detached ? Phase::Paused : Phase::Stopped;
  if (!detail::g_phase.compare_exchange_strong(expected, after) && expected == Phase::Paused)
    detail::g_phase.compare_exchange_strong(expected, after);
  end_poll_runs();
}

}  // namespace

ThreadSlot* detail::attach_current_thread() noexcept {
  ThreadContext& t = t_context;
  if (t.exited != 0) return nullptr;
  Phase phase = g_phase.load(std::memory_order_acquire);
  if (phase == Phase::Idle) {
    run_lazy_initializer_once();
    phase = g_phase.load(std::memory_order_acquire);
  }
  if (phase != Phase::Recording) return nullptr;
  if (t.claim_backoff != 0) {
    --t.claim_backoff;
    g_unslotted_drops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const uint32_t generation = g_generation.load(std::memory_order_acquire);
  ThreadSlot* slot = g_pool.load(std::memory_order_acquire)->claim(static_cast<uint32_t>(gettid()));
  if (slot == nullptr) {
    t.claim_backoff = kClaimBackoff;
    g_unslotted_drops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (t.key_set == 0) {
    pthread_setspecific(g_exit_key, &t);  // any non-null value arms the destructor
    t.key_set = 1;
  }
  t.slot = slot;
  t.generation = generation;
  return slot;
}

bool start_session(const SessionOptions& options, const std::string& path,
                   const ProcessMetadata& metadata, std::string* error, std::vector<TraceSource*> sources) {
  std::lock_guard lock(g_lifecycle);
  if (g_writer != nullptr || detail::g_phase.load() == Phase::Disabled) {
    *error = "capture is already running or disabled in this process";
    return false;
  }
  pthread_once(&g_exit_key_once, make_exit_key);
  SlotPool* pool = pool_for(options);
  if (pool == nullptr) {
    *error = "cannot reserve memory for thread buffers";
    return false;
  }
  const protocol::HotClock clock = choose_hot_clock();
  detail::g_timestamps_in_ticks.store(clock.ticks, std::memory_order_relaxed);
  choose_ring_prefetch();
  auto output = std::make_unique<TraceOutput>();
  if (!output->create(path, error)) return false;
  if (g_sessions_started++ != 0) {  // a new file
    strings_instance().mark_all_pending();
    discard_leftovers(*pool);
  }
  g_unslotted_drops.store(0);
  auto writer = std::make_unique<Writer>(options, *pool, strings_instance(), *output, g_unslotted_drops,
                                         std::move(sources));
  ProcessMetadata stamped = metadata;
  stamped.host_clock = clock.description;
  if (!writer->start(stamped, error)) return false;
  g_options = options;
  session_path_storage() = path;
  g_owner_pid = getpid();
  g_output = output.release();
  g_writer = writer.release();
  g_session_running.store(true, std::memory_order_release);
  detail::g_phase.store(options.start_paused ? Phase::Paused : Phase::Recording, std::memory_order_release);
  return true;
}

bool stop_session(const EndNote& end) {
  // Timed: _exit() from a signal handler that interrupted a stop on this
  // very thread must not deadlock the program's exit.
  std::unique_lock lock(g_lifecycle, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(g_options.exit_timeout_ms))) return false;
  if (g_writer == nullptr || getpid() != g_owner_pid) return true;
  stop_recording(end.kind);
  const bool finished = g_writer->finish(end, /*stop=*/true, g_options.exit_timeout_ms);
  if (finished) {
    delete g_writer;
    delete g_output;
  }  // else: the writer thread is still busy (a stuck disk); leave it be
  g_writer = nullptr;
  g_output = nullptr;
  g_session_running.store(false, std::memory_order_release);
  return finished;
}

bool end_session_here(const EndNote& end) {
  std::unique_lock lock(g_lifecycle, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(g_options.exit_timeout_ms))) return false;
  if (g_writer == nullptr || getpid() != g_owner_pid) return true;
  stop_recording(end.kind);
  const bool finished = g_writer->finish_here(end, g_options.exit_timeout_ms);
  g_writer = nullptr;  // never freed: its thread may still wake to find it taken over
  g_output = nullptr;
  g_session_running.store(false, std::memory_order_release);
  return finished;
}

void checkpoint_session(fb::EndKind kind, int exit_status) {
  std::lock_guard lock(g_lifecycle);
  if (g_writer == nullptr || getpid() != g_owner_pid) return;
  const Phase phase = detail::g_phase.load();
  if (phase != Phase::Recording && phase != Phase::Paused) return;
  g_writer->finish(EndNote{kind, exit_status}, /*stop=*/false, g_options.exit_timeout_ms);
}

void disable_after_fork() {
  // Runs in the child right after fork: no locks (another thread of the
  // parent may have held g_lifecycle), no writer. The parent's objects are
  // abandoned, not destroyed.
  detail::g_phase.store(Phase::Disabled, std::memory_order_release);
  g_writer = nullptr;
  g_output = nullptr;
  g_session_running.store(false, std::memory_order_relaxed);
  g_in_standby.store(false, std::memory_order_relaxed);
}

void enter_standby() {
  g_in_standby.store(true, std::memory_order_release);
  Phase phase = detail::g_phase.load(std::memory_order_acquire);
  while (phase != Phase::Disabled && phase != Phase::Paused &&
         !detail::g_phase.compare_exchange_weak(phase, Phase::Paused, std::memory_order_acq_rel)) {
  }
}

void disable_capture() { detail::g_phase.store(Phase::Disabled, std::memory_order_release); }

Phase current_phase() { return detail::g_phase.load(std::memory_order_acquire); }

bool capture_may_record() {
  switch (current_phase()) {
    case Phase::Recording: return true;
    case Phase::Paused:
      return g_session_running.load(std::memory_order_acquire) || g_in_standby.load(std::memory_order_acquire);
    default: return false;
  }
}

const std::string& session_path() { return session_path_storage(); }

uint32_t free_thread_buffers() {
  SlotPool* pool = g_pool.load(std::memory_order_acquire);
  uint32_t n = 0;
  for (uint32_t i = 0; pool != nullptr && i < pool->size(); ++i)
    n += pool->at(i).state.load(std::memory_order_acquire) == SlotState::Free ? 1 : 0;
  return n;
}

StringTable& session_strings() { return strings_instance(); }

void note_library_load(container::LibraryLoadEvent event) {
  // Loads between capture windows are kept: they are evidence about the
  // process, not events of the window.
  const Phase phase = detail::g_phase.load(std::memory_order_relaxed);
  if (phase != Phase::Recording && phase != Phase::Paused) return;
  std::lock_guard lock(g_loads_mutex);
  pending_loads().push_back(std::move(event));
}

std::vector<container::LibraryLoadEvent> take_library_loads() {
  std::lock_guard lock(g_loads_mutex);
  return std::exchange(pending_loads(), {});
}

__attribute__((weak)) void initialize_capture_early() {}

}  // namespace gpuscope::capture
