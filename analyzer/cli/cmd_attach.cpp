// gpuscope attach / detach: ask a process in standby (`gpuscope run
// --standby`, or GPUSCOPE_MODE=standby with the library preloaded) for a
// trace of a stretch of its run, over its control socket
// (protocol/control_protocol.h; security model in docs/interception.md).
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "messages.h"
#include "control_paths.h"
#include "control_protocol.h"
#include "environment.h"
#include "output_names.h"
#include "output_paths.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;
using control::Reply;
using control::Request;

volatile sig_atomic_t g_interrupted = 0;

// A detach can wait for the process's final flush (3 s by default).
constexpr int kReplyTimeoutMs = 15'000;

bool send_all(int fd, const std::vector<uint8_t>& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    sent += static_cast<size_t>(w);
  }
  return true;
}

bool recv_all(int fd, uint8_t* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// One request, one reply. *connect_errno tells a stale socket (ECONNREFUSED).
bool call(const std::string& socket_path, const Request& request, Reply* reply, std::string* error,
          int* connect_errno = nullptr) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), std::min(socket_path.size() + 1, sizeof addr.sun_path - 1));
  const timeval timeout{kReplyTimeoutMs / 1000, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (connect_errno != nullptr) *connect_errno = errno;
    *error = "cannot connect to " + socket_path + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  std::vector<uint8_t> frame(control::kHeaderSize);
  control::Header header;
  bool ok = send_all(fd, control::encode_request(request)) && recv_all(fd, frame.data(), frame.size()) &&
            control::parse_header(frame, &header) == control::ParseStatus::Ok;
  if (ok) {
    frame.resize(control::kHeaderSize + header.length);
    ok = recv_all(fd, frame.data() + control::kHeaderSize, header.length) &&
         control::parse_reply(frame, reply) == control::ParseStatus::Ok;
  }
  close(fd);
  if (!ok) *error = "no valid reply from " + socket_path + " (the process may have exited)";
  return ok;
}

bool process_alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// PID's socket in one of this user's private control directories.
bool find_socket(pid_t pid, std::string* path, std::string* error) {
  for (const std::string& dir : control::candidate_dirs()) {
    std::string why;
    if (!control::ensure_private_dir(dir, /*create=*/false, &why)) continue;
    const std::string candidate = control::socket_path(dir, pid);
    if (fs::exists(fs::symlink_status(candidate))) {
      *path = candidate;
      return true;
    }
  }
  const std::string standby_mode = protocol::env::entry(protocol::env::kMode, protocol::env::kModeStandby);
  *error = process_alive(pid) ? fmt::format("process {} is not in standby for this user (gpuscope run --standby, "
                                            "or {} with libgpuscope.so preloaded)", pid, standby_mode)
                              : fmt::format("no process {}", pid);
  return false;
}

std::string process_exe(pid_t pid) {
  std::error_code ec;
  std::string exe = fs::read_symlink(fmt::format("/proc/{}/exe", pid), ec).filename().string();
  if (exe.ends_with(" (deleted)")) exe.resize(exe.size() - 10);
  return exe.empty() ? "?" : exe;
}

// Absolute path for the trace, resolved here (the process has another
// working directory): -o DIR/ or an existing directory gets the name `run`
// gives (gpuscope-EXE-PID.gpuscope, then -2, -3 ... for later attaches:
// protocol/output_names.h).
bool attach_output(const std::string& output, pid_t pid, std::string* path, std::string* error) {
  std::error_code ec;
  fs::path dir = fs::current_path();
  if (!output.empty()) {
    const fs::path requested = fs::absolute(output);
    if (protocol::output_form(output) != protocol::OutputForm::Directory) {  // a name pattern is taken as it is
      if (fs::exists(fs::symlink_status(requested, ec))) {
        *error = requested.string() + " already exists";
        return false;
      }
      *path = requested.lexically_normal().string();
      return make_private_directories(requested.parent_path(), error);
    }
    if (!make_private_directories(requested, error)) return false;
    dir = requested;
  }
  const std::string free_name = protocol::attach_trace_path(dir.string(), process_exe(pid), pid);
  if (free_name.empty()) {
    *error = "no free trace name in " + dir.string();
    return false;
  }
  *path = fs::path(free_name).lexically_normal().string();
  return true;
}

void on_interrupt(int) { g_interrupted = 1; }

