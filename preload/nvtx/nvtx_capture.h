// Capture windows driven by an NVTX range (`--capture-range
// nvtx:MESSAGE[@DOMAIN]`): a window opens when a range with that message
// is pushed or started in that domain, and closes when that same range is
// popped or ended. Push/pop ranges belong to the thread that pushed them
// (NVTX's own rule), so only that thread's matching pop closes the window;
// start/end ranges are matched by their id and may end on any thread.
//
// Each call is one flag check unless this capture range is configured, and
// allocation-free either way: the hooks call them whether or not recording.
#pragma once

#include <cstdint>

#include "nvtx_record.h"

namespace gpuscope::nvtx {

void capture_on_push(uint32_t domain, const Message& message) noexcept;  // before the push is recorded
void capture_on_pop(uint32_t domain) noexcept;                           // after the pop is recorded
void capture_on_start(uint32_t domain, const Message& message, uint64_t range_id) noexcept;
void capture_on_end(uint64_t range_id) noexcept;

}  // namespace gpuscope::nvtx
