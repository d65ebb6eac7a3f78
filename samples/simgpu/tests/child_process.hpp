// A forked child that does some work and stays alive until the parent has
// looked at the shared device state: a live process is one NVML lists. Used
// by the tests of per-process accounting (test_nvml, test_shared_state).
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace simgpu_test {

struct ChildRun {
  pid_t pid = -1;      // -1: fork or pipe failed
  bool ok = false;     // the child's work reported success
  int status = 0;      // waitpid's status
};

// Runs `work` (returning bool) in a child; once it has reported, runs
// `look(child pid)` in the parent while the child waits, then lets the child
// exit and reaps it. The child only does `work`, a write, a read and _exit.
template <class Work, class Look> ChildRun run_child_while(Work&& work, Look&& look) {
  ChildRun run;
  int ready[2], go[2];
  if (pipe(ready) != 0) return run;
  if (pipe(go) != 0) {
    close(ready[0]);
    close(ready[1]);
    return run;
  }
  run.pid = fork();
  if (run.pid == 0) {
    close(ready[0]);
    close(go[1]);  // or the child's read never sees the parent's end close
    char c = work() ? 'y' : 'n';
    const bool told = write(ready[1], &c, 1) == 1;
    _exit(told && read(go[0], &c, 1) >= 0 ? 0 : 1);
  }
  close(ready[1]);
  close(go[0]);
  char c = 0;
  const bool heard = run.pid > 0 && read(ready[0], &c, 1) == 1;  // EOF if the child died
  if (heard) look(run.pid);
  close(go[1]);
  close(ready[0]);
  if (run.pid > 0) waitpid(run.pid, &run.status, 0);
  run.ok = heard && c == 'y';
  return run;
}

}  // namespace simgpu_test
