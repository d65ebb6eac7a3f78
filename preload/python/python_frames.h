// Python frames in the call stacks of hooked calls (issue 20): the calling
// thread's CPython frame chain, read in the hook without calling into the
// interpreter, appended to the native frames as tagged values
// (schemas/python_frame.h); the code objects those frames run are copied
// into the trace the first time a stack shows them, so the analyzer can
// name file, function and line after the code objects are gone.
#pragma once

#include <cstdint>
#include <memory>

#include "trace_source.h"

namespace gpuscope::python {

// Frames kept per stack; a deeper chain keeps its innermost frames.
inline constexpr uint32_t kMaxPythonFrames = 64;

// At capture start (and again in tests): looks for a CPython runtime in the
// process when `enabled`; the source looks again when libraries are loaded
// later. Off: no Python frames.
void configure_python_stacks(bool enabled);

// Hot path: appends the calling thread's Python frames, innermost first, to
// `out` (at most `room`), and returns how many. Lock-free, allocation-free,
// no syscall; 0 outside Python threads or without a known interpreter.
uint32_t append_python_frames(uint64_t* out, uint32_t room) noexcept;

// Hot path, for a stack seen for the first time: copies the code objects of
// its Python frames that no earlier stack had. The frames must be the
// calling thread's current ones (their code objects are alive).
void remember_python_codes(const uint64_t* frames, uint32_t count) noexcept;

// Writer thread: the status and the copied code objects, into the trace.
std::unique_ptr<capture::TraceSource> make_python_source();

}  // namespace gpuscope::python
