// The machinery every hook shares: one slot per hooked function (its name,
// our wrapper, the real function), and one macro that defines the exported
// wrapper from a table row. Families (copies, memsets, allocation, sync,
// launch, device; runtime and driver) differ only in their table and in the
// CallInfo type that turns a call's arguments into records (call_info.h).
//
// Where the real function comes from, in order of arrival:
//  - dlsym(handle, name) or cuGetProcAddress handing it out (the override in
//    preload/driver/ adopts it and returns our wrapper instead);
//  - otherwise, on first call, the next definition after libgpuscope.so that
//    is not another copy of it; in a copy standing down, the primary copy's
//    hook (instance.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "exported.h"
#include "runtime_versions.h"
#include "real_symbol.h"
#include "record_flags.h"
#include "recorder.h"
#include "session.h"

namespace gpuscope::hooks {

// FNV-1a of a hooked function's name; constexpr so that every slot carries
// it from load time on.
constexpr uint64_t hook_name_hash(std::string_view name) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// HookSlot::flags, also written to ApiCall.flags (with kCallCaptured, set
// per call).
inline constexpr uint8_t kDriverApi = container::kCallDriverApi;
inline constexpr uint8_t kPerThreadStream = container::kCallPerThreadStream;

// Constant-initialized (constinit, so the compiler proves it): a library
// whose ELF constructor runs before ours (libcublasLt's dlsym of cuInit, say)
// may reach find_hook() or a hook before any of libgpuscope.so's static
// initializers have run, from any thread.
struct HookSlot {
  // Returns our exported wrapper's address. A function, because turning a
  // function's address into void* is not a constant expression.
  using AddressFn = void* (*)() noexcept;

  const char* name;
  uint64_t name_hash;  // hook_name_hash(name): find_hook's first comparison
  AddressFn wrapper_address;
  uint8_t flags;
  // A runtime hook's alias for an older or newer libcudart (runtime_versions.h):
  // the symbol version its callers bind with, and the slot of the default
  // export, whose function id and call counter it shares. Null in a default slot.
  const char* version = nullptr;
  HookSlot* const function = nullptr;
  std::atomic<void*> real{nullptr};
  std::atomic<uint32_t> function_id{0};
  std::atomic<uint16_t> counter{0};  // call_counts.h index; kNoCounter when none was free

  static constexpr uint16_t kNoCounter = 0xFFFF;

  constexpr HookSlot(const char* n, AddressFn w, uint8_t f)
      : name(n), name_hash(hook_name_hash(n)), wrapper_address(w), flags(f) {}
  constexpr HookSlot(const char* n, AddressFn w, uint8_t f, const char* v, HookSlot* default_slot)
      : name(n), name_hash(hook_name_hash(n)), wrapper_address(w), flags(f), version(v), function(default_slot) {}

  void* wrapper() const noexcept { return wrapper_address(); }
  template <class Fn> Fn real_function() noexcept {
    void* p = real.load(std::memory_order_acquire);
    if (__builtin_expect(p == nullptr, 0)) p = resolve_next();
    return reinterpret_cast<Fn>(p);
  }
  // Takes `p` as the real function unless one is known already; false when
  // `p` is our own wrapper or a different implementation than the one held.
  bool adopt(void* p) noexcept;
  uint32_t id() {
    if (function != nullptr) return function->id();
    const uint32_t v = function_id.load(std::memory_order_relaxed);
    return __builtin_expect(v != 0, 1) ? v : intern_name();
  }
  // Where this function's successful nested calls are counted; 0: nowhere,
  // record them in full.
  uint16_t counter_index() {
    if (function != nullptr) return function->counter_index();
    const uint16_t v = counter.load(std::memory_order_relaxed);
    if (__builtin_expect(v != 0, 1)) return v == kNoCounter ? 0 : v;
    return assign_counter();
  }

