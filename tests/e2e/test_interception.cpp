// Interception, end to end on simgpu: the trace's counts equal what each
// sample did — copies and bytes by direction with the pageable/pinned split,
// syncs by kind, launches with kernel names, allocations and frees — and
// nothing is counted twice between the runtime and the driver level.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <sstream>
#include <vector>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

struct CopyKey {
  fb::CopyDirection direction;
  fb::MemoryKind host;  // the host side's kind (src for H2D, dst for D2H)
  auto operator<=>(const CopyKey&) const = default;
};

std::map<CopyKey, uint64_t> copies_by_kind(const TraceContents& t, std::map<CopyKey, uint64_t>* bytes = nullptr) {
  std::map<CopyKey, uint64_t> n;
  for (const auto& c : t.copies) {
    const auto host = c.direction() == fb::CopyDirection::DeviceToHost ? c.dst_kind() : c.src_kind();
    ++n[{c.direction(), host}];
    if (bytes != nullptr) (*bytes)[{c.direction(), host}] += c.bytes();
  }
  return n;
}

std::map<fb::SyncKind, uint64_t> syncs_by_kind(const TraceContents& t) {
  std::map<fb::SyncKind, uint64_t> n;
  for (const auto& s : t.syncs) ++n[s.kind()];
  return n;
}

std::map<std::pair<fb::AllocOp, fb::MemoryKind>, uint64_t> allocs_by_kind(const TraceContents& t) {
  std::map<std::pair<fb::AllocOp, fb::MemoryKind>, uint64_t> n;
  for (const auto& a : t.allocs) ++n[{a.op(), a.memory_kind()}];
  return n;
}

std::map<std::string, uint64_t> kernels_by_name(const TraceContents& t) {
  std::map<std::string, uint64_t> n;
  for (const auto& k : t.kernels) {
    auto it = t.summary.strings.find(k.name_id());
    ++n[it == t.summary.strings.end() ? "?" : it->second];
  }
  return n;
}

bool has_kernel_containing(const std::map<std::string, uint64_t>& kernels, const std::string& part, uint64_t count) {
  for (const auto& [name, n] : kernels)
    if (name.find(part) != std::string::npos) return n == count;
  return false;
}

using D = fb::CopyDirection;
using M = fb::MemoryKind;
using Op = fb::AllocOp;

class Interception : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  }
};

