#include "control_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

// One connection: its request as it arrives, then its reply as it leaves.
// A slot of a fixed table, so that the child of a fork can close every
// peer's descriptor without touching memory the server thread may have
// been moving.
struct Peer {
  int fd = -1;
  uint64_t deadline_ns = 0;
  ucred cred{};
  std::vector<uint8_t> in;   // the request so far
  size_t want = kHeaderSize;  // the bytes of it known to be needed
  std::vector<uint8_t> out;  // the reply, once decided
  size_t sent = 0;
  bool replying() const { return !out.empty(); }
};

struct Server {
  int listen_fd = -1;
  int wake_fd = -1;
  std::string path;
  ServerHandlers handlers;
  std::atomic<bool> stopping{false};
  std::array<Peer, kMaxPeers> peers;
  uint64_t accept_paused_until_ns = 0;  // out of descriptors: try again then
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

uint64_t deadline_from_now() { return capture::monotonic_ns() + kPeerTimeoutMs * 1'000'000ull; }

Reply error_reply(const std::string& text) { return Reply{false, ProcessState::Idle, text}; }

void close_peer(Peer& p) {
  close(p.fd);
  p = Peer{};
}

// Sends what the socket takes now; the peer is done when all is sent or the
// socket failed.
void send_some(Peer& p) {
  while (p.sent < p.out.size()) {
    const ssize_t w = send(p.fd, p.out.data() + p.sent, p.out.size() - p.sent, MSG_NOSIGNAL);
    if (w > 0) {
      p.sent += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) return;  // the rest when poll says so
    break;
  }
  close_peer(p);
}

void reply(Peer& p, const Reply& r) {
  p.out = encode_reply(r);
  p.sent = 0;
  p.deadline_ns = deadline_from_now();
  send_some(p);
}

void reject(Peer& p, ParseStatus status) {
  g_rejected.fetch_add(1, std::memory_order_relaxed);
  log_rate_limited("rejected a message from pid " + std::to_string(p.cred.pid) + ": " + describe(status));
  reply(p, error_reply(std::string("rejected: ") + describe(status)));
}

// The header says how much more to read; the whole frame is the request.
void on_bytes(Server& s, Peer& p) {
  if (p.in.size() == kHeaderSize) {
    Header header;
    const ParseStatus status = parse_header(p.in, &header);
    if (status != ParseStatus::Ok) return reject(p, status);
    p.want = kHeaderSize + header.length;
  }
  if (p.in.size() < p.want) return;
  Request request;
  const ParseStatus status = parse_request(p.in, &request);
  if (status != ParseStatus::Ok) return reject(p, status);
  reply(p, s.handlers.handle(request));
}

// Reads what has arrived, never more than the request announced.
void receive_some(Server& s, Peer& p) {
  while (!p.replying() && p.fd >= 0) {
    const size_t have = p.in.size();
    p.in.resize(p.want);
    const ssize_t r = recv(p.fd, p.in.data() + have, p.want - have, 0);
    p.in.resize(have + static_cast<size_t>(std::max<ssize_t>(r, 0)));
    if (r > 0) {
      on_bytes(s, p);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) return;
    return reject(p, ParseStatus::Truncated);  // the peer closed or failed before a whole request
  }
}

void progress(Server& s, Peer& p) {
  if (p.replying()) send_some(p);
  else receive_some(s, p);
}

// A new connection: who it is first. Another user's is answered and closed
// without a byte of it read.
void admit(Server& s, Peer& p, int fd) {
  p = Peer{};
  p.fd = fd;
  p.deadline_ns = deadline_from_now();
  socklen_t len = sizeof p.cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &p.cred, &len) != 0) return close_peer(p);
  if (p.cred.uid != geteuid() && p.cred.uid != 0) {
    g_refused.fetch_add(1, std::memory_order_relaxed);
    log_rate_limited("refused a connection from uid " + std::to_string(p.cred.uid) + " (pid " +
                     std::to_string(p.cred.pid) + "): not this process's user");
    return reply(p, error_reply("refused: uid " + std::to_string(p.cred.uid) + " is not the traced process's user"));
  }
  receive_some(s, p);  // the request usually came with the connection
}

// A free slot; when all are taken, the one closest to its deadline is
// dropped: a crowd of silent peers must not lock the others out.
Peer& free_slot(Server& s) {
  Peer* oldest = &s.peers[0];
  for (Peer& p : s.peers) {
    if (p.fd < 0) return p;
    if (p.deadline_ns < oldest->deadline_ns) oldest = &p;
  }
  log_rate_limited("dropped the oldest of " + std::to_string(kMaxPeers) + " open connections to make room");
  close_peer(*oldest);
  return *oldest;
}

