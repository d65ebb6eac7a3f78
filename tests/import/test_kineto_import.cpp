// The Kineto importer end to end: a hand-written PyTorch profiler trace is
// imported into a native trace (importer::import_file), which is read back
// record by record (reader::TraceReader) and analyzed (analyze_trace), in
// the categories' new and old spellings, with fields left out, and with
// the damaged or foreign documents the importer must refuse in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/temp_dir.h"
#include "../support/trace_contents.h"
#include "import.h"
#include "pipeline.h"
#include "record_flags.h"

namespace gpuscope::importer {
namespace {

// A hand-written document in a file of `dir`, imported next to it.
struct NativeTrace : test::TraceContents {
  ImportResult result;

  std::string name(uint32_t id) const { return id == 0 ? "" : summary.name_of(id); }
  const fb::ApiCall* call(const std::string& function) const {
    for (const auto& c : api_calls)
      if (name(c.function_id()) == function) return &c;
    return nullptr;
  }
  template <class R> static const R* by_correlation(const std::vector<R>& all, fb::Source source, uint64_t id) {
    for (const auto& r : all)
      if (r.source() == source && r.correlation_id() == id) return &r;
    return nullptr;
  }
  // "domain/name" of every range, sorted.
  std::vector<std::string> ranges() const {
    std::vector<std::string> out;
    for (const auto& m : markers)
      if (m.kind() == fb::MarkerKind::Range) out.push_back(name(m.domain_id()) + "/" + name(m.name_id()));
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string write_file(const test::TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name), std::ios::binary) << text;
  return dir.file(name);
}

NativeTrace import_document(const test::TempDir& dir, const std::string& json, const std::string& name = "in.json") {
  NativeTrace t;
  const std::string in = write_file(dir, name, json), out = dir.file(name + ".gpuscope");
  std::filesystem::remove(out);
  t.result = import_file(ImportTarget{in, 0}, out);
  if (t.result.fd >= 0) ::close(t.result.fd);
  if (!t.result.error.empty()) return t;
  static_cast<test::TraceContents&>(t) = test::read_trace_file(out);
  EXPECT_TRUE(t.error.empty()) << t.error;
  EXPECT_TRUE(t.summary.problems.empty()) << reader::describe(t.summary.problems.front());
  return t;
}

// Kineto's categories as newer and older PyTorch versions spell them.
struct Spelling {
  const char* name;
  const char *runtime, *driver, *kernel, *memcpy, *memset, *cpu_op;
};
void PrintTo(const Spelling& s, std::ostream* os) { *os << s.name << " spelling"; }

const Spelling kNew{"new", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset", "cpu_op"};
const Spelling kOld{"old", "Runtime", "Driver", "Kernel", "Memcpy", "Memset", "Operator"};

constexpr uint64_t kT0 = 1'700'000'000'000'000;  // epoch microseconds
constexpr uint64_t kT0ns = kT0 * 1000;

std::string ts(double offset_us) {
  const auto us = static_cast<uint64_t>(offset_us);
  const auto frac = static_cast<int>((offset_us - static_cast<double>(us)) * 1000.0 + 0.5);
  char text[64];
  std::snprintf(text, sizeof text, "%llu.%03d", static_cast<unsigned long long>(kT0 + us), frac);
  return text;
}

std::string event(const char* ph, const std::string& cat, const std::string& name, int pid, int tid, double at,
                  double dur, const std::string& args) {
  return "{\"ph\":\"" + std::string(ph) + "\",\"cat\":\"" + cat + "\",\"name\":\"" + name + "\",\"pid\":" +
         std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + ts(at) +
         (dur >= 0 ? ",\"dur\":" + std::to_string(dur) : std::string()) + ",\"args\":{" + args + "}}";
}

std::string memory_event(double at, long long bytes, int device_type) {
  return "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":4242,\"tid\":4243,"
         "\"ts\":" + ts(at) + ",\"args\":{\"Total Reserved\":2097152,\"Total Allocated\":1024,\"Device Id\":0,"
         "\"Device Type\":" + std::to_string(device_type) + ",\"Addr\":139637976727552,\"Bytes\":" +
         std::to_string(bytes) + "}}";
}

// One event of each category (and the copy's device record before its
// host call), the metadata events and the top-level members.
std::string every_category(const Spelling& s) {
  const std::vector<std::string> events = {
      event("X", "user_annotation", "ProfilerStep#3", 4242, 4243, 40, 2100, ""),
      event("X", "python_function", "train.py(12): step", 4242, 4243, 45, 2050, ""),
      event("X", "user_annotation", "my_region", 4242, 4243, 50, 2000, ""),
      memory_event(60, 1024, 1),
      memory_event(61, 4096, 0),  // host memory: not the GPU's
      event("X", s.cpu_op, "aten::linear", 4242, 4243, 100, 30, "\"External id\":3"),
      event("X", s.runtime, "cudaLaunchKernel", 4242, 4243, 100.25, 5.5, "\"cbid\":211,\"correlation\":11"),
      event("X", s.kernel, "gemm_kernel", 0, 7, 110, 300.125,
            "\"device\":0,\"stream\":7,\"correlation\":11,\"grid\":[132,2,1],\"block\":[256,1,1]"),
      event("X", "gpu_user_annotation", "my_region", 0, 7, 110, 1500, ""),
      "{\"ph\":\"s\",\"id\":11,\"pid\":4242,\"tid\":4243,\"ts\":" + ts(101) + ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}",
      event("X", s.driver, "cuLaunchKernel", 4242, 4243, 120, 4, "\"correlation\":12"),
      event("X", s.kernel, "drv_kernel", 0, 7, 420, 10, "\"device\":0,\"stream\":7,\"correlation\":12"),
      event("X", s.memcpy, "Memcpy HtoD (Pageable -> Device)", 0, 7, 500, 1000,
            "\"device\":0,\"stream\":7,\"correlation\":13,\"bytes\":1048576"),
      event("X", s.runtime, "cudaMemcpyAsync", 4242, 4243, 490, 1020, "\"correlation\":13"),
      event("X", s.runtime, "cudaMemcpy", 4242, 4243, 1520, 40, "\"correlation\":15"),
      event("X", s.memcpy, "Memcpy DtoH (Device -> Pinned)", 0, 7, 1530, 20,
            "\"device\":0,\"stream\":7,\"correlation\":15,\"bytes\":2048"),
      event("X", s.runtime, "cudaMemsetAsync", 4242, 4243, 1600, 3, "\"correlation\":14"),
      event("X", s.memset, "Memset (Device)", 0, 7, 1605, 2, "\"device\":0,\"stream\":7,\"correlation\":14,\"bytes\":4096"),
      event("X", s.runtime, "cudaStreamSynchronize", 4242, 4243, 1700, 50, "\"correlation\":16"),
      memory_event(1800, -1024, 1),
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":4242,\"tid\":0,\"args\":{\"name\":\"python3 train.py\"}}",
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":4242,\"tid\":4243,\"args\":{\"name\":\"MainThread\"}}",
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}}",
  };
  std::string doc = "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H100 80GB HBM3\","
                    "\"totalGlobalMem\":85045706752,\"computeMajor\":9}],"
                    "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":1,\"world_size\":4,\"local_rank\":1},"
                    "\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) doc += (i ? ",\n" : "") + events[i];
  return doc + "\n],\"traceName\":\"x.pt.trace.json\"}";
}

