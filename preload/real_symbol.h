// Finding the definition a hook wraps. One place, because the dlsym
// override (driver hooks) must never call the overridden dlsym itself.
#pragma once

namespace gpuscope::preload {

// The next definition of `name` after libgpuscope.so in lookup order, or null.
void* next_symbol(const char* name);

// Typed convenience: auto* real = next<decltype(&exit)>("exit");
template <class Fn> Fn next(const char* name) { return reinterpret_cast<Fn>(next_symbol(name)); }

}  // namespace gpuscope::preload
