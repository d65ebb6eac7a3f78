// Which CUDA release's parameter lists reach a runtime hook. Some runtime
// functions kept their name and changed their parameters between releases
// (CUDA 12's cudaMemPrefetchAsync took a device number and the stream where
// 13 takes a location, flags and the stream; 12.8's batched copies had a
// failIdx before the stream). The hook forwards every register unchanged
// either way; what it records must read them as its caller passed them.
#pragma once

#include "hook_support.h"

namespace gpuscope::hooks {

// The CUDA major release the caller of a runtime hook was built against:
// its alias's symbol version (runtime_versions.h), or, for the default
// export, the release of the runtime behind `real` (its
// cudaRuntimeGetVersion, asked once per runtime: an unversioned caller
// binds the default whatever runtime it uses). 0 when unknown: read the
// parameters as CUDA 13 passes them.
int caller_cuda_major(const HookSlot& slot, const void* real) noexcept;

}  // namespace gpuscope::hooks
