// libgpuscope.so as the NVTX injection library. The nvtx3 header code in
// the application reads NVTX_INJECTION64_PATH on its first NVTX call,
// dlopens that library (the instance already preloaded, when `gpuscope run`
// set it) and calls InitializeInjectionNvtx2 with its export-table getter.
// We fetch the NVTX_ETID_CALLBACKS table and write our handlers into the
// CORE and CORE2 (domain) function tables of that NVTX instance; entries we
// leave alone become no-ops. Every NVTX copy in the process (the program,
// each library built with its own nvtx3 headers) initializes separately, so
// the entry point is idempotent and may be called any number of times.
//
// Program-visible behaviour stays as without a tool: push/pop return
// NVTX_NO_PUSH_POP_TRACKING, exactly what the no-tool path returns; only
// nvtxRangeStart* hands out real (non-zero) ids, which NVTX leaves opaque.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>  // with NVTX_NO_IMPL: the types and the injection tables only

#include <cstddef>
#include <cwchar>

#include "hooks/hook_support.h"
#include "instance.h"
#include "nvtx_capture.h"
#include "nvtx_record.h"

namespace gpuscope::nvtx {
namespace {

using capture::ThreadSlot;
using Kind = fb::MarkerKind;

// Domain and registered-string handles are their interned ids: reusing
// one costs nothing, and a null handle (the default domain, or a table that
// was full) reads as id 0.
uint32_t handle_id(const void* handle) noexcept {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle));
}
template <class Handle> Handle id_handle(uint32_t id) noexcept {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(id));
}

// The message of an event attribute structure, any of the three kinds.
Message attribute_message(const nvtxEventAttributes_t* a) noexcept {
  constexpr size_t kNeeded = offsetof(nvtxEventAttributes_t, message) + sizeof(a->message);
  if (a == nullptr || a->size < kNeeded) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return Message::of(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return Message::of(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return Message::of_registered(handle_id(a->message.registered));
    default: return {};
  }
}

// One recorded event, or nothing when this thread is not recording (capture
// idle, stopped, disabled, or gpuscope's own code on the stack).
void emit(Kind kind, uint32_t domain, const Message& message, uint64_t range_id = 0) noexcept {
  ThreadSlot* slot = capture::recording_slot();
  if (slot == nullptr) return;
  record_marker(slot, kind, message.intern(slot), domain, range_id);
}

// A capture range opens before its first marker is recorded and closes
// after its last, so both fall inside the window.
nvtxRangeId_t start_range(uint32_t domain, const Message& message) noexcept {
  const nvtxRangeId_t id = next_range_id();
  capture_on_start(domain, message, id);
  emit(Kind::RangeStart, domain, message, id);
  return id;
}
void end_range(uint32_t domain, nvtxRangeId_t id) noexcept {
  emit(Kind::RangeEnd, domain, {}, id);
  capture_on_end(id);
}
int push_range(uint32_t domain, const Message& message) noexcept {
  capture_on_push(domain, message);
  emit(Kind::RangePush, domain, message);
  return NVTX_NO_PUSH_POP_TRACKING;
}
int pop_range(uint32_t domain) noexcept {
  emit(Kind::RangePop, domain, {});
  capture_on_pop(domain);
  return NVTX_NO_PUSH_POP_TRACKING;
}

// ---- CORE module ----
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) { emit(Kind::Instant, 0, attribute_message(a)); }
void NVTX_API mark_a(const char* m) { emit(Kind::Instant, 0, Message::of(m)); }
void NVTX_API mark_w(const wchar_t* m) { emit(Kind::Instant, 0, Message::of(m)); }
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* a) { return start_range(0, attribute_message(a)); }
nvtxRangeId_t NVTX_API range_start_a(const char* m) { return start_range(0, Message::of(m)); }
nvtxRangeId_t NVTX_API range_start_w(const wchar_t* m) { return start_range(0, Message::of(m)); }
void NVTX_API range_end(nvtxRangeId_t id) { end_range(0, id); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) { return push_range(0, attribute_message(a)); }
int NVTX_API range_push_a(const char* m) { return push_range(0, Message::of(m)); }
int NVTX_API range_push_w(const wchar_t* m) { return push_range(0, Message::of(m)); }
int NVTX_API range_pop() { return pop_range(0); }
void name_thread(uint32_t tid, uint32_t name_id) noexcept {
  ThreadSlot* slot = capture::recording_slot();
  if (slot != nullptr && name_id != 0) record_marker(slot, Kind::ThreadName, name_id, 0, 0, tid);
}
void NVTX_API name_os_thread_a(uint32_t tid, const char* name) {
  if (name != nullptr) name_thread(tid, intern_registration(name));
}
void NVTX_API name_os_thread_w(uint32_t tid, const wchar_t* name) { name_thread(tid, intern_wide_registration(name)); }

