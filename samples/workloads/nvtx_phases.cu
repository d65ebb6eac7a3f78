// nvtx_phases: a small "training job" annotated with NVTX (the header-only
// nvtx3 API), for scoping an analysis to one phase:
//   load        pageable host->device copies of the data set (copy-heavy)
//   train_step  x steps, each with a nested "forward": kernels launched
//               asynchronously, one synchronize per step
//   checkpoint  (in the "io" domain, a registered string) a synchronize
//               after every kernel, then one small copy back: sync-heavy
// plus a "prefetch" start/end range that begins on the main thread and ends
// on a worker thread, marks (ASCII, wide, domain), a wide-character range
// and a thread name. Without an NVTX tool attached every NVTX call is a
// no-op; the program's output and status are the same either way.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kBlocks = 64, kThreads = 256, kElems = kBlocks * kThreads;

__global__ void train_kernel(float* w, int step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kElems) w[i] = w[i] * 0.99f + 0.01f * static_cast<float>(step & 3);
}

nvtxEventAttributes_t registered_message(nvtxStringHandle_t message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = message;
  return a;
}

nvtxEventAttributes_t ascii_message(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

void load(float* d_data, std::vector<float>& host, int copies) {
  nvtxRangePushA("load");
  for (int c = 0; c < copies; ++c)
    CHECK(cudaMemcpy(d_data, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  nvtxRangePop();
}

void train(float* d_w, int steps, int kernels_per_step) {
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA("train_step");
    nvtxRangePushA("forward");
    for (int k = 0; k < kernels_per_step; ++k) {
      train_kernel<<<kBlocks, kThreads>>>(d_w, s);
      CHECK_LAUNCH(train_kernel);
    }
    nvtxRangePop();
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
  }
  nvtxMarkA("epoch_end");
}

void checkpoint(nvtxDomainHandle_t io, float* d_w, std::vector<float>& out, int rounds) {
  const nvtxEventAttributes_t range = registered_message(nvtxDomainRegisterStringA(io, "checkpoint"));
  nvtxDomainRangePushEx(io, &range);
  for (int r = 0; r < rounds; ++r) {  // "is it consistent yet?" after every kernel: the habit
    train_kernel<<<kBlocks, kThreads>>>(d_w, r);
    CHECK_LAUNCH(train_kernel);
    CHECK(cudaDeviceSynchronize());
  }
  CHECK(cudaMemcpy(out.data(), d_w, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const nvtxEventAttributes_t flush = ascii_message("flush");
  nvtxDomainMarkEx(io, &flush);
  nvtxDomainRangePop(io);
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "nvtx_phases";
  const sample::Flags flags(argc, argv, {"steps=", "copies=", "rounds="}, "[--steps N] [--copies N] [--rounds N]");
  const int steps = static_cast<int>(flags.get("steps", 8));
  const int copies = static_cast<int>(flags.get("copies", 40));
  const int rounds = static_cast<int>(flags.get("rounds", 400));
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "trainer");
  const nvtxDomainHandle_t io = nvtxDomainCreateA("io");

  // Started here, ended by the worker once it has "prefetched".
  const nvtxRangeId_t prefetch = nvtxRangeStartA("prefetch");
  std::thread worker([prefetch] { nvtxRangeEnd(prefetch); });
  worker.join();

  std::vector<float> host(size_t{4} << 20, 1.0f);  // 16 MiB, pageable
  float* d_data = nullptr;
  float* d_w = nullptr;
  CHECK(cudaMalloc(&d_data, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_w, kElems * sizeof(float)));
  CHECK(cudaMemset(d_w, 0, kElems * sizeof(float)));

  const sample::Stopwatch watch;
  load(d_data, host, copies);
  train(d_w, steps, 64);
  std::vector<float> out(256);
  checkpoint(io, d_w, out, rounds);
  nvtxRangePushW(L"\u00e9valuation");  // wide message: recorded as UTF-8
  nvtxMarkW(L"checkpoint \u2713");
  nvtxRangePop();
  const double seconds = watch.seconds();

  std::vector<float> back(host.size());
  CHECK(cudaMemcpy(back.data(), d_data, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  sample::expect(back == host, "data round trip");
  CHECK(cudaFree(d_w));
  CHECK(cudaFree(d_data));
  sample::report("load %d copies, %d train steps, %d checkpoint rounds in %.3f s", copies, steps, rounds, seconds);
  return 0;
}
