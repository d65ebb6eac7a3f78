#include "standby.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "capture_window.h"
#include "clock.h"
#include "control_paths.h"
#include "control_server.h"
#include "session.h"

namespace gpuscope::standby {
namespace {

using control::ProcessState;
using control::Reply;
using control::Request;

struct Standby {
  // Attach, detach and exit are serialized here; the control thread holds
  // it at most for one session start or stop.
  std::timed_mutex mutex;
  StandbyConfig config;
  bool exiting = false;
  bool capturing = false;
  std::string path;
  std::atomic<uint64_t> deadline_ns{0};  // read by the control thread between requests
  std::vector<std::unique_ptr<capture::TraceSource>> sources;
};

// Never destroyed: the control thread may use it during exit.
Standby& standby() {
  static auto* s = new Standby;
  return *s;
}

bool start_locked(Standby& s, const std::string& path, uint64_t duration_ms, std::string* error) {
  if (s.exiting) {
    *error = "the process is exiting";
    return false;
  }
  if (s.capturing) {
    *error = "already attached, writing " + s.path + " (gpuscope detach first)";
    return false;
  }
  // The attach's window: reset before the writer first polls it, so the
  // previous attach's closed window does not end this trace at once.
  capture::WindowConfig window;
  window.duration_ns = duration_ms * 1'000'000;
  capture::configure_windows(window);
  std::vector<std::unique_ptr<capture::TraceSource>> sources = s.config.make_sources();
  sources.push_back(capture::make_window_source());
  std::vector<capture::TraceSource*> raw;
  for (const auto& source : sources) raw.push_back(source.get());
  capture::SessionOptions options = s.config.options;
  options.start_paused = true;  // the window switches recording on
  if (!capture::start_session(options, path, s.config.metadata, error, raw)) return false;
  capture::open_range_window();
  s.sources = std::move(sources);
  s.capturing = true;
  s.path = path;
  s.deadline_ns.store(duration_ms == 0 ? 0 : capture::monotonic_ns() + window.duration_ns);
  control::wake_server();  // it sleeps until the deadline it knows
  return true;
}

void stop_locked(Standby& s) {
  s.deadline_ns.store(0);
  // A writer stuck on a dead disk still uses its sources: those are let go.
  if (!capture::stop_session(fb::EndKind::Detached, 0))
    for (auto& source : s.sources) (void)source.release();
  s.sources.clear();
  s.capturing = false;
  capture::enter_standby();
}

// The duration's end: the window source has closed the window (or will at
// the stop); the trace is finalized here like a detach.
void on_deadline() {
  Standby& s = standby();
  std::unique_lock lock(s.mutex, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::seconds(1))) return;
  if (s.capturing && s.deadline_ns.load() != 0 && capture::monotonic_ns() >= s.deadline_ns.load()) stop_locked(s);
}

}  // namespace

bool start_standby(StandbyConfig config, std::string* error) {
  Standby& s = standby();
  const std::string dir = config.control_dir.empty() ? control::control_dir() : config.control_dir;
  {
    std::lock_guard lock(s.mutex);
    s.config = std::move(config);
  }
  capture::enter_standby();
  control::ServerHandlers handlers{handle_request, [] { return standby().deadline_ns.load(); }, on_deadline};
  return control::start_server(dir, std::move(handlers), error);
}

bool attach(const std::string& path, uint64_t duration_ms, std::string* error) {
  Standby& s = standby();
  std::lock_guard lock(s.mutex);
  return start_locked(s, path, duration_ms, error);
}

bool detach(std::string* path, std::string* error) {
  Standby& s = standby();
  std::lock_guard lock(s.mutex);
  if (!s.capturing) {
    *error = "not attached (nothing to detach)";
    return false;
  }
  stop_locked(s);
  *path = s.path;
  return true;
}

ProcessState state() {
  Standby& s = standby();
  std::lock_guard lock(s.mutex);
  return s.capturing ? ProcessState::Capturing : ProcessState::Idle;
}

Reply handle_request(const Request& request) {
  std::string error, path;
  bool ok = true;
  switch (request.type) {
    case control::MessageType::Attach:
      ok = attach(request.path, request.duration_ms, &error);
      path = request.path;
      break;
    case control::MessageType::Detach:
      ok = detach(&path, &error);
      break;
    default: {
      std::lock_guard lock(standby().mutex);
      return Reply{true, standby().capturing ? ProcessState::Capturing : ProcessState::Idle,
                   standby().capturing ? standby().path : ""};
    }
  }
  return Reply{ok, state(), ok ? path : error};
}

void shutdown_standby() {
  control::stop_server();
  Standby& s = standby();
  std::unique_lock lock(s.mutex, std::defer_lock);
  // Bounded: an attach in progress on the control thread finishes first;
  // the exit's own stop then ends its trace.
  if (lock.try_lock_for(std::chrono::seconds(2))) s.exiting = true;
}

void after_fork_child() { control::close_server_after_fork(); }

}  // namespace gpuscope::standby
