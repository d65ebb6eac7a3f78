#include "record_checks.h"

#include <algorithm>
#include <cstring>

#include "byte_shuffle.h"
#include "container.h"
#include "record_coding.h"
#include "trace_reader.h"

namespace gpuscope::reader {
namespace {

// 2^62 ns is 146 years of uptime; 10^15 ns is 11.6 days in one call.
constexpr uint64_t kMaxTimestamp = uint64_t{1} << 62;
constexpr uint64_t kMaxDuration = 1'000'000'000'000'000ull;

template <class E> bool in_range(E value) {
  return static_cast<uint64_t>(value) <= static_cast<uint64_t>(E::MAX);
}

bool timing_ok(uint64_t start, uint64_t duration) {
  return start <= kMaxTimestamp && duration <= kMaxDuration;
}

bool valid(const fb::ApiCall& r) { return timing_ok(r.start_ns(), r.duration_ns()); }
bool valid(const fb::Copy& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.direction()) &&
         in_range(r.src_kind()) && in_range(r.dst_kind()) && in_range(r.source());
}
bool valid(const fb::Memset& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.memory_kind()) && in_range(r.source());
}
bool valid(const fb::Kernel& r) { return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.source()); }
bool valid(const fb::Sync& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.kind()) && in_range(r.source());
}
bool valid(const fb::Alloc& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.op()) &&
         in_range(r.memory_kind()) && in_range(r.source());
}
bool valid(const fb::CpuSample& r) {
  return r.start_ns() <= kMaxTimestamp && r.cpu_ns() <= kMaxTimestamp && r.system_ns() <= r.cpu_ns();
}
bool valid(const fb::GpuSample& r) {
  return r.start_ns() <= kMaxTimestamp && r.gpu_util_pct() <= 100 && r.memory_util_pct() <= 100 &&
         (r.dram_bw_util_pct() <= 100 || r.dram_bw_util_pct() == 0xFF) &&
         (r.sm_util_pct() <= 100 || r.sm_util_pct() == 0xFF);
}
bool valid(const fb::Marker& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.kind());
}
bool valid(const fb::GraphLaunch& r) {
  return timing_ok(r.start_ns(), r.duration_ns()) && in_range(r.source());
}
bool valid(const fb::HostSample& r) { return r.start_ns() <= kMaxTimestamp; }
bool valid(const fb::ProcessGpuSample& r) {
  return r.start_ns() <= kMaxTimestamp && r.window_ns() <= r.start_ns() && r.sm_util_pct() <= 100 &&
         r.memory_util_pct() <= 100 && r.encoder_util_pct() <= 100 && r.decoder_util_pct() <= 100;
}
// A CallCount covers one drain interval of one thread: 2^40 calls would
// take hours even at a call per nanosecond.
bool valid(const fb::CallCount& r) { return r.until_ns() <= kMaxTimestamp && r.count() <= (uint64_t{1} << 40); }

// Call counts are neither delta-coded nor shuffled: a few per chunk.
uint64_t copy_counts(const flatbuffers::Vector<const fb::CallCount*>* in, std::vector<fb::CallCount>* out) {
  out->clear();
  if (in == nullptr) return 0;
  out->resize(in->size());
  std::memcpy(out->data(), in->Data(), in->size() * sizeof(fb::CallCount));
  const size_t before = out->size();
  std::erase_if(*out, [](const fb::CallCount& r) { return !valid(r); });
  return before - out->size();
}

// Unshuffles and delta-decodes one vector; invalid records stay until
// drop_invalid (the calls' indexes must hold while links are resolved).
// `out` is resized without clearing: a chunk handed back for the next
// (chunk_handoff.h) keeps its records, so only growth value-initializes
// what the unshuffle overwrites anyway (that zeroing was 12 % of the
// reading thread).
template <class T>
void unpack_vector(const flatbuffers::Vector<const T*>* in, uint64_t base, uint32_t flags, std::vector<T>* out,
                   bool streaming) {
  if (in == nullptr) return out->clear();
  out->resize(in->size());
  auto* dst = reinterpret_cast<uint8_t*>(out->data());
  if ((flags & container::kFlagShuffled) != 0)
    container::unshuffle_records(in->Data(), in->size(), sizeof(T), dst, streaming);
  else std::memcpy(dst, in->Data(), in->size() * sizeof(T));
  container::delta_decode(std::span<T>(*out), base, (flags & container::kFlagCallLinked) != 0);
}

template <class T> uint64_t drop_invalid(std::vector<T>* records) {
  const size_t before = records->size();
  std::erase_if(*records, [](const T& r) { return !valid(r); });
  return before - records->size();
}

template <class T>
uint64_t decode_vector(const flatbuffers::Vector<const T*>* in, uint64_t base, uint32_t flags, bool streaming,
                       std::vector<T>* out, std::span<const fb::ApiCall> calls = {}) {
  unpack_vector(in, base, flags, out, streaming);
  if constexpr (container::CallLinkable<T>)
    if ((flags & container::kFlagCallLinked) != 0) container::resolve_call_links(std::span<T>(*out), calls);
  return drop_invalid(out);
}

}  // namespace

uint64_t decode_records(const fb::Chunk& c, uint32_t flags, DecodedRecords* out, bool for_other_thread) {
  const uint64_t base = c.base_ns();
  unpack_vector(c.api_calls(), base, flags, &out->api_calls, for_other_thread);
  const std::span<const fb::ApiCall> calls(out->api_calls);
  uint64_t invalid = 0;
  invalid += decode_vector(c.copies(), base, flags, for_other_thread, &out->copies, calls);
  invalid += decode_vector(c.memsets(), base, flags, for_other_thread, &out->memsets, calls);
  invalid += decode_vector(c.kernels(), base, flags, for_other_thread, &out->kernels, calls);
  invalid += decode_vector(c.syncs(), base, flags, for_other_thread, &out->syncs, calls);
  invalid += decode_vector(c.allocs(), base, flags, for_other_thread, &out->allocs, calls);
  invalid += decode_vector(c.graph_launches(), base, flags, for_other_thread, &out->graph_launches, calls);
  invalid += drop_invalid(&out->api_calls);
  invalid += decode_vector(c.cpu_samples(), base, flags, for_other_thread, &out->cpu_samples);
  invalid += decode_vector(c.markers(), base, flags, for_other_thread, &out->markers);
  invalid += decode_vector(c.gpu_samples(), base, flags, for_other_thread, &out->gpu_samples);
  invalid += copy_counts(c.call_counts(), &out->call_counts);
  invalid += decode_vector(c.host_samples(), base, flags, for_other_thread, &out->host_samples);
  invalid += decode_vector(c.process_gpu_samples(), base, flags, for_other_thread, &out->process_gpu_samples);
  return invalid;
}

void DecodedRecords::fill_view(ChunkView* v) const {
  v->api_calls = api_calls;
  v->copies = copies;
  v->memsets = memsets;
  v->kernels = kernels;
  v->syncs = syncs;
  v->allocs = allocs;
  v->cpu_samples = cpu_samples;
  v->markers = markers;
  v->gpu_samples = gpu_samples;
  v->call_counts = call_counts;
  v->graph_launches = graph_launches;
  v->host_samples = host_samples;
  v->process_gpu_samples = process_gpu_samples;
}

}  // namespace gpuscope::reader
