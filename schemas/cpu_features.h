// What the CPU can do, as glibc's dynamic loader recorded it at start
// (<sys/platform/x86.h>, glibc 2.33): no cpuid instruction here. In a VM
// each cpuid traps to the hypervisor, and libgcc's full probe
// (__builtin_cpu_init) cost ~70 us of every traced process's start.
// "Active" also means the kernel saves the registers (AVX state in XSAVE).
#pragma once

#if defined(__x86_64__)
// The header is C: its inline functions return _Bool, which g++ takes as
// an extension and clang++ (the fuzzing build) does not.
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool

namespace gpuscope::container {

inline bool cpu_has_sse42() noexcept { return CPU_FEATURE_ACTIVE(SSE4_2); }
inline bool cpu_has_avx2() noexcept { return CPU_FEATURE_ACTIVE(AVX2); }

}  // namespace gpuscope::container
#endif
