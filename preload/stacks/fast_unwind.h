// The fast stack walker: return addresses found with the unwind tables'
// rules (frame_rules.h), cached per return address in one process-wide,
// lock-free table, so a warm walk costs a table probe and two loads per
// frame (libunwind's cached walk costs ~10 ns per frame; docs/performance.md).
// Every stack read is checked against the thread's stack bounds, so a wrong
// rule gives a short or odd stack, never a fault in the traced program.
#pragma once

namespace gpuscope::stacks {

// Maps the rule cache (once). False when it cannot: use libunwind alone.
bool init_fast_unwind() noexcept;

// Code may have been unloaded (dlclose): rules cached so far are dropped.
void forget_unwind_rules() noexcept;

// Like unw_backtrace: the calling thread's return addresses, innermost
// first, starting with the one into the function that called this; returns
// how many. -1 when a frame needs what only libunwind can do (a signal
// frame, a CFA expression, a stack this thread does not own): the caller
// then unwinds with libunwind instead.
int fast_backtrace(void** buffer, int size) noexcept;

}  // namespace gpuscope::stacks