// ---- CORE2 module (domains) ----
void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  emit(Kind::Instant, handle_id(d), attribute_message(a));
}
nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start_range(handle_id(d), attribute_message(a));
}
void NVTX_API domain_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { end_range(handle_id(d), id); }
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push_range(handle_id(d), attribute_message(a));
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t d) { return pop_range(handle_id(d)); }
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* s) {
  return id_handle<nvtxStringHandle_t>(s != nullptr ? intern_registration(s) : 0);
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return id_handle<nvtxStringHandle_t>(intern_wide_registration(s));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return id_handle<nvtxDomainHandle_t>(name != nullptr ? intern_registration(name) : 0);
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return id_handle<nvtxDomainHandle_t>(intern_wide_registration(name));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // ids stay valid: records may still name the domain
void NVTX_API initialize(const void*) {}

// Constant-initialized: NVTX may call the entry point from a constructor
// that runs before ours. A handler's address is returned by a function
// because casting it to NvtxFunctionPointer is not a constant expression.
struct Entry {
  unsigned id;
  NvtxFunctionPointer (*handler)() noexcept;
};
#define GPUSCOPE_NVTX_ENTRY(cbid, fn) \
  Entry { cbid, []() noexcept { return reinterpret_cast<NvtxFunctionPointer>(&fn); } }
constinit const Entry kCoreEntries[] = {
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_MarkEx, mark_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_MarkA, mark_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_MarkW, mark_w),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangeStartEx, range_start_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangeStartA, range_start_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangeStartW, range_start_w),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangeEnd, range_end),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangePushEx, range_push_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangePushA, range_push_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangePushW, range_push_w),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_RangePop, range_pop),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_NameOsThreadA, name_os_thread_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE_NameOsThreadW, name_os_thread_w),
};
constinit const Entry kCore2Entries[] = {
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRangePop, domain_range_pop),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_DomainDestroy, domain_destroy),
    GPUSCOPE_NVTX_ENTRY(NVTX_CBID_CORE2_Initialize, initialize),
};
#undef GPUSCOPE_NVTX_ENTRY

// Writes our handlers into one module's table; ids beyond the table that
// this NVTX instance knows (an older header) are skipped.
bool install(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module, std::span<const Entry> entries) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (const Entry& e : entries)
    if (e.id < size && table[e.id] != nullptr) *table[e.id] = e.handler();
  return true;
}

}  // namespace
}  // namespace gpuscope::nvtx

// 1 = attached, 0 = not (NVTX then unloads nothing of ours that matters:
// the library is preloaded, and its functions become no-ops).
int gpuscope::preload::initialize_injection_nvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace gpuscope::nvtx;
  if (get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return 0;
  const bool core = install(callbacks, NVTX_CB_MODULE_CORE, kCoreEntries);
  install(callbacks, NVTX_CB_MODULE_CORE2, kCore2Entries);  // absent in very old NVTX: core still works
  return core ? 1 : 0;
}

// A copy that stands down (instance.h) hands the call to the primary, so
// NVTX_INJECTION64_PATH naming another copy still records into the primary.
GPUSCOPE_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace gpuscope::preload;
  if (const InstanceMarker* primary = primary_instance_marker())
    return primary->initialize_injection_nvtx2(get_export_table);
  return is_primary_instance() ? initialize_injection_nvtx2(get_export_table) : 0;
}
