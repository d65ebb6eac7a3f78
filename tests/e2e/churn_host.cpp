// A plugin host: loads a plugin that links the CUDA runtime (RTLD_LOCAL),
// calls it, unloads it, and loads it again, three rounds. Between rounds it
// takes the first page where the runtime was, so that the loader maps the
// next one elsewhere (as it may in any long-running host): a profiler that
// kept the old runtime's functions would jump into unmapped memory.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

uintptr_t runtime_address() {
  uintptr_t at = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (std::strstr(info->dlpi_name, "libcudart.so") != nullptr) *static_cast<uintptr_t*>(out) = info->dlpi_addr;
        return 0;
      },
      &at);
  return at;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  uintptr_t last = 0;
  int moved = 0;
  for (int round = 0; round < 3; ++round) {
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == nullptr) {
      std::printf("dlopen: %s\n", dlerror());
      return 2;
    }
    const uintptr_t at = runtime_address();
    moved += last != 0 && at != last;
    auto work = reinterpret_cast<int (*)()>(dlsym(plugin, "plugin_work"));
    std::printf("round %d: plugin_work %d\n", round, work != nullptr ? work() : -9);
    std::printf("round %d: dlclose %d, runtime unloaded %s\n", round, dlclose(plugin),
                runtime_address() == 0 ? "yes" : "no");
    if (at != 0) mmap(reinterpret_cast<void*>(at), 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    last = at;
  }
  std::printf("the runtime moved %d time(s)\n", moved);
  return 0;
}