TEST_F(Interception, PcieBoundCountsEveryPageableCopyOnce) {
  const auto r = run_on_simgpu({"pcie_bound", "--requests", "100"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  const auto& t = r.trace;
  std::map<CopyKey, uint64_t> bytes;
  const auto copies = copies_by_kind(t, &bytes);
  EXPECT_EQ(copies, (std::map<CopyKey, uint64_t>{{{D::HostToDevice, M::Pageable}, 100},
                                                 {{D::DeviceToHost, M::Pageable}, 101}}));
  const CopyKey h2d{D::HostToDevice, M::Pageable};
  EXPECT_EQ(bytes[h2d], 100u * 256 * 1024);  // --input-kib 256 per request
  EXPECT_TRUE(has_kernel_containing(kernels_by_name(t), "score_documents", 100));
  EXPECT_EQ(t.kernels.size(), 100u);
  const std::map<std::pair<Op, M>, uint64_t> expected_allocs = {{{Op::Alloc, M::Device}, 2}, {{Op::Free, M::Device}, 2}};
  EXPECT_EQ(allocs_by_kind(t), expected_allocs);
  EXPECT_TRUE(t.syncs.empty());
  // The runtime call and the driver call under it: both visible, counted once.
  EXPECT_EQ(calls(t, "cudaMemcpy"), 201u);
  EXPECT_EQ(calls(t, "cuMemcpyHtoD_v2"), 100u);
  // The driver calls succeeded inside their runtime calls, so they were
  // counted (CallCount) rather than recorded; a failed one would be an ApiCall.
  for (const auto& c : t.api_calls) EXPECT_NE(t.summary.strings.at(c.function_id()), "cuMemcpyHtoD_v2");
  uint64_t counted = 0;
  for (const auto& c : t.call_counts)
    if (t.summary.strings.at(c.function_id()) == "cuMemcpyHtoD_v2") counted += c.count();
  EXPECT_EQ(counted, 100u);
}

TEST_F(Interception, PcieBoundFixedCopiesFromPinnedMemoryInBatches) {
  const auto r = run_on_simgpu({"pcie_bound", "--requests", "100", "--fixed"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  const auto& t = r.trace;
  EXPECT_EQ(copies_by_kind(t), (std::map<CopyKey, uint64_t>{{{D::HostToDevice, M::Pinned}, 25},
                                                            {{D::DeviceToHost, M::Pageable}, 2}}));
  EXPECT_EQ(t.kernels.size(), 50u);  // two kernels per batch of 4
  EXPECT_EQ(syncs_by_kind(t), (std::map<fb::SyncKind, uint64_t>{{fb::SyncKind::Device, 1}}));
  const std::map<std::pair<Op, M>, uint64_t> expected_allocs = {
      {{Op::Alloc, M::Device}, 3}, {{Op::Alloc, M::Pinned}, 1}, {{Op::Free, M::Device}, 3}, {{Op::Free, M::Pinned}, 1}};
  EXPECT_EQ(allocs_by_kind(t), expected_allocs);
  for (const auto& c : t.copies) {
    if (c.direction() == D::HostToDevice) {
      EXPECT_EQ(c.flags() & 1, 1) << "cudaMemcpyAsync is recorded as async";
    }
  }
}

TEST_F(Interception, SyncBoundSynchronizesAfterEveryKernel) {
  const auto r = run_on_simgpu({"sync_bound", "--iters", "200"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  EXPECT_EQ(r.trace.kernels.size(), 200u);
  EXPECT_EQ(syncs_by_kind(r.trace), (std::map<fb::SyncKind, uint64_t>{{fb::SyncKind::Device, 201}}));
  EXPECT_EQ(calls(r.trace, "cuCtxSynchronize_v2"), 201u);  // seen at the driver level too, not counted again
  const auto fixed = run_on_simgpu({"sync_bound", "--iters", "200", "--fixed"});
  ASSERT_EQ(fixed.process.exit_code(), 0) << fixed.process.err;
  EXPECT_EQ(fixed.trace.kernels.size(), 200u);
  EXPECT_EQ(syncs_by_kind(fixed.trace), (std::map<fb::SyncKind, uint64_t>{{fb::SyncKind::Device, 1}}));
  EXPECT_EQ(calls(fixed.trace, "cudaStreamCreateWithFlags"), 4u);
}

TEST_F(Interception, AllocChurnAllocatesAndFreesEveryIteration) {
  const auto r = run_on_simgpu({"alloc_churn", "--iters", "50"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  const auto allocs = allocs_by_kind(r.trace);
  EXPECT_EQ(allocs.at({Op::Alloc, M::Device}), 51u);
  EXPECT_EQ(allocs.at({Op::Free, M::Device}), 51u);
  EXPECT_EQ(r.trace.memsets.size(), 1u);
  uint64_t freed_bytes = 0, allocated_bytes = 0;
  for (const auto& a : r.trace.allocs) (a.op() == Op::Alloc ? allocated_bytes : freed_bytes) += a.bytes();
  EXPECT_EQ(freed_bytes, allocated_bytes);  // frees learn their size from the registry
}

TEST_F(Interception, DriverApiProgramIsTracedThroughItsDirectCalls) {
  const auto r = run_on_simgpu({"driver_api", "--iters", "20"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  const auto& t = r.trace;
  EXPECT_EQ(copies_by_kind(t), (std::map<CopyKey, uint64_t>{{{D::HostToDevice, M::Pageable}, 40},
                                                            {{D::DeviceToHost, M::Pageable}, 21}}));
  EXPECT_EQ(kernels_by_name(t), (std::map<std::string, uint64_t>{{"vec_add", 20}}));
  EXPECT_EQ(syncs_by_kind(t), (std::map<fb::SyncKind, uint64_t>{{fb::SyncKind::Context, 20}}));
  EXPECT_EQ(t.memsets.size(), 1u);
  for (const auto& c : t.api_calls) EXPECT_EQ(c.flags() & 1, 1) << "every call of this program is a driver call";
}

TEST_F(Interception, RuntimeLoadedWithRtldLocalIsTraced) {
  const auto r = run_on_simgpu({"dlopen_cudart", "5"});
  ASSERT_EQ(r.process.exit_code(), 0) << r.process.err;
  EXPECT_EQ(copies_by_kind(r.trace), (std::map<CopyKey, uint64_t>{{{D::HostToDevice, M::Pageable}, 5}}));
  EXPECT_EQ(calls(r.trace, "cudaMemcpy"), 5u);
  EXPECT_EQ(syncs_by_kind(r.trace), (std::map<fb::SyncKind, uint64_t>{{fb::SyncKind::Device, 1}}));
}

TEST_F(Interception, SamplesBehaveExactlyAsWithoutGpuscope) {
  const auto env = environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)});
  for (const std::vector<std::string>& sample : {std::vector<std::string>{"sync_bound", "--iters", "300"},
                                                std::vector<std::string>{"alloc_churn", "--iters", "40"}}) {
    std::vector<std::string> argv = {bin(sample[0])};
    argv.insert(argv.end(), sample.begin() + 1, sample.end());
    const auto plain = run(argv, env);
    const auto traced = run_on_simgpu(sample);
    EXPECT_EQ(traced.process.exit_code(), plain.exit_code()) << sample[0];
    // Timings in the report line differ; everything before them must not.
    EXPECT_EQ(traced.process.out.substr(0, traced.process.out.find(" in ")), plain.out.substr(0, plain.out.find(" in ")));
  }
}

// Arrays, mipmapped arrays, batched 3D copies and flagged event records:
// each call is in the trace once, with the result the runtime gave, and the
// program's output is its own. simgpu refuses arrays (801); the real
// runtime without a driver answers 35 to everything.
TEST_F(Interception, ArrayAndBatchCallsAreRecordedWithTheRuntimesResults) {
  const std::map<std::string, uint64_t> made = {
      {"cudaEventRecordWithFlags", 1}, {"cudaMallocArray", 2}, {"cudaMalloc3DArray", 2},
      {"cudaMallocMipmappedArray", 1}, {"cudaMemcpyToArray", 1}, {"cudaMemcpyArrayToArray", 1},
      {"cudaMemcpyFromArray", 1}, {"cudaMemcpyToArrayAsync", 1}, {"cudaMemcpyFromArrayAsync", 1},
      {"cudaMemcpy3DBatchAsync", 1}, {"cudaMemcpyBatchAsync", 1}, {"cudaFreeMipmappedArray", 1},
      {"cudaFreeArray", 4}};
  // simgpu models all of them; the real runtime without a driver refuses
  // everything (35).
  for (const auto& [runtime, no_driver] : {std::pair<std::string, bool>{GPUSCOPE_SIMGPU_LIB_DIR, false},
                                           std::pair<std::string, bool>{"/usr/local/cuda/lib64", true}}) {
    const auto env = environment_with({"LD_LIBRARY_PATH=" + runtime}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT"});
    const auto plain = run({bin("array_user")}, env);
    TempDir dir;
    const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("array_user")}, env);
    EXPECT_EQ(traced.out, plain.out) << runtime;
    EXPECT_EQ(traced.exit_code(), 0) << runtime;
    const auto t = read_trace_file(traces_in(dir.path()).at(0));
    for (const auto& [function, n] : made) {
      EXPECT_EQ(calls(t, function), n) << function << " on " << runtime;
      for (const int refused : {35, 801}) {
        const auto failed = t.summary.nonzero_results.find({function, refused});
        EXPECT_EQ(failed == t.summary.nonzero_results.end() ? 0 : failed->second, no_driver && refused == 35 ? n : 0)
            << function << " on " << runtime << ": the runtime's own result";
      }
    }
  }
}

// Bytes by direction of the copies one side recorded (the hooks or CUPTI).
std::map<fb::CopyDirection, uint64_t> copy_bytes(const TraceContents& t, fb::Source source) {
  std::map<fb::CopyDirection, uint64_t> bytes;
  for (const auto& c : t.copies)
    if (c.source() == source) bytes[c.direction()] += c.bytes();
  return bytes;
}

// The sizes of the array allocations the hooks recorded, in order.
std::vector<uint64_t> array_sizes(const TraceContents& t, fb::AllocOp op) {
  std::vector<uint64_t> sizes;
  for (const auto& a : t.allocs)
    if (a.source() == fb::Source::Host && a.op() == op && a.memory_kind() == fb::MemoryKind::Array)
      sizes.push_back(a.bytes());
  return sizes;
}

// Array and batched copies on simgpu, which models arrays as dense device
// memory behind heap handles (as a real driver's are), with its simulated
// CUPTI: the hooks' bytes and directions (decoded from each call's
// arguments, runtime and driver; batched 3D extents in elements) equal what
// the device records say moved, and every array's size is the sum of its
// elements (a mipmapped array's of all its levels). A pageable buffer next
// to the handles stays pageable host memory.
TEST_F(Interception, ArrayCopiesCarryTheBytesAndDirectionsTheDeviceRecorded) {
  using D = fb::CopyDirection;
  constexpr uint64_t kPlane = 64 * 64 * 4;
  struct Case {
    std::string program;
    std::map<D, uint64_t> bytes;
    std::vector<uint64_t> arrays;
  };
  const Case cases[] = {
      {"array_user",
       {{D::HostToDevice, 3 * kPlane + 16 * 16 * 4 * 4}, {D::DeviceToDevice, kPlane}, {D::DeviceToHost, 3 * kPlane}},
       {kPlane, kPlane, 16 * 16 * 4 * 4, kPlane + kPlane / 4 + kPlane / 16 + kPlane / 64, 16 << 20}},
      {"array_driver_user",
       {{D::HostToDevice, kPlane}, {D::DeviceToDevice, 3 * kPlane}, {D::DeviceToHost, 3 * kPlane + 16 * 16 * 4 * 4}},
       {kPlane, kPlane, 16 * 16 * 4 * 4, 16 * 16 * 4 * 4 + 8 * 8 * 2 * 4}},
  };
  const std::string lib = GPUSCOPE_SIMGPU_LIB_DIR;
  const auto env = environment_with({"LD_LIBRARY_PATH=" + lib, "SIMGPU_INJECTION=1",
                                     "GPUSCOPE_CUPTI_PATH=" + lib + "/libcupti.so.13",
                                     "SIMGPU_SHARED_ID=gpuscope-e2e-arrays-" + std::to_string(getpid())},
                                    {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "CUDA_INJECTION64_PATH"});
  for (const Case& c : cases) {
    const auto plain = run({bin(c.program)}, env);
    EXPECT_EQ(plain.out.find(" 1\n"), std::string::npos) << plain.out;  // no call was refused as invalid
    TempDir dir;
    const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin(c.program)}, env);
    EXPECT_EQ(traced.out, plain.out);
    const auto t = read_trace_file(traces_in(dir.path()).at(0));
    const std::string& mode = c.program;
    EXPECT_EQ(copy_bytes(t, fb::Source::Host), c.bytes) << mode << ": the hooks' copies";
    EXPECT_EQ(copy_bytes(t, fb::Source::Device), c.bytes) << mode << ": the device's copies";
    EXPECT_EQ(array_sizes(t, fb::AllocOp::Alloc), c.arrays) << mode;
    EXPECT_EQ(array_sizes(t, fb::AllocOp::Free).size(), c.arrays.size()) << mode;
    for (const auto& a : t.allocs) EXPECT_NE(a.address(), 0u) << mode << ": cudaFree(nullptr) frees nothing";
  }
}

// Runs a program built against an older runtime (over a stand-in that
// prints what it received) under gpuscope, into `dir`: its output lines.
// Each call's line as passed must equal the one the runtime printed as
// received: lines 0 and 1, then 3 and 4.
std::vector<std::string> run_over_old_runtime(const std::string& program, const TempDir& dir) {
  const auto env = environment_with({}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "LD_LIBRARY_PATH"});
  const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin(program)}, env);
  EXPECT_EQ(traced.exit_code(), 0) << program;
  std::vector<std::string> lines;
  std::istringstream out(traced.out);
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  for (size_t passed : {0u, 3u, 6u}) {
    if (passed + 1 < lines.size()) {
      EXPECT_EQ(lines[passed], lines[passed + 1]) << program << ": passed, then received";
    }
  }
  return lines;
}

// CUDA 12.8's batched copies take a failIdx before the stream, which CUDA
// 13 dropped, and CUDA 12's cudaMemPrefetchAsync a device number and the
// stream where 13 takes a location, flags and the stream; gpuscope's hooks
// take both releases' callers (12's through the libcudart.so.12 aliases). A
// program built against 12.8 (cuda12_batch_user, over a stand-in runtime
// that prints what it received) passes every argument through gpuscope
// unchanged, and the records carry the program's stream, bytes and direction.
TEST_F(Interception, Cuda12BatchedCopiesPassEveryArgumentOn) {
  TempDir dir;
  const std::vector<std::string> lines = run_over_old_runtime("cuda12_batch_user", dir);
  ASSERT_EQ(lines.size(), 9u);
  for (size_t result : {2u, 5u}) EXPECT_EQ(lines[result], "result 0, failIdx none");
  EXPECT_EQ(lines[8], "result 0");
  const auto t = read_trace_file(traces_in(dir.path()).at(0));
  std::vector<uint64_t> bytes;
  for (const auto& c : t.copies) {
    EXPECT_EQ(c.stream(), 0x5eed000u) << "the program's stream, not CUDA 13's place for it";
    bytes.push_back(c.bytes());
  }
  EXPECT_EQ(bytes, (std::vector<uint64_t>{4096 + 4096 + 1024, 2 * 64 * 16 * 2, 1 << 20}));
  // CUDA 12's prefetch to device 0: CUDA 13 would read that 0 as an invalid location, a move to the host.
  ASSERT_EQ(t.copies.size(), 3u);
  EXPECT_EQ(t.copies[2].direction(), fb::CopyDirection::HostToDevice);
}

// CUDA 11's cudaGraphInstantiate took an error node, a log buffer and its
// size where CUDA 12 takes flags, and its cudaGraphExecUpdate an error node
// and a result pointer where 12 takes one result struct. A program built
// against CUDA 11 (over a stand-in runtime that prints what it received and
// writes through the pointers) gets every argument through gpuscope
// unchanged, and its log and update result where it asked.
TEST_F(Interception, Cuda11GraphCallsPassEveryArgumentOn) {
  TempDir dir;
  const std::vector<std::string> lines = run_over_old_runtime("cuda11_graph_user", dir);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[2], "result 1, error node the graph, log \"node 0 cannot be instantiated\"");
  EXPECT_EQ(lines[5], "result 0, update result 0");
  const auto t = read_trace_file(traces_in(dir.path()).at(0));
  EXPECT_EQ(calls(t, "cudaGraphInstantiate"), 1u);
  EXPECT_EQ(calls(t, "cudaGraphExecUpdate"), 1u);
}

