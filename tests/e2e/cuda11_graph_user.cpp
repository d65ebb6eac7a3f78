// A program built against CUDA 11, instantiating and updating a graph with
// CUDA 11's parameter lists: each call prints the arguments it passes, and
// the runtime (fake_old_cudart.cpp) prints what it received, writes its
// error log into the program's buffer and its update result through the
// program's pointer. Traced, the lines must still agree and the log and
// result arrive where the program asked.
#include <cstdio>
#include <cstring>

extern "C" int cudaGraphInstantiate(void** exec, void* graph, void** error_node, char* log, size_t log_bytes);
extern "C" int cudaGraphExecUpdate(void* exec, void* graph, void** error_node, int* result);

int main() {
  void* exec = nullptr;
  void* error_node = nullptr;
  char log[64] = "";
  // Handles no runtime would make, so that a lost one shows.
  void* const graph = reinterpret_cast<void*>(0x6a000);
  std::printf("runtime got cudaGraphInstantiate(%p, %p, %p, %p, %zu)\n", static_cast<void*>(&exec), graph,
              static_cast<void*>(&error_node), static_cast<void*>(log), sizeof log);
  const int instantiated = cudaGraphInstantiate(&exec, graph, &error_node, log, sizeof log);
  std::printf("result %d, error node %s, log \"%s\"\n", instantiated, error_node == graph ? "the graph" : "lost", log);
  int update = -1;
  void* const old_exec = reinterpret_cast<void*>(0x6e000);
  std::printf("runtime got cudaGraphExecUpdate(%p, %p, %p, %p)\n", old_exec, graph, static_cast<void*>(&error_node),
              static_cast<void*>(&update));
  const int updated = cudaGraphExecUpdate(old_exec, graph, &error_node, &update);
  std::printf("result %d, update result %d\n", updated, update);
  return 0;
}
