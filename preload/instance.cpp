#include "instance.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "config.h"
#include "diag.h"
#include "gpuscope_version.h"
#include "loader/object_of.h"
#include "real_symbol.h"
#include "session.h"

// Constant data: relocated before any constructor runs, so another copy can
// read it before this copy's constructors have run.
extern "C" __attribute__((visibility("default"))) constinit const gpuscope::preload::InstanceMarker
    gpuscope_instance = {GPUSCOPE_INSTANCE_MAGIC,
                         gpuscope::preload::kInstanceAbi,
                         sizeof(gpuscope::preload::InstanceMarker),
                         GPUSCOPE_VERSION_STRING,
                         &gpuscope::preload::initialize_injection,
                         &gpuscope::preload::initialize_injection_nvtx2,
                         &gpuscope::preload::hook_address,
                         &gpuscope::capture::next_symbol};

namespace gpuscope::preload {
namespace {

using loader::object_of;

enum Role : int { kUndecided = 0, kPrimary = 1, kSecondary = 2 };
std::atomic<int> g_role{kUndecided};
std::atomic<const InstanceMarker*> g_primary{nullptr};

// Looking at the loaded objects is gpuscope's own business: the hooks it
// runs under must not record it, and the program's errno stays as it was
// (its dlerror() state too: the last loader call made is always one that
// succeeds, glibc_dlclose, which leaves no error pending, as the program's
// own successful lookup would).
class OwnLookups {
 public:
  OwnLookups() : saved_errno_(errno) {}
  ~OwnLookups() { errno = saved_errno_; }
  OwnLookups(const OwnLookups&) = delete;
  OwnLookups& operator=(const OwnLookups&) = delete;

 private:
  capture::InternalScope internal_;
  int saved_errno_;
};

struct LoadedObject {
  std::string name;
  ElfW(Addr) load_bias;
};

int collect(dl_phdr_info* info, size_t, void* out) {
  // The main program (empty name) is never a copy of the library.
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
    static_cast<std::vector<LoadedObject>*>(out)->push_back({info->dlpi_name, info->dlpi_addr});
  return 0;
}

// An address in this copy. Not &gpuscope_instance: a reference to an
// exported symbol binds to the first definition in the global scope, which
// is another copy's when this one is not first.
const void* own_address() { return reinterpret_cast<const void*>(&own_address); }

// glibc's dlclose, from the object that defines dlmopen (libc, or libdl
// before glibc 2.34). A plain dlclose() binds to the first dlclose in the
// global scope: a copy's override, which would record the close as the
// program's.
using DlcloseFn = int (*)(void*);
DlcloseFn glibc_dlclose() {
  static const DlcloseFn fn = [] {
    Dl_info info{};
    void* defining = dladdr(reinterpret_cast<void*>(&dlmopen), &info) != 0 && info.dli_fname != nullptr
                         ? dlmopen(LM_ID_BASE, info.dli_fname, RTLD_NOLOAD | RTLD_LAZY)
                         : nullptr;
    void* found = defining != nullptr ? capture::real_dlsym()(defining, "dlclose") : nullptr;
    return found != nullptr ? reinterpret_cast<DlcloseFn>(found) : &dlclose;
  }();
  return fn;
}

// The marker `object` exports itself (a handle's lookup also searches its
// dependencies), or null. dlmopen into the base namespace is dlopen without
// passing through any copy's dlopen override; RTLD_NOLOAD never loads, and
// the reference it takes is given back at once.
const InstanceMarker* marker_of(const LoadedObject& object) {
  const auto* marker = static_cast<const InstanceMarker*>(ObjectLookup(object.name.c_str()).find(kInstanceSymbol));
  const link_map* map = marker != nullptr ? object_of(marker) : nullptr;
  if (map == nullptr || map->l_addr != object.load_bias) return nullptr;
  return std::memcmp(marker->magic, kInstanceMagic, sizeof kInstanceMagic) == 0 ? marker : nullptr;
}

Role decide() {
  const OwnLookups own;
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(collect, &objects);  // in load order
  const link_map* self = object_of(own_address());
  for (const LoadedObject& object : objects) {
    const InstanceMarker* marker = marker_of(object);
    if (marker == nullptr) continue;
    if (self != nullptr && self->l_addr == object.load_bias) return kPrimary;
    g_primary.store(marker, std::memory_order_release);
    return kSecondary;
  }
  return kPrimary;  // our own marker not found (cannot happen): trace as a lone copy would
}

bool has_entry_points(const InstanceMarker* m) {
  return m->abi >= 1 && m->size >= offsetof(InstanceMarker, next_symbol) + sizeof(void*);
}

// The marker of the other copy `address` lies in, or null.
const InstanceMarker* other_instance_at(const void* address) {
  const OwnLookups own;
  const link_map* map = object_of(address);
  if (map == nullptr || map->l_name == nullptr || map->l_name[0] == '\0' || map == object_of(own_address()))
    return nullptr;
  return marker_of({map->l_name, map->l_addr});
}

std::string path_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "?";
}

}  // namespace

