// Finding the definition a hook wraps. One place, because libgpuscope.so
// overrides dlsym (preload/loader/symbol_lookup.cpp): everything inside
// gpuscope that needs a symbol goes through the real dlsym found here.
#pragma once

namespace gpuscope::capture {

using DlsymFn = void* (*)(void*, const char*);

// glibc's dlsym, found with dlvsym (GLIBC_2.34, else GLIBC_2.2.5) so the
// override is never consulted.
DlsymFn real_dlsym();

// The next definition of `name` after libgpuscope.so in lookup order, or null.
void* next_symbol(const char* name);

// Typed convenience: auto* real = next<decltype(&exit)>("exit");
template <class Fn> Fn next(const char* name) { return reinterpret_cast<Fn>(next_symbol(name)); }

}  // namespace gpuscope::capture
