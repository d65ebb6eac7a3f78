// Device model: executable graphs.  Instantiation flattens child graphs and
// orders the nodes; a launch puts each node on a stream of its own (the
// executable graph's, reused launch after launch), chained to its parents by
// markers, so the model schedules branches side by side on the engines,
// holds a host node's dependents until it returns, and makes the launch
// stream wait for the last nodes.
#include <algorithm>
#include <map>
#include <optional>

#include "../common/clock.hpp"
#include "activity.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

// The graph's nodes in an order that respects every edge (and otherwise the
// order they were added); nothing on a cycle.
std::optional<std::vector<const CUgraphNode_st*>> topological(const CUgraph_st& g) {
  std::map<const CUgraphNode_st*, size_t> waiting;
  std::vector<const CUgraphNode_st*> order, ready;
  for (const auto& n : g.nodes) {
    waiting[n.get()] = n->deps.size();
    if (n->deps.empty()) ready.push_back(n.get());
  }
  for (size_t next = 0; next < ready.size(); ++next) {
    order.push_back(ready[next]);
    for (const CUgraphNode_st* d : ready[next]->dependents)
      if (--waiting[d] == 0) ready.push_back(d);
  }
  if (order.size() != g.nodes.size()) return std::nullopt;
  return order;
}

size_t add_exec_node(CUgraphExec_st& e, NodeParams params, std::vector<size_t> parents) {
  e.nodes.push_back(ExecNode{std::move(params), std::move(parents)});
  return e.nodes.size() - 1;
}

NodeParams empty_on(int device) {
  NodeParams p;
  p.device = device;
  return p;
}

// Appends g's nodes to e, a child graph's between an entry and an exit node;
// `entry` are the parents of g's roots.  Returns the nodes g ends with.
std::optional<std::vector<size_t>> flatten(const CUgraph_st& g, const std::vector<size_t>& entry,
                                           CUgraphExec_st& e, bool top) {
  const auto order = topological(g);
  if (!order) return std::nullopt;
  std::map<const CUgraphNode_st*, size_t> exit_of;
  for (const CUgraphNode_st* n : *order) {
    std::vector<size_t> parents;
    for (const CUgraphNode_st* d : n->deps) parents.push_back(exit_of.at(d));
    if (n->deps.empty()) parents = entry;
    size_t index = 0;
    if (n->params.type == CU_GRAPH_NODE_TYPE_GRAPH) {
      index = add_exec_node(e, empty_on(n->params.device), parents);
      auto ends = flatten(*n->params.child, {index}, e, false);
      if (!ends) return std::nullopt;
      exit_of[n] = add_exec_node(e, empty_on(n->params.device), ends->empty() ? std::vector<size_t>{index} : *ends);
    } else {
      index = exit_of[n] = add_exec_node(e, n->params, parents);
    }
    if (top) e.exec_index[e.position.at(n)] = index;
  }
  std::vector<size_t> ends;
  for (const CUgraphNode_st* n : *order)
    if (n->dependents.empty()) ends.push_back(exit_of.at(n));
  return ends;
}

// The source graph's shape: each node's type and its parents' positions.
void record_shape(const CUgraph_st& g, CUgraphExec_st& e) {
  for (size_t i = 0; i < g.nodes.size(); ++i) e.position[g.nodes[i].get()] = i;
  for (const auto& n : g.nodes) {
    std::vector<size_t> parents;
    for (const CUgraphNode_st* d : n->deps) parents.push_back(e.position.at(d));
    std::sort(parents.begin(), parents.end());
    e.shape.emplace_back(n->params.type, std::move(parents));
  }
  e.exec_index.assign(g.nodes.size(), 0);
}

// Where cuGraphExecUpdate cannot take g's parameters into e.
CUgraphExecUpdateResult compare_shape(const CUgraphExec_st& e, const CUgraphExec_st& fresh, const CUgraph_st& g,
                                      CUgraphNode* error_node) {
  if (fresh.shape.size() != e.shape.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  for (size_t i = 0; i < e.shape.size(); ++i) {
    *error_node = g.nodes[i].get();
    if (fresh.shape[i].first != e.shape[i].first) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    if (fresh.shape[i].second != e.shape[i].second) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  }
  *error_node = nullptr;
  // A child graph whose own shape changed.
  return fresh.nodes.size() == e.nodes.size() ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
}

}  // namespace

