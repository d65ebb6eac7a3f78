// pitch_copies: 2D and 3D memory, as image and volume code uses it.  A
// pitched 2D allocation is cleared with cudaMemset2D, filled row by row
// from a packed host image with cudaMemcpy2D, read back the same way; a 3D
// allocation gets cudaMemset3D and a cudaMemcpy3D round trip.  Every copy
// is checked on the host.
#include <vector>

#include "conformance.h"

bool same(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, const char* what) {
  if (a == b) return true;
  std::fprintf(stderr, "pitch_copies: the %s round trip differs\n", what);
  return false;
}

int main(int argc, char** argv) {
  sample::name() = "pitch_copies";
  const sample::Flags flags(argc, argv, {"width=", "height=", "depth="}, "[--width=BYTES] [--height=ROWS] [--depth=SLICES]");
  const size_t width = flags.get("width", 1000), height = flags.get("height", 300), depth = flags.get("depth", 20);
  std::printf("[pitch_copies] %zu x %zu bytes in 2D, %zu x %zu x %zu in 3D\n", width, height, width, height, depth);

  std::vector<unsigned char> image(width * height), back(width * height, 1);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<unsigned char>(sample::mix(static_cast<unsigned>(i)));
  unsigned char* d2 = nullptr;
  size_t pitch = 0;
  checkCudaErrors(cudaMallocPitch(reinterpret_cast<void**>(&d2), &pitch, width, height));
  std::printf("2D pitch: %zu bytes\n", pitch);
  checkCudaErrors(cudaMemset2D(d2, pitch, 0, width, height));
  checkCudaErrors(cudaMemcpy2D(back.data(), width, d2, pitch, width, height, cudaMemcpyDeviceToHost));
  bool ok = same(std::vector<unsigned char>(width * height, 0), back, "cleared 2D");
  checkCudaErrors(cudaMemcpy2D(d2, pitch, image.data(), width, width, height, cudaMemcpyHostToDevice));
  checkCudaErrors(cudaMemcpy2D(back.data(), width, d2, pitch, width, height, cudaMemcpyDeviceToHost));
  ok = same(image, back, "2D") && ok;

  const cudaExtent extent = make_cudaExtent(width, height, depth);
  std::vector<unsigned char> volume(width * height * depth), volume_back(volume.size(), 1);
  for (size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<unsigned char>(sample::mix(static_cast<unsigned>(i) + 7));
  cudaPitchedPtr d3;
  checkCudaErrors(cudaMalloc3D(&d3, extent));
  std::printf("3D pitch: %zu bytes\n", d3.pitch);
  checkCudaErrors(cudaMemset3D(d3, 0, extent));
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(volume.data(), width, width, height);
  up.dstPtr = d3;
  up.extent = extent;
  up.kind = cudaMemcpyHostToDevice;
  checkCudaErrors(cudaMemcpy3D(&up));
  cudaMemcpy3DParms down = {};
  down.srcPtr = d3;
  down.dstPtr = make_cudaPitchedPtr(volume_back.data(), width, width, height);
  down.extent = extent;
  down.kind = cudaMemcpyDeviceToHost;
  checkCudaErrors(cudaMemcpy3D(&down));
  ok = same(volume, volume_back, "3D") && ok;

  checkCudaErrors(cudaFree(d2));
  checkCudaErrors(cudaFree(d3.ptr));
  return conformance::finish(ok);
}
