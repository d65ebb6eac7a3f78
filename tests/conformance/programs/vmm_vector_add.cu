// vmm_vector_add: vector addition on memory from CUDA's virtual memory
// management API, as the driver samples do it: reserve an address range,
// create physical memory, map it there, grant access, and release the
// handle at once (the mapping keeps the memory until it is unmapped). Then
// a buffer that grows a page at a time inside one reservation, as PyTorch's
// expandable segments do, cleared across all its pages after each step,
// and given back page by page: unmap, then release. The driver functions
// come from cudaGetDriverEntryPointByVersion, as PyTorch gets them, so the
// program needs no libcuda at link time.
#include <cuda.h>

#include <vector>

#include "conformance.h"

namespace {

#define checkCuErrors(call) check_cu((call), #call, __FILE__, __LINE__)

void check_cu(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "CUDA driver error at %s:%d code=%d \"%s\"\n", file, line, static_cast<int>(result), call);
  std::exit(EXIT_FAILURE);
}

struct Driver {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
};

template <class F> void entry_point(const char* name, F* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  checkCudaErrors(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "vmm_vector_add: the driver has no %s\n", name);
    std::exit(EXIT_FAILURE);
  }
  *out = reinterpret_cast<F>(fn);
}

Driver load_driver() {
  Driver d;
  entry_point("cuMemGetAllocationGranularity", &d.granularity);
  entry_point("cuMemAddressReserve", &d.reserve);
  entry_point("cuMemAddressFree", &d.address_free);
  entry_point("cuMemCreate", &d.create);
  entry_point("cuMemRelease", &d.release);
  entry_point("cuMemMap", &d.map);
  entry_point("cuMemUnmap", &d.unmap);
  entry_point("cuMemSetAccess", &d.set_access);
  return d;
}

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

class MappedMemory {
 public:
  MappedMemory(const Driver& d, int device) : d_(d) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    checkCuErrors(d_.granularity(&granularity_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }
  size_t granularity() const { return granularity_; }
  size_t round_up(size_t bytes) const { return (bytes + granularity_ - 1) / granularity_ * granularity_; }

  // One buffer: its own reservation and physical allocation; the handle is
  // released at once, the mapping holds the memory.
  CUdeviceptr allocate(size_t size) {
    CUdeviceptr p = 0;
    CUmemGenericAllocationHandle h = 0;
    checkCuErrors(d_.reserve(&p, size, 0, 0, 0));
    checkCuErrors(d_.create(&h, size, &prop_, 0));
    checkCuErrors(d_.map(p, size, 0, h, 0));
    checkCuErrors(d_.release(h));
    checkCuErrors(d_.set_access(p, size, &access_, 1));
    return p;
  }
  void free(CUdeviceptr p, size_t size) {
    checkCuErrors(d_.unmap(p, size));
    checkCuErrors(d_.address_free(p, size));
  }
  // A page of a growing segment, mapped at `at` inside a reservation.
  CUmemGenericAllocationHandle map_page(CUdeviceptr at) {
    CUmemGenericAllocationHandle h = 0;
    checkCuErrors(d_.create(&h, granularity_, &prop_, 0));
    checkCuErrors(d_.map(at, granularity_, 0, h, 0));
    checkCuErrors(d_.set_access(at, granularity_, &access_, 1));
    return h;
  }

 private:
  const Driver& d_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  size_t granularity_ = 0;
};

bool add_vectors(MappedMemory& memory, int n) {
  const size_t bytes = n * sizeof(float), size = memory.round_up(bytes);
  std::vector<float> a(n), b(n), c(n), a_back(n);
  conformance::fill(a.data(), n, 1);
  conformance::fill(b.data(), n, 2);
  auto* d_a = reinterpret_cast<float*>(memory.allocate(size));
  auto* d_b = reinterpret_cast<float*>(memory.allocate(size));
  auto* d_c = reinterpret_cast<float*>(memory.allocate(size));
  checkCudaErrors(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
  checkCudaErrors(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));
  const int threads = 256, blocks = (n + threads - 1) / threads;
  vectorAdd<<<blocks, threads>>>(d_a, d_b, d_c, n);
  getLastCudaError("vectorAdd");
  checkCudaErrors(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaMemcpy(a_back.data(), d_a, bytes, cudaMemcpyDeviceToHost));
  bool ok = a_back == a;
  if (!ok) std::fprintf(stderr, "vmm_vector_add: the copy of a read back differs from a\n");
  if (conformance::kernel_results_checkable())
    for (int i = 0; i < n && ok; ++i)
      if (c[i] != a[i] + b[i]) {
        std::fprintf(stderr, "vmm_vector_add: result verification failed at element %d\n", i);
        ok = false;
      }
  for (float* p : {d_a, d_b, d_c}) memory.free(reinterpret_cast<CUdeviceptr>(p), size);
  return ok;
}

// Grows one segment by `pages` pages, clearing all of it after each step,
// then checks the last clear and gives the pages back.
bool grow_segment(const Driver& d, MappedMemory& memory, int pages) {
  const size_t page = memory.granularity();
  CUdeviceptr base = 0;
  checkCuErrors(d.reserve(&base, pages * page, 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles;
  for (int step = 0; step < pages; ++step) {
    handles.push_back(memory.map_page(base + step * page));
    checkCudaErrors(cudaMemset(reinterpret_cast<void*>(base), step + 1, (step + 1) * page));
  }
  std::vector<unsigned char> back(pages * page);
  checkCudaErrors(cudaMemcpy(back.data(), reinterpret_cast<void*>(base), back.size(), cudaMemcpyDeviceToHost));
  bool ok = true;
  for (size_t i = 0; i < back.size() && ok; ++i) ok = back[i] == pages;
  if (!ok) std::fprintf(stderr, "vmm_vector_add: the grown segment does not hold its last clear\n");
  for (int step = 0; step < pages; ++step) checkCuErrors(d.unmap(base + step * page, page));
  for (CUmemGenericAllocationHandle h : handles) checkCuErrors(d.release(h));
  checkCuErrors(d.address_free(base, pages * page));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "vmm_vector_add";
  const sample::Flags flags(argc, argv, {"n=", "pages="}, "[--n=ELEMENTS] [--pages=PAGES]");
  const int n = static_cast<int>(flags.get("n", 1000000));
  const int pages = static_cast<int>(flags.get("pages", 4));
  std::printf("[Vector addition of %d elements on mapped memory]\n", n);
  checkCudaErrors(cudaSetDevice(0));  // the primary context, which the driver calls use
  const Driver driver = load_driver();
  MappedMemory memory(driver, 0);
  std::printf("allocation granularity %zu bytes\n", memory.granularity());
  bool ok = add_vectors(memory, n);
  std::printf("growing a segment to %d pages\n", pages);
  ok = grow_segment(driver, memory, pages) && ok;
  std::printf("Done\n");
  return conformance::finish(ok);
}