 private:
  void* resolve_next() noexcept;
  uint16_t assign_counter();
  uint32_t intern_name();
};

// The hook named `name` of any family, for the dlsym and cuGetProcAddress
// overrides; null when none. Reads constant data only: no allocation, no
// lock, correct before libgpuscope.so's constructors have run.
HookSlot* find_hook(std::string_view name);

// A library handle a hooked lookup went through (libcuda.so.1 opened
// RTLD_LOCAL by the runtime, say). Real functions that are not in the global
// scope are looked up there: a library that takes the address of its own
// exported function gets our interposed wrapper back, never the real one.
void remember_library_handle(void* handle) noexcept;

// Every family, in one order (hook_registry.cpp lists them).
using HookFamily = std::span<HookSlot* const> (*)();
std::span<const HookFamily> hook_families();

// Families register their slots here (hook_registry.cpp lists them).
std::span<HookSlot* const> runtime_copy_hooks();
std::span<HookSlot* const> runtime_memset_hooks();
std::span<HookSlot* const> runtime_alloc_hooks();
std::span<HookSlot* const> runtime_sync_hooks();
std::span<HookSlot* const> runtime_launch_hooks();
std::span<HookSlot* const> runtime_device_hooks();
std::span<HookSlot* const> driver_copy_hooks();
std::span<HookSlot* const> driver_alloc_hooks();
std::span<HookSlot* const> driver_sync_hooks();
std::span<HookSlot* const> driver_launch_hooks();
std::span<HookSlot* const> driver_entry_hooks();  // cuGetProcAddress, v1 and v2
std::span<HookSlot* const> runtime_graph_hooks();   // graphs and stream capture
std::span<HookSlot* const> runtime_memory_hooks();  // pools, managed-memory hints, peer access
std::span<HookSlot* const> runtime_host_work_hooks();  // stream callbacks, host functions, occupancy
std::span<HookSlot* const> driver_graph_hooks();
std::span<HookSlot* const> driver_memory_hooks();
std::span<HookSlot* const> driver_host_work_hooks();
std::span<HookSlot* const> driver_vmm_hooks();  // virtual memory management

// Each runtime family's alias slots, one per hook and runtime version
// (runtime_versions.h); not in hook_families(): the dlsym and
// cuGetProcAddress overrides hand out default slots' wrappers.
std::span<HookSlot* const> runtime_copy_hooks_aliases();
std::span<HookSlot* const> runtime_memset_hooks_aliases();
std::span<HookSlot* const> runtime_alloc_hooks_aliases();
std::span<HookSlot* const> runtime_sync_hooks_aliases();
std::span<HookSlot* const> runtime_launch_hooks_aliases();
std::span<HookSlot* const> runtime_device_hooks_aliases();
std::span<HookSlot* const> runtime_graph_hooks_aliases();
std::span<HookSlot* const> runtime_memory_hooks_aliases();
std::span<HookSlot* const> runtime_host_work_hooks_aliases();
std::span<const HookFamily> runtime_alias_families();

// The slot of runtime hook `name` for symbol version `version`: the default
// slot for GPUSCOPE_CUDART_DEFAULT_VERSION, an alias slot for the others;
// null when `name` is no runtime hook or `version` none gpuscope exports.
HookSlot* find_versioned_hook(std::string_view name, std::string_view version);

// What a wrapper returns when no real function exists anywhere (only
// reachable through a direct call to our export with no CUDA library
// loaded): "symbol not found", 500 in both the runtime and the driver API.
template <class Ret> Ret not_found() noexcept { return static_cast<Ret>(500); }

// Whether a nested call with this result is only counted: when it succeeds,
// or gives an answer its family does not call a failure (a query's "not
// ready", PollCall).
template <class Info> bool counted_when_nested(int32_t result) noexcept {
  if constexpr (requires { Info::counted_when_nested(result); }) return Info::counted_when_nested(result);
  else return result == 0;
}

// A call made inside another hooked call on this thread (the driver call
// under a runtime call): counted when it succeeds, so unless the family must
// see every level (Info::kNestedSideEffects: the allocation registry) its
// arguments are not even described; recorded in full when it fails.
template <class Call, class Describe>
inline auto traced_nested(HookSlot& slot, capture::ApiCallScope& scope, Call& call, Describe& describe)
    -> decltype(call()) {
  const auto result = call();
  using Info = decltype(describe());
  if (!Info::kNestedSideEffects && counted_when_nested<Info>(static_cast<int32_t>(result)) &&
      scope.counts_on_success()) {
    scope.count_success();
    return result;
  }
  auto info = describe();
  info.after(scope, static_cast<int32_t>(result), slot.flags);
  return result;
}

// A CallInfo with static `before_any()` / `after_any()`: the profiler API's
// capture-range triggers.
template <class Info> concept CaptureTrigger = requires { Info::before_any(); Info::after_any(); };

// A CallInfo with `track(result)`: state gpuscope keeps whether or not it
// records (the streams capturing into graphs, what each executable graph
// runs), so that a capture window or an attach that opens later still
// knows what was set up before it. Tracking is gpuscope's own work: CUDA
// calls it makes are not recorded.
template <class Info> concept Tracker = requires(Info& info) { info.track(int32_t{}); };

// The call itself, recorded at its level: not at all when not recording,
// counted or recorded when nested (traced_nested), in full when outermost.
template <class Call, class Describe>
inline auto record_call(HookSlot& slot, capture::ApiCallScope& scope, Call& call, Describe& describe)
    -> decltype(call()) {
  if (!scope.active()) return call();
  if (scope.depth() != 0) return traced_nested(slot, scope, call, describe);
  auto info = describe();
  info.before(scope);
  const auto result = call();
  info.after(scope, static_cast<int32_t>(result), slot.flags);
  return result;
}

// Records one call: the ApiCall, and the family's typed record when this is
// the outermost gpuscope-visible call on the thread. Capture-range triggers
// run around every call, recorded or not: they are what starts and stops
// recording.
template <class Call, class Describe>
inline auto traced(HookSlot& slot, Call&& call, Describe&& describe) -> decltype(call()) {
  using Info = decltype(describe());
  if constexpr (Tracker<Info>) {
    // Described before the call, and before its clock starts: some trackers
    // read what the call is about to change.
    Info info = [&] {
      capture::InternalScope internal;
      return describe();
    }();
    const auto described = [&] { return info; };
    capture::ApiCallScope scope([&] { return slot.id(); }, [&] { return slot.counter_index(); });
    const auto result = record_call(slot, scope, call, described);
    capture::InternalScope internal;
    info.track(static_cast<int32_t>(result));
    return result;
  } else {
    if constexpr (CaptureTrigger<Info>) Info::before_any();
    capture::ApiCallScope scope([&] { return slot.id(); }, [&] { return slot.counter_index(); });
    const auto result = record_call(slot, scope, call, describe);
    if constexpr (CaptureTrigger<Info>) Info::after_any();
    return result;
  }
}

}  // namespace gpuscope::hooks

