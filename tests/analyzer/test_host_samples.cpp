// CPU stack samples (trace format 1.4) in the analysis: the reader decodes
// HostSample records and the sampling status, and leaves out impossible
// ones; the model counts samples per stack and thread; the CPU-bound
// finding cites the hottest host stacks instead of CUDA call sites, and
// names the host costs the samples show (docs/rules.md, "CPU-bound").
#include <gtest/gtest.h>

#include <algorithm>

#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "rules.h"

namespace gpuscope::test {
namespace {

using analyzer::HostCost;

constexpr uint64_t kT0 = 5'000'000'000;

std::vector<uint8_t> sampled_trace() {
  capture::ProcessMetadata meta;
  meta.pid = 9;
  meta.exe = "/app/tokenizer";
  meta.start_monotonic_ns = kT0;
  return one_frame_trace(meta, kT0 + 1'000'000'000, [](capture::ChunkBuilder& b) {
    b.add_stack({1, {0x401001, 0x402000}});
    b.add_stack({2, {0x501001, 0x402000}});
    for (int i = 0; i < 30; ++i) b.add(fb::HostSample(kT0 + 1'000'000 * i, 9, 1));
    for (int i = 0; i < 10; ++i) b.add(fb::HostSample(kT0 + 1'000'000 * i + 500, 10, 2));
    b.add(fb::HostSample(uint64_t{1} << 63, 9, 1));  // beyond any clock: not a sample
    container::HostSamplingData status;
    status.state = static_cast<uint8_t>(fb::HostSamplingState::Active);
    status.period_ns = 1'000'000;
    status.samples = 41;
    status.lost = 3;
    status.threads = 2;
    b.set_host_sampling(status);
  });
}

TEST(HostSamples, TheReaderDecodesSamplesAndStatusAndDropsImpossibleOnes) {
  const analyzer::TraceModel m = model_of(sampled_trace());
  const reader::TraceSummary& s = m.summary;
  EXPECT_EQ(s.counts.host_samples, 40u);
  EXPECT_EQ(s.stats.records_invalid, 1u);
  ASSERT_TRUE(s.host_sampling.has_value());
  EXPECT_EQ(s.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Active));
  EXPECT_EQ(s.host_sampling->period_ns, 1'000'000u);
  EXPECT_EQ(s.host_sampling->lost, 3u);
  EXPECT_EQ(s.host_sampling->threads, 2u);
}

TEST(HostSamples, TheModelCountsSamplesPerStackAndThread) {
  const analyzer::TraceModel m = model_of(sampled_trace());
  EXPECT_EQ(m.host_samples.samples, 40u);
  EXPECT_EQ(m.host_samples.by_stack.at(1), 30u);
  EXPECT_EQ(m.host_samples.by_stack.at(2), 10u);
  EXPECT_EQ(m.host_samples.by_thread.at(9), 30u);
  EXPECT_EQ(m.host_samples.by_thread.at(10), 10u);
}

TEST(HostSamples, InnermostFunctionsAreClassifiedByName) {
  EXPECT_EQ(analyzer::classify_host_function("__memset_avx2_unaligned_erms"), HostCost::Memset);
  EXPECT_EQ(analyzer::classify_host_function("__memmove_avx_unaligned_erms"), HostCost::Memcpy);
  EXPECT_EQ(analyzer::classify_host_function("_int_malloc"), HostCost::Allocator);
  EXPECT_EQ(analyzer::classify_host_function("operator new(unsigned long)"), HostCost::Allocator);
  EXPECT_EQ(analyzer::classify_host_function("free"), HostCost::Allocator);
  // The argument list is not the function: a tokenizer taking a malloc'ed buffer is program code.
  EXPECT_EQ(analyzer::classify_host_function("tokenize(malloc_buffer&)"), HostCost::Program);
  EXPECT_EQ(analyzer::classify_host_function("freeze_batch"), HostCost::Program);
  EXPECT_EQ(analyzer::classify_host_function(""), HostCost::Unknown);
}

// A GPU idle while the feeding thread computes: the CPU-bound rule fires.
analyzer::Metrics starved_gpu() {
  analyzer::Metrics x;
  x.wall_s = 10;
  x.feeder_tid = 1;
  x.host_threads_with_cuda = 1;
  x.gpu_samples = 100;
  x.online_cpus = 8;
  x.gpu_util = 0.05;
  x.feeder_cpu_util = 1.0;
  x.process_cpu_cores = 1.0;
  x.feeder_outside_cuda_share = 0.95;
  x.feeder_share[static_cast<size_t>(analyzer::CallKind::Copy)] = 0.05;
  x.gpu_work_done = true;  // a GPU to starve, and enough of a run to judge
  x.judged_s = 10;
  x.launches = x.syncs = analyzer::kMinWorkCalls;
  return x;
}

