// Bits of the records' `flags` fields (schemas/gpuscope.fbs), for the hooks
// that set them and the readers that test them.
#pragma once

#include <cstdint>

namespace gpuscope::container {

// ApiCall.flags
inline constexpr uint8_t kCallDriverApi = 1u << 0;
inline constexpr uint8_t kCallPerThreadStream = 1u << 1;
// Format 1.3: enqueued on a stream that was capturing into a CUDA graph.
// The work ran only when a graph holding it was launched, so the call has
// no Kernel/Copy/Memset record of its own.
inline constexpr uint8_t kCallCaptured = 1u << 2;
// A stream creation (cudaStreamCreateWithFlags/WithPriority, cuStreamCreate*)
// that asked for a non-blocking stream; its `stream` is the new handle.
// Older traces leave both unset: their streams count as blocking.
inline constexpr uint8_t kCallNonBlockingStream = 1u << 3;

// Copy.flags
inline constexpr uint16_t kCopyAsync = 1u << 0;
// Format 1.3: cudaMemPrefetchAsync / cuMemPrefetchAsync: managed memory
// migrated to the device or the host; bytes are the range asked for.
inline constexpr uint16_t kCopyPrefetch = 1u << 1;

// Alloc.flags
inline constexpr uint8_t kAllocAsync = 1u << 0;  // stream-ordered (cudaMallocAsync, cudaFreeAsync)
// Format 2.4: cuMemCreate / cuMemRelease, the virtual memory management
// API's physical memory (PyTorch's expandable segments). `address` is the
// allocation's handle, not a device address: it is in use from creation to
// release, mapped or not, and cuMemMap places it in the address space.
inline constexpr uint8_t kAllocPhysical = 1u << 1;

// GraphLaunch.flags (format 1.3)
inline constexpr uint8_t kGraphContentsUnknown = 1u << 0;  // the launch's graph was not seen instantiated
inline constexpr uint8_t kGraphHasConditional = 1u << 1;   // conditional bodies are not counted

}  // namespace gpuscope::container
