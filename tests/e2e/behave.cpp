// A program that does what its arguments say, in order, so end-to-end tests
// can compare its behaviour with and without gpuscope:
//   out:TEXT err:TEXT      print a line to stdout / stderr
//   sleep:MS spin:MS       wait / burn CPU
//   threads:N              N threads, alive together for 200 ms, then joined
//   fork:CODE              fork; the child prints and exit()s with CODE
//   fork_exec:CODE         fork; the child execs this program to exit with CODE
//   vfork_exec:CODE        the same through vfork
//   spawn:CODE spawnp:CODE the same through posix_spawn / posix_spawnp (glibc
//                          execs from a CLONE_VM child by a direct syscall)
//   orphan:MS              fork; the child forks a grandchild and exits at once;
//                          the grandchild, reparented (to init or a subreaper),
//                          execs this program to sleep MS and print
//   return:C exit:C _exit:C thread_exit:C   end that way with status C
//   atexit_exit:C atexit__exit:C atexit_returns
//                          register an atexit handler that prints "atexit
//                          handler" and calls exit(C) / _exit(C) / returns
//   main_leaves:MS         the main thread calls pthread_exit; a thread it
//                          started prints "last thread done" after MS ms and
//                          returns: the process ends with it (exit(0))
//   abort signal:N         die by abort() / raise(N)
//   inject                 call InitializeInjection as the CUDA driver would
//                          (when the process has one), print inject:RESULT
//   profiler:start profiler:stop   cudaProfilerStart / cudaProfilerStop of
//                          libcudart.so.13 (loaded RTLD_GLOBAL), print
//                          profiler:start:RESULT
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

void inject() {
  auto* init = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "InitializeInjection"));
  if (init == nullptr) std::printf("inject:absent\n");
  else std::printf("inject:%d\n", init());
}

// Through the global scope, as a program linked to the runtime would call
// it: a preloaded definition comes first.
void profiler(const std::string& what) {
  if (dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::printf("profiler:%s:no-runtime\n", what.c_str());
    return;
  }
  const char* name = what == "start" ? "cudaProfilerStart" : "cudaProfilerStop";
  auto* call = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, name));
  std::printf("profiler:%s:%d\n", what.c_str(), call != nullptr ? call() : -1);
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "behave";
}

void spin(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + 1;
}

void run_threads(int n) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  for (auto& t : threads) t.join();
  std::printf("joined %d threads\n", n);
}

int wait_child(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void fork_child(int code, bool exec, bool use_vfork) {
  std::fflush(stdout);
  const std::string self = self_path();
  const std::string exit_arg = "exit:" + std::to_string(code);
  const pid_t pid = use_vfork ? vfork() : fork();
  if (pid == 0) {
    if (exec) {
      execl(self.c_str(), "behave", "out:exec-child", exit_arg.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::printf("fork-child\n");
    std::exit(code);  // runs atexit handlers and destructors in the child
  }
  std::printf("child exited %d\n", wait_child(pid));
}

void spawn_child(int code, bool search_path) {
  std::fflush(stdout);
  const std::string self = self_path();
  const std::string exit_arg = "exit:" + std::to_string(code);
  char* argv[] = {const_cast<char*>("behave"), const_cast<char*>("out:spawned-child"), const_cast<char*>(exit_arg.c_str()),
                  nullptr};
  pid_t pid = 0;
  const int rc = search_path ? posix_spawnp(&pid, self.c_str(), nullptr, nullptr, argv, environ)
                             : posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ);
  if (rc != 0) {
    std::printf("spawn failed %d\n", rc);
    return;
  }
  std::printf("child exited %d\n", wait_child(pid));
}

void orphan_child(int ms) {
  std::fflush(stdout);
  const std::string self = self_path();
  const std::string sleep_arg = "sleep:" + std::to_string(ms);
  const pid_t middle = fork();
  if (middle == 0) {
    if (fork() == 0) {
      usleep(200'000);  // the middle process is gone by now: we belong to init (or a subreaper)
      execl(self.c_str(), "behave", sleep_arg.c_str(), "out:orphan-done", static_cast<char*>(nullptr));
      _exit(127);
    }
    _exit(0);  // the grandchild loses its parent
  }
  std::printf("middle exited %d\n", wait_child(middle));
}

int g_atexit_status = 0;

void register_atexit(void (*handler)(), int status) {
  g_atexit_status = status;
  std::atexit(handler);
}

void atexit_exit() {
  std::printf("atexit handler\n");
  std::exit(g_atexit_status);
}

void atexit_immediate_exit() {
  std::printf("atexit handler\n");
  std::fflush(stdout);
  _exit(g_atexit_status);
}

void atexit_returns() { std::printf("atexit handler\n"); }

[[noreturn]] void main_leaves(int ms) {
  std::fflush(stdout);
  std::thread([ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::printf("last thread done\n");
  }).detach();
  pthread_exit(nullptr);
}

int value(const std::string& arg) { return std::atoi(arg.substr(arg.find(':') + 1).c_str()); }
std::string text(const std::string& arg) { return arg.substr(arg.find(':') + 1); }

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string cmd = a.substr(0, a.find(':'));
    if (cmd == "out") std::printf("%s\n", text(a).c_str());
    else if (cmd == "err") std::fprintf(stderr, "%s\n", text(a).c_str());
    else if (cmd == "sleep") std::this_thread::sleep_for(std::chrono::milliseconds(value(a)));
    else if (cmd == "spin") spin(value(a));
    else if (cmd == "threads") run_threads(value(a));
    else if (cmd == "fork") fork_child(value(a), false, false);
    else if (cmd == "fork_exec") fork_child(value(a), true, false);
    else if (cmd == "vfork_exec") fork_child(value(a), true, true);
    else if (cmd == "spawn") spawn_child(value(a), false);
    else if (cmd == "spawnp") spawn_child(value(a), true);
    else if (cmd == "orphan") orphan_child(value(a));
    else if (cmd == "return") return value(a);
    else if (cmd == "exit") std::exit(value(a));
    else if (cmd == "_exit") { std::fflush(stdout); _exit(value(a)); }
    else if (cmd == "thread_exit") std::thread([&] { std::fflush(stdout); std::exit(value(a)); }).join();
    else if (cmd == "atexit_exit") register_atexit(atexit_exit, value(a));
    else if (cmd == "atexit__exit") register_atexit(atexit_immediate_exit, value(a));
    else if (cmd == "atexit_returns") register_atexit(atexit_returns, 0);
    else if (cmd == "main_leaves") main_leaves(value(a));
    else if (cmd == "inject") inject();
    else if (cmd == "profiler") profiler(text(a));
    else if (cmd == "abort") { std::fflush(stdout); std::abort(); }
    else if (cmd == "signal") { std::fflush(stdout); raise(value(a)); }
    else { std::fprintf(stderr, "behave: unknown command %s\n", a.c_str()); return 99; }
    std::fflush(stdout);
  }
  return 0;
}
