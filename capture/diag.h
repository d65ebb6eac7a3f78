// One-line messages from the capture library to the traced program's stderr.
// Used at start-up and on failures only, never per event. Safe to call from
// any thread: a closed or broken stderr can neither raise SIGPIPE in the
// program nor make gpuscope fail.
#pragma once

#include <string>

namespace gpuscope::capture {

// printf-style; a "gpuscope: " prefix and a newline are added.
void diag_line(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Why this process has no trace, for `gpuscope run`'s summary (the line on
// the program's stderr may be lost in its output): appended as
// "PID<TAB>EXE<TAB>WHY" to `notes_path` (GPUSCOPE_RUN_NOTES, a file the CLI
// made and reads when the run ends). Nothing happens when the path is empty
// or is not a regular file of this user; never created here.
void note_for_run(const std::string& notes_path, int pid, const std::string& exe, const std::string& why);

}  // namespace gpuscope::capture
