// A fake libtorch for tests/verdicts/test_pytorch_shapes.cpp: a few
// functions in PyTorch's own C++ namespaces with PyTorch's names (so their
// symbols read like the real ones in a stack), calling the CUDA runtime
// the way PyTorch does. Nothing here is PyTorch's code: the bodies are
// the smallest that make the same CUDA calls. Parameter lists are
// simplified; the gpuscope matcher reads names, not signatures.
#pragma once

#include <cstddef>
#include <vector>

namespace c10 {

struct Scalar {
  double value = 0;
};

struct Device {
  bool cuda = false;
};

}  // namespace c10

namespace at {

using c10::Scalar;

// A 1-D float tensor on the host (pageable: std::vector) or the device.
class Tensor {
 public:
  static Tensor empty_cuda(size_t n);
  static Tensor from_host(std::vector<float> values);
  Scalar item() const;                  // tensor.item()
  Tensor to(c10::Device device) const;  // tensor.to(device) / .cuda() / .cpu()
  size_t numel() const { return n_; }
  float* data() const { return device_ != nullptr ? device_ : const_cast<float*>(host_.data()); }
  bool is_cuda() const { return device_ != nullptr; }
  void set_device_data(float* p, size_t n) { device_ = p, n_ = n; }
  std::vector<float>& host() { return host_; }

 private:
  float* device_ = nullptr;
  std::vector<float> host_;
  size_t n_ = 0;
};

Scalar _local_scalar_dense(const Tensor& self);

namespace native {
Scalar item(const Tensor& self);
Scalar _local_scalar_dense_cuda(const Tensor& self);
Tensor _to_copy(const Tensor& self, c10::Device device, bool non_blocking);
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking);
// A stand-in for any CUDA op of a forward pass: one kernel on the stream.
void fill_(Tensor& self, float value);
}  // namespace native

}  // namespace at

namespace c10::cuda {
int device_count() noexcept;  // what torch.cuda.is_available() asks
void device_synchronize();    // torch.cuda.synchronize()
namespace CUDACachingAllocator {
void* raw_alloc(size_t bytes);
void raw_delete(void* p);
void emptyCache();  // torch.cuda.empty_cache()
}  // namespace CUDACachingAllocator
}  // namespace c10::cuda
