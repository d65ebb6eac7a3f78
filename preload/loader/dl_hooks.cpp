#include "exported.h"
#include "dl_hooks.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "clock.h"
#include "dlerror_replay.h"
#include "entry_points.h"
#include "gpu/gpu_libraries.h"
#include "real_symbol.h"
#include "recorder.h"
#include "session.h"
#include "stacks/stack_capture.h"

namespace gpuscope::loader {
namespace {

using DlopenFn = void* (*)(const char*, int);
using DlcloseFn = int (*)(void*);

template <class Fn> Fn real(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = capture::next<Fn>(name);
    slot.store(f, std::memory_order_release);
  }
  return f;
}

std::atomic<DlopenFn> g_dlopen{nullptr};
std::atomic<DlcloseFn> g_dlclose{nullptr};

// A program thread's dl call that is worth a record at all.
bool observing() {
  return capture::thread_context().internal == 0 && capture::current_phase() == capture::Phase::Recording;
}

// "libcudnn.so.9: cannot open shared object file: ..." names the object
// that failed first: a GPU library missing underneath a framework's own.
bool error_names_gpu_library(const std::string& error) {
  const size_t colon = error.find(": ");
  return colon != std::string::npos && gpu::is_gpu_library(error.substr(0, colon).c_str());
}

std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (handle == nullptr || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return {};
  return map->l_name;
}

container::LibraryLoadEvent make_event(uint64_t start_ns, const char* path, int mode) {
  container::LibraryLoadEvent e;
  e.start_ns = start_ns;
  e.tid = static_cast<uint32_t>(gettid());
  e.path = path != nullptr ? path : "";
  e.flags = mode;
  e.deepbind_stripped = (mode & RTLD_DEEPBIND) != 0;
  return e;
}

// A dlopen whose outcome gpuscope could not see (the caller's search path
// mattered, so glibc was entered directly): kept until the program reads
// dlerror() or makes its next dl call. Zero-initialized TLS.
struct Unobserved {
  char* path;  // strdup of the name asked for
  int mode;
  uint64_t start_ns;
  bool armed;
};
thread_local Unobserved t_unobserved __attribute__((tls_model("initial-exec")));

void forget_unobserved() noexcept {
  Unobserved& u = t_unobserved;
  u.armed = false;
  std::free(u.path);
  u.path = nullptr;
}

// The text the program got from dlerror() after such a dlopen. Recorded as
// that dlopen's failure only when it can only have come from it: it names
// the library, or says a shared object could not be opened (dlsym, the one
// dl call in between that is not hooked here, says neither).
void settle_unobserved(const char* text) {
  Unobserved& u = t_unobserved;
  if (!u.armed) return;
  const int saved_errno = errno;
  const char* base = std::strrchr(u.path, '/') != nullptr ? std::strrchr(u.path, '/') + 1 : u.path;
  const bool from_dlopen = text != nullptr && std::strstr(text, ": undefined symbol: ") == nullptr &&
                           (std::strstr(text, base) != nullptr ||
                            std::strstr(text, "cannot open shared object file") != nullptr);
  if (from_dlopen && observing()) {
    container::LibraryLoadEvent e = make_event(u.start_ns, u.path, u.mode);
    e.error = text;
    capture::note_library_load(std::move(e));
  }
  forget_unobserved();
  errno = saved_errno;
}

}  // namespace

// glibc's dlopen is entered with the errno the program had.
DlopenRoute route_dlopen(const char* file, int mode, void* caller) {
  const int entry_errno = errno;
  prepare_dlerror();
  forget_pending_error();  // glibc's pending error is about to be replaced
  forget_unobserved();
  DlopenRoute route{reinterpret_cast<void*>(&dlopen_observed), static_cast<long>(mode)};
  if (search_depends_on_caller(file, caller)) {
    if (observing() && gpu::is_gpu_library(file)) {
      t_unobserved = Unobserved{strdup(file), mode, capture::monotonic_ns(), true};
      t_unobserved.armed = t_unobserved.path != nullptr;
    }
    // No way back here after glibc returns: tell the stack capture now.
    stacks::note_modules_changed();
    route = {reinterpret_cast<void*>(real(g_dlopen, "dlopen")), static_cast<long>(mode & ~RTLD_DEEPBIND)};
  }
  errno = entry_errno;
  return route;
}

void* dlopen_observed(const char* file, int mode) {
  const DlopenFn glibc_dlopen = real(g_dlopen, "dlopen");
  const bool watch = observing();
  const uint64_t start_ns = watch ? capture::monotonic_ns() : 0;
  void* handle = glibc_dlopen(file, mode & ~RTLD_DEEPBIND);
  const int saved_errno = errno;
  if (handle != nullptr) stacks::note_modules_changed();
  if (watch) {
    container::LibraryLoadEvent e = make_event(start_ns, file, mode);
    e.ok = handle != nullptr;
    if (e.ok) e.resolved_path = loaded_path(handle);
    else e.error = take_error_for_record();  // the program's dlerror() still returns it
    if (gpu::is_gpu_library(file) || e.deepbind_stripped || (!e.ok && error_names_gpu_library(e.error)))
      capture::note_library_load(std::move(e));
  }
  errno = saved_errno;
  return handle;
}

}  // namespace gpuscope::loader

using namespace gpuscope::loader;

GPUSCOPE_EXPORT int dlclose(void* handle) {
  const int entry_errno = errno;
  prepare_dlerror();
  forget_pending_error();
  forget_unobserved();
  const DlcloseFn glibc_dlclose = real(g_dlclose, "dlclose");
  const bool watch = observing();
  const std::string path = watch ? loaded_path(handle) : std::string();
  const bool record = watch && gpuscope::gpu::is_gpu_library(path.c_str());
  const uint64_t start_ns = record ? gpuscope::capture::monotonic_ns() : 0;
  errno = entry_errno;
  const int result = glibc_dlclose(handle);
  const int saved_errno = errno;
  if (result == 0) {
    gpuscope::stacks::note_modules_changed();
    gpuscope::hooks::forget_entry_points();
    gpuscope::hooks::forget_unloaded_reals();
  }
  if (record) {
    gpuscope::container::LibraryLoadEvent e = make_event(start_ns, path.c_str(), 0);
    e.resolved_path = path;
    e.unload = true;
    e.ok = result == 0;
    if (!e.ok) e.error = take_error_for_record();
    gpuscope::capture::note_library_load(std::move(e));
  }
  errno = saved_errno;
  return result;
}

GPUSCOPE_EXPORT char* dlerror(void) {
  char* text = dlerror_for_program();
  if (t_unobserved.armed) settle_unobserved(text);
  return text;
}
