// d2d_copies: device-to-device copies only, in the style of a program that
// shuffles buffers on the GPU (a ring of activations, a double buffer):
// --copies N copies of --mib M MiB between two device buffers with plain
// cudaMemcpy, then one copy back to check the bytes. No byte crosses PCIe
// but the last check: a PCIe verdict here would be a false alarm
// (tests/verdicts, docs/rules.md "Copies by kind").
#include <cstdio>
#include <vector>

#include "common.hpp"

int main(int argc, char** argv) {
  sample::name() = "d2d_copies";
  const sample::Flags flags(argc, argv, {"copies=", "mib="}, "[--copies N] [--mib M]");
  const int copies = static_cast<int>(flags.get("copies", 200));
  const size_t bytes = static_cast<size_t>(flags.get("mib", 32)) << 20;
  char *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 7, bytes));
  for (int i = 0; i < copies; ++i) CHECK(cudaMemcpy(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaDeviceSynchronize());
  std::vector<char> back(4096);
  CHECK(cudaMemcpy(back.data(), b, back.size(), cudaMemcpyDeviceToHost));
  for (char c : back) sample::expect(c == 7, "device-to-device copies kept the bytes");
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  sample::report("%d copies of %zu MiB", copies, bytes >> 20);
  return 0;
}
