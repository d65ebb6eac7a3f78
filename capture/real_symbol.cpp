#include "real_symbol.h"

#include <dlfcn.h>

namespace gpuscope::capture {

DlsymFn real_dlsym() {
  static const DlsymFn fn = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(p);
  }();
  return fn;
}

// RTLD_NEXT is relative to the caller, and the caller of real_dlsym() here
// is libgpuscope.so: "next" means after us, whoever asks. Never a tail call,
// which would make next_symbol's caller glibc's caller: another copy of the
// library asks this one through its marker (instance.h).
void* next_symbol(const char* name) {
  const DlsymFn fn = real_dlsym();
  void* p = fn != nullptr ? fn(RTLD_NEXT, name) : nullptr;
  asm volatile("" : "+r"(p));
  return p;
}

}  // namespace gpuscope::capture
