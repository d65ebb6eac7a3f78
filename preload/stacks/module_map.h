// The loaded objects of this process, for turning raw return addresses into
// (module, offset) offline: path, GNU build-id, load address and the runtime
// address range of the PT_LOAD segments. Writer thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "side_tables.h"

namespace gpuscope::stacks {

// Every object the dynamic loader lists now (ids left 0), named as the
// loader names it (possibly relative: ModuleIds makes new ones absolute).
// The main program is named by what /proc/self/exe points at; objects
// without a name or without a PT_LOAD segment are left out.
std::vector<container::ModuleDescription> snapshot_modules();

// The loader's load and unload counts (glibc's dlpi_adds/dlpi_subs): a
// cheap way to notice a change, including loads that bypass the dlopen hook
// (glibc's own __libc_dlopen for NSS or iconv modules).
struct LoaderGeneration {
  uint64_t adds = 0, subs = 0;
  bool operator==(const LoaderGeneration&) const = default;
};
LoaderGeneration loader_generation();

// Gives modules stable ids: one id per (path, build-id, load address,
// range), so a library that is unloaded and loaded again elsewhere gets a
// new id and one that is still there keeps its old one.
class ModuleIds {
 public:
  // The modules of `snapshot` not seen before, with their new ids and
  // absolute paths.
  std::vector<container::ModuleDescription> assign(std::vector<container::ModuleDescription> snapshot);
  size_t known() const { return ids_.size(); }

 private:
  using Key = std::tuple<std::string, std::vector<uint8_t>, uint64_t, uint64_t, uint64_t>;
  std::map<Key, uint32_t> ids_;
  uint32_t next_id_ = 1;
};

// The GNU build-id in an ELF note area (a PT_NOTE segment's bytes); empty
// when there is none. `align` is the segment's p_align (4 or 8).
std::vector<uint8_t> find_build_id(const uint8_t* notes, size_t size, size_t align);

}  // namespace gpuscope::stacks
