#include "module_map.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpuscope::stacks {
namespace {

std::string executable_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buf, static_cast<size_t>(n));
}

// A name as the loader holds it is whatever was passed to dlopen when it
// had a slash, possibly relative: it is made absolute against the working
// directory, most likely still the one it was relative to (symbolic links
// are kept, as the loader keeps them). A name with no slash at all names no
// file (the vDSO, linux-vdso.so.1) and stays as it is.
std::string absolute(const char* name) {
  if (name[0] == '/' || std::strchr(name, '/') == nullptr) return name;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return name;
  while (name[0] == '.' && name[1] == '/') name += 2;
  return std::string(cwd) + "/" + name;
}

// True when [vaddr, vaddr+size) lies inside a PT_LOAD segment's file-backed
// part, i.e. it is mapped and readable in this process.
bool inside_load_segment(const dl_phdr_info* info, uint64_t vaddr, uint64_t size) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr + size <= ph.p_vaddr + ph.p_filesz)
      return true;
  }
  return false;
}

struct SnapshotState {
  std::string exe;
  std::vector<container::ModuleDescription> modules;
  bool first = true;
};

int add_object(dl_phdr_info* info, size_t, void* data) {
  auto* state = static_cast<SnapshotState*>(data);
  const bool is_main = state->first;
  state->first = false;
  const bool unnamed = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  if (unnamed && !is_main) return 0;
  container::ModuleDescription m;
  m.path = unnamed ? state->exe : info->dlpi_name;  // made absolute once, by ModuleIds
  m.load_address = info->dlpi_addr;
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      low = std::min<uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
      high = std::max<uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE && m.build_id.empty() &&
               inside_load_segment(info, ph.p_vaddr, ph.p_filesz)) {
      const auto* notes = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
      m.build_id = find_build_id(notes, ph.p_filesz, ph.p_align);
    }
  }
  if (high == 0) return 0;
  m.low_address = low;
  m.high_address = high;
  state->modules.push_back(std::move(m));
  return 0;
}

size_t align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

}  // namespace

std::vector<uint8_t> find_build_id(const uint8_t* notes, size_t size, size_t align) {
  align = align == 8 ? 8 : 4;  // anything else: notes are 4-byte aligned
  size_t pos = 0;
  while (pos + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) h;
    std::memcpy(&h, notes + pos, sizeof h);
    const size_t name_at = pos + sizeof h;
    if (h.n_namesz > size || h.n_descsz > size) break;
    // Name and descriptor each start at the note area's alignment (which
    // for 8-aligned notes is not the same as padding the name's size).
    const size_t desc_at = align_up(name_at + h.n_namesz, align);
    const size_t next = align_up(desc_at + h.n_descsz, align);
    if (desc_at + h.n_descsz > size) break;
    if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 &&
        std::memcmp(notes + name_at, "GNU", 4) == 0)
      return {notes + desc_at, notes + desc_at + h.n_descsz};
    pos = next;
  }
  return {};
}

std::vector<container::ModuleDescription> snapshot_modules() {
  SnapshotState state;
  state.exe = executable_path();
  dl_iterate_phdr(add_object, &state);
  return std::move(state.modules);
}

LoaderGeneration loader_generation() {
  LoaderGeneration g;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
          *static_cast<LoaderGeneration*>(data) = {info->dlpi_adds, info->dlpi_subs};
        return 1;  // the counters are the same in every entry: one is enough
      },
      &g);
  return g;
}

std::vector<container::ModuleDescription> ModuleIds::assign(
    std::vector<container::ModuleDescription> snapshot) {
  std::vector<container::ModuleDescription> fresh;
  for (auto& m : snapshot) {
    Key key{m.path, m.build_id, m.load_address, m.low_address, m.high_address};
    auto [it, inserted] = ids_.try_emplace(std::move(key), next_id_);
    if (!inserted) continue;
    // Keyed by the loader's own name, resolved only now: a later chdir must
    // not make an old module look new.
    m.path = absolute(m.path.c_str());
    m.id = next_id_++;
    fresh.push_back(std::move(m));
  }
  return fresh;
}

}  // namespace gpuscope::stacks
