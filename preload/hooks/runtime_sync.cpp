// CUDA runtime synchronization, explicit and by polling. A host thread
// blocked here is the evidence of a sync-bound program.
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"

namespace {
using gpuscope::fb::SyncKind;
using gpuscope::hooks::poll_of;
using gpuscope::hooks::sync_of;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;
}  // namespace

#define GPUSCOPE_RUNTIME_SYNC(X)                                                                                   \
  X(cudaError_t, cudaDeviceSynchronize, 0, (), (), (sync_of(SyncKind::Device, nullptr)))                           \
  X(cudaError_t, cudaStreamSynchronize, 0, (cudaStream_t s), (s), (sync_of(SyncKind::Stream, s)))                  \
  X(cudaError_t, cudaStreamSynchronize_ptsz, P, (cudaStream_t s), (s), (sync_of(SyncKind::Stream, s)))             \
  X(cudaError_t, cudaEventSynchronize, 0, (cudaEvent_t e), (e), (sync_of(SyncKind::Event, e)))                     \
  X(cudaError_t, cudaStreamWaitEvent, 0, (cudaStream_t s, cudaEvent_t e, unsigned f), (s, e, f),                   \
    (sync_of(SyncKind::StreamWaitEvent, s)))                                                                       \
  X(cudaError_t, cudaStreamWaitEvent_ptsz, P, (cudaStream_t s, cudaEvent_t e, unsigned f), (s, e, f),              \
    (sync_of(SyncKind::StreamWaitEvent, s)))                                                                       \
  X(cudaError_t, cudaStreamQuery, 0, (cudaStream_t s), (s), (poll_of(SyncKind::StreamQuery, s)))                   \
  X(cudaError_t, cudaStreamQuery_ptsz, P, (cudaStream_t s), (s), (poll_of(SyncKind::StreamQuery, s)))              \
  X(cudaError_t, cudaEventQuery, 0, (cudaEvent_t e), (e), (poll_of(SyncKind::EventQuery, e)))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_SYNC, runtime_sync_hooks)
