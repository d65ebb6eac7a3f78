// Maps each trace record struct (generated from schemas/gpuscope.fbs) to the
// one-byte tag it carries through a thread's ring buffer. The structs
// themselves are the in-memory records: hooks fill them, the writer copies
// them into chunks unchanged (apart from delta coding).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpuscope_generated.h"

namespace gpuscope::capture {

enum class RecordType : uint8_t {
  Padding = 0,  // ring filler at the wrap point, never a record
  ApiCall,
  Copy,
  Memset,
  Kernel,
  Sync,
  Alloc,
  CpuSample,
  Marker,
  GpuSample,
  GraphLaunch,
  Count
};

template <class T> struct RecordTag;
#define GPUSCOPE_RECORD_TAG(Struct)                                          \
  template <> struct RecordTag<fb::Struct> {                                 \
    static constexpr RecordType value = RecordType::Struct;                  \
    static_assert(sizeof(fb::Struct) % 8 == 0, "records are 8-byte multiples"); \
    static_assert(std::is_trivially_copyable_v<fb::Struct>);                 \
  };
GPUSCOPE_RECORD_TAG(ApiCall)
GPUSCOPE_RECORD_TAG(Copy)
GPUSCOPE_RECORD_TAG(Memset)
GPUSCOPE_RECORD_TAG(Kernel)
GPUSCOPE_RECORD_TAG(Sync)
GPUSCOPE_RECORD_TAG(Alloc)
GPUSCOPE_RECORD_TAG(CpuSample)
GPUSCOPE_RECORD_TAG(Marker)
GPUSCOPE_RECORD_TAG(GpuSample)
GPUSCOPE_RECORD_TAG(GraphLaunch)
#undef GPUSCOPE_RECORD_TAG

// Calls f(type_identity<Struct>{}) for the struct behind `type`; false for
// Padding or an unknown tag. Keeps the tag → type switch in one place.
template <class F> bool visit_record_type(RecordType type, F&& f) {
  switch (type) {
    case RecordType::ApiCall: f(std::type_identity<fb::ApiCall>{}); return true;
    case RecordType::Copy: f(std::type_identity<fb::Copy>{}); return true;
    case RecordType::Memset: f(std::type_identity<fb::Memset>{}); return true;
    case RecordType::Kernel: f(std::type_identity<fb::Kernel>{}); return true;
    case RecordType::Sync: f(std::type_identity<fb::Sync>{}); return true;
    case RecordType::Alloc: f(std::type_identity<fb::Alloc>{}); return true;
    case RecordType::CpuSample: f(std::type_identity<fb::CpuSample>{}); return true;
    case RecordType::Marker: f(std::type_identity<fb::Marker>{}); return true;
    case RecordType::GpuSample: f(std::type_identity<fb::GpuSample>{}); return true;
    case RecordType::GraphLaunch: f(std::type_identity<fb::GraphLaunch>{}); return true;
    default: return false;
  }
}

}  // namespace gpuscope::capture
