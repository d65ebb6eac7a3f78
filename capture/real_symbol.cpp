#include "real_symbol.h"

#include <dlfcn.h>

#include <atomic>

namespace gpuscope::capture {
namespace {

DlsymFn versioned_dlsym(void* where) {
  void* p = dlvsym(where, "dlsym", "GLIBC_2.34");
  if (p == nullptr) p = dlvsym(where, "dlsym", "GLIBC_2.2.5");
  return reinterpret_cast<DlsymFn>(p);
}

// glibc's own dlsym, asked of the object that defines dlvsym (libc.so.6
// since glibc 2.34, libdl.so.2 before), where dlsym is too, through a handle
// of its own: a link map the loader mapped at start-up is no handle (its
// search list is empty). No function-local static: its guard would be held
// across dlvsym, which takes the loader's lock; racing first calls look it
// up twice, harmlessly.
std::atomic<DlsymFn> g_glibc_dlsym{nullptr};

// dlmopen into the base namespace is dlopen without any override (ours, or
// another interposer's); RTLD_NOLOAD never loads.
void* handle_of_dlvsym_object() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&dlvsym), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  return dlmopen(LM_ID_BASE, info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

DlsymFn find_glibc_dlsym() {
  if (void* libc = handle_of_dlvsym_object(); libc != nullptr)
    if (const DlsymFn fn = versioned_dlsym(libc); fn != nullptr) return fn;
  return next_versioned_dlsym();
}

}  // namespace

DlsymFn next_versioned_dlsym() {
  static const DlsymFn fn = versioned_dlsym(RTLD_NEXT);
  return fn;
}

DlsymFn real_dlsym() {
  DlsymFn fn = g_glibc_dlsym.load(std::memory_order_acquire);
  if (__builtin_expect(fn == nullptr, 0)) {
    fn = find_glibc_dlsym();
    g_glibc_dlsym.store(fn, std::memory_order_release);
  }
  return fn;
}

// Looked up by name, not by version: dlvsym takes only a definition of
// that version, and another interposer's dlsym has none.
DlsymFn next_dlsym() {
  static const DlsymFn fn = [] {
    const DlsymFn glibc = real_dlsym();
    void* next = glibc != nullptr ? glibc(RTLD_NEXT, "dlsym") : nullptr;
    asm volatile("" : "+r"(next));  // not a tail call: "next" is after libgpuscope.so
    return next != nullptr ? reinterpret_cast<DlsymFn>(next) : glibc;
  }();
  return fn;
}

// RTLD_NEXT is relative to the caller, and the caller of glibc's dlsym here
// is libgpuscope.so: "next" means after us, whoever asks. (Another
// interposer's dlsym would take it as "after" itself, and skip its own
// hooks.) Never a tail call, which would make next_symbol's caller glibc's
// caller: another copy of the library asks this one through its marker
// (instance.h).
void* next_symbol(const char* name) {
  const DlsymFn fn = real_dlsym();
  void* p = fn != nullptr ? fn(RTLD_NEXT, name) : nullptr;
  asm volatile("" : "+r"(p));
  return p;
}

void* next_versioned_symbol(const char* name, const char* version) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  asm volatile("" : "+r"(p));  // as next_symbol: never a tail call
  return p;
}

}  // namespace gpuscope::capture
