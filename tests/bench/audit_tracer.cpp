// A minimal LD_AUDIT call tracer, built only to compare gpuscope's cost per
// call with the loader's own interception mechanism (issue 23; run by
// scripts/bench-interceptors.sh). It records what gpuscope records for a
// call without a stack: which function, entry and exit time, the thread's
// record in a per-thread buffer, dropped and counted when full.
//
// Calls into libcudart (or libcuda) through the PLT are traced: glibc's
// audit trampoline (_dl_runtime_profile) calls la_pltenter before and
// la_pltexit after each one, which needs lazy binding of those calls; the
// loader arranges it for an audited process.
//   LD_AUDIT=libaudit_tracer.so ./app
// AUDIT_TRACER_VERBOSE=1 prints the counts at exit.
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

struct CallRecord {
  uintptr_t symbol;
  uint64_t begin_ns, end_ns;
};

constexpr size_t kRecordsPerThread = 1 << 16;

struct ThreadBuffer {
  CallRecord records[kRecordsPerThread];
  size_t used = 0;
  uint64_t dropped = 0;
  uint64_t begun_ns = 0;
};

thread_local ThreadBuffer* t_buffer = nullptr;
uint64_t g_recorded = 0, g_dropped = 0;  // the main thread's, printed at exit

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

ThreadBuffer& buffer() {
  if (t_buffer == nullptr) t_buffer = new ThreadBuffer;  // never freed: a benchmark
  return *t_buffer;
}

bool is_cuda_library(const char* name) {
  return name != nullptr && (std::strstr(name, "libcudart") != nullptr || std::strstr(name, "libcuda.so") != nullptr);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned la_version(unsigned version) {
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

// Cookies tell la_symbind which side of a binding is a CUDA library.
__attribute__((visibility("default"))) unsigned la_objopen(link_map* map, Lmid_t, uintptr_t* cookie) {
  *cookie = is_cuda_library(map->l_name) ? 1 : 0;
  return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

__attribute__((visibility("default"))) uintptr_t la_symbind64(Elf64_Sym* sym, unsigned, uintptr_t*, uintptr_t* defcook,
                                                              unsigned* flags, const char*) {
  if (*defcook == 0) *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
  return sym->st_value;
}

__attribute__((visibility("default"))) Elf64_Addr la_x86_64_gnu_pltenter(Elf64_Sym* sym, unsigned, uintptr_t*,
                                                                         uintptr_t*, La_x86_64_regs*, unsigned*,
                                                                         const char*, long int* framesizep) {
  *framesizep = 0;  // la_pltexit needs a frame size; these calls pass nothing on the stack that matters here
  buffer().begun_ns = now_ns();
  return sym->st_value;
}

__attribute__((visibility("default"))) unsigned la_x86_64_gnu_pltexit(Elf64_Sym* sym, unsigned, uintptr_t*, uintptr_t*,
                                                                      const La_x86_64_regs*, La_x86_64_retval*,
                                                                      const char*) {
  ThreadBuffer& b = buffer();
  const uint64_t end = now_ns();
  if (b.used < kRecordsPerThread)
    b.records[b.used++] = {sym->st_value, b.begun_ns, end};
  else
    ++b.dropped;
  if (b.used == kRecordsPerThread) {  // a writer would drain it; the benchmark reuses it
    g_recorded += b.used;
    b.used = 0;
  }
  return 0;
}

__attribute__((visibility("default"))) void la_preinit(uintptr_t*) {}

}  // extern "C"

__attribute__((destructor)) static void report_counts() {
  if (std::getenv("AUDIT_TRACER_VERBOSE") == nullptr || t_buffer == nullptr) return;
  g_recorded += t_buffer->used;
  g_dropped += t_buffer->dropped;
  std::fprintf(stderr, "audit_tracer: %llu calls recorded, %llu dropped\n", static_cast<unsigned long long>(g_recorded),
               static_cast<unsigned long long>(g_dropped));
}
