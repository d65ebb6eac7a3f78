#include "test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <sys/mman.h>

extern "C" void** __cudaRegisterFatBinary(void* fat_cubin);
extern "C" void __cudaRegisterFatBinaryEnd(void** handle);
extern "C" void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                                       const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                                       dim3* block, dim3* grid, int* warp_size);

namespace simgpu_test {
namespace {

struct FatbinWrapper {
  int magic;
  int version;
  const void* data;
  void* unused;
};

struct Registered {
  std::string ptx;
  FatbinWrapper wrapper;
  char host_stub;  // its address identifies the kernel, as a host stub's does
};

}  // namespace

const void* kernel(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Registered>> kernels;
  std::lock_guard lock(mu);
  auto& slot = kernels[name];
  if (!slot) {
    slot = std::make_unique<Registered>();
    slot->ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry " + name + "()\n{\n\tret;\n}\n";
    slot->wrapper = FatbinWrapper{0x466243B1, 1, slot->ptx.c_str(), nullptr};
    void** handle = __cudaRegisterFatBinary(&slot->wrapper);
    __cudaRegisterFunction(handle, &slot->host_stub, nullptr, name.c_str(), -1, nullptr, nullptr, nullptr, nullptr,
                           nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
  return &slot->host_stub;
}

cudaError_t launch(const void* k, cudaStream_t s, unsigned blocks, unsigned threads) {
  return cudaLaunchKernel(k, dim3(blocks), dim3(threads), nullptr, 0, s);
}

}  // namespace simgpu_test

// Every test process gets its own NVML activity log, so concurrent tests (and
// samples) never see each other's kernels; it is removed when the tests end.
int main(int argc, char** argv) {
  const std::string id = "test-" + std::to_string(getpid());
  if (!std::getenv("SIMGPU_SHARED_ID")) setenv("SIMGPU_SHARED_ID", id.c_str(), 1);
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  // The segment is /dev/shm/simgpu<layout>-<uid>-<id>.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("simgpu", 0) == 0 && name.size() > id.size() && name.compare(name.size() - id.size() - 1, std::string::npos, "-" + id) == 0)
      shm_unlink(("/" + name).c_str());
  }
  return rc;
}
