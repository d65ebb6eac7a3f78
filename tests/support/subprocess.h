// Runs a program to completion and captures its stdout, stderr and status,
// for end-to-end tests that compare a program with and without gpuscope.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gpuscope::test {

struct ProcessResult {
  std::string out;
  std::string err;
  int status = -1;  // raw waitpid status
  bool exited() const { return WIFEXITED(status); }
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  int signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
};

struct Spawned {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

// Environment of this process with `set` entries ("K=V") added or replaced
// and `unset` names removed.
inline std::vector<std::string> environment_with(const std::vector<std::string>& set,
                                                 const std::vector<std::string>& unset = {}) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    bool drop = false;
    for (const auto& u : unset) drop |= name_of(kv) == u;
    for (const auto& s : set) drop |= name_of(kv) == name_of(s);
    if (!drop) env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

inline Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    execvpe(a[0], a.data(), e.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  return {pid, out[0], err[0]};
}

inline ProcessResult finish(const Spawned& s) {
  ProcessResult r;
  pollfd fds[2] = {{s.out_fd, POLLIN, 0}, {s.err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  while (waitpid(s.pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

// finish(), but a process still running after `limit` is killed (SIGKILL):
// a test of a program that must end by itself fails instead of hanging.
inline ProcessResult finish_within(const Spawned& s, std::chrono::milliseconds limit) {
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!done.load()) kill(s.pid, SIGKILL);
  });
  ProcessResult r = finish(s);
  done.store(true);
  watchdog.join();
  return r;
}

inline ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  return finish(spawn(argv, env));
}

inline ProcessResult run(const std::vector<std::string>& argv) {
  return run(argv, environment_with({}));
}

}  // namespace gpuscope::test
