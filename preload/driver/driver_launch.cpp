// CUDA driver kernel launches (graph launches: driver_graphs.cpp), and the
// lookups that name a CUfunction: a launch through the driver carries only
// the handle, so the name comes from cuModuleGetFunction /
// cuLibraryGetKernel (+ cuKernelGetFunction) seen earlier.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"
#include "kernel_names.h"

namespace {

using gpuscope::hooks::launch;
using gpuscope::hooks::LaunchCall;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;

LaunchCall launch_ex(const CUlaunchConfig* c, CUfunction f) {
  if (c == nullptr) return launch(f, 0, 0, 0, 0, 0, 0, 0, nullptr);
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                c->sharedMemBytes, c->hStream);
}

}  // namespace

#define GPUSCOPE_DRIVER_LAUNCH(X)                                                                                   \
  X(CUresult, cuLaunchKernel, D,                                                                                    \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,       \
     CUstream s, void** params, void** extra),                                                                      \
    (f, gx, gy, gz, bx, by, bz, sh, s, params, extra), (launch(f, gx, gy, gz, bx, by, bz, sh, s)))                  \
  X(CUresult, cuLaunchKernel_ptsz, DP,                                                                              \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,       \
     CUstream s, void** params, void** extra),                                                                      \
    (f, gx, gy, gz, bx, by, bz, sh, s, params, extra), (launch(f, gx, gy, gz, bx, by, bz, sh, s)))                  \
  X(CUresult, cuLaunchKernelEx, D, (const CUlaunchConfig* c, CUfunction f, void** params, void** extra),            \
    (c, f, params, extra), (launch_ex(c, f)))                                                                       \
  X(CUresult, cuLaunchKernelEx_ptsz, DP, (const CUlaunchConfig* c, CUfunction f, void** params, void** extra),      \
    (c, f, params, extra), (launch_ex(c, f)))                                                                       \
  X(CUresult, cuLaunchCooperativeKernel, D,                                                                         \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,       \
     CUstream s, void** params),                                                                                    \
    (f, gx, gy, gz, bx, by, bz, sh, s, params), (launch(f, gx, gy, gz, bx, by, bz, sh, s)))                         \
  X(CUresult, cuLaunchCooperativeKernel_ptsz, DP,                                                                   \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,       \
     CUstream s, void** params),                                                                                    \
    (f, gx, gy, gz, bx, by, bz, sh, s, params), (launch(f, gx, gy, gz, bx, by, bz, sh, s)))

GPUSCOPE_DRIVER_LAUNCH(GPUSCOPE_DEFINE_HOOK)

// Naming lookups: not timed, they only teach the kernel-name registry.
namespace {

template <class Fn> Fn real_of(gpuscope::hooks::HookSlot& slot) { return slot.real_function<Fn>(); }

void remember(const void* handle, const char* name) {
  if (handle != nullptr && name != nullptr && gpuscope::capture::thread_context().internal == 0)
    gpuscope::registry::kernel_names().insert(handle, gpuscope::capture::session_strings().intern(name));
}

}  // namespace

GPUSCOPE_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name);
GPUSCOPE_EXPORT CUresult cuLibraryGetKernel(CUkernel* k, CUlibrary l, const char* name);
GPUSCOPE_EXPORT CUresult cuKernelGetFunction(CUfunction* f, CUkernel k);

GPUSCOPE_HOOK_SLOT(cuModuleGetFunction, D)
GPUSCOPE_HOOK_SLOT(cuLibraryGetKernel, D)
GPUSCOPE_HOOK_SLOT(cuKernelGetFunction, D)

GPUSCOPE_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  const auto real = real_of<decltype(&cuModuleGetFunction)>(gpuscope::hooks::slots::cuModuleGetFunction);
  if (real == nullptr) return gpuscope::hooks::not_found<CUresult>();
  const CUresult rc = real(f, m, name);
  if (rc == CUDA_SUCCESS && f != nullptr) remember(*f, name);
  return rc;
}

GPUSCOPE_EXPORT CUresult cuLibraryGetKernel(CUkernel* k, CUlibrary l, const char* name) {
  const auto real = real_of<decltype(&cuLibraryGetKernel)>(gpuscope::hooks::slots::cuLibraryGetKernel);
  if (real == nullptr) return gpuscope::hooks::not_found<CUresult>();
  const CUresult rc = real(k, l, name);
  if (rc == CUDA_SUCCESS && k != nullptr) remember(*k, name);
  return rc;
}

GPUSCOPE_EXPORT CUresult cuKernelGetFunction(CUfunction* f, CUkernel k) {
  const auto real = real_of<decltype(&cuKernelGetFunction)>(gpuscope::hooks::slots::cuKernelGetFunction);
  if (real == nullptr) return gpuscope::hooks::not_found<CUresult>();
  const CUresult rc = real(f, k);
  auto& names = gpuscope::registry::kernel_names();
  if (rc == CUDA_SUCCESS && f != nullptr) names.insert(*f, names.find(k));
  return rc;
}

namespace gpuscope::hooks {
std::span<HookSlot* const> driver_launch_hooks() {
  static constinit HookSlot* const slots[] = {GPUSCOPE_DRIVER_LAUNCH(GPUSCOPE_HOOK_SLOT_POINTER) &slots::cuModuleGetFunction,
                                    &slots::cuLibraryGetKernel, &slots::cuKernelGetFunction};
  return slots;
}
}  // namespace gpuscope::hooks
