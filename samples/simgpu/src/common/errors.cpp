#include "errors.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace simgpu {
namespace {

struct RuntimeError {
  int code;
  const char *name, *text;
};
constexpr RuntimeError kRuntimeErrors[] = {
#define SIMGPU_RUNTIME_ERROR(code, name, text) {code, name, text},
#include "runtime_errors.def"
#undef SIMGPU_RUNTIME_ERROR
};

struct DriverError {
  int code;
  const char* name;
};
constexpr DriverError kDriverErrors[] = {
#define SIMGPU_DRIVER_ERROR(code, name) {code, name},
#include "driver_errors.def"
#undef SIMGPU_DRIVER_ERROR
};

const RuntimeError* find_runtime(int code) {
  for (const RuntimeError& e : kRuntimeErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace

const char* runtime_error_name(int code) {
  const RuntimeError* e = find_runtime(code);
  return e ? e->name : nullptr;
}

const char* runtime_error_string(int code) {
  const RuntimeError* e = find_runtime(code);
  return e ? e->text : nullptr;
}

const char* driver_error_name(int code) {
  for (const DriverError& e : kDriverErrors)
    if (e.code == code) return e.name;
  return nullptr;
}

const char* driver_error_string(int code) {
  if (!driver_error_name(code)) return nullptr;
  const char* text = runtime_error_string(code);
  return text ? text : driver_error_name(code);
}

namespace {

// Whether `name` is new to this process (thread-safe).
bool first_time(const char* name) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard lock(mu);
  return seen.insert(name).second;
}

}  // namespace

void log_unsupported_once(const char* name, const char* error_name) {
  static const bool log = [] {
    const char* v = std::getenv("SIMGPU_LOG");
    return v && *v && *v != '0';
  }();
  if (log && first_time(name)) std::fprintf(stderr, "simgpu: %s is not supported by simgpu (%s)\n", name, error_name);
}

void explain_once(const char* name, const char* text) {
  if (first_time(name)) std::fprintf(stderr, "simgpu: %s\n", text);
}

}  // namespace simgpu
