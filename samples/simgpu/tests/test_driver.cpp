// The driver ABI: cuGetProcAddress resolution, the driver API used directly,
// and entry points simgpu does not model.
#include <dlfcn.h>

#include <string>

#include <cuda.h>

#include "test_support.hpp"

namespace {

#define CU_OK(expr) ASSERT_EQ(CUDA_SUCCESS, (expr)) << #expr

class Driver : public testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!handle_) handle_ = dlopen("libcuda.so.1", RTLD_NOW);
    ASSERT_NE(nullptr, handle_) << dlerror();
    gpa_ = reinterpret_cast<decltype(gpa_)>(dlsym(handle_, "cuGetProcAddress_v2"));
    ASSERT_NE(nullptr, gpa_);
  }
  void* lookup(const char* base, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status,
               CUresult expect = CUDA_SUCCESS) {
    void* fn = nullptr;
    EXPECT_EQ(expect, gpa_(base, &fn, version, flags, status)) << base;
    return fn;
  }
  void* exported(const char* symbol) { return dlsym(handle_, symbol); }

  void* handle_ = nullptr;
  CUresult (*gpa_)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) = nullptr;
};

TEST_F(Driver, ProcAddressPicksTheNewestVariantForTheVersion) {
  CUdriverProcAddressQueryResult status;
  const cuuint64_t legacy = CU_GET_PROC_ADDRESS_DEFAULT;
  EXPECT_EQ(exported("cuMemAlloc_v2"), lookup("cuMemAlloc", 13000, legacy, &status));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, status);
  EXPECT_EQ(exported("cuMemAlloc"), lookup("cuMemAlloc", 3000, legacy, &status));
  EXPECT_EQ(exported("cuCtxSynchronize_v2"), lookup("cuCtxSynchronize", 13000, legacy, &status));
  EXPECT_EQ(exported("cuCtxSynchronize"), lookup("cuCtxSynchronize", 12080, legacy, &status));
  EXPECT_EQ(exported("cuGetProcAddress_v2"), lookup("cuGetProcAddress", 13000, legacy, &status));
}

TEST_F(Driver, ProcAddressHandsOutPerThreadVariantsWhenAsked) {
  CUdriverProcAddressQueryResult status;
  const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(exported("cuMemcpyHtoD_v2_ptds"), lookup("cuMemcpyHtoD", 13000, per_thread, &status));
  EXPECT_EQ(exported("cuMemcpyHtoDAsync_v2_ptsz"), lookup("cuMemcpyHtoDAsync", 13000, per_thread, &status));
  EXPECT_EQ(exported("cuLaunchKernel_ptsz"), lookup("cuLaunchKernel", 13000, per_thread, &status));
  EXPECT_EQ(exported("cuMemcpyHtoD_v2"), lookup("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  // No per-thread twin: the plain function.
  EXPECT_EQ(exported("cuMemAlloc_v2"), lookup("cuMemAlloc", 13000, per_thread, &status));
}

TEST_F(Driver, ProcAddressReportsMissingSymbolsAndVersions) {
  CUdriverProcAddressQueryResult status;
  EXPECT_EQ(nullptr, lookup("cuMemAllocAsync", 11000, 0, &status, CUDA_ERROR_NOT_FOUND));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, status);
  EXPECT_EQ(nullptr, lookup("cuNoSuchFunction", 13000, 0, &status, CUDA_ERROR_NOT_FOUND));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, status);
  EXPECT_EQ(nullptr, lookup("cuMemAlloc_v2", 13000, 0, &status, CUDA_ERROR_NOT_FOUND));  // base names only
}

TEST_F(Driver, UnsupportedEntryPointsReturnErrorsNotCrashes) {
  CUdriverProcAddressQueryResult status;
  auto import_memory = reinterpret_cast<CUresult (*)(CUexternalMemory*, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC*)>(
      lookup("cuImportExternalMemory", 13000, 0, &status));
  ASSERT_NE(nullptr, import_memory);
  CUexternalMemory memory = nullptr;
  const CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, import_memory(&memory, &desc));
  auto sparse = reinterpret_cast<CUresult (*)()>(exported("cuArrayGetSparseProperties"));
  ASSERT_NE(nullptr, sparse);
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, sparse());
  // The runtime: a proper error, which also becomes the last error.
  cudaExternalMemory_t rt_memory = nullptr;
  const cudaExternalMemoryHandleDesc rt_desc{};
  EXPECT_EQ(cudaErrorNotSupported, cudaImportExternalMemory(&rt_memory, &rt_desc));
  EXPECT_EQ(cudaErrorNotSupported, cudaGetLastError());
  EXPECT_STREQ("cudaErrorNotSupported", cudaGetErrorName(cudaErrorNotSupported));
}

TEST_F(Driver, PrivateExportTablesAreRefusedWithAnExplanation) {
  auto get_export_table =
      reinterpret_cast<CUresult (*)(const void**, const CUuuid*)>(exported("cuGetExportTable"));
  ASSERT_NE(nullptr, get_export_table);
  const CUuuid some_table{};
  const void* table = &some_table;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, get_export_table(nullptr, &some_table));
  testing::internal::CaptureStderr();
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, get_export_table(&table, &some_table));
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, get_export_table(&table, &some_table));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(nullptr, table);
  // Once, naming the call and what to do about it.
  EXPECT_NE(std::string::npos, said.find("simgpu: cuGetExportTable is not supported"));
  EXPECT_NE(std::string::npos, said.find("-cudart shared"));
  EXPECT_EQ(said.find("simgpu:"), said.rfind("simgpu:"));
}

TEST_F(Driver, DriverApiRunsAKernelFromPtx) {
  static const char kPtx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k_50ms(.param .u64 p)\n{\n\tret;\n}\n";
  CU_OK(cuInit(0));
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU_OK(cuCtxCreate(&ctx, nullptr, 0, dev));
  CUmodule module;
  CU_OK(cuModuleLoadData(&module, kPtx));
  CUfunction fn;
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&fn, module, "missing"));
  CU_OK(cuModuleGetFunction(&fn, module, "k_50ms"));
  const char* name = nullptr;
  CU_OK(cuFuncGetName(&name, fn));
  EXPECT_STREQ("k_50ms", name);
  CUdeviceptr p;
  CU_OK(cuMemAlloc(&p, 64));
  void* args[] = {&p};
  CU_OK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cuStreamQuery(nullptr));
  CU_OK(cuCtxSynchronize());
  EXPECT_EQ(CUDA_SUCCESS, cuStreamQuery(nullptr));
  CU_OK(cuMemFree(p));
  CU_OK(cuModuleUnload(module));
  CU_OK(cuCtxDestroy(ctx));
  const char* text = nullptr;
  CU_OK(cuGetErrorName(CUDA_ERROR_NO_DEVICE, &text));
  EXPECT_STREQ("CUDA_ERROR_NO_DEVICE", text);
}

}  // namespace
