// The array formats simgpu models, shared by its driver (cuArrayCreate) and
// its runtime (cudaMallocArray's channel descriptors, element offsets).
#pragma once

#include <cuda.h>

#include <cstddef>

namespace simgpu {

// Bytes of one channel; 0 for formats simgpu does not model (block
// compressed, planar video, normalized packed), which it refuses.
inline size_t array_channel_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

}  // namespace simgpu
