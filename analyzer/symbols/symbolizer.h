// Turns the return addresses of recorded call stacks into function, file and
// line, offline, with elfutils libdw: each module the trace lists is opened
// by path at its recorded load address. A module whose file is gone (or
// was replaced: its build-id differs) leaves "module+0xoffset". Frames in
// gpuscope itself are skipped; inlined calls show as their own frames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trace_summary.h"

namespace gpuscope::analyzer {

struct Frame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file, empty when no line info
  int line = 0;
  std::string module;    // basename of the module
  uint64_t offset = 0;   // address relative to the module's ELF vaddrs
  bool inlined = false;
  bool python = false;   // a CPython frame: function is the qualified name, module "python"
  bool user = false;     // a Python frame in the user's own code (not a library, not the stdlib)
  std::string text() const;  // "f (file.cpp:12)" or "libx.so+0x1234"
};

// A C++ symbol demangled; the name itself when it is not a mangled one.
std::string demangle(const char* name);

class Symbolizer {
 public:
  // Unread: no module is opened, and every native frame stays
  // "module+0xoffset" (Python frames are still named: the trace holds them).
  enum class Modules { Read, Unread };
  explicit Symbolizer(const reader::TraceSummary& summary, Modules modules = Modules::Read);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The stack's frames from the innermost caller outwards, gpuscope's own
  // frames removed; at most max_frames. A CPU stack sample's chain comes
  // from frame pointers, which code built without them leaves holding
  // anything: `sampled` ends such a stack at its first address outside
  // every module (what follows is not a caller).
  enum class Walk { Unwound, Sampled };
  std::vector<Frame> stack(uint32_t stack_id, size_t max_frames, Walk walk = Walk::Unwound) const;
  // The program's frame that made the call, as text: in a Python program,
  // the innermost frame of the user's own Python code (else the innermost
  // Python frame); otherwise the innermost frame that is not an inline
  // wrapper from the CUDA toolkit's headers (cudaMalloc<T>, the launch
  // helper). Empty when the stack has no frames.
  std::string caller_text(uint32_t stack_id) const;
  // At most max_frames of the stack, from its headline frame outwards: the
  // innermost user Python frame where the stack has one (the native frames
  // inside libraries and the interpreter are left out), else the innermost.
  std::vector<Frame> site_frames(uint32_t stack_id, size_t max_frames) const;
  bool has_python_frames(uint32_t stack_id) const;
  uint64_t unsymbolized() const { return unsymbolized_; }
  uint64_t symbolized() const { return symbolized_; }

 private:
  Frame python_frame(uint64_t value) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  mutable uint64_t unsymbolized_ = 0, symbolized_ = 0;
};

}  // namespace gpuscope::analyzer