class KinetoCategories : public ::testing::TestWithParam<Spelling> {};

TEST_P(KinetoCategories, HostCallsAndTheirDeviceWork) {
  test::TempDir dir;
  const NativeTrace t = import_document(dir, every_category(GetParam()));
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  EXPECT_TRUE(t.result.warning.empty()) << t.result.warning;
  ASSERT_EQ(t.api_calls.size(), 6u);
  const fb::ApiCall* launch = t.call("cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->start_ns(), kT0ns + 100'250);
  EXPECT_EQ(launch->duration_ns(), 5'500u);
  EXPECT_EQ(launch->correlation_id(), 11u);
  EXPECT_EQ(launch->tid(), 4243u);
  EXPECT_EQ(launch->flags() & container::kCallDriverApi, 0);
  ASSERT_NE(t.call("cuLaunchKernel"), nullptr);
  EXPECT_NE(t.call("cuLaunchKernel")->flags() & container::kCallDriverApi, 0);

  const auto* gemm = NativeTrace::by_correlation(t.kernels, fb::Source::Device, 11);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(t.name(gemm->name_id()), "gemm_kernel");
  EXPECT_EQ(gemm->start_ns(), kT0ns + 110'000);
  EXPECT_EQ(gemm->duration_ns(), 300'125u);
  EXPECT_EQ(gemm->stream(), 7u);
  EXPECT_EQ(gemm->device(), 0);
  EXPECT_EQ(gemm->grid_x(), 132u);
  EXPECT_EQ(gemm->grid_y(), 2);
  EXPECT_EQ(gemm->block_x(), 256);
  // The launches' host records name what they launched.
  for (uint64_t id : {11, 12}) {
    const auto* host = NativeTrace::by_correlation(t.kernels, fb::Source::Host, id);
    ASSERT_NE(host, nullptr) << id;
    EXPECT_EQ(t.name(host->name_id()), id == 11 ? "gemm_kernel" : "drv_kernel");
    EXPECT_EQ(host->stream(), 7u);
  }
  EXPECT_EQ(t.summary.counts.device.kernels, 2u);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs[0].kind(), fb::SyncKind::Stream);
  EXPECT_EQ(t.syncs[0].duration_ns(), 50'000u);
  ASSERT_TRUE(t.summary.import_source);
  EXPECT_EQ(t.summary.import_source->unjoined, 0u);
  EXPECT_EQ(t.summary.import_source->out_of_range, 0u);
}

// The host Copy gets bytes, direction and memory kinds from the device
// record, whichever of the two comes first in the file.
TEST_P(KinetoCategories, CopiesAndMemsetsJoinedByCorrelation) {
  test::TempDir dir;
  const NativeTrace t = import_document(dir, every_category(GetParam()));
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  struct Expected {
    uint64_t id, bytes;
    fb::CopyDirection direction;
    fb::MemoryKind src, dst;
    bool async;
  };
  for (const Expected& e : {Expected{13, 1 << 20, fb::CopyDirection::HostToDevice, fb::MemoryKind::Pageable,
                                     fb::MemoryKind::Device, true},
                            Expected{15, 2048, fb::CopyDirection::DeviceToHost, fb::MemoryKind::Device,
                                     fb::MemoryKind::Pinned, false}}) {
    SCOPED_TRACE("correlation " + std::to_string(e.id));
    for (fb::Source source : {fb::Source::Device, fb::Source::Host}) {
      const fb::Copy* c = NativeTrace::by_correlation(t.copies, source, e.id);
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(c->bytes(), e.bytes);
      EXPECT_EQ(c->direction(), e.direction);
      EXPECT_EQ(c->src_kind(), e.src);
      EXPECT_EQ(c->dst_kind(), e.dst);
      EXPECT_EQ(c->device(), 0);
      EXPECT_EQ(c->stream(), 7u);
      if (source == fb::Source::Host) {
        EXPECT_EQ((c->flags() & container::kCopyAsync) != 0, e.async);
      }
    }
  }
  EXPECT_EQ(NativeTrace::by_correlation(t.copies, fb::Source::Host, 13)->start_ns(), kT0ns + 490'000);
  for (fb::Source source : {fb::Source::Device, fb::Source::Host}) {
    const fb::Memset* m = NativeTrace::by_correlation(t.memsets, source, 14);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->bytes(), 4096u);
    EXPECT_EQ(m->memory_kind(), fb::MemoryKind::Device);
  }
  EXPECT_EQ(t.memsets.size(), 2u);
  EXPECT_EQ(t.copies.size(), 4u);
}

TEST_P(KinetoCategories, RangesAllocatorEventsAndMetadata) {
  test::TempDir dir;
  const NativeTrace t = import_document(dir, every_category(GetParam()));
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  EXPECT_EQ(t.ranges(), (std::vector<std::string>{"/ProfilerStep#3", "/my_region", "pytorch.cpu_op/aten::linear",
                                                  "pytorch.gpu_annotation/my_region",
                                                  "pytorch.python/train.py(12): step"}));
  // [memory] on the GPU (Device Type 1): an allocation, then its free.
  ASSERT_EQ(t.allocs.size(), 2u);
  EXPECT_EQ(t.allocs[0].op(), fb::AllocOp::Alloc);
  EXPECT_EQ(t.allocs[0].bytes(), 1024u);
  EXPECT_EQ(t.allocs[0].address(), 139637976727552u);
  EXPECT_EQ(t.allocs[0].memory_kind(), fb::MemoryKind::Pool);
  EXPECT_EQ(t.allocs[0].device(), 0);
  EXPECT_EQ(t.allocs[0].start_ns(), kT0ns + 60'000);
  EXPECT_EQ(t.allocs[1].op(), fb::AllocOp::Free);
  EXPECT_EQ(t.allocs[1].bytes(), 1024u);
  EXPECT_EQ(t.allocs[1].address(), 139637976727552u);

  ASSERT_TRUE(t.summary.process);
  const auto& p = *t.summary.process;
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.exe, "python3 train.py");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.rank_source, "distributedInfo");
  ASSERT_EQ(t.summary.devices.size(), 1u);
  EXPECT_EQ(t.summary.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.summary.devices[0].memory_total_bytes, 85045706752u);
  const auto thread = std::find_if(t.markers.begin(), t.markers.end(),
                                   [](const fb::Marker& m) { return m.kind() == fb::MarkerKind::ThreadName; });
  ASSERT_NE(thread, t.markers.end());
  EXPECT_EQ(thread->tid(), 4243u);
  EXPECT_EQ(t.name(thread->name_id()), "MainThread");

  const auto& source = *t.summary.import_source;
  EXPECT_EQ(source.format, "kineto");
  EXPECT_NE(source.producer.find("schema 1"), std::string::npos) << source.producer;
  EXPECT_TRUE(source.complete);
  EXPECT_TRUE(source.mid_run);
  EXPECT_EQ(source.events, 23u);
  EXPECT_EQ(source.skipped, 2u);  // the flow event and host memory's [memory]
}

INSTANTIATE_TEST_SUITE_P(Spellings, KinetoCategories, ::testing::Values(kNew, kOld),
                         [](const auto& info) { return std::string(info.param.name); });

// Both spellings give the same records.
TEST(KinetoImport, OldAndNewSpellingsGiveTheSameTrace) {
  test::TempDir dir;
  const NativeTrace a = import_document(dir, every_category(kNew), "new.json");
  const NativeTrace b = import_document(dir, every_category(kOld), "old.json");
  ASSERT_GE(a.result.fd, 0);
  ASSERT_GE(b.result.fd, 0);
  EXPECT_EQ(a.summary.counts.total(), b.summary.counts.total());
  EXPECT_EQ(a.summary.calls_by_function, b.summary.calls_by_function);
  EXPECT_EQ(a.result.counts.records, b.result.counts.records);
  EXPECT_EQ(a.ranges(), b.ranges());
}

// Fields left out or written differently: no args, no dur, pid and tid as
// strings, ts as an integer.
TEST(KinetoImport, MissingAndOddlyTypedFields) {
  test::TempDir dir;
  const std::string doc =
      "{\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":\"4242\",\"tid\":\"4243\","
      "\"ts\":1700000000000200},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":\"stream 9\",\"ts\":1700000000000300,"
      "\"dur\":25},"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"no_dur\",\"pid\":4242,\"tid\":4243,\"ts\":1700000000000201.5,"
      "\"args\":null},"
      "{\"cat\":\"cuda_runtime\",\"name\":\"no_ph\",\"ts\":1700000000000202}]}";
  const NativeTrace t = import_document(dir, doc);
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].start_ns(), kT0ns + 200'000);
  EXPECT_EQ(t.api_calls[0].duration_ns(), 0u);
  EXPECT_EQ(t.api_calls[0].correlation_id(), 0u);
  EXPECT_EQ(t.api_calls[0].tid(), 4243u);
  ASSERT_EQ(t.summary.counts.device.kernels, 1u);
  const auto device = std::find_if(t.kernels.begin(), t.kernels.end(),
                                   [](const fb::Kernel& k) { return k.source() == fb::Source::Device; });
  EXPECT_EQ(device->stream(), 9u);  // from the tid: no args
  EXPECT_EQ(device->device(), 0);   // from the pid
  EXPECT_EQ(device->duration_ns(), 25'000u);
  EXPECT_EQ(t.ranges(), std::vector<std::string>{"pytorch.cpu_op/no_dur"});
  EXPECT_EQ(t.summary.process->pid, 4242);
  EXPECT_EQ(t.result.counts.skipped, 1u);  // no "ph"
  EXPECT_EQ(t.result.counts.unjoined, 1u);  // the launch without a correlation id
}

// Nesting inside an event is skipped, not recursed into, however deep.
TEST(KinetoImport, DeeplyNestedArgsAreSkipped) {
  test::TempDir dir;
  constexpr size_t kDepth = 100'000;
  const std::string call = "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMalloc\",\"pid\":1,\"tid\":1,"
                           "\"ts\":1700000000000001,\"dur\":2}";
  const std::string deep = "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"args\":" + std::string(kDepth, '[') +
                           std::string(kDepth, ']') + ",\"name\":\"deep\",\"ts\":1700000000000003,\"tid\":1}";
  const NativeTrace t = import_document(dir, "{\"traceEvents\":[" + call + "," + deep + "," + call + "]}");
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  EXPECT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.ranges(), std::vector<std::string>{"pytorch.cpu_op/deep"});
}

TEST(KinetoImport, UnusableTimestampsAreCountedOutOfRange) {
  test::TempDir dir;
  std::string doc = "{\"traceEvents\":[";
  for (const char* bad : {"-5", "-1700000000000000.5", "1e30", "5000000000000000", "\"1700000000000000\"", "true"})
    doc += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaFree\",\"pid\":1,\"tid\":1,\"ts\":" + std::string(bad) +
           ",\"dur\":1},";
  doc += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaFree\",\"pid\":1,\"tid\":1,\"dur\":1},";
  doc += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMalloc\",\"pid\":1,\"tid\":1,\"ts\":1700000000000001}]}";
  const NativeTrace t = import_document(dir, doc);
  ASSERT_GE(t.result.fd, 0) << t.result.error;
  EXPECT_EQ(t.result.counts.out_of_range, 7u);
  EXPECT_EQ(t.summary.import_source->out_of_range, 7u);
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.name(t.api_calls[0].function_id()), "cudaMalloc");
  EXPECT_EQ(t.summary.process->start_monotonic_ns, kT0ns + 1'000);
}

// One line naming the file and the problem; no trace.
TEST(KinetoImport, DocumentsThatAreNotTracesAreRefused) {
  test::TempDir dir;
  struct Case {
    std::string doc, message;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"a\":1}", "not a trace: a JSON document without a traceEvents array"},
           {"{\"traceEvents\":[]}", "the traceEvents array is empty: nothing to analyze"},
           {"{\"traceEvents\":[1,{}]}", "a traceEvents element is not a JSON object at offset 16"},
           {"[\"x\"]", "a traceEvents element is not a JSON object at offset 1"},
           {"{\"traceEvents\":[{\"ph\":\"X\",", "an unterminated or oversized traceEvents element at offset 16"},
           {"{\"traceEvents\": {\"ph\":\"X\"}}", "not a trace: a JSON document without a traceEvents array"},
       }) {
    SCOPED_TRACE(c.doc);
    const NativeTrace t = import_document(dir, c.doc);
    EXPECT_LT(t.result.fd, 0);
    EXPECT_EQ(t.result.error, dir.file("in.json") + ": " + c.message);
  }
}

