#include "chunk_builder.h"

#include <cstring>

#include "byte_shuffle.h"
#include "record_coding.h"
#include "ring.h"

namespace gpuscope::capture {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::ProcessMetadata> build_metadata(FlatBufferBuilder& fbb, const ProcessMetadata& m) {
  std::vector<Offset<fb::KeyValue>> env;
  for (const auto& [k, v] : m.environment)
    env.push_back(fb::CreateKeyValueDirect(fbb, k.c_str(), v.c_str()));
  std::vector<Offset<flatbuffers::String>> argv;
  for (const auto& a : m.argv) argv.push_back(fbb.CreateString(a));
  return fb::CreateProcessMetadataDirect(
      fbb, m.pid, m.ppid, m.uid, m.exe.c_str(), &argv, m.start_monotonic_ns, m.start_realtime_ns,
      m.hostname.c_str(), m.kernel_release.c_str(), &m.cpu_affinity, &env,
      m.gpuscope_version.c_str(), m.online_cpus, m.boot_id.c_str(), m.run_id.c_str(),
      m.trace_parent_pid, m.rank, m.local_rank, m.world_size,
      m.rank_source.empty() ? nullptr : m.rank_source.c_str(), m.host_clock.empty() ? nullptr : m.host_clock.c_str());
}

Offset<flatbuffers::Vector<Offset<fb::DropCount>>> build_drops(FlatBufferBuilder& fbb,
                                                               const DropCounts& drops) {
  std::vector<Offset<fb::DropCount>> out;
  for (size_t r = 0; r < drops.size(); ++r)
    if (drops[r] != 0) out.push_back(fb::CreateDropCount(fbb, static_cast<fb::DropReason>(r), drops[r]));
  return fbb.CreateVector(out);
}

Offset<fb::Totals> build_totals(FlatBufferBuilder& fbb, const TotalsInfo& t, const DropCounts& drops) {
  auto drop_vec = build_drops(fbb, drops);
  auto message = t.message.empty() ? 0 : fbb.CreateString(t.message);
  fb::TotalsBuilder b(fbb);
  b.add_end_monotonic_ns(t.end_monotonic_ns);
  b.add_end_kind(t.end.kind);
  b.add_exit_status(t.end.exit_status);
  if (t.end.began_kind != fb::EndKind::Unknown) {
    b.add_began_kind(t.end.began_kind);
    b.add_began_status(t.end.began_status);
  }
  b.add_events_written(t.events_written);
  b.add_drops(drop_vec);
  b.add_frames_written(t.frames_written);
  b.add_bytes_written(t.bytes_written);
  if (!message.IsNull()) b.add_message(message);
  if (t.tick_rate_restarts != 0) b.add_tick_rate_restarts(t.tick_rate_restarts);
  return b.Finish();
}

Offset<flatbuffers::Vector<Offset<fb::DeviceInfo>>> build_devices(FlatBufferBuilder& fbb,
                                                                  const std::vector<container::DeviceDescription>& devices) {
  std::vector<Offset<fb::DeviceInfo>> out;
  for (const auto& d : devices) {
    std::vector<Offset<flatbuffers::String>> unsupported;
    for (const auto& u : d.unsupported) unsupported.push_back(fbb.CreateString(u));
    out.push_back(fb::CreateDeviceInfoDirect(
        fbb, d.index, d.name.c_str(), d.uuid.c_str(), d.pci_bus_id.c_str(), d.memory_total_bytes,
        d.pcie_gen_current, d.pcie_gen_max, d.pcie_width_current, d.pcie_width_max, d.mig_mode, d.ecc_mode,
        d.ecc_corrected, d.ecc_uncorrected, d.numa_node, d.local_cpus.c_str(), &unsupported, d.vbios.c_str(),
        d.persistence_mode, d.power_limit_mw, d.power_default_limit_mw, d.mig_devices.c_str(), d.nvlinks,
        d.nvlinks_active));
  }
  return fbb.CreateVector(out);
}

Offset<flatbuffers::Vector<Offset<fb::LibraryLoad>>> build_loads(FlatBufferBuilder& fbb,
                                                                const std::vector<container::LibraryLoadEvent>& loads) {
  std::vector<Offset<fb::LibraryLoad>> out;
  for (const auto& l : loads)
    out.push_back(fb::CreateLibraryLoadDirect(fbb, l.start_ns, l.tid, l.path.c_str(), l.resolved_path.c_str(),
                                              l.flags, l.ok, l.error.c_str(), l.deepbind_stripped, l.unload));
  return fbb.CreateVector(out);
}

Offset<fb::StackCapture> build_stack_capture(FlatBufferBuilder& fbb, const container::StackCaptureData& d) {
  return fb::CreateStackCaptureDirect(fbb, static_cast<fb::StackCaptureState>(d.state),
                                      d.reason.empty() ? nullptr : d.reason.c_str(), d.depth, d.unwind_failures,
                                      d.table_full);
}

Offset<fb::HostSampling> build_host_sampling(FlatBufferBuilder& fbb, const container::HostSamplingData& d) {
  return fb::CreateHostSamplingDirect(fbb, static_cast<fb::HostSamplingState>(d.state),
                                      d.reason.empty() ? nullptr : d.reason.c_str(), d.period_ns, d.samples, d.lost,
                                      d.threads, d.threads_refused, d.unreadable);
}

Offset<fb::ImportSource> build_import_source(FlatBufferBuilder& fbb, const container::ImportSourceData& d) {
  std::vector<Offset<flatbuffers::String>> notes;
  for (const auto& n : d.notes) notes.push_back(fbb.CreateString(n));
  return fb::CreateImportSourceDirect(fbb, d.format.c_str(), d.path.c_str(), d.producer.c_str(), &notes, d.events,
                                      d.skipped, d.unjoined, d.out_of_range, d.complete, d.damage.c_str(), d.mid_run);
}

Offset<flatbuffers::Vector<Offset<fb::PythonCode>>> build_python_codes(
    FlatBufferBuilder& fbb, const std::vector<container::PythonCodeDescription>& codes) {
  std::vector<Offset<fb::PythonCode>> out;
  for (const auto& c : codes)
    out.push_back(fb::CreatePythonCodeDirect(fbb, c.key, c.file.c_str(), c.name.c_str(), c.first_line,
                                             &c.line_table, c.line_table_cut));
  return fbb.CreateVector(out);
}

Offset<fb::PythonStacks> build_python_stacks(FlatBufferBuilder& fbb, const container::PythonStacksData& d) {
  return fb::CreatePythonStacksDirect(fbb, static_cast<fb::PythonStacksState>(d.state), d.version,
                                      d.reason.empty() ? nullptr : d.reason.c_str(), d.chains_cut, d.codes_dropped);
}

Offset<flatbuffers::Vector<Offset<fb::GpuProcess>>> build_gpu_processes(
    FlatBufferBuilder& fbb, const std::vector<container::GpuProcessName>& processes) {
  std::vector<Offset<fb::GpuProcess>> out;
  for (const auto& p : processes) out.push_back(fb::CreateGpuProcessDirect(fbb, p.pid, p.device, p.name.c_str()));
  return fbb.CreateVector(out);
}

Offset<fb::DeviceCollection> build_device_collection(FlatBufferBuilder& fbb, const container::DeviceCollectionData& d) {
  return fb::CreateDeviceCollectionDirect(fbb, static_cast<fb::DeviceCollectionState>(d.state), d.reason.c_str(),
                                          d.cupti_version, d.cupti_path.c_str(), d.records, d.dropped,
                                          d.buffers_refused, d.unconverted, d.uncorrelated,
                                          static_cast<fb::DeviceClock>(d.clock), d.calibration_pairs);
}

Offset<fb::EnvironmentProbe> build_probe(FlatBufferBuilder& fbb, const container::EnvironmentProbeData& p) {
  std::vector<Offset<fb::DeviceNode>> nodes;
  for (const auto& n : p.device_nodes)
    nodes.push_back(fb::CreateDeviceNodeDirect(fbb, n.path.c_str(), n.exists, n.readable, n.writable));
  return fb::CreateEnvironmentProbeDirect(fbb, &nodes, p.driver_loaded, p.driver_error.c_str(), p.driver_version,
                                          p.nvml_status.c_str(), p.nvml_driver_version.c_str(), p.visible_devices);
}

Offset<flatbuffers::Vector<Offset<fb::Module>>> build_modules(FlatBufferBuilder& fbb,
                                                             const std::vector<container::ModuleDescription>& modules) {
  std::vector<Offset<fb::Module>> out;
  for (const auto& m : modules)
    out.push_back(fb::CreateModuleDirect(fbb, m.id, m.path.c_str(), &m.build_id, m.load_address, m.low_address,
                                         m.high_address));
  return fbb.CreateVector(out);
}

Offset<flatbuffers::Vector<Offset<fb::Stack>>> build_stacks(FlatBufferBuilder& fbb,
                                                           const std::vector<container::StackDescription>& stacks) {
  std::vector<Offset<fb::Stack>> out;
  for (const auto& st : stacks) out.push_back(fb::CreateStackDirect(fbb, st.id, &st.frames));
  return fbb.CreateVector(out);
}

Offset<flatbuffers::Vector<Offset<fb::InternedString>>> build_strings(
    FlatBufferBuilder& fbb, const std::vector<std::pair<uint32_t, std::string>>& strings) {
  std::vector<Offset<fb::InternedString>> out;
  for (const auto& [id, text] : strings) out.push_back(fb::CreateInternedStringDirect(fbb, id, text.c_str()));
  return fbb.CreateVector(out);
}

// The delta base of a chunk: the smallest first start among its vectors (any
// value decodes correctly; a close one keeps the first deltas small).
template <class Tuple> uint64_t earliest_start(const Tuple& records) {
  uint64_t base = UINT64_MAX;
  std::apply([&](const auto&... vec) {
    ((base = vec.empty() ? base : std::min(base, vec.front().start_ns())), ...);
  }, records);
  return base == UINT64_MAX ? 0 : base;
}

// Host typed records that repeat their call's times are stored linked to
// it (record_coding.h); done before any vector is delta-coded.
template <class T> void link_vector(RecordVector<T>& v, std::span<const fb::ApiCall> calls) {
  if constexpr (container::CallLinkable<T>) container::link_to_calls(std::span<T>(v.data(), v.size()), calls);
}

template <class Tuple> void link_typed_records_to_calls(Tuple& records) {
  auto& calls = std::get<RecordVector<fb::ApiCall>>(records);
  const std::span<const fb::ApiCall> call_span(calls.data(), calls.size());
  std::apply([&](auto&... vec) { (link_vector(vec, call_span), ...); }, records);
}

// Delta-codes a record vector and byte-shuffles it straight into the
// chunk; the FlatBuffer vector keeps its struct type, its bytes are in
// shuffled order.
template <class T>
Offset<flatbuffers::Vector<const T*>> encoded_vector(ChunkFlatBufferBuilder& fbb, RecordVector<T>& v,
                                                     uint64_t base) {
  if (v.empty()) return 0;
  container::delta_encode(std::span<T>(v.data(), v.size()), base);
  return fbb.create_struct_vector_in_place<T>(v.size(), [&](uint8_t* out) {
    container::shuffle_records(reinterpret_cast<const uint8_t*>(v.data()), v.size(), sizeof(T), out);
  });
}

RingRecordHeader header_at(const std::byte* p) noexcept {
  RingRecordHeader h;
  std::memcpy(&h, p, sizeof h);
  return h;
}

}  // namespace

