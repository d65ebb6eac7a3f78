// Device model: building CUDA graphs.  A graph is a set of nodes with their
// parameters and dependency edges; every handle (graph, node) is registered
// so entry points can tell a live one from garbage.
#include <algorithm>

#include "../common/clock.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

// A deep copy: the clone's nodes have the same parameters and edges, and
// remember the node they were copied from (cuGraphNodeFindInClone).
std::unique_ptr<CUgraph_st> copy_graph(const CUgraph_st& g) {
  auto copy = std::make_unique<CUgraph_st>();
  copy->cloned_from = &g;
  std::map<const CUgraphNode_st*, CUgraphNode_st*> twin;
  for (const auto& node : g.nodes) {
    auto n = std::make_unique<CUgraphNode_st>();
    n->graph = copy.get();
    n->params = node->params;
    if (node->params.child) {
      n->params.child = std::shared_ptr<CUgraph_st>(copy_graph(*node->params.child).release());
      n->params.child->owned_by_node = true;
    }
    n->cloned_from = node.get();
    twin[node.get()] = n.get();
    copy->nodes.push_back(std::move(n));
  }
  for (const auto& node : g.nodes) {
    CUgraphNode_st* n = twin[node.get()];
    for (const CUgraphNode_st* d : node->deps) n->deps.push_back(twin[d]);
    for (const CUgraphNode_st* d : node->dependents) n->dependents.push_back(twin[d]);
  }
  return copy;
}

void unlink(CUgraphNode_st* from, CUgraphNode_st* to) {
  from->dependents.erase(std::remove(from->dependents.begin(), from->dependents.end(), to), from->dependents.end());
  to->deps.erase(std::remove(to->deps.begin(), to->deps.end(), from), to->deps.end());
}

// The CUDA convention for lists: with no array, *count becomes the list's
// length; with one, up to *count entries are copied, the rest of the array
// is nulled and *count becomes the number copied.
template <class T>
CUresult list_out(const std::vector<T>& items, T* out, size_t* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!out) {
    *count = items.size();
    return CUDA_SUCCESS;
  }
  const size_t copied = std::min(*count, items.size());
  std::copy_n(items.begin(), copied, out);
  std::fill(out + copied, out + *count, T{});
  *count = copied;
  return CUDA_SUCCESS;
}

}  // namespace

GraphMemory::~GraphMemory() {
  // Runs where the last graph or executable graph that used it goes, with
  // the model's lock held: it only notes the range for release_graph_memory.
  if (Model* m = Model::instance()) m->released_graph_memory_.push_back({base, bytes, device});
}

void Model::register_graph(CUgraph_st* g) {
  graphs_.insert(g);
  for (const auto& n : g->nodes) {
    nodes_.insert(n.get());
    if (n->params.child) register_graph(n->params.child.get());
  }
}

void Model::forget_node(CUgraphNode_st* n) {
  nodes_.erase(n);
  if (n->params.child) forget_graph(n->params.child.get());
}

void Model::forget_graph(CUgraph_st* g) {
  graphs_.erase(g);
  for (const auto& n : g->nodes) forget_node(n.get());
}

// Graph memory whose last user went: the pages go once no queued copy can
// still touch them.
void Model::release_graph_memory() {
  std::vector<FreedRange> freed;
  freed.swap(released_graph_memory_);
  for (const FreedRange& r : freed) {
    auto it = allocations_.find(r.base);
    if (it == allocations_.end()) continue;
    const Allocation a = it->second;
    allocations_.erase(it);
    DeviceState& d = devices_[a.device];
    d.memory_used -= std::min<uint64_t>(d.memory_used, a.size);
    shared_.add_process_memory(d.node_index, -static_cast<int64_t>(a.size));
    HostWorker::instance().push_bytes(max_idle_time(), [a] { unmap_memory(a); });
  }
}

CUresult Model::graph_create(CUgraph* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  auto* g = new CUgraph_st;
  graphs_.insert(g);
  *out = g;
  return CUDA_SUCCESS;
}

