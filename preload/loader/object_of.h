// The loaded object that contains an address, for the preload's loader-aware
// code (which copy of the library is this, where is a hooked definition,
// whose search path does a dlopen follow).
#pragma once

#include <link.h>

namespace gpuscope::loader {

// The link map of the object containing `address`; null when no loaded
// object does. Lock-free where glibc has _dl_find_object (2.35), dladdr1
// elsewhere. Safe to call while another thread holds the loader's lock: no
// function-local static guard is held across a loader call.
link_map* object_of(const void* address);

}  // namespace gpuscope::loader
