#include "ring.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gpuscope::capture {

namespace detail {
// False until capture starts: a push before then (none is expected) takes
// the plain prefetch, which every x86-64 has.
std::atomic<bool> g_prefetch_for_write{false};
}  // namespace detail

void choose_ring_prefetch() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID 0x80000001 ECX bit 8: PREFETCHW ("3DNowPrefetch" in /proc/cpuinfo).
  const bool has = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_PRFCHW) != 0;
  detail::g_prefetch_for_write.store(has, std::memory_order_relaxed);
#endif
}

}  // namespace gpuscope::capture