bool is_primary_instance() noexcept {
  int role = g_role.load(std::memory_order_acquire);
  if (__builtin_expect(role == kUndecided, 0)) {
    int undecided = kUndecided;
    const int decided = decide();  // any thread may decide: they all find the same
    role = g_role.compare_exchange_strong(undecided, decided, std::memory_order_acq_rel) ? decided : undecided;
  }
  return role == kPrimary;
}

const InstanceMarker* primary_instance_marker() noexcept {
  if (is_primary_instance()) return nullptr;
  const InstanceMarker* m = g_primary.load(std::memory_order_acquire);
  return m != nullptr && has_entry_points(m) ? m : nullptr;
}

bool in_other_instance(const void* address) { return other_instance_at(address) != nullptr; }

void* definition_in_any_object(const char* name, const char* version) {
  const OwnLookups own;
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(collect, &objects);  // in load order
  const link_map* self = object_of(own_address());
  for (const LoadedObject& object : objects) {
    if (object.name.empty() || (self != nullptr && self->l_addr == object.load_bias)) continue;
    void* p = ObjectLookup(object.name.c_str()).find(name, version);
    // The object's scope may reach our wrapper (a preloaded library is in it) or another copy's.
    if (p != nullptr && object_of(p) != self && other_instance_at(p) == nullptr) return p;
  }
  return nullptr;
}

ObjectLookup::ObjectLookup(const char* object_name)
    : handle_(object_name != nullptr && object_name[0] != '\0'
                  ? dlmopen(LM_ID_BASE, object_name, RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL)
                  : nullptr) {}

ObjectLookup::~ObjectLookup() {
  if (handle_ != nullptr) glibc_dlclose()(handle_);  // RTLD_NOLOAD took a reference: give it back
}

void* ObjectLookup::find(const char* symbol, const char* version) const {
  if (handle_ == nullptr) return nullptr;
  return version != nullptr ? dlvsym(handle_, symbol, version) : capture::real_dlsym()(handle_, symbol);
}

void* next_definition(const char* name) {
  void* p = capture::next_symbol(name);
  // Bounded: each hop moves on past one more copy in the scope.
  for (int hop = 0; p != nullptr && hop < 8; ++hop) {
    const InstanceMarker* other = other_instance_at(p);
    if (other == nullptr) return p;
    p = has_entry_points(other) ? other->next_symbol(name) : nullptr;
  }
  return nullptr;
}

void* next_definition(const char* name, const char* version) {
  void* p = capture::next_versioned_symbol(name, version);
  return p != nullptr && other_instance_at(p) == nullptr ? p : nullptr;
}

void stand_down() {
  capture::disable_capture();
  const capture::CaptureConfig config = capture::read_capture_config();
  if (config.disabled || config.secure_execution) return;
  const InstanceMarker* primary = g_primary.load(std::memory_order_acquire);
  const bool versioned = primary != nullptr && primary->abi >= 1 && primary->version != nullptr;
  capture::diag_line("another libgpuscope.so is loaded (%s, version %s): this copy (%s, version %s) stands down",
                     primary != nullptr ? path_of(primary).c_str() : "?", versioned ? primary->version : "?",
                     path_of(own_address()).c_str(), GPUSCOPE_VERSION_STRING);
}

}  // namespace gpuscope::preload
