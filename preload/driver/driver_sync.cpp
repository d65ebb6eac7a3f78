// CUDA driver synchronization and initialization. cuCtxSynchronize and
// cuStreamSynchronize count exactly like their runtime twins; cuInit's
// result is the driver's own verdict on whether a GPU is usable.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"

namespace {
using gpuscope::fb::SyncKind;
using gpuscope::hooks::plain;
using gpuscope::hooks::poll_of;
using gpuscope::hooks::sync_of;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;
}  // namespace

#define GPUSCOPE_DRIVER_SYNC(X)                                                                                  \
  X(CUresult, cuCtxSynchronize, D, (), (), (sync_of(SyncKind::Context, nullptr)))                                \
  X(CUresult, cuCtxSynchronize_v2, D, (CUcontext c), (c), (sync_of(SyncKind::Context, c)))                       \
  X(CUresult, cuStreamSynchronize, D, (CUstream s), (s), (sync_of(SyncKind::Stream, s)))                         \
  X(CUresult, cuStreamSynchronize_ptsz, DP, (CUstream s), (s), (sync_of(SyncKind::Stream, s)))                   \
  X(CUresult, cuEventSynchronize, D, (CUevent e), (e), (sync_of(SyncKind::Event, e)))                            \
  X(CUresult, cuStreamWaitEvent, D, (CUstream s, CUevent e, unsigned f), (s, e, f),                              \
    (sync_of(SyncKind::StreamWaitEvent, s)))                                                                     \
  X(CUresult, cuStreamWaitEvent_ptsz, DP, (CUstream s, CUevent e, unsigned f), (s, e, f),                        \
    (sync_of(SyncKind::StreamWaitEvent, s)))                                                                     \
  X(CUresult, cuStreamQuery, D, (CUstream s), (s), (poll_of(SyncKind::StreamQuery, s)))                          \
  X(CUresult, cuStreamQuery_ptsz, DP, (CUstream s), (s), (poll_of(SyncKind::StreamQuery, s)))                    \
  X(CUresult, cuEventQuery, D, (CUevent e), (e), (poll_of(SyncKind::EventQuery, e)))                             \
  X(CUresult, cuInit, D, (unsigned f), (f), (gpuscope::hooks::availability_query()))                             \
  X(CUresult, cuDeviceGetCount, D, (int* n), (n), (gpuscope::hooks::availability_query()))                      \
  X(CUresult, cuProfilerStart, D, (), (), (gpuscope::hooks::ProfilerStartCall{}))                                \
  X(CUresult, cuProfilerStop, D, (), (), (gpuscope::hooks::ProfilerStopCall{}))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_SYNC, driver_sync_hooks)
