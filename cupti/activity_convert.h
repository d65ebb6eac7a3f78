// CUPTI activity records -> gpuscope trace records (Source::Device).
//
// Record layouts are the CUPTI 13.0 ones this file is compiled against
// (CUpti_ActivityKernel10, Memcpy6, Memset4, Synchronization2, Memory4);
// the collector (issue 6) uses them only when cuptiGetVersion reports a
// compatible CUPTI — layouts change in minor releases (13.2 Kernel11, 13.4
// Memcpy7) — and otherwise turns device collection off and says why.
//
// Conversion is pure: time mapping, correlation and string interning come
// from the caller, so it is tested on hand-built buffers parsed by the real
// libcupti without a GPU (tests/cupti/).
#pragma once

#include <cupti_activity.h>
#include <cupti_version.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <variant>

#include "gpuscope_generated.h"

namespace gpuscope::cupti {

// The CUPTI version the layouts above come from.
inline constexpr uint32_t kCompiledCuptiApiVersion = CUPTI_API_VERSION;

// True when records of a runtime CUPTI reporting `runtime_version`
// (cuptiGetVersion) have the layouts compiled here.
bool layouts_compatible(uint32_t runtime_version);

struct ConvertContext {
  // CUPTI timestamp -> CLOCK_MONOTONIC ns (identity when CUPTI was given
  // the monotonic clock through its timestamp callback).
  std::function<uint64_t(uint64_t)> to_monotonic = [](uint64_t t) { return t; };
  // CUPTI correlation id -> gpuscope's, 0 when the launching call is not
  // known (a kernel replayed by a CUDA graph has no API call of its own).
  std::function<uint64_t(uint32_t)> correlate = [](uint32_t) { return uint64_t{0}; };
  // Interns a kernel name; 0 for none.
  std::function<uint32_t(const char*)> intern = [](const char*) { return 0u; };
};

using DeviceRecord = std::variant<fb::Kernel, fb::Copy, fb::Memset, fb::Sync, fb::Alloc>;

// The trace record for one CUPTI activity record, or nothing for kinds
// gpuscope does not convert (or fields that make no sense: end < start).
std::optional<DeviceRecord> convert(const CUpti_Activity& record, const ConvertContext& ctx);

fb::CopyDirection copy_direction(uint8_t cupti_copy_kind);
fb::MemoryKind memory_kind(uint32_t cupti_memory_kind);
fb::SyncKind sync_kind(uint32_t cupti_sync_type);

}  // namespace gpuscope::cupti
