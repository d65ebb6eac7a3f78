// The CUDA runtimes a process may load besides the one gpuscope builds
// against. Each libcudart versions its symbols with its soname
// (cudaMalloc@libcudart.so.12), and a process can hold two of them (a
// framework's libcudart.so.12 and a plugin's libcudart.so.13). One
// unversioned hook would bind callers of both and could hand their calls to
// only one runtime: the other's callers would reach a runtime that knows
// nothing of their streams, handles or kernels, and has another ABI. So every
// runtime hook is exported once per version: exports.map gives the default
// (libcudart.so.13) to the plain names, and GPUSCOPE_RUNTIME_ALIAS adds
// name@version for each version below, each with its own real function.
//
// A version missing here is one whose callers bypass gpuscope: the
// releases before 10.0 and after 14 (listed ahead, so that a program built
// against CUDA 14 stays traced). docs/interception.md, "Two CUDA runtimes
// in one process".
#pragma once

// X(tag, version, ...): tag names the alias's slot namespace and symbol.
#define GPUSCOPE_CUDART_VERSIONS(X, ...)                                     \
  X(cudart10_0, "libcudart.so.10.0", __VA_ARGS__)                            \
  X(cudart10_1, "libcudart.so.10.1", __VA_ARGS__)                            \
  X(cudart10_2, "libcudart.so.10.2", __VA_ARGS__)                            \
  X(cudart11, "libcudart.so.11.0", __VA_ARGS__)                              \
  X(cudart12, "libcudart.so.12", __VA_ARGS__)                                \
  X(cudart14, "libcudart.so.14", __VA_ARGS__)

// The default version: exports.map's node for the plain runtime names.
#define GPUSCOPE_CUDART_DEFAULT_VERSION "libcudart.so.13"
