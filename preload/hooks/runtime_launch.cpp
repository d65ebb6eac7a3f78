// CUDA runtime kernel launches, and the registrations that name them
// (graph launches: runtime_graphs.cpp).
// nvcc 13 turns `kernel<<<g, b, s, st>>>(...)` into __cudaGetKernel (once
// per launch site) and __cudaLaunchKernel(_ptsz) with the kernel handle;
// older code and libraries call cudaLaunchKernel with the host stub.
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"
#include "kernel_names.h"

using cudaKernelHandle = void*;  // cudaKernel_t, without the device headers

namespace {

using gpuscope::hooks::launch;
using gpuscope::hooks::LaunchCall;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;

LaunchCall launch3(const void* f, dim3 g, dim3 b, size_t shared, cudaStream_t s) {
  return launch(f, g.x, g.y, g.z, b.x, b.y, b.z, static_cast<uint32_t>(shared), s);
}

LaunchCall launch_ex(const cudaLaunchConfig_t* c, const void* f) {
  if (c == nullptr) return launch(f, 0, 0, 0, 0, 0, 0, 0, nullptr);
  return launch3(f, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->stream);
}

}  // namespace

#define GPUSCOPE_RUNTIME_LAUNCH(X)                                                                                 \
  X(cudaError_t, __cudaLaunchKernel, 0, (cudaKernelHandle k, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s), \
    (k, g, b, a, sh, s), (launch3(k, g, b, sh, s)))                                                                \
  X(cudaError_t, __cudaLaunchKernel_ptsz, P,                                                                       \
    (cudaKernelHandle k, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s), (k, g, b, a, sh, s),                \
    (launch3(k, g, b, sh, s)))                                                                                     \
  X(cudaError_t, cudaLaunchKernel, 0, (const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s),        \
    (f, g, b, a, sh, s), (launch3(f, g, b, sh, s)))                                                                \
  X(cudaError_t, cudaLaunchKernel_ptsz, P, (const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s),   \
    (f, g, b, a, sh, s), (launch3(f, g, b, sh, s)))                                                                \
  X(cudaError_t, cudaLaunchKernelExC, 0, (const cudaLaunchConfig_t* c, const void* f, void** a), (c, f, a),        \
    (launch_ex(c, f)))                                                                                             \
  X(cudaError_t, cudaLaunchKernelExC_ptsz, P, (const cudaLaunchConfig_t* c, const void* f, void** a), (c, f, a),   \
    (launch_ex(c, f)))                                                                                             \
  X(cudaError_t, cudaLaunchCooperativeKernel, 0,                                                                   \
    (const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s), (f, g, b, a, sh, s),                     \
    (launch3(f, g, b, sh, s)))                                                                                     \
  X(cudaError_t, cudaLaunchCooperativeKernel_ptsz, P,                                                              \
    (const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s), (f, g, b, a, sh, s),                     \
    (launch3(f, g, b, sh, s)))

GPUSCOPE_RUNTIME_LAUNCH(GPUSCOPE_DEFINE_RUNTIME_HOOK)

// Registration is not timed (it runs once per kernel at start-up); it names
// host stubs, and __cudaGetKernel carries the name over to the kernel handle
// that __cudaLaunchKernel receives.
using RegisterFunctionFn = void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
using GetKernelFn = cudaError_t (*)(cudaKernelHandle*, const void*);

#define GPUSCOPE_REGISTER_FUNCTION_PARAMS                                                                          \
  (void** handle, const char* host_fun, char* device_fun, const char* device_name, int thread_limit, uint3* tid,   \
   uint3* bid, dim3* block, dim3* grid, int* warp_size)
#define GPUSCOPE_REGISTER_FUNCTION_ARGS \
  (handle, host_fun, device_fun, device_name, thread_limit, tid, bid, block, grid, warp_size)

GPUSCOPE_EXPORT void __cudaRegisterFunction GPUSCOPE_REGISTER_FUNCTION_PARAMS;
GPUSCOPE_EXPORT cudaError_t __cudaGetKernel(cudaKernelHandle* kernel, const void* host_fun);

GPUSCOPE_HOOK_SLOT(__cudaRegisterFunction, 0)
GPUSCOPE_HOOK_SLOT(__cudaGetKernel, 0)

namespace gpuscope::hooks::bodies {

static void __cudaRegisterFunction(HookSlot& slot, void** handle, const char* host_fun, char* device_fun,
                                   const char* device_name, int thread_limit, uint3* tid, uint3* bid, dim3* block,
                                   dim3* grid, int* warp_size) {
  const auto real = slot.real_function<RegisterFunctionFn>();
  if (real != nullptr) real GPUSCOPE_REGISTER_FUNCTION_ARGS;
  if (device_name != nullptr && capture::thread_context().internal == 0)
    registry::kernel_names().insert(host_fun, capture::session_strings().intern(device_name));
}

static cudaError_t __cudaGetKernel(HookSlot& slot, cudaKernelHandle* kernel, const void* host_fun) {
  const auto real = slot.real_function<GetKernelFn>();
  if (real == nullptr) return not_found<cudaError_t>();
  const cudaError_t rc = real(kernel, host_fun);
  auto& names = registry::kernel_names();
  if (rc == cudaSuccess && kernel != nullptr) names.insert(*kernel, names.find(host_fun));
  return rc;
}

}  // namespace gpuscope::hooks::bodies

#define GPUSCOPE_RUNTIME_REGISTRATION(X)                                                                  \
  X(void, __cudaRegisterFunction, 0, GPUSCOPE_REGISTER_FUNCTION_PARAMS, GPUSCOPE_REGISTER_FUNCTION_ARGS, ) \
  X(cudaError_t, __cudaGetKernel, 0, (cudaKernelHandle * kernel, const void* host_fun), (kernel, host_fun), )

#define GPUSCOPE_REGISTRATION_EXPORTS(Ret, name, flags, params, args, describe) \
  GPUSCOPE_RUNTIME_EXPORTS(Ret, name, flags, params, args)
GPUSCOPE_RUNTIME_REGISTRATION(GPUSCOPE_REGISTRATION_EXPORTS)

namespace gpuscope::hooks {
std::span<HookSlot* const> runtime_launch_hooks() {
  static constinit HookSlot* const slots[] = {GPUSCOPE_RUNTIME_LAUNCH(GPUSCOPE_HOOK_SLOT_POINTER)
                                                  GPUSCOPE_RUNTIME_REGISTRATION(GPUSCOPE_HOOK_SLOT_POINTER)};
  return slots;
}
std::span<HookSlot* const> runtime_launch_hooks_aliases() {
  static constinit HookSlot* const slots[] = {GPUSCOPE_RUNTIME_LAUNCH(GPUSCOPE_ALIAS_SLOT_POINTERS)
                                                  GPUSCOPE_RUNTIME_REGISTRATION(GPUSCOPE_ALIAS_SLOT_POINTERS)};
  return slots;
}
}  // namespace gpuscope::hooks
