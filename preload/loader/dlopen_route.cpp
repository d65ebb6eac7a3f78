// dlopen's entry point, which keeps the program's caller visible to glibc.
//
// glibc's dlopen looks at its return address to find the calling object:
// a bare library name is searched along that object's DT_RPATH/DT_RUNPATH,
// "$ORIGIN" expands to its directory, and the load goes into its namespace.
// A hook that calls the real dlopen makes libgpuscope.so the caller, so
// libraries found only through the program's RUNPATH would stop loading
// (the bug sanitizers, uftrace and libTAS shipped with). So the exported
// dlopen is a few instructions that ask route_dlopen() where to go and jump
// there with the arguments and return address untouched:
//   - when the search cannot depend on the caller (a path, the main program,
//     or a caller whose search list equals ours): to dlopen_observed(),
//     which calls glibc itself and records the outcome;
//   - otherwise: straight into glibc's dlopen (RTLD_DEEPBIND removed), which
//     then sees the program's return address. The outcome of such a call is
//     not observed; a failure is still recorded when the program reads it
//     with dlerror() (dl_hooks.cpp).
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dl_hooks.h"
#include "dlerror_replay.h"
#include "object_of.h"

namespace gpuscope::loader {
namespace {

// The directories glibc would search for a bare name dlopen'ed by `map`, in
// order ($ORIGIN already expanded). One entry that no directory can equal
// when glibc cannot say.
std::vector<std::string> search_list(link_map* map) {
  Dl_serinfo size{};
  if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0) return {"\n?"};
  auto* info = static_cast<Dl_serinfo*>(std::malloc(size.dls_size));
  if (info == nullptr) return {"\n?"};
  *info = size;
  std::vector<std::string> dirs;
  if (dlinfo(map, RTLD_DI_SERINFO, info) == 0)
    for (unsigned i = 0; i < info->dls_cnt; ++i)
      dirs.emplace_back(info->dls_serpath[i].dls_name != nullptr ? info->dls_serpath[i].dls_name : "");
  else
    dirs.emplace_back("\n?");
  std::free(info);
  return dirs;
}

bool in_base_namespace(link_map* map) {
  Lmid_t id = LM_ID_BASE;
  return dlinfo(map, RTLD_DI_LMID, &id) == 0 && id == LM_ID_BASE;
}

// libgpuscope.so's own search list, computed once and never destroyed
// (dlopen may still be called while static objects are torn down). Not a
// function-local static: its guard would be held across dlinfo while a
// library's constructor, holding the loader's lock, calls dlopen and waits
// for the guard. Racing first calls compute it twice and keep one.
std::atomic<const std::vector<std::string>*> g_own_search_list{nullptr};

const std::vector<std::string>& own_search_list(link_map* self) {
  if (const auto* known = g_own_search_list.load(std::memory_order_acquire)) return *known;
  const auto* mine = new std::vector<std::string>(search_list(self));
  const std::vector<std::string>* expected = nullptr;
  if (g_own_search_list.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) return *mine;
  delete mine;
  return *expected;
}

}  // namespace

bool search_depends_on_caller(const char* file, const void* caller) {
  if (file == nullptr || file[0] == '\0') return false;  // the main program
  if (std::strchr(file, '$') != nullptr) return true;    // $ORIGIN, $LIB, $PLATFORM
  if (std::strchr(file, '/') != nullptr) return false;   // a path is used as given
  link_map* const self = object_of(reinterpret_cast<const void*>(&search_depends_on_caller));
  link_map* const map = object_of(caller);
  if (map == nullptr || self == nullptr) return true;
  if (map == self) return false;
  if (!in_base_namespace(map)) return true;
  return search_list(map) != own_search_list(self);
}

}  // namespace gpuscope::loader

using gpuscope::loader::DlopenRoute;

// Hidden: called only by the entry point below.
extern "C" __attribute__((visibility("hidden"))) DlopenRoute gpuscope_route_dlopen(const char* file, int mode,
                                                                                   void* caller) {
  return gpuscope::loader::route_dlopen(file, mode, caller);
}

#if defined(__x86_64__)
// The exported dlopen. At entry 0(%rsp) is the program's return address;
// after the push the stack is 16-byte aligned for the call. The route comes
// back in rax (where to jump) and rdx (the mode to pass on).
asm(R"(
    .text
    .globl dlopen
    .type dlopen, @function
    .p2align 4
dlopen:
    .cfi_startproc
    endbr64
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    movq 8(%rsp), %rdx
    call gpuscope_route_dlopen
    popq %rdi
    .cfi_adjust_cfa_offset -8
    movl %edx, %esi
    jmp *%rax
    .cfi_endproc
    .size dlopen, .-dlopen
)");
#else
// Elsewhere: always observed; a bare name is then searched along
// libgpuscope.so's paths, not the caller's.
extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
  return gpuscope::loader::dlopen_observed(file, mode);
}
#endif
