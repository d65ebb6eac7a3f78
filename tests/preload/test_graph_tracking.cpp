// What gpuscope keeps about CUDA graphs and stream captures: the executable
// graphs' work (registry/graph_execs.h), the walk that counts a graph's
// nodes through a graph API (hooks/graph_calls.h), and the open-capture gate
// (registry/open_captures.h).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "graph_execs.h"
#include "hooks/graph_calls.h"
#include "open_captures.h"

namespace gpuscope {
namespace {

using registry::GraphExecs;
using registry::GraphWork;

GraphWork work(uint32_t kernels, uint32_t copies, uint32_t memsets, uint32_t other, bool conditional = false) {
  GraphWork w;
  w.kernels = kernels, w.copies = copies, w.memsets = memsets, w.other = other, w.conditional = conditional;
  w.known = true;
  return w;
}

void expect_work(const GraphWork& w, uint32_t kernels, uint32_t copies, uint32_t memsets, uint32_t other) {
  EXPECT_TRUE(w.known);
  EXPECT_EQ(w.kernels, kernels);
  EXPECT_EQ(w.copies, copies);
  EXPECT_EQ(w.memsets, memsets);
  EXPECT_EQ(w.other, other);
}

TEST(GraphExecs, KeepsWhatEachExecRunsUntilUpdatedOrDestroyed) {
  auto execs = std::make_unique<GraphExecs>();
  EXPECT_FALSE(execs->find(0x1000).known);
  execs->set(0x1000, work(3, 1, 2, 4, true));
  execs->set(0x2000, work(7, 0, 0, 0));
  const GraphWork first = execs->find(0x1000);
  expect_work(first, 3, 1, 2, 4);
  EXPECT_TRUE(first.conditional);
  expect_work(execs->find(0x2000), 7, 0, 0, 0);
  execs->set(0x1000, work(5, 0, 0, 1));  // an exec update
  expect_work(execs->find(0x1000), 5, 0, 0, 1);
  EXPECT_FALSE(execs->find(0x1000).conditional);
  execs->erase(0x1000);
  EXPECT_FALSE(execs->find(0x1000).known);
  expect_work(execs->find(0x2000), 7, 0, 0, 0);
}

TEST(GraphExecs, EnablingAndDisablingNodesAdjustsTheCountOfTheirKind) {
  auto execs = std::make_unique<GraphExecs>();
  execs->set(0x40, work(4, 2, 1, 0));
  execs->adjust(0x40, static_cast<int>(registry::GraphNodeType::Kernel), -1);
  execs->adjust(0x40, static_cast<int>(registry::GraphNodeType::Memset), -1);
  expect_work(execs->find(0x40), 3, 2, 0, 0);
  execs->adjust(0x40, static_cast<int>(registry::GraphNodeType::Memset), -1);  // never below zero
  execs->adjust(0x40, static_cast<int>(registry::GraphNodeType::Kernel), +1);
  expect_work(execs->find(0x40), 4, 2, 0, 0);
  execs->adjust(0x80, static_cast<int>(registry::GraphNodeType::Kernel), +1);  // not known: stays unknown
  EXPECT_FALSE(execs->find(0x80).known);
}

// Handles come back from the allocator after a destroy: erased slots are
// reused, so a program that instantiates and destroys graphs forever never
// fills the table.
TEST(GraphExecs, ChurnOfDistinctHandlesNeverFillsTheTable) {
  auto execs = std::make_unique<GraphExecs>();
  for (uint64_t i = 0; i < 20 * GraphExecs::kCapacity; ++i) {
    const uint64_t exec = 0x7f0000000000 + i * 0x40;
    execs->set(exec, work(static_cast<uint32_t>(i % 100), 0, 0, 0));
    ASSERT_EQ(execs->find(exec).kernels, i % 100);
    execs->erase(exec);
  }
  EXPECT_EQ(execs->overflows(), 0u);
}

TEST(GraphExecs, AFullTableCountsTheExecsItCouldNotKeep) {
  auto execs = std::make_unique<GraphExecs>();
  for (uint64_t i = 0; i < GraphExecs::kCapacity + 5; ++i) execs->set(0x1000 + i * 16, work(1, 0, 0, 0));
  EXPECT_EQ(execs->overflows(), 5u);
  expect_work(execs->find(0x1000), 1, 0, 0, 0);
  EXPECT_FALSE(execs->find(0x1000 + (GraphExecs::kCapacity + 4) * 16).known);
}

// A graph API over an in-memory description of graphs: what CUDA would say.
struct FakeGraphs {
  struct Node {
    int type;
    int child;  // the child graph's number, for child-graph nodes
  };
  static inline std::map<int, std::vector<Node>> graphs;
  static inline int failing_graph = -1;  // GetNodes fails for this one
};

// A graph handle: a stable pointer to the graph's number.
const int* graph_key(int g) {
  static std::map<int, int> keys;
  keys[g] = g;
  return &keys[g];
}

struct FakeApi {
  using Graph = const int*;
  using Node = const FakeGraphs::Node*;
  using Exec = void*;
  static bool nodes(Graph g, Node* out, size_t* count) {
    if (*g == FakeGraphs::failing_graph) return false;
    const auto& nodes = FakeGraphs::graphs.at(*g);
    if (out == nullptr) {
      *count = nodes.size();
      return true;
    }
    for (size_t i = 0; i < *count && i < nodes.size(); ++i) out[i] = &nodes[i];
    return true;
  }
  static int type(Node n) { return n->type; }
  static Graph child(Node n) { return graph_key(n->child); }
  static int enabled(Exec, Node) { return 1; }
};

constexpr int kKernel = 0, kMemcpy = 1, kMemset = 2, kHost = 3, kChild = 4, kEmpty = 5, kConditional = 13;

TEST(GraphWalk, CountsEveryNodeByKindIncludingChildGraphs) {
  FakeGraphs::failing_graph = -1;
  FakeGraphs::graphs = {
      {1, {{kKernel, 0}, {kKernel, 0}, {kMemcpy, 0}, {kChild, 2}, {kHost, 0}, {kChild, 3}}},
      {2, {{kKernel, 0}, {kMemset, 0}, {kChild, 3}}},
      {3, {{kKernel, 0}, {kEmpty, 0}}},
  };
  const GraphWork w = hooks::graph_work<FakeApi>(graph_key(1));
  // graph 1: 2 kernels, 1 copy, 1 host; child 2: 1 kernel, 1 memset, child 3 (1 kernel, 1 empty); child 3 again.
  expect_work(w, 2 + 1 + 1 + 1, 1, 1, 1 + 1 + 1);
  EXPECT_FALSE(w.conditional);
}

TEST(GraphWalk, ConditionalNodesAreFlaggedAndTheirBodiesNotCounted) {
  FakeGraphs::failing_graph = -1;
  FakeGraphs::graphs = {{1, {{kKernel, 0}, {kConditional, 0}}}};
  const GraphWork w = hooks::graph_work<FakeApi>(graph_key(1));
  expect_work(w, 1, 0, 0, 1);
  EXPECT_TRUE(w.conditional);
}

TEST(GraphWalk, AQueryThatFailsAnywhereMakesTheWorkUnknown) {
  FakeGraphs::graphs = {{1, {{kKernel, 0}, {kChild, 2}}}, {2, {{kKernel, 0}}}};
  FakeGraphs::failing_graph = 2;
  EXPECT_FALSE(hooks::graph_work<FakeApi>(graph_key(1)).known);
  FakeGraphs::failing_graph = -1;
  expect_work(hooks::graph_work<FakeApi>(graph_key(1)), 2, 0, 0, 0);
  EXPECT_TRUE(hooks::graph_work<FakeApi>(graph_key(2)).known);
}

TEST(GraphWalk, AGraphNestedDeeperThanTheLimitIsUnknownNotAnEndlessWalk) {
  FakeGraphs::failing_graph = -1;
  FakeGraphs::graphs = {{1, {{kKernel, 0}, {kChild, 1}}}};  // contains itself
  EXPECT_FALSE(hooks::graph_work<FakeApi>(graph_key(1)).known);
  FakeGraphs::graphs = {{1, {}}};
  expect_work(hooks::graph_work<FakeApi>(graph_key(1)), 0, 0, 0, 0);
}

TEST(OpenCaptures, TheGateIsOpenWhileAnyCaptureIs) {
  auto captures = std::make_unique<registry::OpenCaptures>();
  EXPECT_FALSE(captures->any());
  captures->begun(0x10);
  captures->begun(0x10);  // the runtime call and the driver call under it
  captures->begun(0x20);
  EXPECT_TRUE(captures->any());
  captures->ended(0x10);
  EXPECT_TRUE(captures->any());
  captures->ended(0x30);  // never begun: nothing changes
  EXPECT_TRUE(captures->any());
  captures->ended(0x20);
  EXPECT_FALSE(captures->any());
}

TEST(OpenCaptures, MoreCapturesThanSlotsKeepTheGateOpenForGood) {
  auto captures = std::make_unique<registry::OpenCaptures>();
  for (uint64_t s = 1; s <= registry::OpenCaptures::kCapacity + 1; ++s) captures->begun(s * 16);
  for (uint64_t s = 1; s <= registry::OpenCaptures::kCapacity + 1; ++s) captures->ended(s * 16);
  EXPECT_TRUE(captures->any());  // one capture was never held: a query per launch is the safe side
}

}  // namespace
}  // namespace gpuscope
