// Helpers shared by the driver entry-point files.
#pragma once

#include <new>

#include "model.hpp"

namespace simgpu::drv {

// Runs f(model) once cuInit succeeded; before that every entry point answers
// CUDA_ERROR_NOT_INITIALIZED like the real driver.  No exception crosses the
// C ABI.
template <class F>
CUresult with_model(F&& f) {
  Model* m = Model::instance();
  if (!m) return CUDA_ERROR_NOT_INITIALIZED;
  try {
    return f(*m);
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace simgpu::drv

// Defines an entry point and its per-thread default stream twin (the _ptsz or
// _ptds export that cuGetProcAddress hands out for
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM): both forward to
// name##_impl<per_thread>, so the two cannot drift apart.
#define SIMGPU_DRIVER_DUAL(name, suffix, params, args)                                 \
  extern "C" CUresult CUDAAPI name params { return name##_impl<false> args; }         \
  extern "C" CUresult CUDAAPI name##suffix params { return name##_impl<true> args; }
