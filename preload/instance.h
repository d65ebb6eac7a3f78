// One gpuscope per process, however many copies of libgpuscope.so are loaded
// (another path, another version or build; preloaded, injected through
// CUDA_INJECTION64_PATH or NVTX_INJECTION64_PATH, or dlopen'ed).
//
// Every copy exports `gpuscope_instance`, a marker whose name and first
// fields never change. The copy that traces (the primary) is the first
// loaded object exporting it, in the loader's order (dl_iterate_phdr): for
// LD_PRELOAD=a:b that is a; a preloaded copy comes before any copy the
// driver or NVTX injects later. Every other copy stands down: its
// constructors do nothing but say so once, it records nothing and writes no
// file, and every call that reaches it goes on to the primary: its hooks
// pass the call to the primary's hook of the same name (recorded once,
// there; its own capture phase is Disabled), its dlsym is glibc's, and its
// injection entry points hand over to the primary's, so the primary still
// gets CUPTI and NVTX. docs/interception.md ("Two copies of the library").
#pragma once

#include <cstdint>

namespace gpuscope::preload {

// The marker's layout. Append only: a copy of any version reads
// `magic`, `abi` and `size` before anything else.
struct InstanceMarker {
  char magic[16];  // kInstanceMagic
  uint32_t abi;    // kInstanceAbi: which fields below exist
  uint32_t size;   // sizeof(InstanceMarker) of the copy that wrote it
  const char* version;  // GPUSCOPE_VERSION_STRING
  // abi >= 1: what a copy standing down hands its calls to.
  int (*initialize_injection)();
  int (*initialize_injection_nvtx2)(const void* (*get_export_table)(uint32_t));
  void* (*hook_address)(const char* name);  // the copy's hook of that name, or null
  void* (*next_symbol)(const char* name);   // the next definition after the copy
};

#define GPUSCOPE_INSTANCE_MAGIC "gpuscope-inst"
inline constexpr char kInstanceMagic[16] = GPUSCOPE_INSTANCE_MAGIC;
inline constexpr uint32_t kInstanceAbi = 1;
inline constexpr const char* kInstanceSymbol = "gpuscope_instance";

// What the marker points to, in this copy: the injection entry points' work
// (InitializeInjection and InitializeInjectionNvtx2 hand over to the
// primary's first) and the hook lookup. Hidden, so the marker's pointers
// are this copy's own functions, not the first definitions in the scope.
int initialize_injection();
int initialize_injection_nvtx2(const void* (*get_export_table)(uint32_t));
void* hook_address(const char* name);

// Whether `address` lies in another copy of libgpuscope.so. The primary's
// hooks never take another copy's hook for the real function: that copy
// hands its calls back to the primary.
bool in_other_instance(const void* address);

// The next definition of `name` after this copy that is not in another
// copy (for LD_PRELOAD=a:b, the one after b): next_symbol(), asked again
// from each copy it lands in.
void* next_definition(const char* name);

// The same for `name` at symbol version `version` (a runtime hook's alias,
// hooks/runtime_versions.h). Another copy in between hands out unversioned
// definitions only (its marker): null then, and definition_in_any_object
// finds it.
void* next_definition(const char* name, const char* version);

// Last resort for a hook's real function: the first loaded object, in load
// order, that defines `name` and is no copy of gpuscope. The global scope
// cannot see a library loaded RTLD_LOCAL as another's dependency (a Python
// extension module or a plugin that links libcudart), yet its callers reach
// our exported wrapper. Takes the loader's lock: first calls only.
void* definition_in_any_object(const char* name, const char* version = nullptr);

// Lookups in one loaded object (and its dependencies), through a handle of
// its own: a link map is a dlsym handle only for an object dlopen opened
// itself (one the loader mapped at start-up, or as another's dependency,
// has an empty search list, and glibc's dlsym dereferences it). RTLD_NOLOAD
// never loads; the reference it takes is given back when this goes.
class ObjectLookup {
 public:
  explicit ObjectLookup(const char* object_name);
  ~ObjectLookup();
  ObjectLookup(const ObjectLookup&) = delete;
  ObjectLookup& operator=(const ObjectLookup&) = delete;
  // Null when the object is not loaded or has no such symbol (at `version`, when given).
  void* find(const char* symbol, const char* version = nullptr) const;

 private:
  void* handle_;
};

// Whether this copy is the primary. Decided once, on first use, from any
// entry point and any thread (before this copy's constructors too).
bool is_primary_instance() noexcept;

// The primary's marker, when this copy is not it and the primary's marker
// has the injection entry points (abi >= 1); else null.
const InstanceMarker* primary_instance_marker() noexcept;

// This copy's start-up when it is not the primary: capture Disabled, and
// one line on stderr naming both copies (unless GPUSCOPE_DISABLE or secure
// execution keeps the library silent).
void stand_down();

}  // namespace gpuscope::preload
