// simple_texture: an image in a CUDA array read through a texture object,
// as introductory texture samples do.  The image goes up with
// cudaMemcpy2DToArray, a kernel writes its mirror image (point sampling at
// texel centres, so the host can check it exactly) to linear memory, and
// the result comes back with cudaMemcpy; the array is also read back with
// cudaMemcpy2DFromArray, which checks the bytes it holds on any device.
#include <vector>

#include "conformance.h"

__global__ void mirror_kernel(float* out, int width, int height, cudaTextureObject_t image) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) out[y * width + x] = tex2D<float>(image, width - 1 - x + 0.5f, y + 0.5f);
}

int main(int argc, char** argv) {
  sample::name() = "simple_texture";
  const sample::Flags flags(argc, argv, {"width=", "height="}, "[--width=TEXELS] [--height=TEXELS]");
  const int width = static_cast<int>(flags.get("width", 512)), height = static_cast<int>(flags.get("height", 256));
  const size_t bytes = static_cast<size_t>(width) * height * sizeof(float), row = width * sizeof(float);
  std::printf("[simple_texture] %d x %d float image\n", width, height);
  std::vector<float> image(static_cast<size_t>(width) * height), mirrored(image.size()), back(image.size());
  conformance::fill(image.data(), image.size(), 17);

  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  checkCudaErrors(cudaMallocArray(&array, &format, width, height));
  checkCudaErrors(cudaMemcpy2DToArray(array, 0, 0, image.data(), row, row, height, cudaMemcpyHostToDevice));
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc sampling = {};
  sampling.addressMode[0] = sampling.addressMode[1] = cudaAddressModeClamp;
  sampling.filterMode = cudaFilterModePoint;
  sampling.readMode = cudaReadModeElementType;
  cudaTextureObject_t texture = 0;
  checkCudaErrors(cudaCreateTextureObject(&texture, &resource, &sampling, nullptr));

  float* out = nullptr;
  checkCudaErrors(cudaMalloc(&out, bytes));
  const dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
  mirror_kernel<<<grid, block>>>(out, width, height, texture);
  getLastCudaError("mirror_kernel");
  checkCudaErrors(cudaDeviceSynchronize());
  checkCudaErrors(cudaMemcpy(mirrored.data(), out, bytes, cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaMemcpy2DFromArray(back.data(), row, array, 0, 0, row, height, cudaMemcpyDeviceToHost));

  bool ok = back == image;
  if (!ok) std::fprintf(stderr, "simple_texture: the array does not hold the image\n");
  if (conformance::kernel_results_checkable())
    for (int y = 0; y < height && ok; ++y)
      for (int x = 0; x < width && ok; ++x)
        if (mirrored[y * width + x] != image[y * width + (width - 1 - x)]) {
          std::fprintf(stderr, "simple_texture: texel (%d, %d) is not the mirror image's\n", x, y);
          ok = false;
        }
  checkCudaErrors(cudaDestroyTextureObject(texture));
  checkCudaErrors(cudaFree(out));
  checkCudaErrors(cudaFreeArray(array));
  return conformance::finish(ok);
}
