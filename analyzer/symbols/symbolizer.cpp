#include "symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "python_frame.h"
#include "python_lines.h"

namespace gpuscope::analyzer {
std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && out != nullptr ? out : name;
  std::free(out);
  return s;
}

namespace {

std::string basename_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool is_toolkit_inline(const Frame& f) {
  const std::string base = basename_of(f.file);
  return f.inlined && (base.starts_with("cuda_runtime") || base.starts_with("cuda_device_runtime") ||
                       base.starts_with("device_functions") ||
                       (f.file.find("/include/") != std::string::npos && f.file.find("cuda") != std::string::npos));
}

bool is_gpuscope_module(const std::string& path) { return basename_of(path).starts_with("libgpuscope"); }

// The C and C++ runtime: named by their symbols only. Their DWARF, where a
// distribution's debug package installs it, is a separate compressed file
// (libc6-dbg: 3 MB, inflated in full on first use, ~40 ms), and its file and
// line ("clock_gettime.c:42") say nothing about the traced program. The
// report is then also the same with or without those packages.
bool is_language_runtime(const std::string& module) {
  static constexpr std::string_view kRuntimes[] = {"libc.so",      "libc-",         "ld-linux",   "libm.so",
                                                   "libstdc++.so", "libgcc_s.so",   "libpthread", "libdl.so",
                                                   "librt.so",     "libresolv.so"};
  return std::any_of(std::begin(kRuntimes), std::end(kRuntimes),
                     [&](std::string_view prefix) { return module.starts_with(prefix); });
}

// The name of a subprogram or inlined call, through its abstract origin.
std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name})
    if (dwarf_attr_integrate(die, at, &attr) != nullptr)
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
  return {};
}

int die_int(Dwarf_Die* die, int at) {
  Dwarf_Attribute attr;
  Dwarf_Word v = 0;
  if (dwarf_attr(die, at, &attr) == nullptr || dwarf_formudata(&attr, &v) != 0) return 0;
  return static_cast<int>(v);
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Whether libdwfl's own search (/usr/lib/debug/.build-id, then the
// .gnu_debuglink name beside the file, in .debug/ and under /usr/lib/debug)
// can find a separate debug file for `mod`.
bool local_debuginfo_exists(Dwfl_Module* mod, const char* file_name, const char* debuglink_file) {
  const unsigned char* id = nullptr;
  GElf_Addr vaddr = 0;
  const int len = dwfl_module_build_id(mod, &id, &vaddr);
  if (len > 1) {
    std::string path = fmt::format("/usr/lib/debug/.build-id/{:02x}/", id[0]);
    for (int i = 1; i < len; ++i) path += fmt::format("{:02x}", id[i]);
    if (exists(path + ".debug")) return true;
  }
  if (debuglink_file == nullptr || file_name == nullptr) return false;
  const std::string dir = std::filesystem::path(file_name).parent_path().string();
  return exists(dir + "/" + debuglink_file) || exists(dir + "/.debug/" + debuglink_file) ||
         exists("/usr/lib/debug" + dir + "/" + debuglink_file);
}

// libdw 0.188 falls back to debuginfod for every module without a local
// debug file, and loads libdebuginfod (with libcurl and some 25 libraries:
// ~18 ms) to do so even when no server is configured. The fallback is kept
// for users who set DEBUGINFOD_URLS; otherwise the standard search runs only
// where it can succeed without it.
int find_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                   const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  const char* servers = std::getenv("DEBUGINFOD_URLS");
  if ((servers == nullptr || servers[0] == '\0') && !local_debuginfo_exists(mod, file_name, debuglink_file))
    return -1;
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

// The concrete functions of one compile unit by address. dwarf_getscopes
// steps through the unit's DIEs for every address it is asked about, and
// gives the innermost inlined call only (the function around a chain of
// them was shown with its callee's line). The unit's functions are listed
// once here; an address then needs a binary search and a walk down its own
// function, which finds every inlined level.
struct FunctionSpan {
  Dwarf_Addr low = 0, high = 0;
  Dwarf_Addr reach = 0;  // the highest `high` up to this span: where a search back may stop
  Dwarf_Die die{};
};
using UnitFunctions = std::vector<FunctionSpan>;  // by `low`

// The functions defined at `scope`'s level and in the namespaces under it.
// Types, and the bodies of functions, are stepped over whole (their
// sibling links): a C++ unit is mostly the types its headers declare, and
// dwarf_getfuncs, which walks into all of them, cost more than it saved.
void add_functions(Dwarf_Die* scope, UnitFunctions* out) {
  Dwarf_Die child;
  if (dwarf_child(scope, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_namespace) add_functions(&child, out);
    if (tag != DW_TAG_subprogram) continue;
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t at = 0; (at = dwarf_ranges(&child, at, &base, &low, &high)) > 0;)
      out->push_back({low, high, 0, child});
  } while (dwarf_siblingof(&child, &child) == 0);
}

