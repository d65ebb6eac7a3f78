// Pitched memory: 2D and 3D allocations, copies and memsets move the right
// bytes and leave the padding alone (tests/nodes/test.json).
#include <cstring>
#include <vector>

#include <cuda.h>

#include "test_support.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the 1D array copies, still exported

// nvcc's startup code calls these; a test calls them as it would.
extern "C" void** __cudaRegisterFatBinary(void* fat_cubin);
extern "C" void __cudaRegisterVar(void** handle, char* host_shadow, char* device_address, const char* name, int ext,
                                  size_t size, int constant, int global);

// CUDA 12.8's form of the driver's batched copy, which cuda.h declares only
// for the driver's own build (and otherwise renames to its _v2).
#undef cuMemcpyBatchAsync
extern "C" CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                       CUmemcpyAttributes* attrs, size_t* idxs, size_t nattrs, size_t* fail,
                                       CUstream stream);

namespace {

using simgpu_test::kernel;
using simgpu_test::launch;

TEST(Pitched, TwoDimensionalCopiesAndMemsetsKeepTheirRows) {
  constexpr size_t kWidth = 100, kHeight = 8, kHostPitch = 128;
  char* dev = nullptr;
  size_t pitch = 0;
  CUDA_OK(cudaMallocPitch(reinterpret_cast<void**>(&dev), &pitch, kWidth, kHeight));
  EXPECT_EQ(512u, pitch);
  std::vector<char> in(kWidth * kHeight);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i % 97);
  CUDA_OK(cudaMemcpy2D(dev, pitch, in.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset2D(dev + 10, pitch, 0xAB, 20, kHeight));
  std::vector<char> out(kHostPitch * kHeight, 'S');
  CUDA_OK(cudaMemcpy2D(out.data(), kHostPitch, dev, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < kHeight; ++y) {
    for (size_t x = 0; x < kHostPitch; ++x) {
      const char expected = x >= kWidth ? 'S' : x >= 10 && x < 30 ? static_cast<char>(0xAB) : in[y * kWidth + x];
      ASSERT_EQ(expected, out[y * kHostPitch + x]) << "row " << y << " column " << x;
    }
  }
  CUDA_OK(cudaFree(dev));
}

TEST(Pitched, ThreeDimensionalCopiesAndMemsetsReachEverySlice) {
  const cudaExtent extent = make_cudaExtent(64, 4, 3);  // bytes, rows, slices
  cudaPitchedPtr dev{};
  CUDA_OK(cudaMalloc3D(&dev, extent));
  EXPECT_EQ(512u, dev.pitch);
  EXPECT_EQ(4u, dev.ysize);
  std::vector<unsigned char> volume(64 * 4 * 3);
  for (size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<unsigned char>(i * 7);
  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(volume.data(), 64, 64, 4);
  up.dstPtr = dev;
  up.extent = extent;
  up.kind = cudaMemcpyHostToDevice;
  CUDA_OK(cudaMemcpy3D(&up));
  CUDA_OK(cudaMemset3D(dev, 1, make_cudaExtent(8, 4, 3)));  // whole slices: one 2D memset
  CUDA_OK(cudaMemset3D(dev, 2, make_cudaExtent(4, 2, 3)));  // part of each slice
  // Read back the box x 0..15, y 1..2, z 1..2 into a dense buffer.
  std::vector<unsigned char> box(16 * 2 * 2, 0xEE);
  cudaMemcpy3DParms down{};
  down.srcPtr = dev;
  down.srcPos = make_cudaPos(0, 1, 1);
  down.dstPtr = make_cudaPitchedPtr(box.data(), 16, 16, 2);
  down.extent = make_cudaExtent(16, 2, 2);
  down.kind = cudaMemcpyDeviceToHost;
  CUDA_OK(cudaMemcpy3D(&down));
  for (size_t z = 0; z < 2; ++z) {
    for (size_t y = 0; y < 2; ++y) {
      for (size_t x = 0; x < 16; ++x) {
        const size_t vz = z + 1, vy = y + 1;
        const unsigned char expected = x < 4 && vy < 2 ? 2 : x < 8 ? 1 : volume[(vz * 4 + vy) * 64 + x];
        ASSERT_EQ(expected, box[(z * 2 + y) * 16 + x]) << x << "," << vy << "," << vz;
      }
    }
  }
  CUDA_OK(cudaFree(dev.ptr));
}

TEST(Pitched, AsyncThreeDimensionalCopyWaitsForItsStream) {
  cudaPitchedPtr dev{};
  const cudaExtent extent = make_cudaExtent(32, 2, 2);
  CUDA_OK(cudaMalloc3D(&dev, extent));
  CUDA_OK(cudaMemset3D(dev, 0, extent));
  unsigned char* pinned = nullptr;
  CUDA_OK(cudaMallocHost(&pinned, 32 * 2 * 2));
  std::memset(pinned, 5, 32 * 2 * 2);
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(launch(kernel("k_10ms"), s));
  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(pinned, 32, 32, 2);
  up.dstPtr = dev;
  up.extent = extent;
  up.kind = cudaMemcpyDefault;
  CUDA_OK(cudaMemcpy3DAsync(&up, s));
  EXPECT_EQ(0, static_cast<unsigned char*>(dev.ptr)[dev.pitch * 3]);  // the stream is not there yet
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(5, static_cast<unsigned char*>(dev.ptr)[dev.pitch * 3]);  // slice 1, row 1
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev.ptr));
}

TEST(Pitched, DriverMemsetsAndArrays) {
  CUDA_OK(cudaSetDevice(0));
  CUdeviceptr dev = 0;
  size_t pitch = 0;
  ASSERT_EQ(CUDA_SUCCESS, cuMemAllocPitch(&dev, &pitch, 40, 3, 4));
  ASSERT_EQ(CUDA_SUCCESS, cuMemsetD2D32(dev, pitch, 0x01020304u, 10, 3));
  std::vector<uint32_t> row(10);
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = dev;
  c.srcPitch = pitch;
  c.srcY = 2;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = row.data();
  c.WidthInBytes = 40;
  c.Height = 1;
  c.Depth = 1;
  ASSERT_EQ(CUDA_SUCCESS, cuMemcpy3D(&c));
  EXPECT_EQ(0x01020304u, row[9]);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&dev, &pitch, 40, 3, 3));  // element size 4, 8 or 16
  // Something that is not an array, named as one.
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = reinterpret_cast<CUarray>(row.data());
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuMemcpy3D(&c));
  cudaMemcpy3DParms p{};
  p.srcArray = reinterpret_cast<cudaArray_t>(&row);
  p.extent = make_cudaExtent(1, 1, 1);
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaMemcpy3D(&p));
  cudaGetLastError();
}

