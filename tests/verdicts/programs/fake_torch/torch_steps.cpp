// torch_steps: a training loop in the shape of a PyTorch script, written
// against the fake libtorch (fake_torch.h), one habit per --case:
//   item         a forward op, then loss.item() every step
//   copies       every step's batch .to(device) from pageable memory
//   to_cpu       every step's output copied back with .cpu()
//   synchronize  a synchronize of the whole device after every step (not a
//                PyTorch call), but loss.item() every 20th step instead
//   torch_synchronize  torch.cuda.synchronize() after every step
//   empty_cache  activations from the caching allocator, freed to it, then
//                torch.cuda.empty_cache() every step
//   no_gpu       torch.cuda.is_available() is False: the loop runs on the
//                CPU and the program exits 0 (run it with no usable GPU)
// Exit status 1 on a CUDA error, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "fake_torch.h"

// The step functions are static, not in an anonymous namespace, so that
// their call sites read as a script's would: "train_step_item (...)".
constexpr size_t kBatch = 1 << 20;  // floats per batch: 4 MiB

// The host's share of a step (a script's Python between two steps): while
// it runs, the GPU has nothing queued, as after every .item().
static float host_step_work() {
  static std::vector<float> v(1 << 11, 1.0f);
  float acc = 0;
  for (float& x : v) acc += (x = x * 0.999f + 0.001f);
  return acc;
}

static double train_step_item(at::Tensor& loss) {
  at::native::fill_(loss, 0.5f);
  const double value = loss.item().value;  // the habit: a host read of the loss every step
  return value + host_step_work() * 0;
}

static void train_step_copies(const at::Tensor& batch) {
  at::Tensor on_gpu = batch.to(c10::Device{true});  // pageable: no pin_memory
  at::native::fill_(on_gpu, 1.0f);
  c10::cuda::CUDACachingAllocator::raw_delete(on_gpu.data());
}

// Every 20th step reads the loss, which synchronizes; the others
// synchronize the device outright, with CUDA's call or with PyTorch's.
static double train_step_synchronize(at::Tensor& loss, bool read_loss, bool torch_call) {
  at::native::fill_(loss, 0.5f);
  double value = 0;
  if (read_loss) value = loss.item().value;
  else if (torch_call) c10::cuda::device_synchronize();
  else if (cudaDeviceSynchronize() != cudaSuccess) std::exit(1);
  return value + host_step_work() * 0;
}

static double train_step_to_cpu(at::Tensor& output) {
  at::native::fill_(output, 2.0f);
  const at::Tensor on_host = output.to(c10::Device{false});  // the habit: results back every step
  return on_host.numel();
}

static void train_step_empty_cache() {
  std::vector<void*> activations;
  for (size_t bytes : {1u << 20, 2u << 20, 4u << 20, 8u << 20}) {
    at::Tensor t;
    t.set_device_data(static_cast<float*>(c10::cuda::CUDACachingAllocator::raw_alloc(bytes)), bytes / sizeof(float));
    at::native::fill_(t, 0.0f);
    activations.push_back(t.data());
  }
  for (void* p : activations) c10::cuda::CUDACachingAllocator::raw_delete(p);
  c10::cuda::CUDACachingAllocator::emptyCache();  // the habit
}

static double train_on_cpu(int steps) {
  std::vector<float> w(kBatch / 16, 0.5f);
  double sum = 0;
  for (int s = 0; s < steps; ++s)
    for (float& x : w) sum += (x = x * 0.999f + 0.001f);
  return sum;
}

int main(int argc, char** argv) {
  std::string which;
  int steps = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) which = argv[++i];
    else if (std::strncmp(argv[i], "--steps=", 8) == 0) steps = std::atoi(argv[i] + 8);
    else which = "?";
  }
  if (which == "no_gpu") {
    // device = "cuda" if torch.cuda.is_available() else "cpu": silently the CPU.
    const bool available = c10::cuda::device_count() > 0;
    std::printf("torch_steps: cuda available: %d, cpu result %.1f\n", available, train_on_cpu(steps));
    return 0;
  }
  double sum = 0;
  if (which == "item") {
    at::Tensor loss = at::Tensor::empty_cuda(1024);
    for (int s = 0; s < steps; ++s) sum += train_step_item(loss);
  } else if (which == "copies") {
    const at::Tensor batch = at::Tensor::from_host(std::vector<float>(kBatch, 1.0f));
    for (int s = 0; s < steps; ++s) train_step_copies(batch);
  } else if (which == "synchronize") {
    at::Tensor loss = at::Tensor::empty_cuda(1024);
    for (int s = 0; s < steps; ++s) sum += train_step_synchronize(loss, s % 20 == 19, false);
  } else if (which == "torch_synchronize") {
    at::Tensor loss = at::Tensor::empty_cuda(1024);
    for (int s = 0; s < steps; ++s) sum += train_step_synchronize(loss, false, true);
  } else if (which == "to_cpu") {
    at::Tensor output = at::Tensor::empty_cuda(kBatch);
    for (int s = 0; s < steps; ++s) sum += train_step_to_cpu(output);
  } else if (which == "empty_cache" || which == "empty_cache_expandable") {
    // Read when the allocator starts, as PyTorch reads it.
    if (which == "empty_cache_expandable") setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    for (int s = 0; s < steps; ++s) train_step_empty_cache();
  } else {
    std::fprintf(stderr, "usage: torch_steps --case item|copies|to_cpu|synchronize|torch_synchronize|empty_cache|empty_cache_expandable|no_gpu [--steps=N]\n");
    return 2;
  }
  std::printf("torch_steps: %s, %d steps, %.1f\n", which.c_str(), steps, sum);
  return 0;
}
