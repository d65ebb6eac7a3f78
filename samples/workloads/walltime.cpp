// walltime: runs a slow command and a fast one (each once, one after the
// other) and checks that the slow one took at least RATIO times as long.
//   walltime RATIO -- SLOW... -- FAST...
// The ctest samples.walltime.* tests use it to show that simgpu's model
// reaches wall-clock time: a sample is measurably slower than its --fixed
// variant.  Each ratio is well under what the model predicts, so a loaded
// machine cannot make it flake; the tests also run alone (RUN_SERIAL).
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace {

double run(std::vector<char*> argv) {
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "walltime: cannot run %s\n", argv[0]);
    std::exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "walltime: %s failed (status %d)\n", argv[0], status);
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> slow, fast;
  std::vector<char*>* into = nullptr;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--")) {
      into = into ? &fast : &slow;
      continue;
    }
    if (into) into->push_back(argv[i]);
  }
  const double ratio = argc > 1 ? std::atof(argv[1]) : 0;
  if (ratio <= 0 || slow.empty() || fast.empty()) {
    std::fprintf(stderr, "usage: walltime RATIO -- SLOW COMMAND... -- FAST COMMAND...\n");
    return 2;
  }
  const double slow_s = run(slow), fast_s = run(fast);
  std::printf("walltime: %s took %.3f s, %s took %.3f s (%.2fx; required %.2fx)\n", slow[0], slow_s, fast[0], fast_s,
              slow_s / fast_s, ratio);
  return slow_s >= ratio * fast_s ? 0 : 1;
}