// The slot of the exported hook `name` (declared before and defined in the
// same file), constant-initialized. Hand-written hooks declare theirs with it
// too. The wrapper's address is taken through a hidden alias: `&::name`
// would bind to the first definition of `name` in the global scope, which is
// another copy's hook, or the CUDA library's own function, when this copy is
// not first (instance.h).
#define GPUSCOPE_HOOK_SLOT(name, flags)                                                         \
  extern "C" __attribute__((visibility("hidden"), alias(#name))) decltype(::name) gpuscope_own_##name; \
  namespace gpuscope::hooks::slots {                                                            \
  constinit HookSlot name{                                                                      \
      #name, []() noexcept -> void* { return reinterpret_cast<void*>(&::gpuscope_own_##name); }, flags}; \
  }

// One table row -> one exported hook. `describe` builds the CallInfo from the
// parameters; parenthesize it when it contains commas.
#define GPUSCOPE_DEFINE_HOOK(Ret, name, flags, params, args, describe)                          \
  GPUSCOPE_EXPORT Ret name params;                                                              \
  GPUSCOPE_HOOK_SLOT(name, flags)                                                               \
  GPUSCOPE_EXPORT Ret name params { GPUSCOPE_HOOK_BODY(Ret, gpuscope::hooks::slots::name, params, args, describe) }

// What every export of a hook does, with the slot that holds its real function.
#define GPUSCOPE_HOOK_BODY(Ret, slot, params, args, describe)                                   \
  using Fn = Ret(*) params;                                                                     \
  const Fn real = (slot).real_function<Fn>();                                                   \
  if (real == nullptr) return gpuscope::hooks::not_found<Ret>();                                \
  return gpuscope::hooks::traced((slot), [&] { return real args; }, [&] { return describe; });

// `, a, b` from `(a, b)`; nothing from `()`.
#define GPUSCOPE_COMMA_ARGS(...) __VA_OPT__(, ) __VA_ARGS__

// A runtime hook: the default export (the symbol version exports.map gives
// every runtime name, the one of the runtime gpuscope builds against), and
// one alias per other runtime version (runtime_versions.h), each with a slot
// of its own, so that a caller bound to libcudart.so.12 reaches
// libcudart.so.12 even when libcudart.so.13 is loaded too. All of them run
// one body, handed their slot; `describe` may read it (`slot`) and the real
// function (`real`), for parameters a release passed differently
// (runtime_abi.h).
#define GPUSCOPE_DEFINE_RUNTIME_HOOK(Ret, name, flags, params, args, describe)                  \
  GPUSCOPE_EXPORT Ret name params;                                                              \
  GPUSCOPE_HOOK_SLOT(name, flags)                                                               \
  namespace gpuscope::hooks::bodies {                                                           \
  static Ret name(HookSlot& slot GPUSCOPE_COMMA_ARGS params) {                                  \
    GPUSCOPE_HOOK_BODY(Ret, slot, params, args, describe)                                       \
  }                                                                                             \
  }                                                                                             \
  GPUSCOPE_RUNTIME_EXPORTS(Ret, name, flags, params, args)

// The exports of runtime hook `name` (declared, its slot defined), each
// calling gpuscope::hooks::bodies::name with its slot. Hand-written runtime
// hooks define that body themselves.
#define GPUSCOPE_RUNTIME_EXPORTS(Ret, name, flags, params, args)                                \
  GPUSCOPE_EXPORT Ret name params {                                                             \
    return gpuscope::hooks::bodies::name(gpuscope::hooks::slots::name GPUSCOPE_COMMA_ARGS args); \
  }                                                                                             \
  GPUSCOPE_CUDART_VERSIONS(GPUSCOPE_RUNTIME_ALIAS, Ret, name, flags, params, args)

// The alias of hook `name` that callers bound to `version` reach: exported
// under its own name (which exports.map hides) and, through .symver, as
// name@version.
#define GPUSCOPE_RUNTIME_ALIAS(tag, version, Ret, name, flags, params, args)                    \
  GPUSCOPE_EXPORT Ret gpuscope_##tag##_##name params;                                           \
  __asm__(".symver gpuscope_" #tag "_" #name ", " #name "@" version);                           \
  extern "C" __attribute__((visibility("hidden"), alias("gpuscope_" #tag "_" #name)))           \
  decltype(::gpuscope_##tag##_##name) gpuscope_own_##tag##_##name;                              \
  namespace gpuscope::hooks::slots::tag {                                                       \
  constinit HookSlot name{#name,                                                                \
                          []() noexcept -> void* {                                              \
                            return reinterpret_cast<void*>(&::gpuscope_own_##tag##_##name);     \
                          },                                                                    \
                          flags, version, &gpuscope::hooks::slots::name};                       \
  }                                                                                             \
  GPUSCOPE_EXPORT Ret gpuscope_##tag##_##name params {                                          \
    return gpuscope::hooks::bodies::name(gpuscope::hooks::slots::tag::name GPUSCOPE_COMMA_ARGS args); \
  }

#define GPUSCOPE_HOOK_SLOT_POINTER(Ret, name, flags, params, args, describe) &gpuscope::hooks::slots::name,

// A family's table becomes its hooks and its slot list.
#define GPUSCOPE_DEFINE_FAMILY(list, accessor)                                   \
  list(GPUSCOPE_DEFINE_HOOK)                                                     \
  GPUSCOPE_FAMILY_SLOTS(list, accessor)

#define GPUSCOPE_FAMILY_SLOTS(list, accessor)                                    \
  namespace gpuscope::hooks {                                                    \
  std::span<HookSlot* const> accessor() {                                        \
    static constinit HookSlot* const slots[] = {list(GPUSCOPE_HOOK_SLOT_POINTER)}; \
    return slots;                                                                \
  }                                                                              \
  }

// A runtime family: its hooks with their aliases; the slot list holds the
// default slots, `accessor_aliases()` every alias slot.
#define GPUSCOPE_DEFINE_RUNTIME_FAMILY(list, accessor)                           \
  list(GPUSCOPE_DEFINE_RUNTIME_HOOK)                                             \
  GPUSCOPE_FAMILY_SLOTS(list, accessor)                                          \
  namespace gpuscope::hooks {                                                    \
  std::span<HookSlot* const> accessor##_aliases() {                              \
    static constinit HookSlot* const slots[] = {list(GPUSCOPE_ALIAS_SLOT_POINTERS)}; \
    return slots;                                                                \
  }                                                                              \
  }

#define GPUSCOPE_ALIAS_SLOT_POINTER(tag, version, Ret, name, ...) &gpuscope::hooks::slots::tag::name,
#define GPUSCOPE_ALIAS_SLOT_POINTERS(Ret, name, flags, params, args, describe) \
  GPUSCOPE_CUDART_VERSIONS(GPUSCOPE_ALIAS_SLOT_POINTER, Ret, name)