CUresult Model::build_exec(const CUgraph_st& g, CUgraphExec_st& e, CUgraphNode* error_node) {
  for (const auto& n : g.nodes) {
    if (CUresult r = check_node(n->params)) {
      if (error_node) *error_node = n.get();
      return r;
    }
  }
  record_shape(g, e);
  if (!flatten(g, {}, e, true)) return CUDA_ERROR_INVALID_VALUE;  // a cycle
  std::vector<bool> is_parent(e.nodes.size());
  for (const ExecNode& n : e.nodes)
    for (size_t p : n.parents) is_parent[p] = true;
  for (size_t i = 0; i < e.nodes.size(); ++i)
    if (!is_parent[i]) e.sinks.push_back(i);
  return CUDA_SUCCESS;
}

CUresult Model::graph_instantiate(CUgraph g, unsigned long long flags, CUgraphExec* out, CUgraphNode* error_node) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!graphs_.count(g)) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<CUgraphExec_st>();
  e->device = dev;
  e->flags = flags;
  if (CUresult r = build_exec(*g, *e, error_node)) return r;
  e->streams.assign(e->nodes.size(), nullptr);
  *out = e.release();
  execs_.insert(*out);
  return CUDA_SUCCESS;
}

void Model::retire_stream(CUstream_st* s) {
  if (!s) return;
  if (s->unresolved()) s->destroyed = true;  // drain_backlogs frees it
  else delete s;
}

CUresult Model::graph_exec_destroy(CUgraphExec e) {
  std::lock_guard lock(mu_);
  if (!execs_.erase(e)) return CUDA_ERROR_INVALID_VALUE;
  for (CUstream_st* s : e->streams) retire_stream(s);
  delete e;
  release_graph_memory();
  return CUDA_SUCCESS;
}

CUresult Model::graph_exec_flags(CUgraphExec e, unsigned long long* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!execs_.count(e)) return CUDA_ERROR_INVALID_VALUE;
  *flags = e->flags;
  return CUDA_SUCCESS;
}

CUresult Model::graph_exec_update(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  std::lock_guard lock(mu_);
  if (!execs_.count(e) || !graphs_.count(g)) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec_st fresh;
  CUgraphNode error_node = nullptr;
  CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
  if (build_exec(*g, fresh, &error_node) == CUDA_SUCCESS) result = compare_shape(*e, fresh, *g, &error_node);
  if (info) *info = CUgraphExecUpdateResultInfo{result, error_node, nullptr};
  if (result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  // Same shape: the executable graph takes the new parameters, and g's nodes
  // name its nodes from now on.
  e->nodes = std::move(fresh.nodes);
  for (const auto& [node, pos] : fresh.position) e->position[node] = pos;
  release_graph_memory();
  return CUDA_SUCCESS;
}

CUresult Model::graph_exec_set_params(CUgraphExec e, CUgraphNode n, const NodeParams& params) {
  std::lock_guard lock(mu_);
  if (!execs_.count(e)) return CUDA_ERROR_INVALID_VALUE;
  auto it = e->position.find(n);
  if (it == e->position.end()) return CUDA_ERROR_INVALID_VALUE;
  NodeParams& target = e->nodes[e->exec_index[it->second]].params;
  if (target.type != params.type || params.type == CU_GRAPH_NODE_TYPE_GRAPH ||
      params.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_node(params)) return r;
  const int dev = target.device;
  target = params;
  target.device = dev;
  return CUDA_SUCCESS;
}

// What a node does on its stream when the graph is launched (nothing, for
// empty, memory and child-graph boundary nodes).
CUresult Model::plan_node(const NodeParams& p, CUstream_st& s, std::vector<StreamOp>* ops) {
  StreamOp op;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      if (CUresult r = plan_kernel(p.kernel, p.device, &op.work)) return r;
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CopyRequest req;
      if (CUresult r = describe_copy_locked(p.copy, &req)) return r;
      req.async = true;
      HostHold unused;
      if (CUresult r = plan_copy(req, &s, &op.work, &unused)) return r;
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const MemsetRequest req{reinterpret_cast<void*>(p.memset.dst), p.memset.value, p.memset.elementSize,
                              p.memset.width, p.memset.height, p.memset.pitch, nullptr, false};
      if (CUresult r = plan_memset(req, p.device, &op.work)) return r;
      break;
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      op.kind = StreamOp::Kind::HostFunction;
      op.fn = [fn = p.host.fn, user = p.host.userData] { fn(user); };
      break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      if (!events_.count(p.event)) return CUDA_ERROR_INVALID_VALUE;
      op.kind = StreamOp::Kind::Record;
      op.marker = std::make_shared<Marker>();
      break;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      if (!events_.count(p.event)) return CUDA_ERROR_INVALID_VALUE;
      if (!p.event->record) return CUDA_SUCCESS;  // never recorded: nothing to wait for
      op.kind = StreamOp::Kind::Wait;
      op.marker = p.event->record;
      break;
    default:
      return CUDA_SUCCESS;
  }
  ops->push_back(std::move(op));
  return CUDA_SUCCESS;
}