// --duration: the process ends the trace itself; wait for that (Ctrl-C
// detaches early) so the summary can be printed.
void wait_for_capture_end(const std::string& socket, double duration_s) {
  struct sigaction sa{};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration_s + 30);
  Reply reply;
  std::string error;
  while (std::chrono::steady_clock::now() < give_up) {
    if (g_interrupted != 0) {
      call(socket, Request{control::MessageType::Detach, 0, ""}, &reply, &error);
      return;
    }
    if (!call(socket, Request{control::MessageType::Status, 0, ""}, &reply, &error) ||
        reply.state == control::ProcessState::Idle)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int list_standby_processes() {
  int found = 0;
  for (const std::string& dir : control::candidate_dirs()) {
    std::string why;
    if (!control::ensure_private_dir(dir, /*create=*/false, &why)) continue;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      pid_t pid = 0;
      if (!control::parse_socket_name(entry.path().filename().string(), &pid)) continue;
      Reply reply;
      std::string error;
      int connect_errno = 0;
      const bool answered = process_alive(pid) &&
                            call(entry.path().string(), Request{control::MessageType::Status, 0, ""}, &reply, &error,
                                 &connect_errno);
      if (!answered) {
        // A process killed without running its exit code left its socket:
        // nobody listens (or the pid is gone). The directory is ours alone.
        if (!process_alive(pid) || connect_errno == ECONNREFUSED) fs::remove(entry.path(), ec);
        continue;
      }
      if (found++ == 0) fmt::print("{:>8}  {:<10} {}\n", "PID", "STATE", "EXE");
      const bool capturing = reply.state == control::ProcessState::Capturing;
      fmt::print("{:>8}  {:<10} {}{}\n", pid, capturing ? "capturing" : "idle", process_exe(pid),
                 capturing ? " -> " + reply.text : "");
    }
  }
  if (found == 0) fmt::print(stderr, "gpuscope: no process of this user is in standby\n");
  return 0;
}

int attach_command(const AttachOptions& o) {
  if (o.list) return list_standby_processes();
  if (o.pid <= 0) {
    print_error("no process to attach to: give a PID, or --list the ones in standby (gpuscope help attach)");
    return 2;
  }
  std::string socket, path, error;
  if (!find_socket(o.pid, &socket, &error) || !attach_output(o.output, o.pid, &path, &error)) {
    print_error("cannot attach: {}", error);
    return 2;
  }
  const auto duration_ms = static_cast<uint64_t>(o.duration_s * 1000.0 + 0.5);
  Reply reply;
  if (!call(socket, Request{control::MessageType::Attach, duration_ms, path}, &reply, &error)) {
    print_error("cannot attach: {}", error);
    return 2;
  }
  if (!reply.ok) {
    print_error("process {} did not attach: {}", o.pid, reply.text);
    return 1;
  }
  if (duration_ms == 0) {
    if (!o.quiet)
      fmt::print(stderr, "gpuscope: attached to {} ({}), recording to {}; `gpuscope detach {}` ends it\n", o.pid,
                 process_exe(o.pid), path, o.pid);
    return 0;
  }
  if (!o.quiet)
    fmt::print(stderr, "gpuscope: attached to {} ({}), recording {} s to {}\n", o.pid, process_exe(o.pid),
               o.duration_s, path);
  wait_for_capture_end(socket, o.duration_s);
  if (!o.quiet) report_trace(path);
  return 0;
}

int detach_command(int pid, bool quiet) {
  std::string socket, error;
  if (!find_socket(pid, &socket, &error)) {
    print_error("cannot detach: {}", error);
    return 2;
  }
  Reply reply;
  if (!call(socket, Request{control::MessageType::Detach, 0, ""}, &reply, &error)) {
    print_error("cannot detach: {}", error);
    return 2;
  }
  if (!reply.ok) {
    print_error("process {} did not detach: {}", pid, reply.text);
    return 1;
  }
  if (!quiet) report_trace(reply.text);
  return 0;
}

Subcommand add_attach_command(CLI::App& app) {
  auto o = std::make_shared<AttachOptions>();
  CLI::App* attach = app.add_subcommand("attach", "Trace a stretch of a process in standby (gpuscope run --standby)");
  CLI::Option* pid = attach->add_option("pid", o->pid, "Process to attach to")->check(CLI::PositiveNumber);
  CLI::Option* duration =
      attach->add_option("--duration", o->duration_s,
                         "Record for SECONDS, then finalize the trace (default: until gpuscope detach)")
          ->check(CLI::Range(0.001, control::kMaxDurationMs / 1000.0));
  CLI::Option* output =
      attach->add_option("-o,--output", o->output,
                         "Trace file, or directory for it (default: the current directory, named like run's traces)");
  attach->add_flag("--list", o->list, "List this user's processes in standby and their state")
      ->excludes(pid)
      ->excludes(duration)
      ->excludes(output);
  attach->add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  attach->footer("Example: gpuscope attach 4242 --duration 10 -o /tmp/traces/");
  return {attach, [o] { return attach_command(*o); }};
}

Subcommand add_detach_command(CLI::App& app) {
  struct DetachOptions {
    int pid = 0;
    bool quiet = false;
  };
  auto o = std::make_shared<DetachOptions>();
  CLI::App* detach = app.add_subcommand("detach", "End an attach: finalize its trace; the process runs on idle");
  detach->add_option("pid", o->pid, "Process to detach from")->required()->check(CLI::PositiveNumber);
  detach->add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  return {detach, [o] { return detach_command(o->pid, o->quiet); }};
}
}  // namespace gpuscope::cli
