#include "symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

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

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
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

  const container::ModuleDescription* module_at(uint64_t pc) const {
    for (const auto& m : summary->modules)
      if (pc >= m.low_address && pc < m.high_address) return &m;
    return nullptr;
  }

  // Appends the frames of one return address: inlined calls innermost first.
  void frames_at(uint64_t pc, std::vector<Frame>& out, bool* resolved) const {
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
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, at)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        outer.file = file;
        outer.line = lineno;
      }
    }
    *resolved = !outer.function.empty();
    add_inlined(mod, at, outer, out);
  }

  // With DWARF, the inlined calls at `at` come first (innermost first), each
  // carrying the source line; the enclosing function gets the call line.
  void add_inlined(Dwfl_Module* mod, uint64_t at, Frame outer, std::vector<Frame>& out) const {
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(mod, at, &bias);
    Dwarf_Die* scopes = nullptr;
    const int n = cu ? dwarf_getscopes(cu, at - bias, &scopes) : 0;
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (cu) dwarf_getsrcfiles(cu, &files, &nfiles);
    std::string file = outer.file;
    int line = outer.line;
    for (int i = 0; i < n; ++i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      Frame f = outer;
      f.function = die_name(&scopes[i]);
      f.inlined = true;
      f.file = file;
      f.line = line;
      out.push_back(f);
      const int call_file = die_int(&scopes[i], DW_AT_call_file);
      const char* name = files && call_file > 0 ? dwarf_filesrc(files, call_file, nullptr, nullptr) : nullptr;
      file = name ? name : "";
      line = die_int(&scopes[i], DW_AT_call_line);
    }
    std::free(scopes);
    outer.file = file;
    outer.line = line;
    out.push_back(outer);
  }
};

Symbolizer::Symbolizer(const reader::TraceSummary& summary) : impl_(std::make_unique<Impl>()) {
  impl_->summary = &summary;
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

std::vector<Frame> Symbolizer::stack(uint32_t stack_id, size_t max_frames, Walk walk) const {
  std::vector<Frame> out;
  auto it = impl_->summary->stacks.find(stack_id);
  if (it == impl_->summary->stacks.end()) return out;
  for (uint64_t pc : it->second) {
    const container::ModuleDescription* desc = impl_->module_at(pc);
    if (desc == nullptr && walk == Walk::Sampled) break;
    if (desc && is_gpuscope_module(desc->path)) continue;
    bool resolved = false;
    impl_->frames_at(pc, out, &resolved);
    ++(resolved ? symbolized_ : unsymbolized_);
    if (out.size() >= max_frames) break;
  }
  if (out.size() > max_frames) out.resize(max_frames);
  return out;
}

std::string Symbolizer::caller_text(uint32_t stack_id) const {
  const std::vector<Frame> frames = stack(stack_id, 4);
  for (const Frame& f : frames)
    if (!is_toolkit_inline(f)) return f.text();
  return frames.empty() ? std::string() : frames.front().text();
}

}  // namespace gpuscope::analyzer
