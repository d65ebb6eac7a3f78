// libunwind, loaded at run time. libgpuscope.so must not link it: besides
// unw_backtrace, libunwind.so.8 exports a weak `backtrace` that would
// interpose the traced program's glibc backtrace() if the library sat in
// the global scope. So it is dlopen'ed RTLD_LOCAL and only the local-only
// (UNW_LOCAL_ONLY) entry points are looked up.
#pragma once

#include <string>

namespace gpuscope::stacks {

// unw_backtrace: the calling thread's return addresses, innermost first,
// starting with the one into the function that called unw_backtrace
// (libunwind leaves its own frame out); returns how many.
using BacktraceFn = int (*)(void** buffer, int size);

// Loads libunwind.so.8 (once; later calls return the first answer) and sets
// the local address space to per-thread caching, so unwinding takes no lock
// and masks no signals. Null, with the reason in *why, when it is missing
// or lacks an entry point: call stacks are then off.
BacktraceFn load_unwinder(std::string* why);

}  // namespace gpuscope::stacks
