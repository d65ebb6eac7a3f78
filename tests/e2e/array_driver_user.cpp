// The driver API's CUDA array calls, each once, printing each call's
// result: what driver-API texture code and video decoders make (the
// runtime's are array_user.cpp's). Every 2D copy moves 64 x 64 floats
// (16 KiB); the volume is 16 x 16 x 4 uchar4, its mipmapped twin two levels.
// A batched 3D copy brings the volume back to the host: its extent counts
// the array's elements (4 bytes each), 4 KiB in all; then CUDA 12.8's form
// of the batched copy (what a 12.8 program or runtime calls) brings the
// linear buffer back, 16 KiB.
#include <cuda.h>

#include <cstdio>

// CUDA 12.8's batched copy, with the index of a failing copy before the
// stream: cuda.h declares it only for the driver's own build.
#undef cuMemcpyBatchAsync
extern "C" CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                       CUmemcpyAttributes* attrs, size_t* idxs, size_t nattrs, size_t* fail,
                                       CUstream stream);

int main() {
  static float host[64 * 64];
  std::printf("cuInit %d\n", cuInit(0));
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  std::printf("cuDeviceGet %d\n", cuDeviceGet(&dev, 0));
  std::printf("cuDevicePrimaryCtxRetain %d\n", cuDevicePrimaryCtxRetain(&ctx, dev));
  std::printf("cuCtxSetCurrent %d\n", cuCtxSetCurrent(ctx));
  const CUDA_ARRAY_DESCRIPTOR plane{64, 64, CU_AD_FORMAT_FLOAT, 1};
  CUDA_ARRAY3D_DESCRIPTOR volume{};
  volume.Width = 16, volume.Height = 16, volume.Depth = 4, volume.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  volume.NumChannels = 4;
  CUarray a = nullptr, b = nullptr, v = nullptr;
  CUmipmappedArray levels = nullptr;
  CUdeviceptr linear = 0;
  std::printf("cuArrayCreate %d\n", cuArrayCreate(&a, &plane));
  std::printf("cuArrayCreate %d\n", cuArrayCreate(&b, &plane));
  std::printf("cuArray3DCreate %d\n", cuArray3DCreate(&v, &volume));
  std::printf("cuMipmappedArrayCreate %d\n", cuMipmappedArrayCreate(&levels, &volume, 2));
  std::printf("cuMemAlloc %d\n", cuMemAlloc(&linear, sizeof host));
  std::printf("cuMemcpyHtoA %d\n", cuMemcpyHtoA(a, 0, host, sizeof host));
  std::printf("cuMemcpyAtoA %d\n", cuMemcpyAtoA(b, 0, a, 0, sizeof host));
  std::printf("cuMemcpyAtoD %d\n", cuMemcpyAtoD(linear, b, 0, sizeof host));
  std::printf("cuMemcpyDtoA %d\n", cuMemcpyDtoA(a, 0, linear, sizeof host));
  std::printf("cuMemcpyAtoH %d\n", cuMemcpyAtoH(host, a, 0, sizeof host));
  CUDA_MEMCPY2D rect{};
  rect.srcMemoryType = CU_MEMORYTYPE_ARRAY, rect.srcArray = b;
  rect.dstMemoryType = CU_MEMORYTYPE_HOST, rect.dstHost = host, rect.dstPitch = 64 * sizeof(float);
  rect.WidthInBytes = 64 * sizeof(float), rect.Height = 64;
  std::printf("cuMemcpy2D %d\n", cuMemcpy2D(&rect));
  CUstream stream = nullptr;
  std::printf("cuStreamCreate %d\n", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUDA_MEMCPY3D_BATCH_OP op{};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY, op.src.op.array.array = v;
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER, op.dst.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(host);
  op.extent = CUextent3D{16, 16, 4};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::printf("cuMemcpy3DBatchAsync %d\n", cuMemcpy3DBatchAsync(1, &op, 0, stream));
  CUdeviceptr dst = reinterpret_cast<CUdeviceptr>(host), src = linear;
  size_t bytes = sizeof host, first = 0, failed = 0;
  CUmemcpyAttributes in_order{};
  in_order.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::printf("cuMemcpyBatchAsync %d\n",
              cuMemcpyBatchAsync(&dst, &src, &bytes, 1, &in_order, &first, 1, &failed, stream));
  std::printf("cuStreamSynchronize %d\n", cuStreamSynchronize(stream));
  std::printf("cuStreamDestroy %d\n", cuStreamDestroy(stream));
  std::printf("cuMemFree %d\n", cuMemFree(linear));
  std::printf("cuMipmappedArrayDestroy %d\n", cuMipmappedArrayDestroy(levels));
  std::printf("cuArrayDestroy %d\n", cuArrayDestroy(v));
  std::printf("cuArrayDestroy %d\n", cuArrayDestroy(b));
  std::printf("cuArrayDestroy %d\n", cuArrayDestroy(a));
  return 0;
}
