// How gpuscope reaches driver calls that never pass through the dynamic
// linker: libcudart (shared or static), cuBLAS, cuDNN and friends dlopen
// libcuda.so.1, dlsym "cuGetProcAddress_v2" from that handle (which skips
// our exports), then ask it for every driver entry point.
//
// So: dlsym is overridden. A lookup of a hooked name returns our wrapper and
// hands the real function to the wrapper's slot; cuGetProcAddress's answers
// are rewritten the same way (including its answer for "cuGetProcAddress"
// itself). Lookups of anything else, lookups relative to the caller
// (RTLD_NEXT) and CUPTI's own lookups go straight to the next dlsym as a
// tail call, so the caller's identity (which RTLD_NEXT depends on) is
// unchanged. The next dlsym is glibc's, or another interposer's preloaded
// after us (a GPU-sharing layer's): the program's lookups and the real
// functions of hooked names are what that one answers, as without gpuscope.
#include <dlfcn.h>

#include <cstring>

#include <cuda.h>
#undef cuGetProcAddress  // cuda.h maps it to _v2; the v1 entry point is exported too

#include "entry_points.h"
#include "hooks/hook_support.h"
#include "instance.h"

GPUSCOPE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);
GPUSCOPE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                             CUdriverProcAddressQueryResult* status);

GPUSCOPE_HOOK_SLOT(cuGetProcAddress, kDriverApi)
GPUSCOPE_HOOK_SLOT(cuGetProcAddress_v2, kDriverApi)

namespace gpuscope::hooks {

std::span<HookSlot* const> driver_entry_hooks() {
  static constinit HookSlot* const all[] = {&slots::cuGetProcAddress, &slots::cuGetProcAddress_v2};
  return all;
}

namespace {

struct Interception {
  bool handled = false;
  void* value = nullptr;
};

bool called_from_cupti(void* caller) {
  Dl_info info{};
  return dladdr(caller, &info) != 0 && info.dli_fname != nullptr && std::strstr(info.dli_fname, "libcupti") != nullptr;
}

// The runtime versions gpuscope exports its hooks under, the default first.
#define GPUSCOPE_VERSION_NAME(tag, version, ...) version,
constexpr const char* kCudartVersions[] = {GPUSCOPE_CUDART_DEFAULT_VERSION,
                                           GPUSCOPE_CUDART_VERSIONS(GPUSCOPE_VERSION_NAME)};
#undef GPUSCOPE_VERSION_NAME

// A runtime function looked up in one libcudart goes to the slot of that
// runtime's symbol version (runtime_versions.h): dlsym in libcudart.so.12's
// handle must not make the default slot, which libcudart.so.13's callers
// use, hold libcudart.so.12's function. Unversioned runtimes keep `slot`.
HookSlot* slot_of_version(HookSlot* slot, void* handle, const char* name, void* real) {
  if ((slot->flags & kDriverApi) != 0 || handle == RTLD_DEFAULT) return slot;
  for (const char* version : kCudartVersions)
    if (dlvsym(handle, name, version) == real) {
      HookSlot* versioned = find_versioned_hook(name, version);
      return versioned != nullptr ? versioned : slot;
    }
  return slot;
}

// A lookup of a hooked name: our wrapper, with the real function adopted.
// Nothing real anywhere (only our export answered): the caller sees nothing,
// exactly as without gpuscope.
Interception intercept(void* handle, const char* name, void* caller) {
  if (handle == RTLD_NEXT) return {};
  HookSlot* slot = find_hook(name);
  if (slot == nullptr || called_from_cupti(caller)) return {};
  // A copy standing down (instance.h) is glibc's dlsym and nothing else.
  if (!preload::is_primary_instance()) return {};
  if (handle != RTLD_DEFAULT) remember_library_handle(handle);
  void* real = handle == RTLD_DEFAULT ? nullptr : capture::next_dlsym()(handle, name);
  if (real == nullptr || real == slot->wrapper()) real = preload::next_definition(name);
  if (real == nullptr) return {true, nullptr};
  slot = slot_of_version(slot, handle, name, real);
  return {true, slot->adopt(real) ? slot->wrapper() : real};  // a second, different implementation stays unhooked
}

// An entry point cuGetProcAddress handed out: named by its address (the
// exact exported variant, e.g. cuMemcpyHtoDAsync_v2_ptsz, which fixes the
// signature; entry_points.h), and swapped for our wrapper when we hook that
// variant. A driver that hands out its own exports through the GOT already
// returns our wrapper; the slot then finds the real one in the driver's
// handle.
void* substitute(void* p) {
  HookSlot* slot = p != nullptr ? hook_defined_at(p) : nullptr;
  if (slot == nullptr) return p;
  if (p == slot->wrapper()) return p;  // real one resolved from the handle on first call
  return slot->adopt(p) ? slot->wrapper() : p;
}

#ifdef GPUSCOPE_SANITIZER_BUILD
// Sanitizer builds (tests/conformance runs the corpus under one): the ASan
// runtime resolves its interceptors through this override while it
// initializes, before it has mapped its shadow memory, when no instrumented
// code may run yet. This file is built uninstrumented there
// (preload/CMakeLists.txt) and the runtime's lookups go straight to glibc,
// as CUPTI's do. No strstr: the runtime intercepts it.
bool called_from_sanitizer_runtime(void* caller) {
  Dl_info info{};
  if (dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = info.dli_fname;
  for (const char* p = base; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  const auto starts = [base](const char* prefix) {
    const char* b = base;
    while (*prefix != '\0' && *b == *prefix) ++b, ++prefix;
    return *prefix == '\0';
  };
  return starts("libasan.") || starts("libubsan.");
}
#endif

}  // namespace
}  // namespace gpuscope::hooks

GPUSCOPE_EXPORT __attribute__((optimize("optimize-sibling-calls"))) void* dlsym(void* handle, const char* name) {
#ifdef GPUSCOPE_SANITIZER_BUILD
  if (gpuscope::hooks::called_from_sanitizer_runtime(__builtin_return_address(0)))
    return gpuscope::capture::next_versioned_dlsym()(handle, name);  // tail call
#endif
  // <dlfcn.h> declares `name` nonnull, which would let the compiler drop the
  // check; a program passing null still deserves glibc's answer, not a crash.
  const char* checked = name;
  asm("" : "+r"(checked));
  if (checked != nullptr && gpuscope::capture::thread_context().internal == 0) {
    const auto hit = gpuscope::hooks::intercept(handle, checked, __builtin_return_address(0));
    if (hit.handled) return hit.value;
  }
  return gpuscope::capture::next_dlsym()(handle, name);  // tail call: see the file comment
}

GPUSCOPE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                             CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const Fn real = gpuscope::hooks::slots::cuGetProcAddress_v2.real_function<Fn>();
  if (real == nullptr) return gpuscope::hooks::not_found<CUresult>();
  const CUresult rc = real(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS && pfn != nullptr) *pfn = gpuscope::hooks::substitute(*pfn);
  return rc;
}

GPUSCOPE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  const Fn real = gpuscope::hooks::slots::cuGetProcAddress.real_function<Fn>();
  if (real == nullptr) return gpuscope::hooks::not_found<CUresult>();
  const CUresult rc = real(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS && pfn != nullptr) *pfn = gpuscope::hooks::substitute(*pfn);
  return rc;
}
