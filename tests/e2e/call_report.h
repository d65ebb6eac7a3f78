// What the test programs (graph_work.cu, graph_driver.cpp) print, for
// tests/e2e/test_graphs.cpp to read back: "call NAME RESULT" for each CUDA
// call, "ran K C M" after each graph launch that succeeded (the kernels,
// copies and memsets the program put into that graph).
#pragma once

#include <cstdio>

template <class Result> Result report_call(const char* name, Result rc) {
  std::printf("call %s %d\n", name, static_cast<int>(rc));
  return rc;
}
#define CALL(name, ...) report_call(#name, name(__VA_ARGS__))

inline void report_graph_run(int kernels, int copies, int memsets) {
  std::printf("ran %d %d %d\n", kernels, copies, memsets);
}