// Copies the run of T records starting at p (the drain's per-record loop:
// one header check, one copy, two conversions) and returns where it ended.
template <class T>
const std::byte* ChunkBuilder::append_run(const std::byte* p, const std::byte* end, const TickConverter& ticks,
                                          size_t max_records, size_t* added) {
  constexpr size_t kStride = sizeof(RingRecordHeader) + sizeof(T);
  const size_t room = std::min(max_records, static_cast<size_t>(end - p) / kStride);
  RecordVector<T>& v = std::get<RecordVector<T>>(records_);
  T* out = v.prepare(room);
  size_t n = 0;
  for (; n < room; ++n, p += kStride) {
    // Ring memory the writer reaches late (a busy producer, a long flush)
    // has left the caches; asking ~16 records ahead hides the wait.
    __builtin_prefetch(p + 1024);
    const RingRecordHeader h = header_at(p);
    if (h.type != RecordTag<T>::value || h.payload_size != sizeof(T)) break;
    std::memcpy(out + n, p + sizeof h, sizeof(T));
    if ((h.flags & kRecordInTicks) != 0) convert_ticks(out[n], ticks);
  }
  v.commit(n);
  *added = n;
  return p;
}

ChunkBuilder::RingTake ChunkBuilder::add_ring_records(std::span<const std::byte> bytes, const TickConverter& ticks,
                                                      size_t max_records) {
  const std::byte* p = bytes.data();
  const std::byte* const end = p + bytes.size();
  RingTake take;
  while (p < end && take.records < max_records) {
    const RingRecordHeader h = header_at(p);
    size_t added = 0;
    visit_record_type(h.type, [&]<class T>(std::type_identity<T>) {
      p = append_run<T>(p, end, ticks, max_records - take.records, &added);
    });
    // Nothing taken: Padding, an unknown tag or a size mismatch, skipped.
    if (added == 0) p += sizeof h + h.payload_size;
    take.records += added;
  }
  take.bytes = static_cast<size_t>(p - bytes.data());
  return take;
}

