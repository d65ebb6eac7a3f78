#include "control_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "clock.h"
#include "control_paths.h"
#include "diag.h"
#include "recorder.h"
#include "signal_free_thread.h"

namespace gpuscope::control {
namespace {

struct Server {
  int listen_fd = -1;
  int wake_fd = -1;
  std::string path;
  ServerHandlers handlers;
  std::atomic<bool> stopping{false};
};

// Never destroyed: the thread may still run while the process exits.
Server*& server() {
  static Server* s = nullptr;
  return s;
}

std::atomic<uint64_t> g_refused{0}, g_rejected{0}, g_logged{0};

// A flood of bad peers must not flood the program's stderr.
void log_rate_limited(const std::string& line) {
  const uint64_t n = g_logged.fetch_add(1, std::memory_order_relaxed);
  if (n < 5) capture::diag_line("control: %s", line.c_str());
  if (n == 5) capture::diag_line("control: further refused peers and messages are not logged");
}

int remaining_ms(uint64_t deadline_ns) {
  const uint64_t now = capture::monotonic_ns();
  return now >= deadline_ns ? 0 : static_cast<int>((deadline_ns - now) / 1'000'000 + 1);
}

// Exactly n bytes before the deadline; false on EOF, error or timeout.
bool read_exact(int fd, uint8_t* buf, size_t n, uint64_t deadline_ns) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) return false;
    pollfd p{fd, POLLIN, 0};
    const int wait = remaining_ms(deadline_ns);
    if (wait == 0 || poll(&p, 1, wait) <= 0) return false;
  }
  return true;
}

void send_reply(int fd, const Reply& reply, uint64_t deadline_ns) {
  const std::vector<uint8_t> bytes = encode_reply(reply);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (w > 0) {
      sent += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) return;
    pollfd p{fd, POLLOUT, 0};
    const int wait = remaining_ms(deadline_ns);
    if (wait == 0 || poll(&p, 1, wait) <= 0) return;
  }
}

Reply error_reply(const std::string& text) { return Reply{false, ProcessState::Idle, text}; }

// One connection: who it is, one request, one reply.
void serve_peer(Server& s, int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  const uint64_t deadline = capture::monotonic_ns() + kPeerTimeoutMs * 1'000'000ull;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return;
  if (peer.uid != geteuid() && peer.uid != 0) {
    g_refused.fetch_add(1, std::memory_order_relaxed);
    log_rate_limited("refused a connection from uid " + std::to_string(peer.uid) + " (pid " +
                     std::to_string(peer.pid) + "): not this process's user");
    send_reply(fd, error_reply("refused: uid " + std::to_string(peer.uid) + " is not the traced process's user"),
               deadline);
    return;
  }
  std::vector<uint8_t> frame(kHeaderSize);
  Header header;
  ParseStatus status = ParseStatus::Truncated;
  if (read_exact(fd, frame.data(), kHeaderSize, deadline)) {
    status = parse_header(frame, &header);
    if (status == ParseStatus::Ok) {
      frame.resize(kHeaderSize + header.length);
      if (!read_exact(fd, frame.data() + kHeaderSize, header.length, deadline)) status = ParseStatus::Truncated;
    }
  }
  Request request;
  if (status == ParseStatus::Ok) status = parse_request(frame, &request);
  if (status != ParseStatus::Ok) {
    g_rejected.fetch_add(1, std::memory_order_relaxed);
    log_rate_limited("rejected a message from pid " + std::to_string(peer.pid) + ": " + describe(status));
    send_reply(fd, error_reply(std::string("rejected: ") + describe(status)), deadline);
    return;
  }
  send_reply(fd, s.handlers.handle(request), capture::monotonic_ns() + kPeerTimeoutMs * 1'000'000ull);
}

int poll_timeout_ms(const Server& s) {
  const uint64_t deadline = s.handlers.deadline_ns ? s.handlers.deadline_ns() : 0;
  return deadline == 0 ? -1 : remaining_ms(deadline);
}

void serve(Server& s) {
  capture::InternalScope internal;  // nothing this thread does is traced
  pthread_setname_np(pthread_self(), "gpuscope-ctl");
  while (!s.stopping.load(std::memory_order_acquire)) {
    pollfd fds[2] = {{s.listen_fd, POLLIN, 0}, {s.wake_fd, POLLIN, 0}};
    const int n = poll(fds, 2, poll_timeout_ms(s));
    if (n < 0 && errno != EINTR) break;
    if (s.stopping.load(std::memory_order_acquire)) break;
    uint64_t woken = 0;
    if (n > 0 && (fds[1].revents & POLLIN) != 0) (void)!read(s.wake_fd, &woken, sizeof woken);
    const uint64_t deadline = s.handlers.deadline_ns ? s.handlers.deadline_ns() : 0;
    if (deadline != 0 && capture::monotonic_ns() >= deadline) s.handlers.on_deadline();
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(s.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    serve_peer(s, fd);
    close(fd);
  }
}

bool bind_socket(Server& s, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, s.path.c_str(), s.path.size() + 1);
  s.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.listen_fd < 0) {
    *error = std::string("control socket: ") + std::strerror(errno);
    return false;
  }
  unlink(s.path.c_str());  // this pid's own leftover (an exec'd image); the directory is ours alone
  if (bind(s.listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(s.path.c_str(), 0600) != 0 || listen(s.listen_fd, 8) != 0) {
    *error = "control socket " + s.path + ": " + std::strerror(errno);
    close(s.listen_fd);
    return false;
  }
  return true;
}

}  // namespace

bool start_server(const std::string& dir, ServerHandlers handlers, std::string* error) {
  if (server() != nullptr) {
    *error = "control server already running";
    return false;
  }
  if (!ensure_private_dir(dir, /*create=*/true, error)) return false;
  auto s = std::make_unique<Server>();
  s->path = socket_path(dir, getpid());
  if (s->path.size() > kMaxSocketPath) {
    *error = "control socket path too long: " + s->path;
    return false;
  }
  s->handlers = std::move(handlers);
  if (!bind_socket(*s, error)) return false;
  s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd < 0) {
    *error = std::string("control eventfd: ") + std::strerror(errno);
    unlink(s->path.c_str());
    close(s->listen_fd);
    return false;
  }
  Server* raw = s.release();
  server() = raw;
  capture::start_signal_free_thread([raw] { serve(*raw); }).detach();
  return true;
}

void stop_server() {
  Server* s = server();
  if (s == nullptr || s->stopping.exchange(true)) return;
  unlink(s->path.c_str());
  const uint64_t one = 1;
  (void)!write(s->wake_fd, &one, sizeof one);
}

void wake_server() {
  Server* s = server();
  if (s == nullptr) return;
  const uint64_t one = 1;
  (void)!write(s->wake_fd, &one, sizeof one);
}

void close_server_after_fork() {
  Server* s = server();
  if (s == nullptr) return;
  s->stopping.store(true);
  close(s->listen_fd);
  close(s->wake_fd);
}

uint64_t refused_peers() { return g_refused.load(); }
uint64_t rejected_messages() { return g_rejected.load(); }

}  // namespace gpuscope::control
