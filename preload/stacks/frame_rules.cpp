// DWARF call-frame information (.eh_frame), the subset an x86-64 return
// address walk needs (frame_rules.h). The format: System V x86-64 psABI
// section 3.7 and the LSB's "Exception Frames"; DWARF 4 section 6.4.
#include "frame_rules.h"

#include <cstdint>
#include <cstring>

// libgcc's FDE lookup (part of the unwinder every C++ program carries;
// libgpuscope.so links libgcc statically): dl_iterate_phdr plus the
// .eh_frame_hdr binary-search table, with its own cache.
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(void* pc, struct dwarf_eh_bases* bases);

namespace gpuscope::stacks {
namespace {

constexpr uint64_t kRbp = 6, kRsp = 7;

class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  bool done() const { return !ok_ || p_ >= end_; }
  const uint8_t* pos() const { return p_; }
  uint8_t u8() { return ok_ && p_ < end_ ? *p_++ : fail(); }
  uint64_t fixed(size_t n) {
    if (!ok_ || static_cast<size_t>(end_ - p_) < n) return fail();
    uint64_t v = 0;
    std::memcpy(&v, p_, n);  // little-endian
    p_ += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = u8();
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  int64_t sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
      b = u8();
      v |= int64_t{b & 0x7f} << shift;
      shift += 7;
    } while ((b & 0x80) && shift < 64);
    if (shift < 64 && (b & 0x40)) v |= static_cast<int64_t>(~uint64_t{0} << shift);
    return v;
  }
  // Skips a pointer in DW_EH_PE encoding `enc` (its value is not needed).
  void skip_encoded(uint8_t enc) {
    switch (enc & 0x0f) {
      case 0x00: case 0x04: case 0x0c: fixed(8); break;
      case 0x02: case 0x0a: fixed(2); break;
      case 0x03: case 0x0b: fixed(4); break;
      case 0x01: uleb(); break;
      case 0x09: sleb(); break;
      default: fail();
    }
  }
  void skip(uint64_t n) {
    if (!ok_ || static_cast<uint64_t>(end_ - p_) < n) fail();
    else p_ += n;
  }

 private:
  uint8_t fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

struct RegRule {
  enum Kind : uint8_t { Same, Undefined, Offset, Other } kind = Same;
  int64_t offset = 0;
};

struct Row {
  uint64_t cfa_reg = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  RegRule rbp, ra, rsp;
};

RegRule* rule_of(Row& row, uint64_t reg, uint64_t ra_register) {
  if (reg == kRbp) return &row.rbp;
  if (reg == kRsp) return &row.rsp;
  if (reg == ra_register) return &row.ra;
  return nullptr;  // a register the walk does not need
}

void set_rule(Row& row, uint64_t reg, uint64_t ra_register, RegRule rule) {
  if (RegRule* r = rule_of(row, reg, ra_register)) *r = rule;
}

FrameRule to_frame_rule(const Row& row) {
  FrameRule out;
  if (row.ra.kind == RegRule::Undefined) {
    out.cfa = FrameRule::Cfa::End;
    return out;
  }
  const bool cfa_ok = !row.cfa_expression && (row.cfa_reg == kRsp || row.cfa_reg == kRbp);
  const bool ra_ok = row.ra.kind == RegRule::Offset && row.ra.offset == -8;
  const bool rbp_ok = row.rbp.kind == RegRule::Same || row.rbp.kind == RegRule::Offset;
  if (!cfa_ok || !ra_ok || !rbp_ok || row.rsp.kind != RegRule::Same) return out;
  out.cfa = row.cfa_reg == kRsp ? FrameRule::Cfa::Rsp : FrameRule::Cfa::Rbp;
  out.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  out.rbp_saved = row.rbp.kind == RegRule::Offset;
  out.rbp_offset = static_cast<int32_t>(row.rbp.offset);
  return out;
}

struct Interpreter {
  const CfiProgram& prog;
  uintptr_t pc;
  uintptr_t loc;
  Row row;
  Row initial;
  Row saved[8];
  int depth = 0;
  bool stop = false;  // reached a row past pc
  bool bad = false;   // an instruction the walker cannot follow

