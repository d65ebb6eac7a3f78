// How to step from one x86-64 frame to its caller, read from the unwind
// tables (.eh_frame) every x86-64 object carries, for the fast walker
// (fast_unwind.h). Only what a return-address walk needs: where the CFA is
// (rsp or rbp plus an offset), where the caller's rbp was saved, and that
// the return address sits at CFA - 8. Anything else (expressions, signal
// frames, a CFA in another register, a return address elsewhere) is
// "unsupported", and the walker hands the whole stack to libunwind.
#pragma once

#include <cstdint>

namespace gpuscope::stacks {

struct FrameRule {
  enum class Cfa : uint8_t { Unsupported, Rsp, Rbp, End };  // End: the outermost frame (RA undefined)
  Cfa cfa = Cfa::Unsupported;
  int32_t cfa_offset = 0;
  bool rbp_saved = false;  // else the caller's rbp is this frame's rbp
  int32_t rbp_offset = 0;  // from the CFA, when saved
};

// The rule in effect at code address `pc` (for a return address, pass the
// address minus one: the call instruction, not what follows it). Reads the
// FDE through libgcc's _Unwind_Find_FDE; slow path only (parses each time).
FrameRule frame_rule_at(uintptr_t pc) noexcept;

// The CFA program interpreter on its own, for tests: runs CIE then FDE
// instructions up to `pc` (relative to `pc_begin`).
struct CfiProgram {
  const uint8_t* cie_instructions;
  const uint8_t* cie_end;
  const uint8_t* fde_instructions;
  const uint8_t* fde_end;
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_register;
  uint8_t fde_pointer_encoding;  // for DW_CFA_set_loc
};
FrameRule run_cfi(const CfiProgram& program, uintptr_t pc_begin, uintptr_t pc) noexcept;

}  // namespace gpuscope::stacks
