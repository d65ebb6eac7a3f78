// tree_worker: one worker of a multi-process job (launcher.sh starts two).
// Each step copies a pageable batch to the GPU, runs a small kernel and
// copies the result back: a worker that spends its time on PCIe copies. With
// --helper it first starts a helper process (itself, --as-helper, through
// posix_spawn), which runs a loop of tiny kernels synchronized one by one,
// and waits for it. Ranks come from the launcher's RANK variable, as with
// torchrun; the output has no timings so that runs compare line for line.
//
// Exit status: 0, 1 on a CUDA error, 2 on a failed check, 3 when the helper failed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "../workloads/common.hpp"

extern char** environ;

namespace {

constexpr int kBlocks = 64, kThreads = 256, kElems = kBlocks * kThreads;

__global__ void scale(float* data, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kElems) data[i] *= factor;
}

// Worker: pageable round trips, the copies dominate.
void copy_steps(int steps) {
  std::vector<float> host(size_t(kElems) * 16, 1.0f), back(host.size());
  float* d = nullptr;
  CHECK(cudaMalloc(&d, host.size() * sizeof(float)));
  for (int s = 0; s < steps; ++s) {
    CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    scale<<<kBlocks, kThreads>>>(d, 1.0f);
    CHECK_LAUNCH(scale);
    CHECK(cudaMemcpy(back.data(), d, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  sample::expect(back == host, "round trip");
  CHECK(cudaFree(d));
}

// Helper: a synchronize after every tiny kernel.
void sync_steps(int steps) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, kElems * sizeof(float)));
  for (int s = 0; s < steps; ++s) {
    scale<<<kBlocks, kThreads>>>(d, 1.0f);
    CHECK_LAUNCH(scale);
    CHECK(cudaDeviceSynchronize());
  }
  CHECK(cudaFree(d));
}

// The helper is this program again; RANK and the rest of the environment
// pass down with it.
pid_t start_helper(const char* self, int steps) {
  const std::string steps_arg = std::to_string(steps);
  char* argv[] = {const_cast<char*>(self), const_cast<char*>("--as-helper"), const_cast<char*>("--steps"),
                  const_cast<char*>(steps_arg.c_str()), nullptr};
  std::fflush(stdout);
  pid_t pid = 0;
  return posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) == 0 ? pid : -1;
}

int wait_helper(pid_t pid) {
  if (pid < 0) return 3;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "tree_worker";
  const sample::Flags flags(argc, argv, {"steps=", "helper", "as-helper"}, "[--steps N] [--helper] [--as-helper]");
  const int steps = static_cast<int>(flags.get("steps", 200));
  const char* rank = std::getenv("RANK");
  const std::string who = std::string("rank ") + (rank ? rank : "?") + (flags.has("as-helper") ? " helper" : " worker");
  const pid_t helper = flags.has("helper") ? start_helper(argv[0], steps * 4) : 0;
  if (flags.has("as-helper")) sync_steps(steps);
  else copy_steps(steps);
  const int status = helper != 0 ? wait_helper(helper) : 0;
  sample::report("%s: %d steps, checks passed", who.c_str(), steps);
  return status;
}
