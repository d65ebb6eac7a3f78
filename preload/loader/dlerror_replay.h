// Reading dlerror() for the trace without taking it from the program.
//
// glibc keeps one pending error per thread; dlerror() formats it, marks it
// delivered (the next call returns NULL), may set errno, and every later dl*
// call replaces or clears it. The dlopen/dlclose hooks want the text of a
// failure, so they read it, keep a copy, and leave a marker error in glibc's
// slot (a dlopen with an invalid mode and a unique name: no search, no
// load). gpuscope's exported dlerror() then gives the program:
//   - the copy, with errno as glibc's dlerror set it, when the marker is
//     still what glibc holds (nothing happened in between);
//   - glibc's own answer otherwise (a later dl* call cleared the error, or
//     left its own).
// So the program's dlerror() returns what it would have without gpuscope.
// All state is per thread; nothing here runs on a hot path.
#pragma once

#include <string>

namespace gpuscope::loader {

// Resolves glibc's dlerror and dlopen while no error is pending: the dl hooks
// call it before their real call (looking a symbol up clears glibc's slot).
void prepare_dlerror() noexcept;

// Whether the program's dlerror() reaches gpuscope's (it is exported and
// first in the global scope). Without it nothing may be read.
bool dlerror_interposed() noexcept;

// Right after a dl call of this thread failed: the message for the record,
// with the program's view kept intact. Empty when it cannot be read safely.
std::string take_error_for_record();

// A dl call is about to replace glibc's pending error: drop any replay.
void forget_pending_error() noexcept;

// What the exported dlerror() returns.
char* dlerror_for_program() noexcept;

}  // namespace gpuscope::loader