CUresult Model::graph_destroy(CUgraph g) {
  std::lock_guard lock(mu_);
  if (!graphs_.count(g) || g->owned_by_node) return CUDA_ERROR_INVALID_VALUE;
  forget_graph(g);
  delete g;
  release_graph_memory();
  return CUDA_SUCCESS;
}

// Parameters that name things the model knows: a loaded function, memory it
// allocated, an event, a graph.
CUresult Model::check_node(const NodeParams& p) const {
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return functions_.count(p.kernel.func) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CopyRequest r;
      if (CUresult e = describe_copy_locked(p.copy, &r)) return e;
      return r.dir == CopyDir::HostToHost ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const unsigned e = p.memset.elementSize;
      Allocation a;
      const bool device = find_locked(reinterpret_cast<void*>(p.memset.dst), 1, &a) && is_device_kind(a.kind);
      return device && (e == 1 || e == 2 || e == 4) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case CU_GRAPH_NODE_TYPE_HOST: return p.host.fn ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_GRAPH: return p.child ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return events_.count(p.event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
      auto it = allocations_.find(static_cast<uintptr_t>(p.free_address));
      return it != allocations_.end() && it->second.graph ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUgraphNode_st* Model::add_node(CUgraph_st& g, const std::vector<CUgraphNode_st*>& deps, NodeParams params) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->graph = &g;
  n->params = std::move(params);
  for (CUgraphNode_st* d : deps) {
    if (std::find(n->deps.begin(), n->deps.end(), d) != n->deps.end()) continue;
    n->deps.push_back(d);
    d->dependents.push_back(n.get());
  }
  CUgraphNode_st* raw = n.get();
  g.nodes.push_back(std::move(n));
  nodes_.insert(raw);
  if (raw->params.child) register_graph(raw->params.child.get());
  return raw;
}

CUresult Model::graph_add_node(CUgraph g, const CUgraphNode* deps, size_t count, NodeParams* params,
                               CUgraphNode* out) {
  if (!out || !params || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!graphs_.count(g)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode_st*> parents(deps, deps + count);
  for (CUgraphNode_st* d : parents)
    if (!nodes_.count(d) || d->graph != g) return CUDA_ERROR_INVALID_VALUE;
  params->device = dev;
  if (CUresult r = check_node(*params)) return r;
  if (params->type == CU_GRAPH_NODE_TYPE_GRAPH) {
    if (!graphs_.count(params->child.get())) return CUDA_ERROR_INVALID_VALUE;
    // The node keeps its own copy: later changes to the child do not reach it.
    params->child = std::shared_ptr<CUgraph_st>(copy_graph(*params->child).release());
    params->child->owned_by_node = true;
  }
  if (params->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    void* p = nullptr;
    if (params->memory || !params->memory_bytes) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = reserve_graph_memory(params->memory_bytes, dev, &p)) return r;
    params->memory = std::make_shared<GraphMemory>(reinterpret_cast<uintptr_t>(p), params->memory_bytes, dev);
    params->memory_address = reinterpret_cast<CUdeviceptr>(p);
  }
  *out = add_node(*g, parents, *params);
  params->memory.reset();  // the graph's now: released with the lock held, as GraphMemory needs
  return CUDA_SUCCESS;
}

CUresult Model::graph_node_params(CUgraphNode n, CUgraphNodeType type, NodeParams* out) {
  std::lock_guard lock(mu_);
  if (!nodes_.count(n) || n->params.type != type) return CUDA_ERROR_INVALID_VALUE;
  *out = n->params;
  // What the graph owns stays with the graph (GraphMemory's release needs
  // the lock; cuGraphChildGraphNodeGetGraph hands out the child).
  out->memory.reset();
  out->child.reset();
  return CUDA_SUCCESS;
}

CUresult Model::graph_set_node_params(CUgraphNode n, const NodeParams& params) {
  std::lock_guard lock(mu_);
  if (!nodes_.count(n) || n->params.type != params.type) return CUDA_ERROR_INVALID_VALUE;
  if (params.type == CU_GRAPH_NODE_TYPE_GRAPH || params.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
    return CUDA_ERROR_INVALID_VALUE;  // fixed once made
  if (CUresult r = check_node(params)) return r;
  const int dev = n->params.device;
  n->params = params;
  n->params.device = dev;
  return CUDA_SUCCESS;
}

CUresult Model::graph_node_type(CUgraphNode n, CUgraphNodeType* type) {
  if (!type) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!nodes_.count(n)) return CUDA_ERROR_INVALID_VALUE;
  *type = n->params.type;
  return CUDA_SUCCESS;
}

CUresult Model::graph_nodes(CUgraph g, bool roots_only, CUgraphNode* nodes, size_t* count) {
  std::lock_guard lock(mu_);
  if (!graphs_.count(g)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> list;
  for (const auto& n : g->nodes)
    if (!roots_only || n->deps.empty()) list.push_back(n.get());
  return list_out(list, nodes, count);
}

CUresult Model::graph_edges(CUgraph g, CUgraphNode* from, CUgraphNode* to, size_t* count) {
  std::lock_guard lock(mu_);
  if (!graphs_.count(g) || !count || (!from != !to)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> froms, tos;
  for (const auto& n : g->nodes)
    for (CUgraphNode_st* d : n->dependents) froms.push_back(n.get()), tos.push_back(d);
  size_t to_count = *count;
  if (to) list_out(tos, to, &to_count);
  return list_out(froms, from, count);
}

CUresult Model::graph_node_neighbours(CUgraphNode n, bool dependents, CUgraphNode* out, size_t* count) {
  std::lock_guard lock(mu_);
  if (!nodes_.count(n)) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<CUgraphNode_st*>& list = dependents ? n->dependents : n->deps;
  return list_out(std::vector<CUgraphNode>(list.begin(), list.end()), out, count);
}

CUresult Model::graph_change_edges(CUgraph g, const CUgraphNode* from, const CUgraphNode* to, size_t count,
                                   bool add) {
  std::lock_guard lock(mu_);
  if (!graphs_.count(g) || (count && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    CUgraphNode_st *a = from[i], *b = to[i];
    if (!nodes_.count(a) || !nodes_.count(b) || a->graph != g || b->graph != g || a == b)
      return CUDA_ERROR_INVALID_VALUE;
    const bool present = std::find(a->dependents.begin(), a->dependents.end(), b) != a->dependents.end();
    if (present == add) return CUDA_ERROR_INVALID_VALUE;  // adding twice, or removing a missing edge
  }
  for (size_t i = 0; i < count; ++i) {
    if (add) {
      from[i]->dependents.push_back(to[i]);
      to[i]->deps.push_back(from[i]);
    } else {
      unlink(from[i], to[i]);
    }
  }
  return CUDA_SUCCESS;
}

CUresult Model::graph_destroy_node(CUgraphNode n) {
  std::lock_guard lock(mu_);
  if (!nodes_.count(n)) return CUDA_ERROR_INVALID_VALUE;
  CUgraph_st* g = n->graph;
  for (CUgraphNode_st* d : std::vector<CUgraphNode_st*>(n->deps)) unlink(d, n);
  for (CUgraphNode_st* d : std::vector<CUgraphNode_st*>(n->dependents)) unlink(n, d);
  forget_node(n);
  g->nodes.erase(std::find_if(g->nodes.begin(), g->nodes.end(), [n](const auto& p) { return p.get() == n; }));
  release_graph_memory();
  return CUDA_SUCCESS;
}

CUresult Model::graph_clone(CUgraph g, CUgraph* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!graphs_.count(g)) return CUDA_ERROR_INVALID_VALUE;
  CUgraph_st* clone = copy_graph(*g).release();
  register_graph(clone);
  *out = clone;
  return CUDA_SUCCESS;
}

CUresult Model::graph_find_in_clone(CUgraphNode original, CUgraph clone, CUgraphNode* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!graphs_.count(clone) || !nodes_.count(original)) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& n : clone->nodes) {
    if (n->cloned_from == original) {
      *out = n.get();
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult Model::graph_child(CUgraphNode n, CUgraph* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!nodes_.count(n) || n->params.type != CU_GRAPH_NODE_TYPE_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  *out = n->params.child.get();
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
