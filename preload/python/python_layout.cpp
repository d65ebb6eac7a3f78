#include "python_layout.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "real_symbol.h"

namespace gpuscope::python {
namespace {

using enum InstructionField;
using enum EntryMark;

// Offsets from each version's headers (x86-64, release, GIL build):
// PyThreadState, PyFrameObject / _PyInterpreterFrame, PyCodeObject and the
// compact unicode objects. tests/python/layout_offsets.c prints them from
// an installed version's headers (ctest python_layout.*, every pyenv version),
// and tests/python/check_python_stacks.py runs every version end to end.
constexpr Layout kLayouts[] = {
    {.minor = 9, .thread_frame = 24, .frame_previous = 24, .frame_code = 32, .frame_instruction = 104,
     .instruction = LastiBytes, .entry = EveryFrame, .code_filename = 104, .code_name = 112,
     .code_first_line = 40, .code_line_table = 120, .ascii_size = 48, .compact_size = 72},
    {.minor = 10, .thread_frame = 24, .frame_previous = 24, .frame_code = 32, .frame_instruction = 96,
     .instruction = LastiUnits, .entry = EveryFrame, .code_filename = 104, .code_name = 112,
     .code_first_line = 40, .code_line_table = 120, .ascii_size = 48, .compact_size = 72},
    {.minor = 11, .thread_cframe = 56, .cframe_frame = 8, .frame_previous = 48, .frame_code = 32,
     .frame_instruction = 56, .instruction = PointerUnits, .entry = IsEntryFlag, .frame_entry = 68,
     .code_bytecode = 184, .code_filename = 112, .code_name = 128, .code_first_line = 72,
     .code_line_table = 136, .ascii_size = 48, .compact_size = 72},
    {.minor = 12, .thread_cframe = 56, .cframe_frame = 0, .frame_previous = 8, .frame_code = 0,
     .frame_instruction = 56, .instruction = PointerUnits, .entry = ShimOwner, .frame_entry = 70,
     .shim_owner = 3, .code_bytecode = 192, .code_filename = 112, .code_name = 128, .code_first_line = 68,
     .code_line_table = 136, .ascii_size = 40, .compact_size = 56},
    {.minor = 13, .thread_frame = 72, .frame_previous = 8, .frame_code = 0, .frame_instruction = 56,
     .instruction = PointerUnits, .entry = ShimOwner, .frame_entry = 70, .shim_owner = 3,
     .code_bytecode = 200, .code_filename = 112, .code_name = 128, .code_first_line = 68,
     .code_line_table = 136, .ascii_size = 40, .compact_size = 56},
};

// A symbol of the interpreter: from the global scope (python itself, or a
// libpython it links), else from a libpython loaded privately (RTLD_LOCAL,
// as an embedding plugin does).
struct SymbolScope {
  bool found = false;
  void* handle = RTLD_DEFAULT;  // which is null: `found` says whether there is an interpreter
  void* find(const char* name) const { return capture::real_dlsym()(handle, name); }
};

int find_private_libpython(dl_phdr_info* info, size_t, void* out) {
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const auto slash = name.rfind('/');
  if (name.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with("libpython3.")) {
    *static_cast<std::string*>(out) = std::string(name);
    return 1;
  }
  return 0;
}

SymbolScope interpreter_scope() {
  if (capture::real_dlsym()(RTLD_DEFAULT, "PyGILState_GetThisThreadState") != nullptr) return {true, RTLD_DEFAULT};
  std::string path;
  dl_iterate_phdr(find_private_libpython, &path);
  if (path.empty()) return {};
  // RTLD_NOLOAD: only a handle to what is already there, never a load.
  auto* real_dlopen = capture::next<void* (*)(const char*, int)>("dlopen");
  void* handle = real_dlopen != nullptr ? real_dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  return {handle != nullptr, handle};
}

// PY_VERSION_HEX: Py_Version (3.11+), else parsed from Py_GetVersion()'s
// "3.10.13 (main, ...)" (a static string; callable before initialization).
uint32_t version_hex(const SymbolScope& scope) {
  if (const auto* v = static_cast<const unsigned long*>(scope.find("Py_Version"))) return static_cast<uint32_t>(*v);
  auto* get_version = reinterpret_cast<const char* (*)()>(scope.find("Py_GetVersion"));
  unsigned major = 0, minor = 0, micro = 0;
  if (get_version == nullptr || std::sscanf(get_version(), "%u.%u.%u", &major, &minor, &micro) < 2) return 0;
  return major << 24 | minor << 16 | micro << 8 | 0xF0;
}

}  // namespace

const Layout* layout_for(uint32_t minor) {
  for (const Layout& l : kLayouts)
    if (l.minor == minor) return &l;
  return nullptr;
}

Interpreter detect_interpreter() {
  Interpreter found;
  const SymbolScope scope = interpreter_scope();
  if (!scope.found) return found;
  found.this_thread_state = reinterpret_cast<void* (*)()>(scope.find("PyGILState_GetThisThreadState"));
  found.is_initialized = reinterpret_cast<int (*)()>(scope.find("Py_IsInitialized"));
  found.code_type = scope.find("PyCode_Type");
  found.unicode_type = scope.find("PyUnicode_Type");
  found.bytes_type = scope.find("PyBytes_Type");
  found.version_hex = version_hex(scope);
  if (found.this_thread_state == nullptr || found.version_hex == 0) {
    found.version_hex = 0;  // not CPython (or not one that says what it is)
    return found;
  }
  const uint32_t major = found.version_hex >> 24, minor = found.version_hex >> 16 & 0xFF;
  const std::string name = "CPython " + std::to_string(major) + "." + std::to_string(minor);
  if (major != 3 || layout_for(minor) == nullptr) {
    found.why = name + ": no frame layout known for this version (3.9 to 3.13 are)";
    return found;
  }
  if (found.is_initialized == nullptr || found.code_type == nullptr || found.unicode_type == nullptr ||
      found.bytes_type == nullptr) {
    found.why = name + ": Py_IsInitialized or a type object (code, str, bytes) not found";
    return found;
  }
  if (minor >= 13) {
    found.why = check_debug_offsets(*layout_for(minor), scope.find("_PyRuntime"));
    if (!found.why.empty()) {
      found.why = name + ": " + found.why;
      return found;
    }
  }
  found.layout = layout_for(minor);
  return found;
}

std::string check_debug_offsets(const Layout& layout, const void* debug_offsets) {
  if (debug_offsets == nullptr) return "the runtime's _PyRuntime was not found";
  // _Py_DebugOffsets as 3.13 lays it out: an 8-byte cookie, then 64-bit
  // words (version, free_threaded, then one group per structure).
  const auto* words = static_cast<const uint64_t*>(debug_offsets);
  if (std::memcmp(debug_offsets, "xdebugpy", 8) != 0) return "the runtime publishes no debug offsets";
  if (words[2] != 0) return "a free-threaded build, whose objects gpuscope cannot read";
  struct Check {
    const char* what;
    size_t word;
    int32_t expected;
  };
  const Check checks[] = {
      {"thread state current_frame", 23, layout.thread_frame},
      {"frame previous", 29, layout.frame_previous},
      {"frame executable", 30, layout.frame_code},
      {"frame instr_ptr", 31, layout.frame_instruction},
      {"frame owner", 33, layout.frame_entry},
      {"code filename", 35, layout.code_filename},
      {"code qualname", 37, layout.code_name},
      {"code linetable", 38, layout.code_line_table},
      {"code firstlineno", 39, layout.code_first_line},
      {"code co_code_adaptive", 43, layout.code_bytecode},
  };
  for (const Check& c : checks)
    if (words[c.word] != static_cast<uint64_t>(c.expected))
      return std::string("the runtime's ") + c.what + " offset is " + std::to_string(words[c.word]) +
             ", gpuscope's layout says " + std::to_string(c.expected);
  return {};
}

}  // namespace gpuscope::python
