#include "capture_window.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

#include "chunk_builder.h"
#include "clock.h"
#include "environment.h"
#include "settings.h"
#include "recorder.h"
#include "session.h"

namespace gpuscope::capture {
namespace {

// Closed windows wait here for the writer's next poll.
struct ClosedWindow {
  uint64_t start_ns, end_ns;
};

struct Windows {
  std::mutex mutex;
  WindowConfig config;
  // Read by the profiler hooks without the mutex, so atomic: the capture
  // range is the profiler API (set once, before capture starts).
  std::atomic<bool> profiler_range{false};
  std::atomic<bool> nvtx_range{false};
  uint64_t origin_ns = 0;  // capture start: the delay counts from here
  bool open = false;
  uint64_t opened_ns = 0;
  uint32_t opened = 0;     // windows opened so far
  bool finished = false;   // the last window allowed has closed
  std::vector<ClosedWindow> closed;
};

// Never destroyed: hooks may reach it during static destruction.
Windows& windows() {
  static auto* w = new Windows;
  return *w;
}

std::atomic<WindowListener> g_listener{nullptr};

void tell_listener(bool open) {
  if (const WindowListener listener = g_listener.load(std::memory_order_acquire)) listener(open);
}

bool last_window(const Windows& w) { return w.config.max_windows != 0 && w.opened >= w.config.max_windows; }

// Both under w.mutex.
// A window's bounds are read next to the phase switch: before it when
// opening, after it when closing, so every call recorded starts inside.
void open_window(Windows& w) {
  const uint64_t now = monotonic_ns();
  if (w.open || w.finished || now < w.origin_ns + w.config.delay_ns) return;
  Phase expected = Phase::Paused;
  if (!detail::g_phase.compare_exchange_strong(expected, Phase::Recording, std::memory_order_acq_rel)) return;
  w.open = true;
  w.opened_ns = now;
  ++w.opened;
  tell_listener(true);
}

void close_window(Windows& w) {
  if (!w.open) return;
  // Paused for good after the last window (hooks pass through, nothing is
  // dropped) while the trace is ended: by the thread that closed it, or by
  // the writer at its next poll.
  Phase expected = Phase::Recording;
  detail::g_phase.compare_exchange_strong(expected, Phase::Paused, std::memory_order_acq_rel);
  end_poll_runs();  // the writer takes the runs of the window at its next flush
  w.open = false;
  w.closed.push_back({w.opened_ns, monotonic_ns()});
  w.finished = last_window(w);
  tell_listener(false);
}

// The profiler stop that the program's runtime call makes through the
// driver is the same stop: only the outermost one closes the window.
thread_local uint32_t t_stop_depth __attribute__((tls_model("initial-exec"))) = 0;

namespace env = protocol::env;

bool parse_ms(const char* name, uint64_t* out_ns, std::string* error) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return true;
  int64_t ms = 0;
  if (!protocol::parse_number(v, 0, protocol::kMaxWindowMs, &ms)) {
    *error = std::string(name) + "=" + v + ": expected milliseconds";
    return false;
  }
  *out_ns = static_cast<uint64_t>(ms) * 1'000'000;
  return true;
}


// What opens a window, as the trace names it (a CaptureArmed marker): the
// analyzer's answer when none ever opened.
std::string describe_trigger(const WindowConfig& c) {
  const std::string out = protocol::capture_range_text(c);
  char delay[48] = "";
  if (c.delay_ns != 0) std::snprintf(delay, sizeof delay, "%sdelay %.3f s", out.empty() ? "" : ", ", c.delay_ns / 1e9);
  return out + delay;
}

class WindowSource final : public TraceSource {
 public:
  void poll(uint64_t now_ns, ChunkBuilder& out) override {
    Windows& w = windows();
    std::lock_guard lock(w.mutex);
    if (!armed_written_) {
      // A duration alone opens its window at once: nothing to wait for.
      if (const std::string trigger = describe_trigger(w.config); !trigger.empty()) {
        const uint32_t name = session_strings().intern(trigger);
        out.add(fb::Marker(w.origin_ns, 0, 0, name, 0, 0, fb::MarkerKind::CaptureArmed, 0, 0));
      }
      armed_written_ = true;
    }
    // Time windows: the delay opens one unless a range decides, the
    // duration closes any.
    if (w.config.range == WindowConfig::Range::None) open_window(w);
    // Closed when recording actually stops (this poll, up to a drain
    // interval after the nominal end).
    if (w.open && w.config.duration_ns != 0 && now_ns >= w.opened_ns + w.config.duration_ns) close_window(w);
    // A window still open is written provisionally once a second, so a
    // trace cut short (SIGKILL) still says what it captured; the analyzer
    // takes the union of a window's markers.
    if (w.open && now_ns >= std::max(w.opened_ns, last_provisional_ns_) + kProvisionalEveryNs) {
      w.closed.push_back({w.opened_ns, now_ns});
      last_provisional_ns_ = now_ns;
    }
    for (const ClosedWindow& c : w.closed)
      out.add(fb::Marker(c.start_ns, c.end_ns - c.start_ns, 0, 0, 0, 0, fb::MarkerKind::CaptureWindow, 0, 0));
    w.closed.clear();
    end_wanted_ = w.finished;
  }
  // The process is ending inside a window: it closes where the capture does.
  void end() override {
    Windows& w = windows();
    std::lock_guard lock(w.mutex);
    close_window(w);
  }
  bool wants_capture_end() const override { return end_wanted_; }

