// The loader front-end (issue 4): dlopen/dlclose/dlerror as libgpuscope.so
// exports them. Every attempt to load or unload a GPU library (and every
// load that gpuscope changed by removing RTLD_DEEPBIND, or that failed
// naming a GPU library) becomes a LibraryLoadEvent; every successful call
// tells the stack capture that the module map changed.
#pragma once

namespace gpuscope::loader {

// Where the exported dlopen jumps: returned in two registers.
struct DlopenRoute {
  void* target;  // dlopen_observed, or glibc's dlopen
  long mode;     // the mode to pass to it
};

DlopenRoute route_dlopen(const char* file, int mode, void* caller);

// Calls glibc's dlopen (with RTLD_DEEPBIND removed) and records the outcome.
void* dlopen_observed(const char* file, int mode);

// Whether glibc could search for `file` differently when called from the
// object containing `caller` than when called from libgpuscope.so.
bool search_depends_on_caller(const char* file, const void* caller);

}  // namespace gpuscope::loader
