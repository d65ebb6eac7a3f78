#include "dlerror_replay.h"

#include <dlfcn.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "real_symbol.h"

namespace gpuscope::loader {
namespace {

using DlerrorFn = char* (*)();
using DlopenFn = void* (*)(const char*, int);

std::atomic<DlerrorFn> g_glibc_dlerror{nullptr};
std::atomic<DlopenFn> g_glibc_dlopen{nullptr};

// dlopen(kMarkerName, 0) fails before any search ("invalid mode"), and
// glibc's message starts with the name, which no translation changes.
constexpr char kMarkerName[] = "gpuscope-dlerror-replay";
constexpr char kMarkerPrefix[] = "gpuscope-dlerror-replay: ";

// Zero-initialized and trivially destructible: no TLS constructor. The copy
// is replaced (freed) by the thread's next replay; the last one of a thread
// is left behind when it exits.
struct Replay {
  char* text;        // the message glibc's dlerror gave the hook
  int error_number;  // what that dlerror set errno to (0: left it alone)
  bool armed;        // the program has not been given it yet
};
thread_local Replay t_replay __attribute__((tls_model("initial-exec")));

DlerrorFn glibc_dlerror() noexcept {
  DlerrorFn f = g_glibc_dlerror.load(std::memory_order_acquire);
  if (f == nullptr) {
    // Only reached when a dlerror() comes before any gpuscope constructor
    // or dl hook ran; the lookup itself clears glibc's pending error.
    f = capture::next<DlerrorFn>("dlerror");
    g_glibc_dlerror.store(f, std::memory_order_release);
  }
  return f;
}

const void* own_base() noexcept {
  Dl_info info{};
  return dladdr(reinterpret_cast<const void*>(&own_base), &info) != 0 ? info.dli_fbase : nullptr;
}

bool compute_interposed() noexcept {
  // &dlerror goes through the GOT: it is what every object calling
  // dlerror() is bound to. dladdr names a dynamic symbol only when it is
  // exported, so a version script that keeps dlerror local answers false.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&::dlerror), &info) == 0) return false;
  return info.dli_fbase == own_base() && info.dli_sname != nullptr && std::strcmp(info.dli_sname, "dlerror") == 0 &&
         info.dli_saddr == reinterpret_cast<void*>(&::dlerror);
}

__attribute__((constructor)) void resolve_at_load() { prepare_dlerror(); }

}  // namespace

void prepare_dlerror() noexcept {
  if (g_glibc_dlerror.load(std::memory_order_acquire) == nullptr)
    g_glibc_dlerror.store(capture::next<DlerrorFn>("dlerror"), std::memory_order_release);
  if (g_glibc_dlopen.load(std::memory_order_acquire) == nullptr)
    g_glibc_dlopen.store(capture::next<DlopenFn>("dlopen"), std::memory_order_release);
  (void)dlerror_interposed();
}

bool dlerror_interposed() noexcept {
  static const bool interposed = compute_interposed();
  return interposed;
}

std::string take_error_for_record() {
  const DlerrorFn real_dlerror = g_glibc_dlerror.load(std::memory_order_acquire);
  const DlopenFn real_dlopen = g_glibc_dlopen.load(std::memory_order_acquire);
  if (real_dlerror == nullptr || real_dlopen == nullptr || !dlerror_interposed()) return {};
  const int saved_errno = errno;
  errno = 0;
  const char* message = real_dlerror();
  const int error_number = errno;
  std::string text = message != nullptr ? message : "";
  char* copy = message != nullptr ? strdup(message) : nullptr;
  Replay& r = t_replay;
  if (copy != nullptr) {
    std::free(r.text);
    r = Replay{copy, error_number, true};
    real_dlopen(kMarkerName, 0);  // glibc's slot now holds the marker, undelivered
  }
  errno = saved_errno;
  return text;
}

void forget_pending_error() noexcept { t_replay.armed = false; }

char* dlerror_for_program() noexcept {
  const int saved_errno = errno;
  char* answer = glibc_dlerror()();
  Replay& r = t_replay;
  if (!r.armed) return answer;
  r.armed = false;
  // Anything but the marker: a later dl* call replaced or cleared the error,
  // and glibc's answer is the right one.
  if (answer == nullptr || std::strncmp(answer, kMarkerPrefix, sizeof kMarkerPrefix - 1) != 0) return answer;
  errno = r.error_number != 0 ? r.error_number : saved_errno;
  return r.text;
}

}  // namespace gpuscope::loader