// CUDA arrays are dense device memory: bytes written through one kind of
// copy read back through another, a sub-rectangle lands where its offsets
// say, and a mipmapped array's levels are arrays of their own.
TEST(Pitched, ArraysHoldTheBytesCopiedIntoThem) {
  CUDA_OK(cudaSetDevice(0));
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr, b = nullptr;
  CUDA_OK(cudaMallocArray(&a, &format, 8, 4));
  CUDA_OK(cudaMallocArray(&b, &format, 8, 4));
  std::vector<float> in(32), out(32, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  CUDA_OK(cudaMemcpy2DToArray(a, 0, 0, in.data(), 8 * sizeof(float), 8 * sizeof(float), 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpyArrayToArray(b, 0, 0, a, 0, 0, in.size() * sizeof(float), cudaMemcpyDeviceToDevice));
  CUDA_OK(cudaMemcpyFromArray(out.data(), b, 0, 0, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(in, out);
  // Row 2, columns 3..4 (x is in bytes for the 2D calls).
  std::vector<float> two(2);
  CUDA_OK(cudaMemcpy2DFromArray(two.data(), 2 * sizeof(float), b, 3 * sizeof(float), 2, 2 * sizeof(float), 1,
                                cudaMemcpyDeviceToHost));
  EXPECT_EQ((std::vector<float>{19.0f, 20.0f}), two);
  // cudaMemcpy3D counts an array's x and width in elements.
  cudaMemcpy3DParms p{};
  p.srcArray = a;
  p.srcPos = make_cudaPos(5, 1, 0);
  p.dstPtr = make_cudaPitchedPtr(two.data(), 2 * sizeof(float), 2, 1);
  p.extent = make_cudaExtent(2, 1, 1);
  p.kind = cudaMemcpyDeviceToHost;
  CUDA_OK(cudaMemcpy3D(&p));
  EXPECT_EQ((std::vector<float>{13.0f, 14.0f}), two);
  // Past the array's end: refused, nothing written.
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyToArray(a, 0, 3, in.data(), in.size() * sizeof(float),
                                                     cudaMemcpyHostToDevice));
  cudaGetLastError();
  cudaMipmappedArray_t levels = nullptr;
  cudaArray_t level = nullptr;
  CUDA_OK(cudaMallocMipmappedArray(&levels, &format, make_cudaExtent(8, 4, 0), 3));
  CUDA_OK(cudaGetMipmappedArrayLevel(&level, levels, 2));
  CUDA_OK(cudaMemcpyToArray(level, 0, 0, in.data(), 2 * sizeof(float), cudaMemcpyHostToDevice));  // 2 x 1
  EXPECT_EQ(cudaErrorInvalidValue, cudaGetMipmappedArrayLevel(&level, levels, 3));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaFreeArray(level));  // a level goes with its chain
  cudaGetLastError();
  CUDA_OK(cudaFreeMipmappedArray(levels));
  CUDA_OK(cudaFreeArray(b));
  CUDA_OK(cudaFreeArray(a));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaFreeArray(a));
  cudaGetLastError();
}

// __device__ / __constant__ variables as nvcc's startup code registers them:
// a module image (PTX here, which declares its kernel and variable) and a
// host shadow holding the variable's initial value.
const char kModuleWithATable[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n.const .align 4 .b8 table[64];\n"
    ".visible .entry uses_table() { ret; }\n";
float g_table_shadow[16] = {1.0f, 2.0f, 3.0f};

TEST(Pitched, SymbolsHoldTheirInitialValuesAndTheBytesCopiedToThem) {
  CUDA_OK(cudaSetDevice(0));
  void** binary = __cudaRegisterFatBinary(const_cast<char*>(kModuleWithATable));
  __cudaRegisterVar(binary, reinterpret_cast<char*>(g_table_shadow), nullptr, "table", 0, sizeof g_table_shadow, 1, 0);
  size_t size = 0;
  CUDA_OK(cudaGetSymbolSize(&size, g_table_shadow));
  EXPECT_EQ(sizeof g_table_shadow, size);
  std::vector<float> back(16, -1.0f);
  CUDA_OK(cudaMemcpyFromSymbol(back.data(), g_table_shadow, sizeof g_table_shadow, 0, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::vector<float>(g_table_shadow, g_table_shadow + 16), back);  // the module's initial values
  const std::vector<float> two = {7.0f, 8.0f};
  CUDA_OK(cudaMemcpyToSymbol(g_table_shadow, two.data(), 2 * sizeof(float), 4 * sizeof(float)));
  CUDA_OK(cudaMemcpyFromSymbol(back.data(), g_table_shadow, sizeof g_table_shadow));
  EXPECT_EQ(7.0f, back[4]);
  EXPECT_EQ(8.0f, back[5]);
  EXPECT_EQ(3.0f, back[2]);
  EXPECT_EQ(0.0f, g_table_shadow[4]);  // the host shadow is not the device's copy
  void* address = nullptr;
  CUDA_OK(cudaGetSymbolAddress(&address, g_table_shadow));
  float one = 0;
  CUDA_OK(cudaMemcpy(&one, static_cast<float*>(address) + 5, sizeof one, cudaMemcpyDeviceToHost));
  EXPECT_EQ(8.0f, one);
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyToSymbol(g_table_shadow, two.data(), 2 * sizeof(float), 15 * sizeof(float)));
  EXPECT_EQ(cudaErrorInvalidSymbol, cudaMemcpyToSymbol(&one, two.data(), sizeof(float)));
  cudaGetLastError();
}

// Batched copies: every copy of a batch lands (pointer to pointer, pointer
// to array with the extent in elements, rows of a longer pitch), and what
// CUDA refuses is refused: the legacy stream, attributes that do not start
// at copy 0, an access order of 0. CUDA 12.8's form names the failing copy.
TEST(Pitched, BatchedCopiesMoveEveryCopyAndRefuseWhatCudaRefuses) {
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreate(&s));
  std::vector<float> in(32), out(32, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  float* device = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&device), in.size() * sizeof(float)));
  void* dsts[] = {device, device + 16};
  const void* srcs[] = {in.data(), in.data() + 16};
  size_t sizes[] = {16 * sizeof(float), 16 * sizeof(float)}, first = 0;
  cudaMemcpyAttributes order{};
  order.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CUDA_OK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &order, &first, 1, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(out.data(), device, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(in, out);
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &order, &first, 1, nullptr));
  size_t second = 1;
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &order, &second, 1, s));
  cudaMemcpyAttributes unordered{};
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &unordered, &first, 1, s));
  cudaGetLastError();
  // Into an 8 x 4 float array (extent in elements), then its rows 1..2 out
  // to rows 10 floats apart.
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr;
  CUDA_OK(cudaMallocArray(&a, &format, 8, 4));
  cudaMemcpy3DBatchOp ops[2] = {};
  ops[0].src.type = cudaMemcpyOperandTypePointer, ops[0].src.op.ptr.ptr = in.data();
  ops[0].dst.type = cudaMemcpyOperandTypeArray, ops[0].dst.op.array.array = a;
  ops[0].extent = make_cudaExtent(8, 4, 1), ops[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::vector<float> rows(20, -1.0f);
  ops[1].src.type = cudaMemcpyOperandTypeArray, ops[1].src.op.array.array = a;
  ops[1].src.op.array.offset = cudaOffset3D{0, 1, 0};
  ops[1].dst.type = cudaMemcpyOperandTypePointer, ops[1].dst.op.ptr.ptr = rows.data();
  ops[1].dst.op.ptr.rowLength = 10;
  ops[1].extent = make_cudaExtent(8, 2, 1), ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CUDA_OK(cudaMemcpy3DBatchAsync(2, ops, 0, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(8.0f, rows[0]);
  EXPECT_EQ(15.0f, rows[7]);
  EXPECT_EQ(-1.0f, rows[8]);  // the longer row's padding is left alone
  EXPECT_EQ(16.0f, rows[10]);
  // The driver's CUDA 12.8 form: the second copy has nowhere to go.
  CUdeviceptr to[] = {reinterpret_cast<CUdeviceptr>(device), 0};
  CUdeviceptr from[] = {reinterpret_cast<CUdeviceptr>(in.data()), reinterpret_cast<CUdeviceptr>(in.data())};
  size_t bytes[] = {sizeof(float), sizeof(float)}, fail = 0;
  CUmemcpyAttributes driver_order{};
  driver_order.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cuMemcpyBatchAsync(to, from, bytes, 2, &driver_order, &first, 1, &fail, reinterpret_cast<CUstream>(s)));
  EXPECT_EQ(1u, fail);
  CUDA_OK(cudaFreeArray(a));
  CUDA_OK(cudaFree(device));
  CUDA_OK(cudaStreamDestroy(s));
}

}  // namespace
