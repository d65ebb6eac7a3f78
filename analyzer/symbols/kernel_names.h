// Kernel names as a reader of the analysis wants them. CUPTI reports a
// kernel by its mangled name ("_ZN...12stream_scaleEPfPKffm"): on a real GPU
// every kernel name in an evidence line was mangled (docs/gpu-validation.md,
// run 2), where simgpu's were plain.
#pragma once

#include <string>

namespace gpuscope::analyzer {

// "stream_scale" for a mangled "(anonymous namespace)::stream_scale(float*,
// ...)"; "gemm<float, 128>" for a template; a name that is not mangled comes
// back unchanged. Parameter lists, a leading return type ("void ") and
// anonymous namespaces are dropped: the kernel's own name and template
// arguments are what tell kernels apart in a report.
std::string short_kernel_name(const std::string& name);

}  // namespace gpuscope::analyzer