void ChunkBuilder::add_loads(std::vector<container::LibraryLoadEvent> loads) {
  for (auto& l : loads) loads_.push_back(std::move(l));
}

void ChunkBuilder::add_strings(std::vector<std::pair<uint32_t, std::string>> strings) {
  if (strings_.empty()) {
    strings_ = std::move(strings);
  } else {
    for (auto& s : strings) strings_.push_back(std::move(s));
  }
}

size_t ChunkBuilder::record_count() const {
  size_t n = 0;
  std::apply([&](const auto&... vec) { ((n += vec.size()), ...); }, records_);
  return n;
}

size_t ChunkBuilder::approximate_bytes() const {
  size_t n = 0;
  std::apply([&](const auto&... vec) { ((n += vec.bytes()), ...); }, records_);
  return n;
}

bool ChunkBuilder::empty() const {
  return record_count() == 0 && !metadata_ && strings_.empty() && !totals_ && devices_.empty() &&
         loads_.empty() && !probe_ && !device_collection_ && modules_.empty() && stacks_.empty() &&
         call_counts_.empty() && !stack_capture_ && !host_sampling_ && !import_source_ && python_codes_.empty() &&
         !python_stacks_ && gpu_processes_.empty();
}

std::span<const uint8_t> ChunkBuilder::build() {
  fbb_.Clear();
  const uint64_t base = earliest_start(records_);
  link_typed_records_to_calls(records_);
  // Children before the table that refers to them (FlatBuffers builds bottom-up).
  const auto [api_v, copy_v, memset_v, kernel_v, sync_v, alloc_v, cpu_v, marker_v, gpu_v, graph_v, host_v, process_v] =
      std::apply([&](auto&... vec) { return std::make_tuple(encoded_vector(fbb_, vec, base)...); }, records_);
  auto devices_v = devices_.empty() ? 0 : build_devices(fbb_, devices_);
  auto loads_v = loads_.empty() ? 0 : build_loads(fbb_, loads_);
  auto probe_v = probe_ ? build_probe(fbb_, *probe_) : 0;
  auto collection_v = device_collection_ ? build_device_collection(fbb_, *device_collection_) : 0;
  auto modules_v = modules_.empty() ? 0 : build_modules(fbb_, modules_);
  auto stacks_v = stacks_.empty() ? 0 : build_stacks(fbb_, stacks_);
  auto counts_v = call_counts_.empty() ? 0 : fbb_.CreateVectorOfStructs(call_counts_);
  auto stack_capture_v = stack_capture_ ? build_stack_capture(fbb_, *stack_capture_) : 0;
  auto sampling_v = host_sampling_ ? build_host_sampling(fbb_, *host_sampling_) : 0;
  auto import_v = import_source_ ? build_import_source(fbb_, *import_source_) : 0;
  auto py_codes_v = python_codes_.empty() ? 0 : build_python_codes(fbb_, python_codes_);
  auto py_stacks_v = python_stacks_ ? build_python_stacks(fbb_, *python_stacks_) : 0;
  auto gpu_processes_v = gpu_processes_.empty() ? 0 : build_gpu_processes(fbb_, gpu_processes_);
  auto strings_v = strings_.empty() ? 0 : build_strings(fbb_, strings_);
  auto metadata_v = metadata_ ? build_metadata(fbb_, *metadata_) : 0;
  auto drops_v = drops_ ? build_drops(fbb_, *drops_) : 0;
  auto totals_v = totals_ ? build_totals(fbb_, *totals_, drops_.value_or(DropCounts{})) : 0;
  fb::ChunkBuilder c(fbb_);  // a null offset adds nothing: an absent field
  c.add_base_ns(base);
  c.add_metadata(metadata_v);
  c.add_strings(strings_v);
  c.add_modules(modules_v);
  c.add_stacks(stacks_v);
  c.add_api_calls(api_v);
  c.add_copies(copy_v);
  c.add_memsets(memset_v);
  c.add_kernels(kernel_v);
  c.add_syncs(sync_v);
  c.add_allocs(alloc_v);
  c.add_cpu_samples(cpu_v);
  c.add_markers(marker_v);
  c.add_drops(drops_v);
  c.add_totals(totals_v);
  c.add_gpu_samples(gpu_v);
  c.add_devices(devices_v);
  c.add_loads(loads_v);
  c.add_probe(probe_v);
  c.add_device_collection(collection_v);
  c.add_call_counts(counts_v);
  c.add_stack_capture(stack_capture_v);
  c.add_graph_launches(graph_v);
  c.add_host_samples(host_v);
  c.add_host_sampling(sampling_v);
  c.add_import_source(import_v);
  c.add_python_codes(py_codes_v);
  c.add_python_stacks(py_stacks_v);
  c.add_process_gpu_samples(process_v);
  c.add_gpu_processes(gpu_processes_v);
  fb::FinishChunkBuffer(fbb_, c.Finish());
  return {fbb_.GetBufferPointer(), fbb_.GetSize()};
}

