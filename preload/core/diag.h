// One-line messages from the capture library to the traced program's stderr.
// Used at start-up and on failures only, never per event. Safe to call from
// any thread: a closed or broken stderr can neither raise SIGPIPE in the
// program nor make gpuscope fail.
#pragma once

namespace gpuscope::capture {

// printf-style; a "gpuscope: " prefix and a newline are added.
void diag_line(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gpuscope::capture
