// Reads gpuscope trace files. Input is hostile: every size is checked before
// it is used, every frame is checksummed and verified, every record is
// checked for sense, and damage is recorded as a Problem (with its file
// offset) instead of stopping the read. Whatever precedes the damage, and
// whatever valid frames follow it, is delivered.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <zstd.h>

#include "container.h"
#include "gpuscope_generated.h"

namespace gpuscope::reader {

enum class ProblemKind {
  Truncated,       // the file ends inside a frame (killed mid-write, copy cut short)
  CorruptFrame,    // a frame failed its header check, checksum or verification
  MissingFrames,   // frame sequence numbers jump
  InvalidRecords,  // records whose fields make no sense, skipped
  NoTotals,        // no end-of-trace record: the process did not end cleanly
  NewerMinor       // written by a newer minor format: unknown fields ignored
};

const char* problem_kind_name(ProblemKind kind);

struct Problem {
  ProblemKind kind;
  uint64_t offset;
  std::string message;
};

// Where bytes come from: a file, or memory (tests, fuzzing).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset; false if they are not all there.
  virtual bool read(uint64_t offset, void* out, size_t n) const = 0;
};

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string* error);
std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes);

// One good chunk, records decoded (absolute timestamps and correlation ids)
// and checked. Valid only during the visitor call.
struct ChunkView {
  uint64_t offset = 0;     // of the frame in the file
  uint32_t sequence = 0;
  const fb::Chunk* chunk = nullptr;  // metadata, strings, drops, totals, ...
  std::span<const fb::ApiCall> api_calls;
  std::span<const fb::Copy> copies;
  std::span<const fb::Memset> memsets;
  std::span<const fb::Kernel> kernels;
  std::span<const fb::Sync> syncs;
  std::span<const fb::Alloc> allocs;
  std::span<const fb::CpuSample> cpu_samples;
  std::span<const fb::Marker> markers;
  std::span<const fb::GpuSample> gpu_samples;
  std::span<const fb::CallCount> call_counts;  // successful nested calls, counted (format 1.2)
  std::span<const fb::GraphLaunch> graph_launches;  // CUDA graph launches and what they run (format 1.3)
};

struct FileInfo {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  uint32_t flags = 0;
  uint64_t size = 0;
};

struct ReadStats {
  uint32_t frames_read = 0;
  uint32_t frames_corrupt = 0;
  uint64_t bytes_skipped = 0;    // resynchronizing past damage
  uint64_t records_invalid = 0;
  bool saw_totals = false;
  uint64_t end_offset = 0;       // just past the last good frame
};

class TraceReader {
 public:
  TraceReader() = default;
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Checks the file header. On failure returns false and sets *error to one
  // line naming the file and what is wrong (not a trace, newer version, ...).
  bool open(std::unique_ptr<ByteSource> source, const std::string& name, std::string* error);
  bool open_file(const std::string& path, std::string* error);

  const FileInfo& info() const { return info_; }

  // Delivers every good chunk in file order (at most max_frames of them).
  // Never throws on bad input.
  void read(const std::function<void(const ChunkView&)>& visit, uint32_t max_frames = UINT32_MAX);

  const std::vector<Problem>& problems() const { return problems_; }
  const ReadStats& stats() const { return stats_; }
  bool has_corruption() const;

 private:
  enum class FrameResult { Ok, End, Truncated, Corrupt };
  FrameResult read_frame(uint64_t offset, uint64_t* next, const std::function<void(const ChunkView&)>& visit);
  bool decode_chunk(uint64_t offset, const container::FrameHeader& header,
                    const std::function<void(const ChunkView&)>& visit);
  uint64_t find_next_frame(uint64_t from);
  const uint8_t* decompress(uint32_t chunk_size, std::string* why);
  void add_problem(ProblemKind kind, uint64_t offset, std::string message);

  std::unique_ptr<ByteSource> source_;
  std::string name_;
  FileInfo info_;
  ReadStats stats_;
  std::vector<Problem> problems_;
  uint64_t suppressed_problems_ = 0;
  uint32_t expected_sequence_ = 0;
  std::vector<uint8_t> payload_;
  std::vector<uint8_t> scan_buffer_;  // resynchronization window
  std::vector<uint64_t> chunk_storage_;  // 8-aligned: the verifier checks alignment
  ZSTD_DCtx* dctx_ = nullptr;
};

}  // namespace gpuscope::reader
