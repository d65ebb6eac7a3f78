// The capture session: the one owner of the thread buffers, the writer and
// the trace file of this process. Hook front-ends and tests drive it through
// these functions; the hot path only ever sees recorder.h.
#pragma once

#include <string>

#include <vector>

#include "config.h"
#include "end_note.h"
#include "process_info.h"
#include "recorder.h"
#include "side_tables.h"
#include "string_table.h"
#include "trace_source.h"

namespace gpuscope::capture {

// Creates the trace at `path` (refusing existing files, symlinks, FIFOs),
// writes its header and metadata, starts the writer, then turns the hot path
// on. Returns false with a sentence in *error when the trace cannot be made.
// `sources` (owned by the caller, alive until stop) are polled by the writer.
bool start_session(const SessionOptions& options, const std::string& path,
                   const ProcessMetadata& metadata, std::string* error,
                   std::vector<TraceSource*> sources = {});

// Ends capture: final drain, a Totals frame, file closed. Idempotent and
// thread-safe; waits at most options.exit_timeout_ms, then lets the process go.
// False only when the writer is still busy after that (it keeps its
// sources); a later session may start either way.
bool stop_session(const EndNote& end);
inline bool stop_session(fb::EndKind kind, int exit_status) { return stop_session(EndNote{kind, exit_status}); }

// The same at the end of the process, on the thread that ends it: that
// thread writes the last frame itself rather than waking the writer thread
// and waiting for it (each hand-over costs a scheduler time slice on a busy
// machine, while the program's other threads run on and print). The writer
// thread is let go, not joined, and nothing is freed: the process is about
// to end. Waits at most exit_timeout_ms for a drain in progress.
bool end_session_here(const EndNote& end);

// Before exec: writes all recorded so far plus a Totals frame for `kind`,
// and keeps capturing in case exec fails (a later Totals frame supersedes).
void checkpoint_session(fb::EndKind kind, int exit_status);

// In the child of fork(): recording is off for good, and the parent's writer
// thread, locks and file are never touched.
void disable_after_fork();

// Turns this process's capture off before it ever started (opt-out, secure
// execution, unusable output).
void disable_capture();

// Standby (preload/control/standby.h): hooks pass through at the flag
// check, exactly as outside a capture window, until an attach starts a
// session. Not from Disabled.
void enter_standby();

Phase current_phase();

// Whether this process may still record: recording now, or paused with a
// session running (between capture windows) or in standby (an attach may
// come). False once capture ended for good: the last window closed, exit,
// a fork child, opted out. Device collection set up at CUDA init asks.
bool capture_may_record();

// Thread buffers currently free (not owned by a live or not-yet-drained
// exited thread).
uint32_t free_thread_buffers();
const std::string& session_path();

// A dlopen/dlclose the program made (not a hot path: takes a mutex).
void note_library_load(container::LibraryLoadEvent event);

// Writer side: the loads noted since the last call.
std::vector<container::LibraryLoadEvent> take_library_loads();

// Function names, kernel names and the like, interned for records.
StringTable& session_strings();

// Run once by the first hooked call that arrives before the library's own
// constructor has started the session (another library's constructor
// calling CUDA, say). The core defines it weak and empty; the preload
// front-end (lifecycle.cpp) defines the real one, so it is in place before
// any constructor runs.
void initialize_capture_early();

}  // namespace gpuscope::capture
