/* Prints, from one CPython version's own headers, the offsets gpuscope's
   frame walk reads (preload/python/python_layout.cpp), one "name value"
   line each, in python_layout_dump's names; check_layout.py compares the
   two. Built once per installed interpreter (tests/python/CMakeLists.txt). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif

#define SHOW(name, value) printf("%s %ld\n", name, (long)(value))

int main(void) {
  printf("minor %d\n", PY_MINOR_VERSION);
#if PY_VERSION_HEX < 0x030B0000
  SHOW("thread_frame", offsetof(PyThreadState, frame));
  SHOW("frame_previous", offsetof(PyFrameObject, f_back));
  SHOW("frame_code", offsetof(PyFrameObject, f_code));
  SHOW("frame_instruction", offsetof(PyFrameObject, f_lasti));
  SHOW("code_name", offsetof(PyCodeObject, co_name));
#else
#if PY_VERSION_HEX < 0x030D0000
  SHOW("thread_cframe", offsetof(PyThreadState, cframe));
  SHOW("cframe_frame", offsetof(_PyCFrame, current_frame));
  SHOW("frame_code", offsetof(_PyInterpreterFrame, f_code));
  SHOW("frame_instruction", offsetof(_PyInterpreterFrame, prev_instr));
#else
  SHOW("thread_frame", offsetof(PyThreadState, current_frame));
  SHOW("frame_code", offsetof(_PyInterpreterFrame, f_executable));
  SHOW("frame_instruction", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
  SHOW("frame_previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX < 0x030C0000
  SHOW("frame_entry", offsetof(_PyInterpreterFrame, is_entry));
#else
  SHOW("frame_entry", offsetof(_PyInterpreterFrame, owner));
  SHOW("shim_owner", FRAME_OWNED_BY_CSTACK);
#endif
  SHOW("code_bytecode", offsetof(PyCodeObject, co_code_adaptive));
  SHOW("code_name", offsetof(PyCodeObject, co_qualname));
#endif
  SHOW("code_filename", offsetof(PyCodeObject, co_filename));
  SHOW("code_first_line", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX < 0x030A0000
  SHOW("code_line_table", offsetof(PyCodeObject, co_lnotab));
#else
  SHOW("code_line_table", offsetof(PyCodeObject, co_linetable));
#endif
  SHOW("ascii_size", sizeof(PyASCIIObject));
  SHOW("compact_size", sizeof(PyCompactUnicodeObject));
  return 0;
}
