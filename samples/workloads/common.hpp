// Shared by the bottleneck samples: flags, CUDA error checks, result checks
// and timing.  Every sample is an ordinary CUDA program: it runs unchanged on
// a real GPU and on simgpu (samples/simgpu), which models time but does not
// execute kernels -- so each sample checks its kernels' results only where
// they ran (kernels_compute()) and always checks what it copied.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>

namespace sample {

inline const char*& name() {
  static const char* n = "sample";
  return n;
}

// Any CUDA error ends the program with status 1 and says which call failed.
inline void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s failed: %s (%s)\n", name(), what, cudaGetErrorName(e), cudaGetErrorString(e));
  std::exit(1);
}

// A wrong result ends the program with status 2.
inline void expect(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "%s: result check failed: %s\n", name(), what);
  std::exit(2);
}

#define CHECK(expr) ::sample::check((expr), #expr)
#define CHECK_LAUNCH(kernel) ::sample::check(cudaGetLastError(), "launch of " #kernel)

// Command-line flags: `known` lists them, "name=" for one that takes a
// positive number (--name=N or --name N), "name" for a bare switch.
// Anything else is a usage error (status 2).
class Flags {
 public:
  Flags(int argc, char** argv, std::initializer_list<const char*> known, const char* usage) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      const size_t eq = arg.find('=');
      std::string flag = arg.rfind("--", 0) == 0 ? arg.substr(2, eq == std::string::npos ? eq : eq - 2) : "";
      const bool takes_value = is_known(known, flag + "=");
      if (!takes_value && (!is_known(known, flag) || eq != std::string::npos)) usage_error(usage);
      std::string value = "1";
      if (takes_value) value = eq != std::string::npos ? arg.substr(eq + 1) : (i + 1 < argc ? argv[++i] : "");
      values_[flag] = value;
    }
  }

  bool has(const char* flag) const { return lookup(flag) != nullptr; }

  long get(const char* flag, long fallback) const {
    const std::string* text = lookup(flag);
    if (!text) return fallback;
    char* end = nullptr;
    const long v = std::strtol(text->c_str(), &end, 0);
    if (text->empty() || *end || v <= 0) {
      std::fprintf(stderr, "%s: --%s needs a positive number\n", name(), flag);
      std::exit(2);
    }
    return v;
  }

 private:
  static bool is_known(std::initializer_list<const char*> known, const std::string& flag) {
    for (const char* k : known)
      if (flag == k) return true;
    return false;
  }
  [[noreturn]] static void usage_error(const char* usage) {
    std::fprintf(stderr, "usage: %s %s\n", name(), usage);
    std::exit(2);
  }
  const std::string* lookup(const char* flag) const {
    auto it = values_.find(flag);
    return it == values_.end() ? nullptr : &it->second;
  }
  std::map<std::string, std::string> values_;  // the last of repeated flags wins
};

// simgpu names its devices "... (simulated)" and does not execute kernels.
inline bool kernels_compute(const cudaDeviceProp& prop) { return std::strstr(prop.name, "(simulated)") == nullptr; }

inline bool kernels_compute() {
  int dev = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  return kernels_compute(prop);
}

inline std::string device_name() {
  int dev = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  return prop.name;
}

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The one line each sample prints when it succeeds.
inline void report(const char* format, ...) {
  std::printf("%s: ", name());
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
}

// A small deterministic hash for generating inputs on the host.
__host__ __device__ inline unsigned mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

}  // namespace sample
