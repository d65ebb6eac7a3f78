// Where CPython keeps what a stack needs, per interpreter version: the
// thread's current frame, each frame's code object, instruction and caller,
// and a code object's names and line table. gpuscope reads these structures
// directly (docs/python.md): a hook may not call into the interpreter (it
// could allocate, take the GIL or run Python code), and the calling thread's
// own frame chain cannot change while that thread is inside the hook.
//
// The offsets are x86-64 figures for the release builds of 3.9 to 3.13 (the
// default, GIL build), taken from each version's headers; a 3.13 runtime
// also publishes them (_Py_DebugOffsets), and detection refuses to walk when
// the published ones disagree with the table.
#pragma once

#include <cstdint>
#include <string>

namespace gpuscope::python {

// How the instruction of a frame is held.
enum class InstructionField : uint8_t {
  LastiBytes,    // int f_lasti, a byte offset (3.9)
  LastiUnits,    // int f_lasti, in 2-byte code units (3.10)
  PointerUnits,  // _Py_CODEUNIT* into the code object's co_code_adaptive (3.11+)
};

// How the frames of one native call of the interpreter loop are delimited.
enum class EntryMark : uint8_t {
  EveryFrame,   // one _PyEval_EvalFrameDefault call per frame (3.9, 3.10)
  IsEntryFlag,  // bool is_entry on the first frame of a call (3.11)
  ShimOwner,    // a shim frame owned by the C stack sits between calls (3.12+)
};

struct Layout {
  uint16_t minor = 0;  // 3.minor
  // Thread state -> innermost frame: tstate[+thread_frame], or with a
  // cframe, *(tstate + thread_cframe) + cframe_frame.
  int32_t thread_frame = -1;
  int32_t thread_cframe = -1;
  int32_t cframe_frame = -1;
  int32_t frame_previous = 0;
  int32_t frame_code = 0;
  int32_t frame_instruction = 0;
  InstructionField instruction = InstructionField::LastiBytes;
  EntryMark entry = EntryMark::EveryFrame;
  int32_t frame_entry = -1;      // is_entry (3.11) or owner (3.12+)
  uint8_t shim_owner = 0;        // FRAME_OWNED_BY_CSTACK
  int32_t code_bytecode = -1;    // co_code_adaptive (3.11+)
  int32_t code_filename = 0;
  int32_t code_name = 0;         // co_qualname where the version has it, else co_name
  int32_t code_first_line = 0;
  int32_t code_line_table = 0;   // co_lnotab (3.9), co_linetable (3.10+)
  int32_t ascii_size = 0;        // sizeof(PyASCIIObject): compact ASCII text follows it
  int32_t compact_size = 0;      // sizeof(PyCompactUnicodeObject): other compact text follows it
};

// The built-in layout of CPython 3.minor; null for a version gpuscope does not know.
const Layout* layout_for(uint32_t minor);

// What detection found in this process.
struct Interpreter {
  const Layout* layout = nullptr;  // null: no usable interpreter (`why` says, when there is one)
  uint32_t version_hex = 0;        // PY_VERSION_HEX; 0 when no CPython is loaded
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  int (*is_initialized)() = nullptr;       // Py_IsInitialized
  const void* code_type = nullptr;         // &PyCode_Type
  const void* unicode_type = nullptr;      // &PyUnicode_Type
  const void* bytes_type = nullptr;        // &PyBytes_Type
  std::string why;
};

// Looks for a CPython runtime among the loaded objects (the executable's
// symbols or a libpython). Not for the hot path: dlsym and dl_iterate_phdr.
Interpreter detect_interpreter();

// 3.13's published offsets checked against `layout`: empty when they agree
// (or the runtime publishes none), else what differs. `debug_offsets` points
// at _PyRuntime, which begins with them.
std::string check_debug_offsets(const Layout& layout, const void* debug_offsets);

}  // namespace gpuscope::python