UnitFunctions index_functions(Dwarf_Die* unit) {
  UnitFunctions spans;
  add_functions(unit, &spans);
  std::sort(spans.begin(), spans.end(), [](const FunctionSpan& a, const FunctionSpan& b) { return a.low < b.low; });
  Dwarf_Addr reach = 0;
  for (FunctionSpan& f : spans) f.reach = reach = std::max(reach, f.high);
  return spans;
}

// The narrowest function holding `pc` (a nested function inside its
// parent); null when none does.
const FunctionSpan* function_at(const UnitFunctions& spans, Dwarf_Addr pc) {
  auto it = std::upper_bound(spans.begin(), spans.end(), pc,
                             [](Dwarf_Addr a, const FunctionSpan& f) { return a < f.low; });
  const FunctionSpan* best = nullptr;
  while (it != spans.begin()) {
    --it;
    if (it->reach <= pc) break;  // nothing at or before here reaches pc
    if (pc < it->high && (best == nullptr || it->high - it->low < best->high - best->low)) best = &*it;
  }
  return best;
}

bool is_code_scope(int tag) {
  return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
         tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

// The scope directly inside `scope` that holds `pc`, if one does.
bool inner_scope_at(Dwarf_Die* scope, Dwarf_Addr pc, Dwarf_Die* inner) {
  if (dwarf_child(scope, inner) != 0) return false;
  do {
    if (is_code_scope(dwarf_tag(inner)) && dwarf_haspc(inner, pc) == 1) return true;
  } while (dwarf_siblingof(inner, inner) == 0);
  return false;
}

// The inlined calls at `pc` inside `function`, innermost first: down the
// chain of scopes that hold pc, every level of it.
std::vector<Dwarf_Die> inlined_calls(Dwarf_Die function, Dwarf_Addr pc) {
  std::vector<Dwarf_Die> calls;
  for (Dwarf_Die scope = function, inner; inner_scope_at(&scope, pc, &inner); scope = inner)
    if (dwarf_tag(&inner) == DW_TAG_inlined_subroutine) calls.push_back(inner);
  std::reverse(calls.begin(), calls.end());
  return calls;
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

}  // namespace

std::string Frame::text() const {
  std::string where = file.empty() ? "" : fmt::format(" ({}:{})", basename_of(file), line);
  if (!function.empty()) return function + where + (inlined ? " [inlined]" : "");
  return fmt::format("{}+0x{:x}", module.empty() ? "?" : module, offset);
}

struct Symbolizer::Impl {
  Dwfl* dwfl = nullptr;
  const reader::TraceSummary* summary = nullptr;
  std::set<std::string> stale;  // files whose build-id is not the traced one
  // Each return address resolved once: CPU samples and call sites repeat a
  // few hundred addresses thousands of times, and every DWARF lookup walks
  // the compile unit's tree of DIEs (most of `analyze` on a short trace).
  struct Resolved {
    std::vector<Frame> frames;
    bool symbolized = false;
  };
  mutable std::unordered_map<uint64_t, Resolved> resolved_at;
  mutable std::unordered_map<const void*, UnitFunctions> units;  // by the unit DIE's address

  void frames_at(uint64_t pc, std::vector<Frame>& out, bool* resolved) const {
    auto [it, fresh] = resolved_at.try_emplace(pc);
    if (fresh) resolve(pc, it->second.frames, &it->second.symbolized);
    out.insert(out.end(), it->second.frames.begin(), it->second.frames.end());
    *resolved = it->second.symbolized;
  }

  const container::ModuleDescription* module_at(uint64_t pc) const {
    for (const auto& m : summary->modules)
      if (pc >= m.low_address && pc < m.high_address) return &m;
    return nullptr;
  }

  // Appends the frames of one return address: inlined calls innermost first.
  void resolve(uint64_t pc, std::vector<Frame>& out, bool* resolved) const {
    const container::ModuleDescription* desc = module_at(pc);
    Frame base;
    base.module = desc ? basename_of(desc->path) : "";
    base.offset = desc ? pc - desc->load_address : pc;
    *resolved = false;
    Dwfl_Module* mod = dwfl && !(desc && stale.count(desc->path)) ? dwfl_addrmodule(dwfl, pc) : nullptr;
    if (mod == nullptr) {
      out.push_back(base);
      return;
    }
    const uint64_t at = pc - 1;  // inside the call instruction, not after it
    Frame outer = base;
    outer.function = demangle(dwfl_module_addrname(mod, at));
    *resolved = !outer.function.empty();
    if (is_language_runtime(outer.module)) {
      out.push_back(outer);
      return;
    }
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, at)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        outer.file = file;
        outer.line = lineno;
      }
    }
    add_inlined(mod, at, outer, out);
  }

  // The inlined calls at `pc` of the unit `cu`, innermost first; a unit's
  // functions are indexed on its first address.
  std::vector<Dwarf_Die> inlined_at(Dwarf_Die* cu, Dwarf_Addr pc) const {
    auto [it, fresh] = units.try_emplace(cu->addr);
    if (fresh) it->second = index_functions(cu);
    if (const FunctionSpan* f = function_at(it->second, pc)) return inlined_calls(f->die, pc);
    Dwarf_Die* scopes = nullptr;  // no function holds pc: the unit's own walk decides
    const int n = dwarf_getscopes(cu, pc, &scopes);
    std::vector<Dwarf_Die> calls;
    for (int i = 0; i < n; ++i)
      if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) calls.push_back(scopes[i]);
    std::free(scopes);
    return calls;
  }

  // With DWARF, the inlined calls at `at` come first (innermost first), each
  // carrying the source line; the enclosing function gets the call line.
  void add_inlined(Dwfl_Module* mod, uint64_t at, Frame outer, std::vector<Frame>& out) const {
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(mod, at, &bias);
    std::vector<Dwarf_Die> calls = cu ? inlined_at(cu, at - bias) : std::vector<Dwarf_Die>{};
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (cu) dwarf_getsrcfiles(cu, &files, &nfiles);
    std::string file = outer.file;
    int line = outer.line;
    for (Dwarf_Die& call : calls) {
      Frame f = outer;
      f.function = die_name(&call);
      f.inlined = true;
      f.file = file;
      f.line = line;
      out.push_back(f);
      const int call_file = die_int(&call, DW_AT_call_file);
      const char* name = files && call_file > 0 ? dwarf_filesrc(files, call_file, nullptr, nullptr) : nullptr;
      file = name ? name : "";
      line = die_int(&call, DW_AT_call_line);
    }
    outer.file = file;
    outer.line = line;
    out.push_back(outer);
  }
};

