// What gpuscope keeps track of around CUDA graphs, for the runtime and the
// driver tables alike (hooks/runtime_graphs.cpp, driver/driver_graphs.cpp):
//  - which streams are capturing, so that work enqueued on them is recorded
//    as captured instead of executed (CallInfo::captured);
//  - what each executable graph runs, counted from the graph's nodes when it
//    is instantiated or an exec is updated, so that a graph launch counts
//    its kernels (registry/graph_execs.h).
// Counting asks CUDA itself (GetNodes, NodeGetType, ChildGraphNodeGetGraph)
// instead of following every node-adding call: whatever built the graph
// (capture, explicit nodes, cloning, a library), the answer is the graph's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "call_info.h"
#include "graph_execs.h"
#include "hook_support.h"
#include "open_captures.h"

namespace gpuscope::hooks {

// A stream as CUDA knows it: 0 in a per-thread (_ptsz) call is the
// thread's own default stream, cudaStreamPerThread / CU_STREAM_PER_THREAD.
inline uint64_t capture_stream_key(const void* stream, uint8_t flags) noexcept {
  constexpr uint64_t kPerThreadDefaultStream = 0x2;
  const uint64_t id = stream_id(stream);
  return id == 0 && (flags & kPerThreadStream) != 0 ? kPerThreadDefaultStream : id;
}

// Stream{Begin,End}Capture: the stream joins or leaves the open captures.
// Begin knows its flags only from the slot, so the tables pass them.
struct CaptureBeginCall : CallInfo {
  uint64_t key = 0;
  void track(int32_t result) const noexcept {
    if (result == 0) registry::open_captures().begun(key);
  }
};
struct CaptureEndCall : CallInfo {
  uint64_t key = 0;
  uint8_t api_flags = 0;
  // Whatever the result: an invalidated capture ends with an error.
  void track(int32_t) const noexcept {
    if (!stream_is_capturing(key, api_flags & ~kPerThreadStream)) registry::open_captures().ended(key);
  }
};
inline CaptureBeginCall capture_begin(const void* stream, uint8_t flags) noexcept {
  CaptureBeginCall c;
  c.stream = stream_id(stream);
  c.key = capture_stream_key(stream, flags);
  return c;
}
inline CaptureEndCall capture_end(const void* stream, uint8_t flags) noexcept {
  CaptureEndCall c;
  c.stream = stream_id(stream);
  c.key = capture_stream_key(stream, flags);
  c.api_flags = flags;
  return c;
}

// Calls a hooked function's real definition directly (never the wrapper:
// gpuscope's own queries are not the program's calls); `fallback` when there
// is none.
template <class Fn, class... Args> int call_real(HookSlot& slot, int fallback, Args... args) {
  const Fn real = slot.real_function<Fn>();
  return real == nullptr ? fallback : static_cast<int>(real(args...));
}

// One graph API's node queries, runtime or driver: `Result` is cudaError_t
// or CUresult, `Type` its node-type enum, the slots those of its
// GetNodes, NodeGetType, ChildGraphNodeGetGraph and NodeGetEnabled.
template <class Result, class GraphT, class NodeT, class ExecT, class Type, HookSlot& kGetNodes,
          HookSlot& kNodeGetType, HookSlot& kChildGraph, HookSlot& kNodeGetEnabled>
struct GraphQueries {
  using Graph = GraphT;
  using Node = NodeT;
  using Exec = ExecT;
  static bool nodes(Graph g, Node* out, size_t* count) {
    return call_real<Result (*)(Graph, Node*, size_t*)>(kGetNodes, 500, g, out, count) == 0;
  }
  static int type(Node n) {
    Type t{};
    return call_real<Result (*)(Node, Type*)>(kNodeGetType, 500, n, &t) == 0 ? static_cast<int>(t) : -1;
  }
  static Graph child(Node n) {
    Graph g = nullptr;
    call_real<Result (*)(Node, Graph*)>(kChildGraph, 500, n, &g);
    return g;
  }
  static int enabled(Exec e, Node n) {
    unsigned on = 0;
    return call_real<Result (*)(Exec, Node, unsigned*)>(kNodeGetEnabled, 500, e, n, &on) == 0 ? on != 0 : -1;
  }
};

// Graphs nest (child graph nodes); deeper than this is counted as unknown.
inline constexpr int kMaxGraphNesting = 16;

// `Api` (one per table) wraps the real query functions:
//   using Graph, Node, Exec;
//   static bool nodes(Graph, Node* out, size_t* count);  // CUDA's count-then-fill protocol
//   static int type(Node);                                 // -1 when the query fails
//   static Graph child(Node);                              // null when the query fails
//   static int enabled(Exec, Node);                        // 1, 0, or -1 when unknown
// False when a query failed: the graph's work is then not known.
template <class Api> bool add_graph_work(typename Api::Graph graph, int depth, registry::GraphWork* work) {
  using Node = typename Api::Node;
  size_t count = 0;
  if (graph == nullptr || depth > kMaxGraphNesting || !Api::nodes(graph, nullptr, &count)) return false;
  if (count == 0) return true;
  const std::unique_ptr<Node[]> nodes(new (std::nothrow) Node[count]);
  if (nodes == nullptr || !Api::nodes(graph, nodes.get(), &count)) return false;
  for (size_t i = 0; i < count; ++i) {
    const int type = Api::type(nodes[i]);
    if (type < 0) return false;
    if (type != static_cast<int>(registry::GraphNodeType::ChildGraph)) {
      registry::count_node(work, type);
    } else if (!add_graph_work<Api>(Api::child(nodes[i]), depth + 1, work)) {
      return false;
    }
  }
  return true;
}

// What an exec made from `graph` runs; known == false when CUDA would not say.
template <class Api> registry::GraphWork graph_work(typename Api::Graph graph) {
  registry::GraphWork work;
  work.known = add_graph_work<Api>(graph, 0, &work);
  return work;
}

// Where `exec` stands afterwards: what `graph` runs, or nothing known.
template <class Api> void remember_exec(typename Api::Exec exec, typename Api::Graph graph) {
  const registry::GraphWork work = graph_work<Api>(graph);
  const auto key = reinterpret_cast<uint64_t>(exec);
  if (work.known) registry::graph_execs().set(key, work);
  else registry::graph_execs().erase(key);
}

// cudaGraphInstantiate*, cuGraphInstantiate*: the new exec runs the graph.
template <class Api> struct InstantiateCall : CallInfo {
  typename Api::Exec* out = nullptr;
  typename Api::Graph graph = nullptr;
  void track(int32_t result) const {
    if (result == 0 && out != nullptr) remember_exec<Api>(*out, graph);
  }
};
template <class Api> InstantiateCall<Api> instantiation(typename Api::Exec* out, typename Api::Graph graph) {
  InstantiateCall<Api> c;
  c.out = out;
  c.graph = graph;
  return c;
}

// cudaGraphExecUpdate: on success the exec runs the new graph's nodes.
template <class Api> struct ExecUpdateCall : CallInfo {
  typename Api::Exec exec = nullptr;
  typename Api::Graph graph = nullptr;
  void track(int32_t result) const {
    if (result == 0) remember_exec<Api>(exec, graph);
  }
};
template <class Api> ExecUpdateCall<Api> exec_update(typename Api::Exec exec, typename Api::Graph graph) {
  ExecUpdateCall<Api> c;
  c.exec = exec;
  c.graph = graph;
  return c;
}

// cudaGraphExecDestroy: the handle may come back for another exec.
struct ExecDestroyCall : CallInfo {
  uint64_t exec = 0;
  void track(int32_t result) const {
    if (result == 0) registry::graph_execs().erase(exec);
  }
};
inline ExecDestroyCall exec_destroy(const void* exec) noexcept {
  ExecDestroyCall c;
  c.exec = reinterpret_cast<uint64_t>(exec);
  return c;
}

// cudaGraphNodeSetEnabled: a disabled kernel, memcpy or memset node does
// not run. Its state before the call is read when the call is described.
template <class Api> struct NodeEnableCall : CallInfo {
  uint64_t exec = 0;
  int type = -1;
  int was_enabled = -1;
  bool enable = false;
  void track(int32_t result) const {
    if (result == 0 && type >= 0 && was_enabled >= 0 && (was_enabled != 0) != enable)
      registry::graph_execs().adjust(exec, type, enable ? 1 : -1);
  }
};
template <class Api>
NodeEnableCall<Api> node_enabling(typename Api::Exec exec, typename Api::Node node, unsigned enable) {
  NodeEnableCall<Api> c;
  c.exec = reinterpret_cast<uint64_t>(exec);
  c.type = Api::type(node);
  c.was_enabled = Api::enabled(exec, node);
  c.enable = enable != 0;
  return c;
}


// What the rows of the graph tables (hooks/runtime_graphs.cpp,
// driver/driver_graphs.cpp) call, for one `using namespace` each.
namespace graph_rows {
using hooks::capture_begin;
using hooks::capture_end;
using hooks::exec_destroy;
using hooks::exec_update;
using hooks::graph_launch;
using hooks::instantiation;
using hooks::node_enabling;
using hooks::plain;
}  // namespace graph_rows

}  // namespace gpuscope::hooks
