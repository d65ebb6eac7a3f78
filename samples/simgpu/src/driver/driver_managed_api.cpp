// Driver API entry points for managed memory: prefetch, advice, range
// attributes and stream attachment.
#include "driver_api.hpp"

// cuda.h maps these names to their CUmemLocation variants; the CUdevice
// forms are exported too and defined below under their own names.
#undef cuMemPrefetchAsync
#undef cuMemAdvise

extern "C" CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr p, size_t count, CUdevice dst, CUstream s);
extern "C" CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t count, CUdevice dst, CUstream s);
extern "C" CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t count, CUmem_advise advice, CUdevice dev);

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

// The CUdevice form of a location: CU_DEVICE_CPU is the host.
CUmemLocation location_of(CUdevice dev) {
  return dev == CU_DEVICE_CPU ? CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0} : CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, dev};
}

template <bool PT>
CUresult cuMemPrefetchAsync_v2_impl(CUdeviceptr p, size_t count, CUmemLocation to, unsigned flags, CUstream s) {
  return with_model([&](Model& m) { return m.prefetch(p, count, to, flags, s, PT); });
}

template <bool PT>
CUresult cuMemPrefetchAsync_impl(CUdeviceptr p, size_t count, CUdevice dst, CUstream s) {
  return cuMemPrefetchAsync_v2_impl<PT>(p, count, location_of(dst), 0, s);
}

template <bool PT>
CUresult cuStreamAttachMemAsync_impl(CUstream s, CUdeviceptr p, size_t length, unsigned flags) {
  return with_model([&](Model& m) { return m.attach_memory(s, PT, p, length, flags); });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr p, size_t count, CUmem_advise advice, CUmemLocation where) {
  return with_model([&](Model& m) { return m.advise(p, count, advice, where); });
}

CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t count, CUmem_advise advice, CUdevice dev) {
  return cuMemAdvise_v2(p, count, advice, location_of(dev));
}

CUresult CUDAAPI cuMemRangeGetAttribute(void* data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
                                        size_t count) {
  return with_model([&](Model& m) { return m.range_attribute(data, size, attr, p, count); });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuMemPrefetchAsync, _ptsz, (CUdeviceptr p, size_t count, CUdevice dst, CUstream s),
                   (p, count, dst, s))
SIMGPU_DRIVER_DUAL(cuMemPrefetchAsync_v2, _ptsz,
                   (CUdeviceptr p, size_t count, CUmemLocation to, unsigned int flags, CUstream s),
                   (p, count, to, flags, s))
SIMGPU_DRIVER_DUAL(cuStreamAttachMemAsync, _ptsz, (CUstream s, CUdeviceptr p, size_t length, unsigned int flags),
                   (s, p, length, flags))
