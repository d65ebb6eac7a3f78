#include "object_of.h"

#include <dlfcn.h>

#include <atomic>

#include "real_symbol.h"

namespace gpuscope::loader {
namespace {

// glibc 2.35's _dl_find_object finds the object by a lock-free binary
// search. dladdr walks the object's whole symbol table to name the address,
// which nothing here needs; with the driver's thousands of exports, once per
// adopted hook, that was a visible part of a traced process's start. Looked
// up at run time, so that the library still loads with an older glibc.
#ifdef DLFO_STRUCT_HAS_EH_DBASE
// No function-local static: its guard would be held across dlsym, which
// takes the loader's lock, while another thread holding that lock (in a
// library's constructor) waits for the guard. Racing first calls look it up
// twice, harmlessly.
using FindObjectFn = int (*)(void*, dl_find_object*);
std::atomic<FindObjectFn> g_find_object{nullptr};
std::atomic<bool> g_find_object_known{false};

FindObjectFn find_object() {
  if (g_find_object_known.load(std::memory_order_acquire)) return g_find_object.load(std::memory_order_relaxed);
  const auto fn = reinterpret_cast<FindObjectFn>(capture::real_dlsym()(RTLD_DEFAULT, "_dl_find_object"));
  g_find_object.store(fn, std::memory_order_relaxed);
  g_find_object_known.store(true, std::memory_order_release);
  return fn;
}
#endif

}  // namespace

link_map* object_of(const void* address) {
#ifdef DLFO_STRUCT_HAS_EH_DBASE
  if (const FindObjectFn find = find_object(); find != nullptr) {
    dl_find_object found{};
    return find(const_cast<void*>(address), &found) == 0 ? found.dlfo_link_map : nullptr;
  }
#endif
  Dl_info info{};
  link_map* map = nullptr;
  return dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 ? map : nullptr;
}

}  // namespace gpuscope::loader
