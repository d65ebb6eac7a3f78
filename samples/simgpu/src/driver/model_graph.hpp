// CUDA graphs in the device model: what a graph, a node and an executable
// graph hold, and the state of a stream capture.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "model_types.hpp"

namespace simgpu::drv {

// Device memory a memory-allocation node owns: reserved when the node is
// made (the address is part of the graph), kept while the graph or an
// executable graph made from it refers to it.
struct GraphMemory {
  GraphMemory(uintptr_t b, size_t n, int dev) : base(b), bytes(n), device(dev) {}
  GraphMemory(const GraphMemory&) = delete;
  GraphMemory& operator=(const GraphMemory&) = delete;
  ~GraphMemory();  // hands the range back to the model (model_graph.cpp)
  const uintptr_t base;
  const size_t bytes;
  const int device;
};

struct KernelNodeParams {
  CUfunction func = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_mem = 0;
  bool cooperative = false;  // every block resident at once (grid-wide sync)
};

// A node's type and parameters; only the members of its type are used.
struct NodeParams {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  int device = 0;
  KernelNodeParams kernel;
  CUDA_MEMCPY3D copy{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUDA_HOST_NODE_PARAMS host{};
  std::shared_ptr<CUgraph_st> child;  // a child graph node's own copy of its graph
  CUevent event = nullptr;             // event record and wait nodes
  size_t memory_bytes = 0;               // memory allocation nodes: the size asked for,
  CUdeviceptr memory_address = 0;       // where it is,
  std::shared_ptr<GraphMemory> memory;  // and the memory the node owns
  CUdeviceptr free_address = 0;         // memory free nodes
};

// A node of an executable graph: child graphs are flattened into their
// nodes, between an entry and an exit node.
struct ExecNode {
  NodeParams params;
  std::vector<size_t> parents;
};

struct CaptureSession {
  CUgraph_st* graph = nullptr;
  unsigned long long id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUstream_st* origin = nullptr;
  std::thread::id thread;  // the thread that began it
  bool invalidated = false;
  bool graph_is_callers = false;  // cuStreamBeginCaptureToGraph's: never deleted here
  std::set<CUstream_st*> streams;  // the origin and every stream that joined
};

// A capturing stream: its session and the nodes its next node will follow.
struct StreamCapture {
  std::shared_ptr<CaptureSession> session;
  std::vector<CUgraphNode_st*> deps;
};

}  // namespace simgpu::drv

struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  simgpu::drv::NodeParams params;
  std::vector<CUgraphNode_st*> deps, dependents;
  const CUgraphNode_st* cloned_from = nullptr;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in the order they were added
  const CUgraph_st* cloned_from = nullptr;
  bool owned_by_node = false;  // a child graph: destroyed with its node
};

struct CUgraphExec_st {
  int device = 0;
  unsigned long long flags = 0;
  std::vector<simgpu::drv::ExecNode> nodes;  // in an order that respects every dependency
  std::vector<size_t> sinks;                 // nodes nothing depends on
  // The source graph's shape, for cuGraphExecUpdate and the node setters: each
  // top-level node's type and parents (positions in the graph's node order)
  // and the executable node that stands for it.
  std::vector<std::pair<CUgraphNodeType, std::vector<size_t>>> shape;
  std::vector<size_t> exec_index;
  std::map<const CUgraphNode_st*, size_t> position;  // graph node -> position in node order
  std::vector<CUstream_st*> streams;                 // one per node: where it runs when launched
};
