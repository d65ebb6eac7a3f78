// How the traced process ends, decided once.
//
// One thread ends a process. glibc before 2.41 lets a second thread's exit()
// run the remaining exit handlers and reach _exit while the first is still
// writing the trace (a truncated trace, 0 events); glibc 2.41 makes later
// exit() callers wait for good. gpuscope applies that rule to every way out
// while it has a trace to finish:
//  - the first thread to take a way out (return from main, exit,
//    quick_exit, _exit, _Exit, the last thread's exit) owns the end;
//  - the owner may take further steps (an atexit handler calling exit(8)
//    after main returned 0): the end record keeps the first step and the
//    status of the last (EndNote);
//  - another thread's exit() or quick_exit() waits for good, as in glibc
//    2.41; its _exit()/_Exit() takes the end over as long as the owner has
//    not begun writing the end record (then it waits too), so the status
//    the process ends with is always the one its trace records.
// And the main thread leaving by pthread_exit: glibc ends the process with
// exit(0) when its last thread ends, but it counts gpuscope's threads among
// them; a watch ends it when only gpuscope's threads are left.
#pragma once

#include "end_note.h"

namespace gpuscope::preload::process_end {

// The traced process's pid, set when capture starts: fork and vfork
// children are never arbitrated.
void set_process(int pid) noexcept;

// True in the traced process while it has a trace to finish or may start
// one (recording, between capture windows, in standby), and from the first
// step out on; after capture stopped for good by itself (the last capture
// window, a failed disk), every way out is glibc's alone.
bool applies() noexcept;

// A step out of the process: returns when the caller may go on; never
// returns when another thread owns the end (see above).
void take_step(fb::EndKind kind, int status) noexcept;

// The steps so far, for the end record.
capture::EndNote note() noexcept;

// Before writing the end record. True: the caller writes it. False: this
// thread is already writing it (a signal handler that interrupted that
// called _exit): skip it. Never returns when another thread owns the end.
bool begin_final_write() noexcept;

// Called when the main thread calls pthread_exit: if gpuscope has threads
// running, starts the watch that ends the process with exit(0) (end kind
// LastThreadExit) once only gpuscope's threads are left.
void main_thread_leaving() noexcept;

}  // namespace gpuscope::preload::process_end
