#include "real_symbol.h"

#include <dlfcn.h>

namespace gpuscope::preload {

DlsymFn real_dlsym() {
  static const DlsymFn fn = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(p);
  }();
  return fn;
}

// RTLD_NEXT is relative to the caller, and the caller of real_dlsym() here
// is libgpuscope.so: "next" means after us, whoever asks.
void* next_symbol(const char* name) {
  const DlsymFn fn = real_dlsym();
  return fn != nullptr ? fn(RTLD_NEXT, name) : nullptr;
}

}  // namespace gpuscope::preload