// A process with three runtimes (its own libcudart.so.13, a libcudart.so.12
// it looks a function up in, plugins built against 12 and 11.0, loaded
// RTLD_LOCAL): each caller reaches the runtime it was built against, under
// gpuscope as without it, and every call is recorded. With one set of
// unversioned hooks all four reached the first runtime a hook adopted.
TEST_F(Interception, EachCudaRuntimeInOneProcessGetsItsOwnCallers) {
  const std::vector<std::string> args = {bin("two_runtimes_host"), GPUSCOPE_FAKE_CUDART12, GPUSCOPE_RUNTIME_PLUGIN12,
                                         GPUSCOPE_RUNTIME_PLUGIN11};
  const auto env = environment_with({}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "LD_LIBRARY_PATH"});
  const auto plain = run(args, env);
  EXPECT_EQ(plain.out, "looked up in " + args[1] + ": runtime 12080 (result 0)\n"
                       "program built for CUDA 13: runtime 13000 (result 0)\n"
                       "plugin built for CUDA 12: runtime 12080 (result 0)\n"
                       "plugin built for CUDA 11: runtime 11080 (result 0)\n");
  TempDir dir;
  std::vector<std::string> traced_args = {gpuscope_exe(), "run", "-q", "-o", dir.path(), "--"};
  traced_args.insert(traced_args.end(), args.begin(), args.end());
  const auto traced = run(traced_args, env);
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.exit_code(), 0);
  const auto t = read_trace_file(traces_in(dir.path()).at(0));
  EXPECT_EQ(calls(t, "cudaRuntimeGetVersion"), 4u);
}