// A model whose samples fell on three stacks, with the profile the
// pipeline would have made of them after symbolization.
analyzer::TraceModel profiled(uint64_t memset, uint64_t program, uint64_t system_ns) {
  analyzer::TraceModel m;
  analyzer::HostSampleStats& h = m.host_samples;
  h.samples = memset + program + 10;
  h.by_thread[1] = h.samples;
  h.by_stack = {{1, memset}, {2, program}, {3, 10}};
  h.profile.top = {{2, program, "tokenize (t.cpp:3)", HostCost::Program},
                   {1, memset, "__memset_avx2_unaligned_erms", HostCost::Memset},
                   {3, 10, "libfoo.so+0x10", HostCost::Unknown}};
  std::sort(h.profile.top.begin(), h.profile.top.end(), [](auto& a, auto& b) { return a.samples > b.samples; });
  h.profile.by_cost[static_cast<size_t>(HostCost::Memset)] = memset;
  h.profile.by_cost[static_cast<size_t>(HostCost::Program)] = program;
  h.profile.by_cost[static_cast<size_t>(HostCost::Unknown)] = 10;
  h.profile.hottest_function = program >= memset ? "tokenize" : "__memset_avx2_unaligned_erms";
  h.profile.hottest_samples = std::max(program, memset);
  h.add_process_cpu(fb::CpuSample(kT0, 0, 0, 0, 0));
  h.add_process_cpu(fb::CpuSample(kT0 + 1, 1'000'000'000, system_ns, 0, 0));
  m.host_by_function["cudaMemcpy"] = {100, 1000};
  return m;
}

const analyzer::Finding& cpu_finding(const analyzer::Analysis& a) {
  const auto it = std::find_if(a.findings.begin(), a.findings.end(),
                               [](const analyzer::Finding& f) { return f.id == "cpu.gpu_starved_by_host"; });
  EXPECT_NE(it, a.findings.end());
  return *it;
}

bool any_line_has(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != l.npos; });
}

TEST(HostSamples, TheCpuFindingCitesTheHottestStacksNotCudaCalls) {
  const analyzer::TraceModel m = profiled(20, 70, 0);
  const analyzer::Analysis a = analyzer::analyze(m, starved_gpu());
  const analyzer::Finding& f = cpu_finding(a);
  EXPECT_TRUE(f.sites.empty());
  ASSERT_EQ(f.host_stacks.size(), 3u);
  EXPECT_EQ(f.host_stacks[0].stack_id, 2u);
  EXPECT_DOUBLE_EQ(f.host_stacks[0].share, 0.7);
  EXPECT_TRUE(any_line_has(f.evidence, "CPU samples: 100 over 1 thread(s)")) << ::testing::PrintToString(f.evidence);
  EXPECT_TRUE(any_line_has(f.evidence, "hottest function: tokenize (70% of the samples)"));
  EXPECT_TRUE(any_line_has(f.evidence, "70% of the samples are in one function of the program, tokenize: a serial"));
  EXPECT_TRUE(any_line_has(f.evidence, "20% of the samples are in memset"));
  EXPECT_FALSE(any_line_has(f.evidence, "fresh pageable buffers"));
}

TEST(HostSamples, MemsetWithKernelTimeIsFreshPageableBuffers) {
  const analyzer::TraceModel m = profiled(50, 40, 400'000'000);  // 40% of the CPU time in the kernel
  const analyzer::Analysis a = analyzer::analyze(m, starved_gpu());
  const analyzer::Finding& f = cpu_finding(a);
  EXPECT_TRUE(any_line_has(f.evidence, "50% of the samples are in memset")) << ::testing::PrintToString(f.evidence);
  EXPECT_TRUE(any_line_has(f.evidence, "40% of the process's CPU time was in the kernel"));
  EXPECT_TRUE(any_line_has(f.evidence, "fresh pageable buffers"));
  EXPECT_NE(f.fix.find("allocate host buffers once and reuse them"), std::string::npos) << f.fix;
  EXPECT_FALSE(any_line_has(f.evidence, "a serial host loop"));
  // Just below the kernel-time bar, the memset is named but not the page faults.
  const analyzer::TraceModel below = profiled(50, 40, 299'000'000);
  const analyzer::Analysis b = analyzer::analyze(below, starved_gpu());
  const analyzer::Finding& g = cpu_finding(b);
  EXPECT_TRUE(any_line_has(g.evidence, "50% of the samples are in memset"));
  EXPECT_FALSE(any_line_has(g.evidence, "fresh pageable buffers"));
}

TEST(HostSamples, WithoutSamplesTheFindingKeepsItsCudaCallSites) {
  analyzer::TraceModel m = profiled(20, 70, 0);
  m.host_samples = {};
  const analyzer::Analysis a = analyzer::analyze(m, starved_gpu());
  const analyzer::Finding& f = cpu_finding(a);
  EXPECT_TRUE(f.host_stacks.empty());
  EXPECT_FALSE(any_line_has(f.evidence, "CPU samples"));
}

}  // namespace
}  // namespace gpuscope::test
