// The interpreter the hooks read, shared by the frame walk (hot path), the
// code-object copy and the writer's source. Internal to preload/python.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "python_layout.h"

namespace gpuscope::python {

// Published once (release) and never freed: a hook that sees the pointer
// sees all of it, and nothing is torn down under threads still capturing.
struct Runtime {
  Layout layout;
  void* (*this_thread_state)();
  int (*is_initialized)();
  const void* code_type;
  const void* unicode_type;
  const void* bytes_type;
};

// Null until a usable interpreter was found (and while Python stacks are off).
const Runtime* runtime() noexcept;

// Looks for the interpreter (again) and publishes it when usable. Start-up
// and the writer thread only. Returns what was found, for the status.
Interpreter detect_and_publish();
void unpublish();
// Python chains longer than a stack keeps (their outer frames left out).
uint64_t chains_cut() noexcept;

// A field of a CPython structure at `offset` bytes.
template <class T> T field(const char* base, int32_t offset) {
  T v;
  std::memcpy(&v, base + offset, sizeof v);
  return v;
}

}  // namespace gpuscope::python
