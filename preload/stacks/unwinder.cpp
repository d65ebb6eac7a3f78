#include "unwinder.h"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#include "process_info.h"
#include "real_symbol.h"
#include "recorder.h"

// Only for the declarations and the symbol names: nothing of libunwind is
// linked. With UNW_LOCAL_ONLY the header maps unw_set_caching_policy to
// _ULx86_64_set_caching_policy and unw_local_addr_space to
// _ULx86_64_local_addr_space (the local-only flavour; the _Ux86_64_ ones
// are the generic, remote-capable ones); unw_backtrace keeps its own name
// in libunwind 1.6 (`nm -D libunwind.so.8`: T unw_backtrace, W backtrace).
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define GPUSCOPE_STR2(x) #x
#define GPUSCOPE_STR(x) GPUSCOPE_STR2(x)

namespace gpuscope::stacks {
namespace {

constexpr const char* kLibrary = "libunwind.so.8";

static_assert(std::is_same_v<BacktraceFn, decltype(&unw_backtrace)>);
using CachingPolicyFn = decltype(&unw_set_caching_policy);
using CacheSizeFn = decltype(&unw_set_cache_size);

struct Unwinder {
  std::once_flag once;
  bool ok = false;
  std::string why;
  BacktraceFn backtrace = nullptr;
};

// Reached from configure_stacks only (never the hot path, which keeps its
// own copy of the function pointer).
Unwinder& unwinder() {
  static Unwinder u;
  return u;
}

// glibc's dlsym: a plain dlsym call binds to the first dlsym in the global
// scope, which may be another copy of libgpuscope.so (docs/interception.md).
void* lookup(void* handle, const char* name) { return capture::real_dlsym()(handle, name); }

bool load(Unwinder& u) {
  // Whatever the loader runs for libunwind (its constructors, the dlopen
  // hook itself) is gpuscope's own business, not the program's.
  capture::InternalScope internal;
  // The bundle's copy next to libgpuscope.so first: GPU nodes often have
  // no libunwind installed (the first real-GPU run had none), and then the
  // one the loader finds.
  const std::string own_dir = capture::own_directory();
  void* handle = own_dir.empty() ? nullptr : dlopen((own_dir + "/" + kLibrary).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    u.why = std::string(kLibrary) + " not loaded: " + (err != nullptr ? err : "unknown error");
    return false;
  }
  auto backtrace = reinterpret_cast<BacktraceFn>(lookup(handle, GPUSCOPE_STR(unw_backtrace)));
  auto policy =
      reinterpret_cast<CachingPolicyFn>(lookup(handle, GPUSCOPE_STR(unw_set_caching_policy)));
  auto cache_size = reinterpret_cast<CacheSizeFn>(lookup(handle, GPUSCOPE_STR(unw_set_cache_size)));
  auto* space = static_cast<unw_addr_space_t*>(lookup(handle, GPUSCOPE_STR(unw_local_addr_space)));
  if (backtrace == nullptr || policy == nullptr || space == nullptr || *space == nullptr) {
    u.why = std::string(kLibrary) + " lacks the local-only unwinding entry points";
    return false;  // the handle stays open: never dlclose what may be in use
  }
  // Per-thread caches: the global cache's lock masks signals with a
  // sigprocmask syscall around every step. Size as heaptrack uses it.
  if (policy(*space, UNW_CACHE_PER_THREAD) != 0) {
    u.why = "libunwind refused per-thread caching";
    return false;
  }
  if (cache_size != nullptr) cache_size(*space, 1024, 0);
  u.backtrace = backtrace;
  return true;
}

}  // namespace

BacktraceFn load_unwinder(std::string* why) {
  Unwinder& u = unwinder();
  std::call_once(u.once, [&u] { u.ok = load(u); });
  if (!u.ok && why != nullptr) *why = u.why;
  return u.ok ? u.backtrace : nullptr;
}

}  // namespace gpuscope::stacks