  // One instruction; sets `stop` at the first row past `pc`.
  void step(Reader& in);
  bool step_location(uint8_t op, Reader& in);
  bool step_cfa(uint8_t op, Reader& in);
  bool step_register(uint8_t op, Reader& in);
  void advance(uint64_t delta) {
    const uintptr_t next = loc + delta * prog.code_align;
    if (next > pc) stop = true;
    else loc = next;
  }
  // An offset times the data alignment. Real frames are far inside +-2^31;
  // anything beyond makes the program unusable instead of overflowing.
  int64_t scaled(int64_t v) {
    int64_t r = 0;
    if (__builtin_mul_overflow(v, prog.data_align, &r) || r > INT32_MAX || r < INT32_MIN) {
      bad = true;
      return 0;
    }
    return r;
  }
  int64_t scaled(uint64_t v) { return v > INT32_MAX ? scaled(int64_t{INT64_MAX}) : scaled(static_cast<int64_t>(v)); }
  int64_t unscaled(uint64_t v) {  // def_cfa's offsets are not scaled
    if (v <= INT32_MAX) return static_cast<int64_t>(v);
    bad = true;
    return 0;
  }
  void run(Reader in) {
    while (!in.done() && !stop && !bad) step(in);
    if (!in.ok()) bad = true;
  }
};

void Interpreter::step(Reader& in) {
  const uint8_t op = in.u8();
  const uint64_t ra = prog.ra_register;
  switch (op >> 6) {
    case 1: advance(op & 0x3f); return;  // advance_loc
    case 2: set_rule(row, op & 0x3f, ra, {RegRule::Offset, scaled(in.uleb())}); return;
    case 3:                              // restore
      if (RegRule* r = rule_of(initial, op & 0x3f, ra)) set_rule(row, op & 0x3f, ra, *r);
      return;
    default: break;
  }
  if (!step_location(op, in) && !step_cfa(op, in) && !step_register(op, in))
    bad = true;  // set_loc and anything unknown
}

// Opcodes that move the location or save and restore the row.
bool Interpreter::step_location(uint8_t op, Reader& in) {
  switch (op) {
    case 0x00: return true;                               // nop
    case 0x02: advance(in.u8()); return true;             // advance_loc1
    case 0x03: advance(in.fixed(2)); return true;         // advance_loc2
    case 0x04: advance(in.fixed(4)); return true;         // advance_loc4
    case 0x0a:                                            // remember_state
      if (depth == 8) bad = true;
      else saved[depth++] = row;
      return true;
    case 0x0b:                                            // restore_state: CFA rule included,
      if (depth == 0) bad = true;                         // as GCC and libunwind read it
      else row = saved[--depth];
      return true;
    case 0x2e: in.uleb(); return true;                    // GNU_args_size
    default: return false;
  }
}

// Opcodes that define the canonical frame address.
bool Interpreter::step_cfa(uint8_t op, Reader& in) {
  switch (op) {
    case 0x0c: row.cfa_reg = in.uleb(); row.cfa_offset = unscaled(in.uleb()); row.cfa_expression = false; return true;
    case 0x0d: row.cfa_reg = in.uleb(); row.cfa_expression = false; return true;
    case 0x0e: row.cfa_offset = unscaled(in.uleb()); return true;
    case 0x0f: in.skip(in.uleb()); row.cfa_expression = true; return true;  // def_cfa_expression
    case 0x12: row.cfa_reg = in.uleb(); row.cfa_offset = scaled(in.sleb()); row.cfa_expression = false; return true;
    case 0x13: row.cfa_offset = scaled(in.sleb()); return true;
    default: return false;
  }
}

// Opcodes that set one register's rule; the walker follows only "saved at
// CFA+offset", so every other kind is kept as Other (not recoverable).
bool Interpreter::step_register(uint8_t op, Reader& in) {
  const uint64_t ra = prog.ra_register;
  if (op < 0x05 || (op > 0x09 && op < 0x10) || (op > 0x16 && op != 0x2f)) return false;
  const uint64_t reg = in.uleb();
  switch (op) {
    case 0x05: set_rule(row, reg, ra, {RegRule::Offset, scaled(in.uleb())}); break;   // offset_extended
    case 0x06:                                                                        // restore_extended
      if (RegRule* r = rule_of(initial, reg, ra)) set_rule(row, reg, ra, *r);
      break;
    case 0x07: set_rule(row, reg, ra, {RegRule::Undefined, 0}); break;
    case 0x08: set_rule(row, reg, ra, {RegRule::Same, 0}); break;
    case 0x11: set_rule(row, reg, ra, {RegRule::Offset, scaled(in.sleb())}); break;   // offset_extended_sf
    case 0x2f: set_rule(row, reg, ra, {RegRule::Offset, -scaled(in.uleb())}); break;  // GNU_negative_offset_extended
    case 0x09: in.uleb(); set_rule(row, reg, ra, {RegRule::Other, 0}); break;         // register
    case 0x14: in.uleb(); set_rule(row, reg, ra, {RegRule::Other, 0}); break;         // val_offset
    case 0x15: in.sleb(); set_rule(row, reg, ra, {RegRule::Other, 0}); break;         // val_offset_sf
    default: in.skip(in.uleb()); set_rule(row, reg, ra, {RegRule::Other, 0}); break;  // (val_)expression
  }
  return true;
}

// The CIE's fields the program needs; false for a CIE the walker cannot use.
bool parse_cie(const uint8_t* cie, CfiProgram* prog, bool* signal_frame, bool* has_augmentation_data) {
  uint64_t length = 0;
  std::memcpy(&length, cie, 4);
  const uint8_t* p = cie + 4;
  if (length == 0xffffffffu) return false;  // 64-bit DWARF: never in .eh_frame on x86-64 Linux
  Reader in(p, p + length);
  if (in.fixed(4) != 0) return false;  // not a CIE
  const uint8_t version = in.u8();
  const char* aug = reinterpret_cast<const char*>(in.pos());
  const size_t aug_len = strnlen(aug, static_cast<size_t>(p + length - in.pos()));
  in.skip(aug_len + 1);
  prog->code_align = in.uleb();
  prog->data_align = in.sleb();
  prog->ra_register = version == 1 ? in.u8() : in.uleb();
  prog->fde_pointer_encoding = 0;
  *signal_frame = false;
  *has_augmentation_data = aug[0] == 'z';
  if (aug[0] == 'z') {
    const uint64_t data_len = in.uleb();
    const uint8_t* data_end = in.pos() + data_len;
    for (size_t i = 1; i < aug_len && in.ok(); ++i) {
      if (aug[i] == 'R') prog->fde_pointer_encoding = in.u8();
      else if (aug[i] == 'P') in.skip_encoded(in.u8());
      else if (aug[i] == 'L') in.u8();
      else if (aug[i] == 'S') *signal_frame = true;
      else break;  // unknown: the length lets us skip the rest
    }
    if (!in.ok() || in.pos() > data_end) return false;
    in = Reader(data_end, p + length);
  } else if (aug[0] != '\0') {
    return false;
  }
  prog->cie_instructions = in.pos();
  prog->cie_end = p + length;
  return in.ok();
}

}  // namespace