 private:
  static constexpr uint64_t kProvisionalEveryNs = 1'000'000'000;
  bool end_wanted_ = false;
  bool armed_written_ = false;
  uint64_t last_provisional_ns_ = 0;
};

}  // namespace

bool read_window_config(WindowConfig* out, std::string* error) {
  WindowConfig c;
  if (!parse_ms(env::kDelayMs, &c.delay_ns, error) || !parse_ms(env::kDurationMs, &c.duration_ns, error)) return false;
  const auto refuse = [error](const char* name, const char* value, std::string_view grammar) {
    *error = std::string(name) + "=" + value + ": expected " + std::string(grammar);
    return false;
  };
  const char* range = std::getenv(env::kCaptureRange);
  if (range != nullptr && !protocol::parse_capture_range(range, &c))
    return refuse(env::kCaptureRange, range, protocol::kCaptureRangeGrammar);
  const char* end = std::getenv(env::kCaptureRangeEnd);
  if (!protocol::parse_range_end(end != nullptr ? end : "", &c.max_windows))
    return refuse(env::kCaptureRangeEnd, end, protocol::kRangeEndGrammar);
  *out = c;
  return true;
}

bool configure_windows(const WindowConfig& config) {
  Windows& w = windows();
  std::lock_guard lock(w.mutex);
  // The NVTX hooks read the config without the mutex: hide it while it changes.
  w.nvtx_range.store(false, std::memory_order_release);
  w.config = config;
  w.profiler_range.store(config.range == WindowConfig::Range::ProfilerApi, std::memory_order_release);
  w.nvtx_range.store(config.range == WindowConfig::Range::Nvtx, std::memory_order_release);
  w.origin_ns = monotonic_ns();
  w.open = w.finished = false;
  w.opened = 0;
  w.closed.clear();
  return config.active();
}

void on_profiler_start() noexcept {
  if (windows().profiler_range.load(std::memory_order_acquire)) open_range_window();
}

void on_profiler_stop_begin() noexcept { ++t_stop_depth; }

void on_profiler_stop_end() noexcept {
  if (--t_stop_depth != 0) return;
  if (windows().profiler_range.load(std::memory_order_acquire)) close_range_window();
}

bool open_range_window() noexcept {
  Windows& w = windows();
  std::lock_guard lock(w.mutex);
  const uint32_t before = w.opened;
  open_window(w);
  return w.opened != before;
}

void close_range_window() noexcept {
  Windows& w = windows();
  bool finished = false;
  {
    std::lock_guard lock(w.mutex);
    const bool was_open = w.open;
    close_window(w);
    finished = was_open && w.finished;
  }
  // The last window: its trace ends here, before the program goes on, so
  // what follows the range never races into it.
  if (finished) stop_session(fb::EndKind::Detached, 0);
}

void set_window_listener(WindowListener listener) noexcept { g_listener.store(listener, std::memory_order_release); }

const WindowConfig* nvtx_capture_range() noexcept {
  Windows& w = windows();
  return w.nvtx_range.load(std::memory_order_acquire) ? &w.config : nullptr;
}

std::unique_ptr<TraceSource> make_window_source() { return std::make_unique<WindowSource>(); }

}  // namespace gpuscope::capture
