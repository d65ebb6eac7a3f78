#include "command_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace gpuscope::doctor {
namespace {

constexpr size_t kMaxErrBytes = 64 << 10;

long long now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

// Reads what is ready on `fd` into `to` (up to `cap` bytes kept); false at EOF or error.
bool drain(int fd, std::string& to, size_t cap) {
  char buf[16384];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  to.append(buf, std::min(static_cast<size_t>(n), cap - std::min(cap, to.size())));
  return true;
}

// Both pipes until EOF, the byte limit or the deadline; true when cut short.
bool collect(int out_fd, int err_fd, CommandOutput& r, size_t max_bytes, int timeout_ms) {
  const long long deadline = now_ms() + timeout_ms;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const long long left = deadline - now_ms();
    if (left <= 0 || r.out.size() >= max_bytes) return true;
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) return true;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      if (!drain(fds[i].fd, i == 0 ? r.out : r.err, i == 0 ? max_bytes : kMaxErrBytes)) fds[i].fd = -1;
    }
  }
  return false;
}

}  // namespace

CommandOutput run_command_output(const std::vector<std::string>& argv, size_t max_bytes, int timeout_ms) {
  CommandOutput r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.error = std::strerror(errno);
    return r;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    r.error = std::strerror(errno);
    close(out[0]), close(out[1]);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]), close(err[1]);
  if (spawned != 0) {
    r.error = std::string(argv[0]) + ": " + std::strerror(spawned);
    close(out[0]), close(err[0]);
    return r;
  }
  r.started = true;
  r.truncated = collect(out[0], err[0], r, max_bytes, timeout_ms);
  if (r.truncated) kill(pid, SIGKILL);
  close(out[0]), close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace gpuscope::doctor