Symbolizer::Symbolizer(const reader::TraceSummary& summary, Modules modules) : impl_(std::make_unique<Impl>()) {
  impl_->summary = &summary;
  if (modules == Modules::Unread) return;
  impl_->dwfl = dwfl_begin(&kOfflineCallbacks);
  if (impl_->dwfl == nullptr) return;
  dwfl_report_begin(impl_->dwfl);
  std::error_code ec;
  for (const auto& m : summary.modules) {
    if (m.path.empty() || m.path.front() != '/' || !std::filesystem::is_regular_file(m.path, ec)) continue;
    Dwfl_Module* mod = dwfl_report_elf(impl_->dwfl, basename_of(m.path).c_str(), m.path.c_str(), -1,
                                       m.load_address, false);
    if (mod == nullptr || m.build_id.empty()) continue;
    // A file replaced since the run would symbolize wrongly: drop it.
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (len <= 0 || static_cast<size_t>(len) != m.build_id.size() || std::memcmp(bits, m.build_id.data(), len) != 0)
      impl_->stale.insert(m.path);
  }
  dwfl_report_end(impl_->dwfl, nullptr, nullptr);
}

Symbolizer::~Symbolizer() {
  if (impl_->dwfl) dwfl_end(impl_->dwfl);
}

namespace {

// The Python frames of a stack, innermost first, in groups: one group per
// native call of the interpreter loop (the last frame of each carries the
// call-end bit).
std::vector<std::vector<uint64_t>> python_groups(const std::vector<uint64_t>& values) {
  std::vector<std::vector<uint64_t>> groups;
  bool open = false;
  for (uint64_t v : values) {
    if (!container::is_python_frame(v)) continue;
    if (!open) groups.emplace_back();
    groups.back().push_back(v);
    open = !container::python_frame_ends_call(v);
  }
  return groups;
}

// The native frame of CPython's interpreter loop (its .cold part included);
// not the inline wrapper _PyEval_EvalFrame, which sits in the loop's caller.
bool is_interpreter_loop(const std::vector<Frame>& frames) {
  return !frames.empty() && frames.back().function.starts_with("_PyEval_EvalFrameDefault");
}

// A native frame of the interpreter itself (libpython, or a python
// executable that links it statically).
bool is_interpreter_frame(const Frame& f) {
  return !f.python && (f.module.starts_with("libpython") || f.module.starts_with("python"));
}

}  // namespace