CUresult Model::graph_launch(CUgraphExec e, CUstream s, bool per_thread) {
  spend_host_time(us_to_ns(node_.costs.graph_launch));
  wait_for_queue_slot();
  std::lock_guard lock(mu_);
  if (!execs_.count(e)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (st->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // no graph in a graph by capture
  // Every node is planned before any is queued: one that cannot run fails
  // the launch as a whole.
  const size_t n = e->nodes.size();
  std::vector<std::vector<StreamOp>> ops(n);
  for (size_t i = 0; i < n; ++i) {
    if (!e->streams[i]) {
      e->streams[i] = new CUstream_st;
      e->streams[i]->device = e->nodes[i].params.device;
      e->streams[i]->flags = CU_STREAM_NON_BLOCKING;
    }
    if (CUresult r = plan_node(e->nodes[i].params, *e->streams[i], &ops[i])) return r;
  }
  const int64_t now = now_ns();
  auto chain = [now](StreamOp::Kind kind, MarkerRef marker) {
    return StreamOp{kind, {}, {}, std::move(marker), nullptr, now};
  };
  auto start = std::make_shared<Marker>();
  submit(*st, chain(StreamOp::Kind::Record, start));
  // Every node's device record carries the graph launch's correlation id, as CUPTI's do.
  const uint32_t correlation = activity_enter();
  std::vector<MarkerRef> done(n);
  for (size_t i = 0; i < n; ++i) {
    CUstream_st& node_stream = *e->streams[i];
    if (e->nodes[i].parents.empty()) submit(node_stream, chain(StreamOp::Kind::Wait, start));
    for (size_t p : e->nodes[i].parents) submit(node_stream, chain(StreamOp::Kind::Wait, done[p]));
    for (StreamOp& op : ops[i]) {
      op.submit = now;
      op.work.traced.correlation = correlation;
      if (op.kind == StreamOp::Kind::Record) {
        e->nodes[i].params.event->record = op.marker;
        e->nodes[i].params.event->captured.reset();
      }
      submit(node_stream, std::move(op));
    }
    done[i] = std::make_shared<Marker>();
    submit(node_stream, chain(StreamOp::Kind::Record, done[i]));
  }
  for (size_t sink : e->sinks) submit(*st, chain(StreamOp::Kind::Wait, done[sink]));
  return CUDA_SUCCESS;
}

CUresult Model::graph_memory(int dev, uint64_t* current, uint64_t* high) {
  std::lock_guard lock(mu_);
  *current = 0;
  for (const auto& [base, a] : allocations_)
    if (a.graph && a.device == dev) *current += a.size;
  *high = graph_memory_high_[dev];
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
