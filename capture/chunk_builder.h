// Collects drained records and side tables, then turns them into one
// FlatBuffer Chunk (delta-coded) and one compressed, framed byte string.
// Owned and used by the writer thread only.
#pragma once

#include <zstd.h>

#include <algorithm>
#include <array>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "clock.h"
#include "container.h"
#include "end_note.h"
#include "process_info.h"
#include "side_tables.h"
#include "record_types.h"
#include "ring.h"

namespace gpuscope::capture {

struct TotalsInfo {
  uint64_t end_monotonic_ns = 0;
  EndNote end;
  uint64_t events_written = 0;
  uint32_t frames_written = 0;
  uint64_t bytes_written = 0;
  std::string message;
  uint32_t tick_rate_restarts = 0;  // TickConverter::rate_changes()
};

// The writer ends a chunk once its records take this much: small enough
// that the records, the FlatBuffer being built and zstd's tables stay in a
// core's L2 (512 KiB-1 MiB on current x86), large enough that per-frame
// overhead is noise. 2 MiB chunks wrote ~17 M events/s, 384 KiB ~20 M/s; a
// 60 MB chunk took three times longer per record (docs/performance.md).
inline constexpr size_t kChunkTargetBytes = 384u << 10;

// A record stamped in TSC ticks (kRecordInTicks) to nanoseconds.
template <class T> void convert_ticks(T& r, const TickConverter& ticks) noexcept {
  r.mutate_start_ns(ticks.to_ns(r.start_ns()));
  if constexpr (requires { r.duration_ns(); }) r.mutate_duration_ns(ticks.span_ns(r.duration_ns()));
}

// One counter per fb::DropReason.
using DropCounts = std::array<uint64_t, static_cast<size_t>(fb::DropReason::MAX) + 1>;

// A growable byte buffer that is not zero-filled on growth: frames and
// shuffle scratch are overwritten in full, and zeroing them was a tenth of
// the writer's time.
class ScratchBuffer {
 public:
  uint8_t* reserve(size_t n) {
    if (n > capacity_) {
      capacity_ = std::max(n, capacity_ * 2);
      data_.reset(new uint8_t[capacity_]);
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// A growable array of trivially copyable records that, unlike std::vector,
// does not value-initialize what it grows into: the drain copies every
// record straight over its slot, and zeroing it first cost as much again.
template <class T> class RecordVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  RecordVector() = default;
  RecordVector(const RecordVector&) = delete;
  RecordVector& operator=(const RecordVector&) = delete;
  ~RecordVector() { std::free(data_); }

  // Room for n more records; returns where the first of them goes. Records
  // written there count once commit() says how many were.
  T* prepare(size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    return data_ + size_;
  }
  void commit(size_t n) noexcept { size_ += n; }
  void push_back(const T& r) {
    std::memcpy(prepare(1), &r, sizeof r);
    commit(1);
  }

  T* data() noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  size_t bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  const T& front() const noexcept { return data_[0]; }
  void clear() noexcept { size_ = 0; }

 private:
  void grow(size_t at_least) {
    const size_t capacity = std::max({at_least, capacity_ * 2, size_t{1024}});
    void* p = std::realloc(data_, capacity * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = capacity;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// FlatBufferBuilder plus one operation: a vector of structs whose bytes the
// caller writes in place, so record vectors are shuffled straight into the
// chunk rather than into scratch and then copied. Same layout as
// CreateVectorOfStructs (which copies from a finished array).
class ChunkFlatBufferBuilder : public flatbuffers::FlatBufferBuilder {
 public:
  using FlatBufferBuilder::FlatBufferBuilder;

  template <class T, class Fill>
  flatbuffers::Offset<flatbuffers::Vector<const T*>> create_struct_vector_in_place(size_t n, Fill&& fill) {
    StartVector(n * sizeof(T) / flatbuffers::AlignOf<T>(), flatbuffers::AlignOf<T>());
    fill(buf_.make_space(n * sizeof(T)));
    return flatbuffers::Offset<flatbuffers::Vector<const T*>>(EndVector(n));
  }
};

class ChunkBuilder {
 public:
  // What add_ring_records() took from the ring.
  struct RingTake {
    size_t bytes = 0;    // consumed, ending at a record boundary
    size_t records = 0;  // added to the chunk
  };
  // Appends the whole ring records in `bytes` (SpscRing::drain_runs), at
  // most `max_records` of them, converting those stamped in ticks through
  // `ticks`. Padding, unknown tags and size mismatches are skipped.
  RingTake add_ring_records(std::span<const std::byte> bytes, const TickConverter& ticks, size_t max_records);
  template <class T> void add(const T& record) { std::get<RecordVector<T>>(records_).push_back(record); }
  // A record that did not come through a ring (a run of polls the writer
  // took, poll_run.h), stamped as the ring header would say (`ring_flags`).
  template <class T> void add_stamped(T record, uint8_t ring_flags, const TickConverter& ticks) {
    if ((ring_flags & kRecordInTicks) != 0) convert_ticks(record, ticks);
    add(record);
  }

  void set_metadata(const ProcessMetadata& metadata) { metadata_ = metadata; }
  void add_strings(std::vector<std::pair<uint32_t, std::string>> strings);
  void set_drops(const DropCounts& drops) { drops_ = drops; }
  void set_totals(const TotalsInfo& totals) { totals_ = totals; }
  void add_device(container::DeviceDescription device) { devices_.push_back(std::move(device)); }
  void add_loads(std::vector<container::LibraryLoadEvent> loads);
  void set_probe(container::EnvironmentProbeData probe) { probe_ = std::move(probe); }
  void set_device_collection(container::DeviceCollectionData d) { device_collection_ = std::move(d); }
  void set_stack_capture(container::StackCaptureData d) { stack_capture_ = std::move(d); }
  void set_host_sampling(container::HostSamplingData d) { host_sampling_ = std::move(d); }
  void set_import_source(container::ImportSourceData d) { import_source_ = std::move(d); }
  void add_module(container::ModuleDescription module) { modules_.push_back(std::move(module)); }
  void add_stack(container::StackDescription stack) { stacks_.push_back(std::move(stack)); }
  void add_python_code(container::PythonCodeDescription code) { python_codes_.push_back(std::move(code)); }
  void set_python_stacks(container::PythonStacksData d) { python_stacks_ = std::move(d); }
  void add_gpu_process(container::GpuProcessName p) { gpu_processes_.push_back(std::move(p)); }
  // Not a record (events_written leaves it out): counted nested calls.
  void add_call_count(const fb::CallCount& count) { call_counts_.push_back(count); }

  size_t record_count() const;
  size_t approximate_bytes() const;
  bool empty() const;

  // Builds the chunk; the span stays valid until the next build() or clear().
  std::span<const uint8_t> build();
  void clear();

 private:
  template <class T>
  const std::byte* append_run(const std::byte* p, const std::byte* end, const TickConverter& ticks,
                              size_t max_records, size_t* added);

  std::tuple<RecordVector<fb::ApiCall>, RecordVector<fb::Copy>, RecordVector<fb::Memset>,
             RecordVector<fb::Kernel>, RecordVector<fb::Sync>, RecordVector<fb::Alloc>,
             RecordVector<fb::CpuSample>, RecordVector<fb::Marker>, RecordVector<fb::GpuSample>,
             RecordVector<fb::GraphLaunch>, RecordVector<fb::HostSample>, RecordVector<fb::ProcessGpuSample>>
      records_;
  std::vector<container::DeviceDescription> devices_;
  std::vector<container::LibraryLoadEvent> loads_;
  std::optional<container::EnvironmentProbeData> probe_;
  std::optional<container::DeviceCollectionData> device_collection_;
  std::optional<container::StackCaptureData> stack_capture_;
  std::optional<container::HostSamplingData> host_sampling_;
  std::optional<container::ImportSourceData> import_source_;
  std::vector<container::ModuleDescription> modules_;
  std::vector<container::StackDescription> stacks_;
  std::vector<container::PythonCodeDescription> python_codes_;
  std::optional<container::PythonStacksData> python_stacks_;
  std::vector<container::GpuProcessName> gpu_processes_;
  std::vector<fb::CallCount> call_counts_;
  std::optional<ProcessMetadata> metadata_;
  std::vector<std::pair<uint32_t, std::string>> strings_;
  std::optional<DropCounts> drops_;
  std::optional<TotalsInfo> totals_;
  ChunkFlatBufferBuilder fbb_{1 << 16};
};

// zstd-compresses a chunk into a complete frame (header, payload, padding).
class FrameEncoder {
 public:
  explicit FrameEncoder(int zstd_level);
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;

  // Empty span when compression failed (reported through last_error()).
  std::span<const std::byte> encode(std::span<const uint8_t> chunk, uint32_t sequence);
  const char* last_error() const { return last_error_; }

 private:
  ZSTD_CCtx* cctx_ = nullptr;
  ScratchBuffer frame_;
  const char* last_error_ = "";
};

// The file header every trace starts with, as bytes.
std::span<const std::byte> file_header_bytes();

}  // namespace gpuscope::capture
