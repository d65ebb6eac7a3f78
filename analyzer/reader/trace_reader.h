// Reads gpuscope trace files. Input is hostile: every size is checked before
// it is used, every frame is checksummed and verified, every record is
// checked for sense, and damage is recorded as a Problem (with its file
// offset) instead of stopping the read. Whatever precedes the damage, and
// whatever valid frames follow it, is delivered. Damage costs time in
// proportion to its size, once: the scan for the next frame reads each
// byte once, skips holes and runs of bytes that cannot start a frame at
// memchr speed, and a later pass over the same reader jumps over the
// damage the first one found.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <zstd.h>

#include "byte_source.h"
#include "container.h"
#include "gpuscope_generated.h"

namespace gpuscope::reader {

enum class ProblemKind {
  Truncated,       // the file ends inside a frame (killed mid-write, copy cut short)
  CorruptFrame,    // a damaged stretch: frames failing their header check, checksum or verification
  MissingFrames,   // frame sequence numbers jump
  InvalidRecords,  // records whose fields make no sense, skipped
  NoTotals,        // no end-of-trace record: the process did not end cleanly
  NewerMinor,      // written by a newer minor format: unknown fields ignored
  Unlisted         // how many more problems there were than are listed
};

const char* problem_kind_name(ProblemKind kind);

struct Problem {
  ProblemKind kind;
  uint64_t offset;
  std::string message;  // what and why; describe() adds the kind and the offset
};

// The problem as one line: "corrupt frame at offset 32: bad frame header;
// skipped 24 bytes to the next good frame at offset 56". Every printer of
// problems uses it, so the kind and offset are said once.
std::string describe(const Problem& problem);

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
  std::span<const fb::HostSample> host_samples;     // CPU stack samples (format 1.4)
  std::span<const fb::ProcessGpuSample> process_gpu_samples;  // NVML per-process utilization (format 1.8)
};

struct FileInfo {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  uint32_t flags = 0;
  uint64_t size = 0;
};

struct ReadStats {
  uint32_t frames_read = 0;
  uint32_t frames_corrupt = 0;   // frame starts that failed their checks, in damaged stretches
  uint64_t bytes_skipped = 0;    // resynchronizing past damage
  uint64_t records_invalid = 0;
  bool saw_totals = false;
  uint64_t end_offset = 0;       // just past the last good frame
};

using ChunkVisitor = std::function<void(const ChunkView&)>;

struct DecodedChunk;  // chunk_handoff.h
struct ChunkSink;

class TraceReader {
 public:
  TraceReader();
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Checks the file header. On failure returns false and sets *error to one
  // line naming the file and what is wrong (not a trace, newer version, ...).
  bool open(std::unique_ptr<ByteSource> source, const std::string& name, std::string* error);
  bool open_file(const std::string& path, std::string* error);

  const FileInfo& info() const { return info_; }

  // Delivers every good chunk in file order (at most max_frames of them).
  // Each call is a whole pass from the first frame with its own problems
  // and stats, the same every time; damage an earlier pass found is jumped
  // over without being read again. Never throws on bad input. `visit` runs
  // on the calling thread; with read_ahead on, a trace of a few MiB or more
  // and two cores or more, the frames are read, checked and decoded on a
  // second thread meanwhile (chunk_handoff.h). problems() and stats() are
  // complete when read() returns. A file still being written (a growing
  // source, byte_source.h) is read up to its writer's end: the pass waits
  // at the end of what is there, and a frame the writer is inside is not
  // truncation.
  void read(const ChunkVisitor& visit, uint32_t max_frames = UINT32_MAX);

