// CPU stack samples (format 1.4, HostSample): where the program's threads
// spend their CPU time, as call stacks, for CPU-bound findings.
//
// No signals, ever: a signal-driven profiler (SIGPROF) interrupts the
// program's system calls with EINTR and runs code on its threads. Instead
// the kernel samples (perf_event_open, the task clock, user mode only, so
// kernel.perf_event_paranoid = 2 allows it) and writes each sample with its
// user call chain into a ring mapped by this process; the writer thread
// reads the rings at every drain. The program's threads run no gpuscope
// code for it.
//
// Which threads: one event per CPU the process may run on, on the main
// thread with inheritance, so every thread it starts from then on is
// sampled from its first instruction (its samples land in the ring of the
// CPU it runs on); the kernel is asked not to pass the events on to forked
// children or across exec (inherit_thread, remove_on_exec; older kernels:
// samples of other processes are left out by pid). Threads that already
// exist when capture starts (an attach to a running service) get one event
// each, without inheritance.
//
// When: start_after_ms into the capture (GPUSCOPE_CPU_SAMPLING_DELAY_MS,
// default 50), not at its start. The kernel's first task event after a
// quiet second costs an RCU grace period (4-15 ms here) that the process
// cannot end during; a millisecond-long tool never opens one. The price: no
// samples of the first 50 ms, and a thread that a thread already running
// then starts later is not sampled (as after an attach); the main thread's
// new threads are.
//
// When the kernel refuses (EACCES under a stricter perf_event_paranoid,
// ENOSYS or EPERM under seccomp, EMFILE, a memory-lock limit), capture goes
// on without samples and the trace says why (Chunk.host_sampling).
#pragma once

#include <cstdint>
#include <memory>

#include "trace_source.h"

namespace gpuscope::capture {

// Gives a stack of frames (innermost first) its id in the trace's stack
// table, or 0 when it has none (preload/stacks: the table the call stacks
// of hooked calls use, so samples and call sites share ids and symbols).
using StackInterner = uint32_t (*)(const uint64_t* frames, uint32_t count);

struct HostSamplerConfig {
  uint32_t hz = 0;          // samples per second of a thread's CPU time; 0 = off
  uint32_t max_frames = 32;  // frames kept per sample
  StackInterner intern_stack = nullptr;
  // Sampling starts this long into the capture: a program that ends sooner
  // never pays the kernel's start of task perf events (host_sampler.cpp).
  uint32_t start_after_ms = 0;
};

std::unique_ptr<TraceSource> make_host_sampler(const HostSamplerConfig& config);

}  // namespace gpuscope::capture