FrameRule run_cfi(const CfiProgram& prog, uintptr_t pc_begin, uintptr_t pc) noexcept {
  Interpreter it{prog, pc, pc_begin, {}, {}, {}};
  // The CIE's instructions set the initial row; they never advance.
  it.pc = UINTPTR_MAX;
  it.run(Reader(prog.cie_instructions, prog.cie_end));
  if (it.bad) return {};
  it.initial = it.row;
  it.pc = pc;
  it.loc = pc_begin;
  it.run(Reader(prog.fde_instructions, prog.fde_end));
  return it.bad ? FrameRule{} : to_frame_rule(it.row);
}

FrameRule frame_rule_at(uintptr_t pc) noexcept {
  dwarf_eh_bases bases{};
  const auto* fde = static_cast<const uint8_t*>(_Unwind_Find_FDE(reinterpret_cast<void*>(pc), &bases));
  if (fde == nullptr) return {};
  uint32_t length = 0, cie_offset = 0;
  std::memcpy(&length, fde, 4);
  std::memcpy(&cie_offset, fde + 4, 4);
  if (length == 0xffffffffu || length < 8) return {};
  CfiProgram prog{};
  bool signal_frame = false, z = false;
  if (!parse_cie(fde + 4 - cie_offset, &prog, &signal_frame, &z) || signal_frame) return {};
  Reader in(fde + 8, fde + 4 + length);
  in.skip_encoded(prog.fde_pointer_encoding);  // pc_begin: bases.func has it decoded
  in.skip_encoded(prog.fde_pointer_encoding & 0x0f);  // pc_range: same size, no relocation
  if (z) in.skip(in.uleb());  // the FDE's augmentation data (an LSDA pointer)
  if (!in.ok()) return {};
  prog.fde_instructions = in.pos();
  prog.fde_end = fde + 4 + length;
  return run_cfi(prog, reinterpret_cast<uintptr_t>(bases.func), pc);
}

}  // namespace gpuscope::stacks