Frame Symbolizer::python_frame(uint64_t value) const {
  Frame f;
  f.python = true;
  f.module = "python";
  const uint64_t key = container::python_frame_code(value);
  f.offset = key;
  const auto& codes = impl_->summary->python_codes;
  const auto it = codes.find(key);
  if (it == codes.end()) {
    f.function = fmt::format("<python code 0x{:x}>", key);
    ++unsymbolized_;
    return f;
  }
  const container::PythonCodeDescription& code = it->second;
  const uint32_t version = impl_->summary->python_stacks ? impl_->summary->python_stacks->version : 0;
  const int first = static_cast<int>(code.first_line);
  const int line = python::line_at(version, code.line_table, first, container::python_frame_index(value));
  f.function = code.name;
  f.file = code.file;
  f.line = line > 0 ? line : first;  // not known: the function's first line
  f.user = python::is_user_file(code.file) && !code.file.empty();
  ++symbolized_;
  return f;
}

std::vector<Frame> Symbolizer::stack(uint32_t stack_id, size_t max_frames, Walk walk) const {
  std::vector<Frame> out;
  auto it = impl_->summary->stacks.find(stack_id);
  if (it == impl_->summary->stacks.end()) return out;
  // The Python frames of each interpreter-loop call stand where the loop's
  // native frame does (as py-spy's native mode shows them); groups the
  // native stack did not reach (cut at its depth) follow it.
  const auto groups = python_groups(it->second);
  size_t next_group = 0;
  std::vector<Frame> at;
  for (uint64_t pc : it->second) {
    if (container::is_python_frame(pc)) continue;
    const container::ModuleDescription* desc = impl_->module_at(pc);
    if (desc == nullptr && walk == Walk::Sampled) break;
    if (desc && is_gpuscope_module(desc->path)) continue;
    bool resolved = false;
    at.clear();
    impl_->frames_at(pc, at, &resolved);
    ++(resolved ? symbolized_ : unsymbolized_);
    if (next_group < groups.size() && is_interpreter_loop(at))
      for (uint64_t v : groups[next_group++]) out.push_back(python_frame(v));
    else
      out.insert(out.end(), at.begin(), at.end());
    if (out.size() >= max_frames) break;
  }
  for (; next_group < groups.size() && out.size() < max_frames; ++next_group)
    for (uint64_t v : groups[next_group]) out.push_back(python_frame(v));
  if (out.size() > max_frames) out.resize(max_frames);
  return out;
}

namespace {

constexpr size_t kWholeStack = 256;

// The headline frame's index: the innermost user Python frame, else the
// innermost Python frame; npos for a stack without Python frames.
size_t python_headline(const std::vector<Frame>& frames) {
  size_t first_python = std::string::npos;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!frames[i].python) continue;
    if (frames[i].user) return i;
    if (first_python == std::string::npos) first_python = i;
  }
  return first_python;
}

}  // namespace

bool Symbolizer::has_python_frames(uint32_t stack_id) const {
  const auto it = impl_->summary->stacks.find(stack_id);
  return it != impl_->summary->stacks.end() &&
         std::any_of(it->second.begin(), it->second.end(), container::is_python_frame);
}

std::vector<Frame> Symbolizer::site_frames(uint32_t stack_id, size_t max_frames) const {
  if (!has_python_frames(stack_id)) return stack(stack_id, max_frames);
  // From the headline outwards, the interpreter's own native frames left
  // out: they sit between every two calls and say nothing about the program.
  std::vector<Frame> frames = stack(stack_id, kWholeStack);
  const size_t head = python_headline(frames);
  std::vector<Frame> out;
  for (size_t i = head == std::string::npos ? 0 : head; i < frames.size() && out.size() < max_frames; ++i)
    if (!is_interpreter_frame(frames[i])) out.push_back(std::move(frames[i]));
  return out;
}

std::string Symbolizer::caller_text(uint32_t stack_id) const {
  if (has_python_frames(stack_id)) {
    const std::vector<Frame> frames = stack(stack_id, kWholeStack);
    if (const size_t head = python_headline(frames); head != std::string::npos) return frames[head].text();
  }
  const std::vector<Frame> frames = stack(stack_id, 4);
  for (const Frame& f : frames)
    if (!is_toolkit_inline(f)) return f.text();
  return frames.empty() ? std::string() : frames.front().text();
}

}  // namespace gpuscope::analyzer
