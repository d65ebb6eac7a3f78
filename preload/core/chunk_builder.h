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
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "clock.h"
#include "container.h"
#include "process_info.h"
#include "side_tables.h"
#include "record_types.h"

namespace gpuscope::capture {

struct TotalsInfo {
  uint64_t end_monotonic_ns = 0;
  fb::EndKind end_kind = fb::EndKind::Unknown;
  int exit_status = 0;
  uint64_t events_written = 0;
  uint32_t frames_written = 0;
  uint64_t bytes_written = 0;
  std::string message;
};

using DropCounts = std::array<uint64_t, 4>;

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

class ChunkBuilder {
 public:
  // Appends one ring record, converting tick timestamps through `ticks` when
  // given; false for an unknown tag or a size mismatch.
  bool add_record(RecordType type, const std::byte* payload, uint32_t size,
                  const TickConverter* ticks = nullptr);
  template <class T> void add(const T& record) { std::get<std::vector<T>>(records_).push_back(record); }

  void set_metadata(const ProcessMetadata& metadata) { metadata_ = metadata; }
  void add_strings(std::vector<std::pair<uint32_t, std::string>> strings);
  void set_drops(const DropCounts& drops) { drops_ = drops; }
  void set_totals(const TotalsInfo& totals) { totals_ = totals; }
  void add_device(DeviceDescription device) { devices_.push_back(std::move(device)); }
  void add_loads(std::vector<LibraryLoadEvent> loads);
  void set_probe(EnvironmentProbeData probe) { probe_ = std::move(probe); }
  void add_module(ModuleDescription module) { modules_.push_back(std::move(module)); }
  void add_stack(StackDescription stack) { stacks_.push_back(std::move(stack)); }

  size_t record_count() const;
  size_t approximate_bytes() const;
  bool empty() const;

  // Builds the chunk; the span stays valid until the next build() or clear().
  std::span<const uint8_t> build();
  void clear();

 private:
  std::tuple<std::vector<fb::ApiCall>, std::vector<fb::Copy>, std::vector<fb::Memset>,
             std::vector<fb::Kernel>, std::vector<fb::Sync>, std::vector<fb::Alloc>,
             std::vector<fb::CpuSample>, std::vector<fb::Marker>, std::vector<fb::GpuSample>>
      records_;
  std::vector<DeviceDescription> devices_;
  std::vector<LibraryLoadEvent> loads_;
  std::optional<EnvironmentProbeData> probe_;
  std::vector<ModuleDescription> modules_;
  std::vector<StackDescription> stacks_;
  std::optional<ProcessMetadata> metadata_;
  std::vector<std::pair<uint32_t, std::string>> strings_;
  std::optional<DropCounts> drops_;
  std::optional<TotalsInfo> totals_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  ScratchBuffer shuffle_scratch_;
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