void ChunkBuilder::clear() {
  std::apply([](auto&... vec) { (vec.clear(), ...); }, records_);
  metadata_.reset();
  strings_.clear();
  devices_.clear();
  loads_.clear();
  probe_.reset();
  device_collection_.reset();
  stack_capture_.reset();
  host_sampling_.reset();
  import_source_.reset();
  modules_.clear();
  stacks_.clear();
  python_codes_.clear();
  python_stacks_.reset();
  gpu_processes_.clear();
  call_counts_.clear();
  drops_.reset();
  totals_.reset();
}

FrameEncoder::FrameEncoder(int zstd_level) : cctx_(ZSTD_createCCtx()) {
  if (cctx_ == nullptr) return;
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 0);     // the frame header's CRC covers it
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1);  // reader checks it against the header
}

FrameEncoder::~FrameEncoder() { ZSTD_freeCCtx(cctx_); }

std::span<const std::byte> FrameEncoder::encode(std::span<const uint8_t> chunk, uint32_t sequence) {
  if (cctx_ == nullptr) {
    last_error_ = "zstd context could not be created";
    return {};
  }
  const size_t bound = ZSTD_compressBound(chunk.size());
  auto* frame = reinterpret_cast<std::byte*>(frame_.reserve(sizeof(container::FrameHeader) + container::align8(bound)));
  const size_t payload = ZSTD_compress2(cctx_, frame + sizeof(container::FrameHeader), bound,
                                        chunk.data(), chunk.size());
  if (ZSTD_isError(payload)) {
    last_error_ = ZSTD_getErrorName(payload);
    return {};
  }
  const std::byte* payload_bytes = frame + sizeof(container::FrameHeader);
  const auto header = container::make_frame_header(static_cast<uint32_t>(payload), static_cast<uint32_t>(chunk.size()),
                                                   sequence, container::crc32c(payload_bytes, payload));
  std::memcpy(frame, &header, sizeof header);
  const size_t total = sizeof header + container::align8(payload);
  std::memset(frame + sizeof header + payload, 0, total - sizeof header - payload);
  return {frame, total};
}

std::span<const std::byte> file_header_bytes() {
  static const container::FileHeader header = container::make_file_header();
  return {reinterpret_cast<const std::byte*>(&header), sizeof header};
}

}  // namespace gpuscope::capture
