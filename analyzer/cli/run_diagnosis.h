// Why `gpuscope run` got no trace, from what can actually be checked: how
// exec failed, the executable's ELF (a program interpreter means the loader
// preloads libgpuscope.so), a script's interpreter, secure execution, the
// library's own reason relayed through a notes file, and how the program
// ended. Never a guess presented as a fact.
#pragma once

#include <string>
#include <vector>

namespace gpuscope::cli {

// "SIGSEGV (signal 11)".
std::string signal_text(int sig);

// A file the library appends to when a process of the run cannot create
// its trace (GPUSCOPE_RUN_NOTES; capture/diag.h, note_for_run): the
// run's summary can then say why, even when the program's own output buried
// the library's line. Made private (mkstemp) under $TMPDIR or /tmp, removed
// with this object.
class RunNotes {
 public:
  RunNotes();
  ~RunNotes();
  RunNotes(const RunNotes&) = delete;
  RunNotes& operator=(const RunNotes&) = delete;

  struct Note {
    int pid = 0;
    std::string exe;
    std::string why;
  };
  // Empty when the file could not be made (the run goes on without notes).
  const std::string& path() const { return path_; }
  std::vector<Note> read() const;

 private:
  std::string path_;
};

// Why exec of `command` (searched in PATH as execvp does) failed with
// `err`: strerror's words, and what the file turned out to be.
std::string exec_failure_cause(const std::string& command, int err);

// Why `command`, started and ended with `wait_status`, left no trace and no
// note: secure execution, a statically linked program (or script
// interpreter), another architecture, GPUSCOPE_DISABLE, or a death by
// signal before the library started.
std::string no_trace_cause(const std::string& command, int wait_status);

}  // namespace gpuscope::cli
