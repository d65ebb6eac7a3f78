// Keeping the program's other threads from printing while gpuscope's own
// work makes the process's end longer.
//
// Without gpuscope a process is gone microseconds after its first exit();
// threads that race it (checkCudaErrors in several workers) rarely get to
// print. gpuscope's end adds time: waiting for a GPU probe in flight, the
// last write. During it, and while the ending thread then runs straight on
// to the end of the process, the other threads block on stdout and stderr
// (the ending thread holds both stream locks; it still prints itself).
// The streams go back to the program once the ending thread has waited 2 ms
// for anything outside gpuscope (code after gpuscope's joining a logger
// thread that prints), or after 200 ms of program code: the hold can delay
// such a program's end by about 2 ms, never hang it.
#pragma once

namespace gpuscope::capture {

// On the thread ending the process, before gpuscope's own end work.
// Idempotent; waits at most 20 ms for a thread that holds a stream's lock
// (one blocked writing to a full pipe); a second thread's call does nothing.
void hold_program_output() noexcept;

// Brackets gpuscope's own end work on the ending thread: while one is open
// the streams stay held even when the thread sleeps (waiting for the
// writer, for a GPU call in flight).
class EndWorkScope {
 public:
  EndWorkScope() noexcept;
  ~EndWorkScope();
  EndWorkScope(const EndWorkScope&) = delete;
  EndWorkScope& operator=(const EndWorkScope&) = delete;
};

}  // namespace gpuscope::capture