// Damage after some events: those before it are the trace, and the
// analysis says where the import stopped.
TEST(KinetoImport, DamageAfterEventsKeepsThemAndIsReported) {
  test::TempDir dir;
  std::string doc = every_category(kNew);
  doc = doc.substr(0, doc.find("cudaMemsetAsync"));
  const std::string path = write_file(dir, "cut.json", doc);
  analyzer::PipelineResult r = analyzer::analyze_trace(path);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  ASSERT_NE(r.analysis->import_damage(), nullptr);
  EXPECT_NE(r.analysis->import_damage()->find("unterminated or oversized traceEvents element at offset"),
            std::string::npos)
      << *r.analysis->import_damage();
  const auto& summary = r.analysis->model().summary;
  EXPECT_EQ(summary.calls_by_function.at("cudaMemcpy"), 1u);
  EXPECT_EQ(summary.calls_by_function.count("cudaMemsetAsync"), 0u);
  EXPECT_EQ(summary.import_source->events, 16u);
}

// The analysis pipeline takes the JSON file directly (open_trace_source).
TEST(KinetoImport, AnalyzedThroughThePipeline) {
  test::TempDir dir;
  const std::string path = write_file(dir, "t.pt.trace.json", every_category(kOld));
  analyzer::PipelineResult r = analyzer::analyze_trace(path);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->import_damage(), nullptr);
  const auto& summary = r.analysis->model().summary;
  ASSERT_TRUE(summary.import_source);
  EXPECT_EQ(summary.import_source->path, path);
  EXPECT_EQ(summary.counts.device.kernels, 2u);
  EXPECT_EQ(summary.counts.device.copies, 2u);
  EXPECT_FALSE(r.analysis->analysis().verdict.headline.empty());
}

}  // namespace
}  // namespace gpuscope::importer