  // Whether read() may decode ahead on a second thread. Off by default: it
  // pays where the visitor does about as much work per record as decoding
  // (the analysis model: 1.3x on two cores), not where the visitor's work
  // dwarfs it and the two threads only share the caches (the JSON export:
  // 7 % slower; docs/performance.md).
  // `from_bytes`: the least trace size it is used for (a thread costs more
  // than it saves on a small trace; tests pass 0).
  void set_read_ahead(bool on, uint64_t from_bytes = kReadAheadFrom) {
    read_ahead_ = on;
    read_ahead_from_ = from_bytes;
  }
  static constexpr uint64_t kReadAheadFrom = uint64_t{4} << 20;
  // read() with read-ahead for this pass only, for a visitor about as costly
  // per record as decoding (the model, the report's timeline); the setting
  // is restored however the pass ends, a throwing visitor included.
  // `on_reading_thread`, when given, sees each chunk before `visit`, on the
  // thread that decoded it: work that needs only the chunk's records (the
  // summary's tallies), moved off the visiting thread, which is the busier
  // one. It must share nothing with `visit` until read() returns.
  void read_overlapped(const ChunkVisitor& visit, const ChunkVisitor& on_reading_thread = {}) {
    struct Restore {
      TraceReader& reader;
      bool was;
      ~Restore() {
        reader.read_ahead_ = was;
        reader.first_visit_ = nullptr;
      }
    } restore{*this, read_ahead_};
    read_ahead_ = true;
    first_visit_ = on_reading_thread ? &on_reading_thread : nullptr;
    read(visit);
  }

  const std::vector<Problem>& problems() const { return problems_; }
  const ReadStats& stats() const { return stats_; }
  // Passes read() has begun since open(): what a command costs in reads.
  uint32_t passes() const { return passes_; }
  bool has_corruption() const;

 private:
  enum class FrameResult { Ok, Truncated, Corrupt };
  // A damaged stretch a pass found: where reading resumed, and what the
  // pass recorded for it, replayed by later passes.
  struct Damage {
    uint64_t resume = 0;
    Problem problem;
    uint32_t frames = 0;
    int64_t sequence_after = -1;  // the sequence expected after it; -1: unchanged
    uint64_t work = 0;            // checking work it cost (damage_work_)
  };

  void start_pass();
  void finish_pass();
  void read_frames(ChunkSink& sink, uint32_t max_frames);
  void read_on_two_threads(const ChunkVisitor& visit, uint32_t max_frames);
  // Checks the frame at `offset` up to a verified chunk (in chunk_storage_);
  // says why not in *why. Records nothing.
  FrameResult load_frame(uint64_t offset, container::FrameHeader* header, std::string* why);
  bool load_payload(uint64_t offset, const container::FrameHeader& header, std::string* why);
  // `for_other_thread`: the records are visited on the other thread (read ahead).
  void decode(uint64_t offset, const container::FrameHeader& header, DecodedChunk& into, bool for_other_thread);
  uint64_t skip_damage(uint64_t offset, const std::string& why, uint64_t work_before, container::FrameHeader* next,
                       bool* next_loaded);
  void apply(const Damage& damage);
  bool jump_known_damage(uint64_t* offset);
  bool source_grew();
  uint64_t find_next_frame(uint64_t from);
  bool fill_window(uint64_t offset);
  bool read_bytes(uint64_t offset, void* out, size_t n);
  const uint8_t* decompress(uint32_t chunk_size, std::string* why);
  void add_problem(ProblemKind kind, uint64_t offset, std::string message);

  std::unique_ptr<ByteSource> source_;
  std::string name_;
  FileInfo info_;
  uint64_t first_frame_ = 0;
  std::vector<Problem> header_problems_;  // found by open(): every pass starts with them
  ReadStats stats_;
  std::vector<Problem> problems_;
  uint64_t suppressed_problems_ = 0;
  uint32_t expected_sequence_ = 0;
  uint64_t damage_work_ = 0;  // bytes checked, this pass, of frames that turned out damaged
  std::map<uint64_t, Damage> damage_;  // by offset; kept across passes
  uint32_t passes_ = 0;
  bool read_ahead_ = false;
  const ChunkVisitor* first_visit_ = nullptr;  // read_overlapped's on_reading_thread
  uint64_t read_ahead_from_ = kReadAheadFrom;
  std::vector<uint8_t> payload_;
  std::vector<uint8_t> window_;  // bytes of the file from window_at_, read while resynchronizing
  uint64_t window_at_ = 0;
  const fb::Chunk* chunk_ = nullptr;  // the loaded frame's, in chunk_storage_
  std::vector<uint64_t> chunk_storage_;  // 8-aligned: the verifier checks alignment
  ZSTD_DCtx* dctx_ = nullptr;
};

}  // namespace gpuscope::reader
