// Finding the definition a hook wraps. One place, because libgpuscope.so
// overrides dlsym (preload/loader/symbol_lookup.cpp): everything inside
// gpuscope that needs a symbol goes through the real dlsym found here.
#pragma once

namespace gpuscope::capture {

using DlsymFn = void* (*)(void*, const char*);

// glibc's own dlsym (dlvsym, GLIBC_2.34, else GLIBC_2.2.5, asked of the
// object that defines it), for gpuscope's own lookups: neither our override
// nor another interposer's (HAMi-core's, say) is consulted.
DlsymFn real_dlsym();

// The dlsym the program would reach without gpuscope: the next definition
// after libgpuscope.so, which may be another interposer's. For answering
// the program's own lookups (preload/loader/symbol_lookup.cpp).
DlsymFn next_dlsym();

// The next versioned dlsym after libgpuscope.so (glibc's, or a sanitizer
// runtime's): what the others are built on, and all a sanitizer runtime
// that is still initializing may be handed (no dladdr, no dlopen).
DlsymFn next_versioned_dlsym();

// The next definition of `name` after libgpuscope.so in lookup order, or null.
void* next_symbol(const char* name);

// The next definition of `name` at symbol version `version` after
// libgpuscope.so (glibc's dlvsym: gpuscope does not override it), or null.
void* next_versioned_symbol(const char* name, const char* version);

// Typed convenience: auto* real = next<decltype(&exit)>("exit");
template <class Fn> Fn next(const char* name) { return reinterpret_cast<Fn>(next_symbol(name)); }

}  // namespace gpuscope::capture
