// Call stacks for hooked calls (issue 4): raw return addresses captured with
// libunwind on the calling thread, deduplicated into a stack table, and a
// module map (path, build-id, load address) so that the analyzer can
// symbolize offline. Nothing is symbolized in the traced process.
#pragma once

#include <cstdint>
#include <memory>

#include "trace_source.h"

namespace gpuscope::stacks {

// Once, at capture start, before any hook records. depth: frames per stack
// (1..64). fast_walker: walk with cached unwind-table rules (fast_unwind.h)
// and use libunwind.so.8 only for frames it cannot follow; libunwind then
// loads later, on a thread of its own (started from the stack source's
// poll), and stacks the fast walker cannot finish before it lands (or at
// all, without it) are recorded as not unwound, the stack source noting a
// missing libunwind in the trace. false: libunwind for every stack, loaded
// here; without it stacks stay off and the stack source says why. A later
// call (tests, benchmarks) may change these or switch stacks off and on;
// ids already given stay valid.
void configure_stacks(bool enabled, uint32_t depth, bool fast_walker = true);

// The fast walker's fallback: start its background load now, if it waits
// for one (the stack source does this by itself), and whether that load
// has ended, loaded or not. For tests.
void start_fallback_unwinder_load();
bool fallback_unwinder_settled();

// Hot path: the id of the calling thread's current stack (0 = none, or
// stacks off, or the table full). Lock-free, allocation-free.
uint32_t capture_stack_id() noexcept;

// Writer thread: the id of a stack the CPU sampler took (capture/host_sampler.h),
// from the same table as the hooked calls' stacks, so both share ids, the
// module map and symbols; 0 when there is no table. sampled_stacks_wanted()
// makes the table (once, at start-up) when call stacks are off.
uint32_t intern_sampled_stack(const uint64_t* frames, uint32_t count);
void sampled_stacks_wanted();

// The loaded objects changed (dlopen/dlclose): the module map is rebuilt on
// the writer thread at its next poll.
void note_modules_changed() noexcept;

// Emits new stacks and (re)built module maps into the chunk being built.
std::unique_ptr<capture::TraceSource> make_stack_source();

}  // namespace gpuscope::stacks
