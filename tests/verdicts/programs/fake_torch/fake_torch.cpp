// The fake libtorch's host side (fake_torch.h). Built without inlining or
// sibling calls so that every function stands in the stack as it would in
// libtorch.
#include "fake_torch.h"

#include <memory>

#include "expandable_segment.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "fake_torch: %s failed: %s\n", what, cudaGetErrorName(e));
  std::exit(1);
}

}  // namespace

namespace at::cuda {

// ATen's helper behind .item() and blocking copies: an async copy on the
// current stream, then a synchronize of that stream.
void memcpy_and_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace at::cuda

namespace at::native {

// Recent releases read the scalar into pinned memory (older ones into a
// pageable local), so the copy queues and the synchronize does the waiting.
Scalar _local_scalar_dense_cuda(const Tensor& self) {
  static float* pinned = [] {
    void* p = nullptr;
    check(cudaMallocHost(&p, sizeof(float)), "cudaMallocHost");
    return static_cast<float*>(p);
  }();
  at::cuda::memcpy_and_sync(pinned, self.data(), sizeof(float), cudaMemcpyDeviceToHost, nullptr);
  return Scalar{*pinned};
}

Scalar item(const Tensor& self) { return at::_local_scalar_dense(self); }

void copy_kernel_cuda(Tensor& dst, const Tensor& src, bool non_blocking) {
  const size_t bytes = src.numel() * sizeof(float);
  const cudaMemcpyKind kind = dst.is_cuda() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (non_blocking) {
    check(cudaMemcpyAsync(dst.data(), src.data(), bytes, kind, nullptr), "cudaMemcpyAsync");
    return;
  }
  at::cuda::memcpy_and_sync(dst.data(), src.data(), bytes, kind, nullptr);
}

void copy_impl(Tensor& self, const Tensor& src, bool non_blocking) { copy_kernel_cuda(self, src, non_blocking); }

Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  copy_impl(self, src, non_blocking);
  return self;
}

Tensor _to_copy(const Tensor& self, c10::Device device, bool non_blocking) {
  Tensor out = device.cuda ? Tensor::empty_cuda(self.numel()) : Tensor{};
  if (!device.cuda) out.host().resize(self.numel());
  copy_(out, self, non_blocking);
  return out;
}

}  // namespace at::native

namespace at {

Scalar _local_scalar_dense(const Tensor& self) { return native::_local_scalar_dense_cuda(self); }

Tensor Tensor::empty_cuda(size_t n) {
  Tensor t;
  t.set_device_data(static_cast<float*>(c10::cuda::CUDACachingAllocator::raw_alloc(n * sizeof(float))), n);
  return t;
}

Tensor Tensor::from_host(std::vector<float> values) {
  Tensor t;
  t.n_ = values.size();
  t.host_ = std::move(values);
  return t;
}

Scalar Tensor::item() const { return native::item(*this); }

Tensor Tensor::to(c10::Device device) const { return native::_to_copy(*this, device, false); }

}  // namespace at

namespace c10::cuda {
namespace {

int device_count_impl(bool fail_if_no_driver) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // PyTorch clears the error and answers 0
    if (fail_if_no_driver) std::fprintf(stderr, "fake_torch: no CUDA driver\n");
    return 0;
  }
  return count;
}

}  // namespace

int device_count() noexcept { return device_count_impl(false); }

void device_synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

namespace CUDACachingAllocator::Native {

// Freed blocks stay cached for the next allocation of their size; only
// emptyCache (or an out-of-memory retry) returns them with cudaFree, or,
// with expandable segments, unmaps the segment's pages once none is in use.
class DeviceCachingAllocator {
 public:
  static constexpr size_t kMaxSegmentBytes = 256u << 20;
  void* malloc(size_t bytes) {
    std::lock_guard lock(mu_);
    auto it = cached_.find(bytes);
    if (it != cached_.end()) {
      void* p = it->second;
      cached_.erase(it);
      return p;
    }
    void* p = nullptr;
    if (expandable_) p = segment_malloc(bytes);
    else check(cudaMalloc(&p, bytes), "cudaMalloc");
    sizes_[p] = bytes;
    return p;
  }
  void free(void* p) {
    std::lock_guard lock(mu_);
    cached_.emplace(sizes_[p], p);
  }
  void emptyCache() {
    std::lock_guard lock(mu_);
    release_cached_blocks();
  }

 private:
  void* segment_malloc(size_t bytes) {
    using Segment = ExpandableSegment;
    if (!segment_) segment_ = std::make_unique<Segment>(kMaxSegmentBytes);
    void* p = segment_->ptr() + used_;
    used_ += (bytes + 511) / 512 * 512;
    if (used_ > kMaxSegmentBytes) check(cudaErrorMemoryAllocation, "expandable segment");
    segment_->map(0, (used_ + Segment::kSegmentSize - 1) / Segment::kSegmentSize);
    return p;
  }
  void release_cached_blocks() {
    for (auto& [bytes, p] : cached_) release_block(p);
    cached_.clear();
    if (expandable_ && sizes_.empty() && segment_) {  // nothing in use: give the pages back
      segment_->unmap(0, segment_->mapped_pages());
      used_ = 0;
    }
  }
  void release_block(void* p) {
    if (!expandable_) check(cudaFree(p), "cudaFree");
    sizes_.erase(p);
  }
  const bool expandable_ = expandable_segments_enabled();
  std::unique_ptr<ExpandableSegment> segment_;
  size_t used_ = 0;
  std::mutex mu_;
  std::multimap<size_t, void*> cached_;
  std::map<void*, size_t> sizes_;
};

class NativeCachingAllocator {
 public:
  void* raw_alloc(size_t bytes) { return device_.malloc(bytes); }
  void raw_delete(void* p) { device_.free(p); }
  void emptyCache() { device_.emptyCache(); }

 private:
  DeviceCachingAllocator device_;
};

NativeCachingAllocator& allocator() {
  static NativeCachingAllocator* a = new NativeCachingAllocator;
  return *a;
}

}  // namespace CUDACachingAllocator::Native

namespace CUDACachingAllocator {
void* raw_alloc(size_t bytes) { return Native::allocator().raw_alloc(bytes); }
void raw_delete(void* p) { Native::allocator().raw_delete(p); }
void emptyCache() { Native::allocator().emptyCache(); }
}  // namespace CUDACachingAllocator

}  // namespace c10::cuda
