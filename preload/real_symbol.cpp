#include "real_symbol.h"

#include <dlfcn.h>

namespace gpuscope::preload {

void* next_symbol(const char* name) { return dlsym(RTLD_NEXT, name); }

}  // namespace gpuscope::preload
