// Python call sites, offline half: the source line of a captured CPython
// frame, decoded from the code object's raw line table as the trace carries
// it, and whether a frame's file is the user's own code (the headline call
// site is the innermost such frame). The tables come from the traced process
// and are treated as hostile: a damaged one yields "unknown", never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpuscope::analyzer::python {

// Instruction index value meaning "not known" (a frame that had not started,
// or an index beyond the 15 bits the stack value carries).
inline constexpr uint32_t kUnknownIndex = 0x7FFF;

// The source line of the instruction at `index`, counted in 2-byte code units
// from the start of the code object's bytecode, for the interpreter
// `version_hex` (PY_VERSION_HEX, e.g. 0x030B07F0 for 3.11.7), given the code
// object's raw line table (3.9: co_lnotab; 3.10: co_linetable, PEP 626;
// 3.11-3.13: co_linetable, the PEP 657 location table) and co_firstlineno.
// The answer is the one the interpreter's PyCode_Addr2Line gives. 0 when
// unknown: index == kUnknownIndex, an instruction without a line, an index
// past the table (3.10+; 3.9's table does not record the code's length), an
// unsupported version, or a malformed table.
int line_at(uint32_t version_hex, std::span<const uint8_t> line_table, int first_line, uint32_t index);

// Whether a Python frame's file is the user's own code: false for
// site-packages / dist-packages, the standard library (lib/pythonX.Y/ outside
// site-packages, wherever the prefix is: system, venv, pyenv; pythonXY.zip)
// and "<frozen ...>" modules; true for everything else, "<string>" and
// "<stdin>" included (python -c and exec'd code are the user's).
bool is_user_file(std::string_view path);

}  // namespace gpuscope::analyzer::python
