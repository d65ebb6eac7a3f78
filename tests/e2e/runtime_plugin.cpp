// A plugin built against an older CUDA runtime (the stand-ins of
// fake_old_cudart.cpp), as a framework's extension or an inference
// backend is: it asks the runtime it linked which version it is
// (test_interception.cpp, two_runtimes_host; test_loader.cpp, churn_host).
#include <cstdio>

extern "C" int cudaRuntimeGetVersion(int* version);

extern "C" __attribute__((visibility("default"))) void plugin_report() {
  int version = -1;
  const int rc = cudaRuntimeGetVersion(&version);
  std::printf("plugin built for CUDA %d: runtime %d (result %d)\n", PLUGIN_CUDA_MAJOR, version, rc);
}

// churn_host's entry point: the version, or -1.
extern "C" __attribute__((visibility("default"))) int plugin_work() {
  int version = -1;
  return cudaRuntimeGetVersion(&version) == 0 ? version : -1;
}
