// Which CUDA calls CUPTI calls gpuscope back for, and which activity kinds
// it records: the collector's two cost knobs.
//
// A callback is only there to hand gpuscope the correlation id of a call
// whose device record must be joined to the hooked call. Enabling whole
// API domains makes CUPTI call back on every runtime and driver call (the
// driver calls the runtime makes inside one launch included), which on
// the first real-GPU run (docs/gpu-validation.md, run 2) cost more per
// launch than gpuscope's own hooks. By default only the calls that can
// produce a device record (launches, copies, memsets, synchronizations,
// allocations) are called back.
#pragma once

#include <cupti.h>

#include <optional>
#include <string>

namespace gpuscope::cupti {

enum class CallbackScope {
  DeviceWork,  // the calls that can produce a device record (default)
  All,         // every runtime and driver call (GPUSCOPE_CUPTI_CALLBACKS=all)
  None,        // none: device records stay uncorrelated (=none)
};

// GPUSCOPE_CUPTI_CALLBACKS: unset, empty or "device-work" -> DeviceWork;
// "all"; "none". Anything else: nullopt (the settings check at start-up
// names it; the collector then keeps the default).
std::optional<CallbackScope> parse_callback_scope(const char* value);
const char* callback_scope_name(CallbackScope s);

// Whether the call named `name` (a runtime or driver API function, with or
// without CUPTI's _vNNNN suffix) can produce a device activity record.
bool is_device_work_call(CUpti_CallbackDomain domain, const char* name);

// GPUSCOPE_CUPTI_KINDS: a comma-separated list of activity kinds to enable
// beyond CONCURRENT_KERNEL (which is always on), by their CUPTI names
// without the prefix, any case ("memcpy,memset"); unset means every kind;
// "off" means no device collection at all.
bool kinds_off(const char* list);
bool kind_selected(const char* list, const char* kind_name);

}  // namespace gpuscope::cupti