TEST(InterceptionNoDriver, RealRuntimeRecordsInsufficientDriver) {
  if (!std::filesystem::exists(bin("minimal_cuda"))) GTEST_SKIP() << "samples not built";
  TempDir dir;
  run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("minimal_cuda")}, clean_env());
  const auto t = read_trace_file(traces_in(dir.path()).at(0));
  ASSERT_FALSE(t.api_calls.empty());
  EXPECT_EQ(t.summary.strings.at(t.api_calls[0].function_id()), "cudaGetDeviceCount");
  EXPECT_EQ(t.api_calls[0].result(), 35);  // cudaErrorInsufficientDriver
}

TEST(InterceptionNoDriver, StaticRuntimeLeavesTheFailedDriverLoadInTheTrace) {
  if (!std::filesystem::exists(bin("minimal_cuda_static"))) GTEST_SKIP() << "samples not built";
  const auto plain = run({bin("minimal_cuda_static")}, clean_env());
  TempDir dir;
  const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("minimal_cuda_static")}, clean_env());
  EXPECT_EQ(traced.status, plain.status);
  EXPECT_EQ(traced.err, plain.err);  // the program's own error line, unchanged
  const auto t = read_trace_file(traces_in(dir.path()).at(0));
  bool failed_driver_load = false;
  for (const auto& load : t.summary.loads)
    failed_driver_load |= load.path.find("libcuda.so") != std::string::npos && !load.ok && !load.error.empty();
  EXPECT_TRUE(failed_driver_load) << "the static runtime's dlopen of libcuda.so.1 and its error are recorded";
  ASSERT_TRUE(t.summary.probe.has_value());
  EXPECT_FALSE(t.summary.probe->driver_loaded);
  EXPECT_TRUE(t.api_calls.empty());  // nothing reached a hookable CUDA entry point
}

}  // namespace
}  // namespace gpuscope::test
