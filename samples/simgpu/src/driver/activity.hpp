// The libcuda.so.1 half of simgpu's device activity: hands the simulated
// CUPTI its table (cuGetExportTable), and calls the CUPTI's functions when
// it has registered them; otherwise every call here does nothing.
// Also the driver's CUDA_INJECTION64_PATH behaviour, which simgpu models
// only when asked (SIMGPU_INJECTION=1): real drivers always do it.
#pragma once

#include "../common/simgpu_activity.h"

namespace simgpu::drv {

// The table for kSimgpuActivityTableId, or null for another id.
const void* activity_export_table(const CUuuid& id);

// Inside an API call that queues device work, on its thread: the call's
// correlation id (0 when nobody listens).
uint32_t activity_enter();
// An operation the model scheduled (under the model's lock).
void activity_record(const DeviceRecord& record);
// What CUPTI's MEMORY2 and SYNCHRONIZATION kinds report, each inside its
// API call: an allocation or free the model just made (an instant), and a
// host wait from `start_ns` to now. `sync_type` is a
// CUpti_ActivitySynchronizationType value.
void activity_memory(DeviceRecord::Kind op, int device, uint64_t address, uint64_t bytes, uint8_t memory_kind);
void activity_sync(uint8_t sync_type, int device, uint64_t stream_id, uint32_t event_id, int64_t start_ns);

// At cuInit's success, once: with SIMGPU_INJECTION=1, dlopens
// CUDA_INJECTION64_PATH and calls its InitializeInjection on this thread,
// as the real driver does at CUDA's start.
void inject_once();

}  // namespace simgpu::drv