void accept_peers(Server& s) {
  for (size_t accepted = 0; accepted < kMaxPeers; ++accepted) {  // then the others get their turn
    const int fd = accept4(s.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      admit(s, free_slot(s), fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    // Out of descriptors (the program's or the system's): the pending
    // connection stays readable, so back off rather than spin.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
      s.accept_paused_until_ns = capture::monotonic_ns() + 100'000'000ull;
    return;
  }
}

// A peer past its deadline: a request still incomplete is answered as
// truncated (once, without waiting), a reply not taken is abandoned.
void expire_peers(Server& s, uint64_t now) {
  for (Peer& p : s.peers) {
    if (p.fd < 0 || now < p.deadline_ns) continue;
    if (p.replying()) {
      close_peer(p);
      continue;
    }
    reject(p, ParseStatus::Truncated);
    if (p.fd >= 0) close_peer(p);
  }
}

int remaining_ms(uint64_t deadline_ns, uint64_t now) {
  return now >= deadline_ns ? 0 : static_cast<int>((deadline_ns - now) / 1'000'000 + 1);
}

// Until the next thing due: an attach's end, a peer's deadline, or the end
// of an accept back-off; -1 when nothing is.
int poll_timeout_ms(const Server& s, uint64_t now) {
  uint64_t next = s.handlers.deadline_ns ? s.handlers.deadline_ns() : 0;
  const auto sooner = [&](uint64_t t) {
    if (t != 0 && (next == 0 || t < next)) next = t;
  };
  for (const Peer& p : s.peers)
    if (p.fd >= 0) sooner(p.deadline_ns);
  if (s.accept_paused_until_ns > now) sooner(s.accept_paused_until_ns);
  return next == 0 ? -1 : remaining_ms(next, now);
}

// One poll over the listening socket, the wake-up eventfd and every peer:
// a silent or slow peer waits in its slot and delays no one.
void serve(Server& s) {
  capture::InternalScope internal;  // nothing this thread does is traced
  pthread_setname_np(pthread_self(), "gpuscope-ctl");
  std::array<pollfd, 2 + kMaxPeers> fds{};
  while (!s.stopping.load(std::memory_order_acquire)) {
    const uint64_t before = capture::monotonic_ns();
    const bool accepting = before >= s.accept_paused_until_ns;
    fds[0] = {accepting ? s.listen_fd : -1, POLLIN, 0};
    fds[1] = {s.wake_fd, POLLIN, 0};
    for (size_t i = 0; i < kMaxPeers; ++i)
      fds[2 + i] = {s.peers[i].fd, static_cast<short>(s.peers[i].replying() ? POLLOUT : POLLIN), 0};
    const int n = poll(fds.data(), fds.size(), poll_timeout_ms(s, before));
    if (n < 0 && errno != EINTR) break;
    if (s.stopping.load(std::memory_order_acquire)) break;
    uint64_t woken = 0;
    if (n > 0 && (fds[1].revents & POLLIN) != 0) (void)!read(s.wake_fd, &woken, sizeof woken);
    const uint64_t deadline = s.handlers.deadline_ns ? s.handlers.deadline_ns() : 0;
    if (deadline != 0 && capture::monotonic_ns() >= deadline) s.handlers.on_deadline();
    for (size_t i = 0; n > 0 && i < kMaxPeers; ++i)
      if (fds[2 + i].fd >= 0 && fds[2 + i].revents != 0 && s.peers[i].fd == fds[2 + i].fd) progress(s, s.peers[i]);
    expire_peers(s, capture::monotonic_ns());
    if (n > 0 && (fds[0].revents & POLLIN) != 0) accept_peers(s);
  }
  for (Peer& p : s.peers)
    if (p.fd >= 0) close_peer(p);
}

bool bind_socket(Server& s, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, s.path.c_str(), s.path.size() + 1);
  s.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);  // accept until EAGAIN
  if (s.listen_fd < 0) {
    *error = std::string("control socket: ") + std::strerror(errno);
    return false;
  }
  unlink(s.path.c_str());  // this pid's own leftover (an exec'd image); the directory is ours alone
  if (bind(s.listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(s.path.c_str(), 0600) != 0 || listen(s.listen_fd, SOMAXCONN) != 0) {
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
  for (const Peer& p : s->peers)
    if (p.fd >= 0) close(p.fd);
}

uint64_t refused_peers() { return g_refused.load(); }
uint64_t rejected_messages() { return g_rejected.load(); }

}  // namespace gpuscope::control
