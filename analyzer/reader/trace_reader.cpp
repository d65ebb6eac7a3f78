#include "trace_reader.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

#include "chunk_handoff.h"
#include "progress.h"
#include "record_checks.h"

namespace gpuscope::reader {
namespace {

using container::FileHeader;
using container::FrameHeader;

constexpr size_t kMaxListedProblems = 64;  // the rest are counted
constexpr size_t kWindowBytes = size_t{1} << 20;
constexpr size_t kMaxRememberedDamage = size_t{1} << 14;  // stretches; later ones are found again per pass

std::string version_string(uint16_t major, uint16_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

bool TraceReader::open_file(const std::string& path, std::string* error) {
  auto source = open_file_source(path, error);
  return source != nullptr && open(std::move(source), path, error);
}

bool TraceReader::open(std::unique_ptr<ByteSource> source, const std::string& name,
                       std::string* error) {
  source_ = std::move(source);
  name_ = name;
  info_ = {};
  info_.size = source_->size();
  damage_.clear();
  passes_ = 0;
  header_problems_.clear();
  window_.clear();
  FileHeader h{};
  if (!source_->read(0, &h, sizeof h) ||
      std::memcmp(h.magic, container::kFileMagic.data(), sizeof h.magic) != 0) {
    *error = name + " is not a gpuscope trace (no gpuscope file header at offset 0)";
    return false;
  }
  if (h.header_crc != container::crc32c(&h, offsetof(FileHeader, header_crc))) {
    *error = name + ": the file header is corrupt (checksum mismatch at offset 0)";
    return false;
  }
  if (h.format_major > container::kFormatMajor) {
    *error = name + ": trace format " + version_string(h.format_major, h.format_minor) +
             " is newer than this gpuscope supports (" +
             version_string(container::kFormatMajor, container::kFormatMinor) +
             "); read it with a newer gpuscope";
    return false;
  }
  if (h.format_major < 1 || h.header_size < sizeof h || h.header_size > info_.size ||
      h.header_size % 8 != 0) {
    *error = name + ": the file header is invalid (format " +
             version_string(h.format_major, h.format_minor) + ", header size " +
             std::to_string(h.header_size) + ")";
    return false;
  }
  info_.format_major = h.format_major;
  info_.format_minor = h.format_minor;
  // Links are a 2.x coding: in a 1.x header the bit is damage, not a promise.
  info_.flags = h.format_major < 2 ? h.flags & ~container::kFlagCallLinked : h.flags;
  first_frame_ = h.header_size;
  if (h.format_major == container::kFormatMajor && h.format_minor > container::kFormatMinor)
    header_problems_.push_back({ProblemKind::NewerMinor, 0,
                                "written with format " + version_string(h.format_major, h.format_minor) +
                                    ", this gpuscope reads " +
                                    version_string(container::kFormatMajor, container::kFormatMinor) +
                                    ": newer fields are ignored"});
  start_pass();
  return true;
}

void TraceReader::add_problem(ProblemKind kind, uint64_t offset, std::string message) {
  if (problems_.size() >= kMaxListedProblems) {
    ++suppressed_problems_;
    return;
  }
  problems_.push_back({kind, offset, std::move(message)});
}

bool TraceReader::has_corruption() const {
  for (const Problem& p : problems_)
    if (p.kind == ProblemKind::CorruptFrame) return true;
  return stats_.frames_corrupt != 0;
}

void TraceReader::start_pass() {
  stats_ = {};
  stats_.end_offset = first_frame_;
  problems_ = header_problems_;
  suppressed_problems_ = 0;
  expected_sequence_ = 0;
  damage_work_ = 0;
}

void TraceReader::finish_pass() {
  if (suppressed_problems_ != 0)
    problems_.push_back({ProblemKind::Unlisted, 0,
                         "... and " + plural(suppressed_problems_, "further problem", "further problems") +
                             " not listed"});
  if (!stats_.saw_totals)
    problems_.push_back({ProblemKind::NoTotals, stats_.end_offset,
                         "the process was killed, crashed or is still running; " +
                             plural(stats_.frames_read, "frame", "frames") + " up to offset " +
                             std::to_string(stats_.end_offset) + " were read"});
}

namespace {

// One thread: visit each chunk as soon as it is decoded. Each gets fresh
// record vectors, as before the two-thread reader: keeping them from chunk
// to chunk changed the heap the visitor allocates in, and the export's
// hash-map joins ran 14 % slower for it.
struct VisitNow final : ChunkSink {
  std::unique_ptr<DecodedChunk> chunk;
  const ChunkVisitor& visit;
  ProgressStage& progress;
  VisitNow(const ChunkVisitor& v, ProgressStage& p) : ChunkSink(false), visit(v), progress(p) {}
  DecodedChunk* take() override {
    chunk = std::make_unique<DecodedChunk>();
    return chunk.get();
  }
  void put(DecodedChunk* c) override {
    visit(c->view());
    progress.advance(c->end_offset);
  }
};

// Two threads: hand each decoded chunk over to the visiting thread.
struct HandOver final : ChunkSink {
  ChunkHandoff& handoff;
  explicit HandOver(ChunkHandoff& h) : ChunkSink(true), handoff(h) {}
  std::unique_ptr<DecodedChunk> held;
  DecodedChunk* take() override {
    held = handoff.take_empty();
    return held.get();
  }
  void put(DecodedChunk*) override { handoff.hand_over(std::move(held)); }
};

constexpr size_t kChunksInFlight = 2;  // one visited while the next is read: the least that overlaps
bool two_cores() { return std::thread::hardware_concurrency() > 1; }

}  // namespace

void TraceReader::read(const ChunkVisitor& visit, uint32_t max_frames) {
  start_pass();
  ++passes_;
  if (read_ahead_ && info_.size >= read_ahead_from_ && two_cores()) return read_on_two_threads(visit, max_frames);
  const std::string label = progress_label("reading", name_);
  ProgressStage progress(passes_ == 1 ? label : label + " (pass " + std::to_string(passes_) + ")", info_.size);
  VisitNow sink(visit, progress);
  read_frames(sink, max_frames);
}

// The visitor runs here, on the calling thread, as on one thread; the
// frames are read, checked and decoded on another. Its problems and stats
// are the reader's own, written by that thread and read once it is joined.
void TraceReader::read_on_two_threads(const ChunkVisitor& visit, uint32_t max_frames) {
  const std::string label = progress_label("reading", name_);
  ProgressStage progress(passes_ == 1 ? label : label + " (pass " + std::to_string(passes_) + ")", info_.size);
  ChunkHandoff handoff(kChunksInFlight);
  std::exception_ptr reading_failed;  // no memory for a chunk, say: rethrown here as on one thread
  std::thread reading([&] {
    try {
      HandOver sink(handoff);
      read_frames(sink, max_frames);
    } catch (...) {
      reading_failed = std::current_exception();
    }
    handoff.finish();
  });
  try {
    while (auto chunk = handoff.next()) {
      visit(chunk->view());
      progress.advance(chunk->end_offset);
      handoff.give_back(std::move(chunk));
    }
  } catch (...) {
    handoff.stop();
    reading.join();
    throw;
  }
  reading.join();
  if (reading_failed) std::rethrow_exception(reading_failed);
}

void TraceReader::read_frames(ChunkSink& sink, uint32_t max_frames) {
  uint64_t offset = first_frame_;
  FrameHeader h{};
  bool loaded = false;  // the frame at `offset` was loaded while skipping damage
  while (offset < info_.size || source_grew()) {
    if (stats_.frames_read >= max_frames) return;
    if (!loaded) {
      if (jump_known_damage(&offset)) continue;
      const uint64_t work_before = damage_work_;
      std::string why;
      const FrameResult r = load_frame(offset, &h, &why);
      if (r == FrameResult::Truncated && source_grew()) continue;  // the writer was inside this frame
      if (r == FrameResult::Truncated) {
        add_problem(ProblemKind::Truncated, offset, why);
        break;
      }
      if (r == FrameResult::Corrupt) {
        offset = skip_damage(offset, why, work_before, &h, &loaded);
        continue;
      }
    }
    loaded = false;
    DecodedChunk* chunk = sink.take();
    if (chunk == nullptr) return;  // the visitor stopped
    decode(offset, h, *chunk, sink.keeps_bytes);
    if (sink.keeps_bytes) chunk->storage.swap(chunk_storage_);  // no copy; buffers reused pass after pass
    const uint64_t frame_end = offset + sizeof h + container::align8(h.payload_size);
    while (frame_end > info_.size && source_grew()) {
    }  // a growing file's next frame starts after this one's padding, once written
    offset = std::min<uint64_t>(frame_end, info_.size);
    stats_.end_offset = offset;
    chunk->end_offset = offset;
    if (first_visit_ != nullptr) (*first_visit_)(chunk->view());  // on this, the reading thread
    sink.put(chunk);
  }
  finish_pass();
}

// A file still being written (ByteSource::wait_for_growth): the reader
// waits at its end for the rest. The size may also shrink (a writer that
// failed cuts a half-written frame off) and grow again.
bool TraceReader::source_grew() {
  uint64_t size = 0;
  if (!source_->wait_for_growth(info_.size, &size)) return false;
  info_.size = size;
  return true;
}

// From the damaged frame at `offset` to the next frame that reads whole (or
// the end): one problem for the stretch, however many broken frames it
// holds. The frame found is left loaded in *next (*next_loaded).
uint64_t TraceReader::skip_damage(uint64_t offset, const std::string& why, uint64_t work_before, FrameHeader* next,
                                  bool* next_loaded) {
  Damage d;
  d.frames = 1;
  *next_loaded = false;
  std::string ignored;
  uint64_t resume = find_next_frame(offset + 8);
  for (; resume < info_.size; ++d.frames) {
    const FrameResult r = load_frame(resume, next, &ignored);
    if (r != FrameResult::Corrupt) {  // a truncated frame is reported when the pass reaches it
      *next_loaded = r == FrameResult::Ok;
      break;
    }
    // Past a budget of checking work, a frame whose checked header claims a
    // payload is taken at its word: no frame is looked for inside that
    // payload, so overlapping forged headers cannot make the scan quadratic.
    const bool spent = damage_work_ > 2 * info_.size + kWindowBytes;
    resume = find_next_frame(spent ? resume + sizeof *next + container::align8(next->payload_size) : resume + 8);
  }
  std::string text = why + "; skipped " + plural(resume - offset, "byte", "bytes");
  if (d.frames > 1) text += " (" + std::to_string(d.frames) + " damaged frames)";
  if (*next_loaded) {
    text += " to the next good frame at offset " + std::to_string(resume);
    if (next->sequence > expected_sequence_) {
      text += ", " + plural(next->sequence - expected_sequence_, "frame", "frames") + " lost";
      d.sequence_after = next->sequence;
    }
  } else {
    text += resume >= info_.size ? " to the end of the file (no frame header after it)"
                                 : " to offset " + std::to_string(resume);
  }
  d.resume = resume;
  d.problem = {ProblemKind::CorruptFrame, offset, std::move(text)};
  d.work = damage_work_ - work_before;
  apply(d);
  if (damage_.size() < kMaxRememberedDamage) damage_.emplace(offset, std::move(d));
  return resume;
}

void TraceReader::apply(const Damage& d) {
  add_problem(d.problem.kind, d.problem.offset, d.problem.message);
  stats_.frames_corrupt += d.frames;
  stats_.bytes_skipped += d.resume - d.problem.offset;
  if (d.sequence_after >= 0) expected_sequence_ = static_cast<uint32_t>(d.sequence_after);
}

// A later pass: the same record and the same budget spent as the first
// pass's, so that what follows reads the same too.
bool TraceReader::jump_known_damage(uint64_t* offset) {
  const auto known = damage_.find(*offset);
  if (known == damage_.end()) return false;
  apply(known->second);
  damage_work_ += known->second.work;
  *offset = known->second.resume;
  return true;
}

// Everything that can fail about a frame, in order of cost; records nothing.
TraceReader::FrameResult TraceReader::load_frame(uint64_t offset, FrameHeader* h, std::string* why) {
  if (info_.size - offset < sizeof *h) {
    *why = "the file ends " + plural(info_.size - offset, "byte", "bytes") + " into a frame header";
    return FrameResult::Truncated;
  }
  if (!read_bytes(offset, h, sizeof *h) || !container::frame_header_intact(*h)) {
    *why = "bad frame header";
    return FrameResult::Corrupt;
  }
  // Compare each claim with its own limit.
  if (h->payload_size > container::kMaxFramePayload) {
    *why = "the frame header claims a payload of " + std::to_string(h->payload_size) +
           " bytes (the limit is " + std::to_string(container::kMaxFramePayload) + ")";
    return FrameResult::Corrupt;
  }
  if (h->chunk_size > container::kMaxChunkBytes) {
    *why = "the frame header claims a chunk of " + std::to_string(h->chunk_size) +
           " bytes decompressed (the limit is " + std::to_string(container::kMaxChunkBytes) + ")";
    return FrameResult::Corrupt;
  }
  const uint64_t present = info_.size - offset - sizeof *h;
  if (present < h->payload_size) {
    *why = "the file ends inside the frame (its payload needs " + std::to_string(h->payload_size) + " bytes, " +
           std::to_string(present) + " are present)";
    return FrameResult::Truncated;
  }
  return load_payload(offset + sizeof *h, *h, why) ? FrameResult::Ok : FrameResult::Corrupt;
}

bool TraceReader::load_payload(uint64_t at, const FrameHeader& h, std::string* why) {
  damage_work_ += h.payload_size;  // given back below when the frame is good
  payload_.resize(h.payload_size);
  if (!read_bytes(at, payload_.data(), h.payload_size)) {
    *why = "the payload cannot be read";
    return false;
  }
  if (container::crc32c(payload_.data(), payload_.size()) != h.payload_crc) {
    *why = "payload checksum mismatch";
    return false;
  }
  const unsigned long long content = ZSTD_getFrameContentSize(payload_.data(), payload_.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN || content != h.chunk_size) {
    *why = "compressed payload does not match the frame header";
    return false;
  }
  damage_work_ += h.chunk_size;
  const uint8_t* chunk_bytes = decompress(h.chunk_size, why);
  if (chunk_bytes == nullptr) return false;
  flatbuffers::Verifier verifier(chunk_bytes, h.chunk_size, /*max_depth=*/16, /*max_tables=*/1'000'000);
  if (!fb::VerifyChunkBuffer(verifier)) {
    *why = "chunk fails FlatBuffer verification";
    return false;
  }
  damage_work_ -= uint64_t{h.payload_size} + h.chunk_size;
  chunk_ = fb::GetChunk(chunk_bytes);
  return true;
}

// The loaded frame's records into `into`; `into.chunk` is the loaded chunk.
void TraceReader::decode(uint64_t offset, const FrameHeader& h, DecodedChunk& into, bool for_other_thread) {
  if (h.sequence > expected_sequence_)
    add_problem(ProblemKind::MissingFrames, offset,
                plural(h.sequence - expected_sequence_, "frame", "frames") + " missing before this one");
  else if (h.sequence < expected_sequence_)
    add_problem(ProblemKind::CorruptFrame, offset, "repeats sequence number " + std::to_string(h.sequence));
  expected_sequence_ = h.sequence + 1;
  const uint64_t invalid = decode_records(*chunk_, info_.flags, &into.records, for_other_thread);
  if (invalid != 0) {
    stats_.records_invalid += invalid;
    add_problem(ProblemKind::InvalidRecords, offset,
                plural(invalid, "record", "records") + " with impossible values skipped");
  }
  ++stats_.frames_read;
  if (chunk_->totals() != nullptr) stats_.saw_totals = true;
  into.offset = offset;
  into.sequence = h.sequence;
  into.chunk = chunk_;
}
TraceReader::TraceReader() = default;
TraceReader::~TraceReader() { ZSTD_freeDCtx(dctx_); }

// Streams the payload into a buffer that grows only as real output appears:
// a hostile header claiming 100 MiB costs nothing unless the data really
// decompresses that far. zstd verifies the content checksum at the end.
const uint8_t* TraceReader::decompress(uint32_t chunk_size, std::string* why) {
  if (dctx_ == nullptr) dctx_ = ZSTD_createDCtx();
  ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 27);  // <= 128 MiB window
  // Start from what earlier frames grew the buffer to (at least 1 MiB, at
  // most what the header claims): shrinking it and growing it again
  // zeroed megabytes per frame (5 % of the reading thread).
  const size_t held = chunk_storage_.size() * 8;
  size_t capacity = std::min<size_t>(chunk_size, std::max<size_t>(held, size_t{1} << 20));
  if (chunk_storage_.size() < capacity / 8 + 1) chunk_storage_.resize(capacity / 8 + 1);
  ZSTD_inBuffer in{payload_.data(), payload_.size(), 0};
  ZSTD_outBuffer out{chunk_storage_.data(), capacity, 0};
  for (;;) {
    const size_t r = ZSTD_decompressStream(dctx_, &out, &in);
    if (ZSTD_isError(r)) {
      *why = std::string("decompression failed: ") + ZSTD_getErrorName(r);
      return nullptr;
    }
    if (r == 0) break;  // frame complete
    if (out.pos < out.size) {
      if (in.pos == in.size) {
        *why = "compressed payload ends early";
        return nullptr;
      }
      continue;
    }
    if (capacity >= chunk_size) {
      *why = "payload decompresses to more than the frame header says";
      return nullptr;
    }
    capacity = std::min<size_t>(capacity * 2, chunk_size);
    if (chunk_storage_.size() < capacity / 8 + 1) chunk_storage_.resize(capacity / 8 + 1);
    out.dst = chunk_storage_.data();
    out.size = capacity;
  }
  if (out.pos != chunk_size || in.pos != in.size) {
    *why = "decompressed size differs from the frame header";
    return nullptr;
  }
  return reinterpret_cast<const uint8_t*>(chunk_storage_.data());
}

// The first intact frame header at an 8-aligned offset >= from, or the file
// size. Bytes come through the window, so the many searches of one damaged
// stretch read each byte once; holes are skipped unread, and candidates are
// found with memchr on the magic's first byte, so a run of zeros (or of any
// byte but 'G') costs memchr's speed.
uint64_t TraceReader::find_next_frame(uint64_t from) {
  constexpr size_t kHeader = sizeof(FrameHeader);
  uint64_t pos = container::align8(from);
  while (pos < info_.size && info_.size - pos >= kHeader) {
    const bool in_window = pos >= window_at_ && pos - window_at_ + kHeader <= window_.size();
    if (!in_window) {
      pos = container::align8(source_->next_data(pos));  // a hole holds no frame magic
      if (pos >= info_.size || info_.size - pos < kHeader || !fill_window(pos)) break;
    }
    const uint8_t* const base = window_.data();
    const size_t last = window_.size() - kHeader;  // the last start whose header fits
    for (size_t i = pos - window_at_; i <= last;) {
      const void* hit = std::memchr(base + i, container::kFrameMagic[0], last + 1 - i);
      if (hit == nullptr) break;
      i = static_cast<size_t>(static_cast<const uint8_t*>(hit) - base);
      FrameHeader h;
      std::memcpy(&h, base + i, kHeader);
      if ((window_at_ + i) % 8 == 0 && container::frame_header_intact(h)) return window_at_ + i;
      ++i;
    }
    pos = container::align8(window_at_ + last + 1);  // the next start that did not fit
  }
  return info_.size;
}

bool TraceReader::fill_window(uint64_t offset) {
  const size_t n = static_cast<size_t>(std::min<uint64_t>(kWindowBytes, info_.size - offset));
  window_.resize(n);
  window_at_ = offset;
  if (source_->read(offset, window_.data(), n)) return true;
  window_.clear();
  return false;
}

// Small reads inside damage come from the window; the rest from the source.
bool TraceReader::read_bytes(uint64_t offset, void* out, size_t n) {
  if (n == 0) return true;  // an empty payload: `out` may be null
  if (offset >= window_at_ && offset - window_at_ <= window_.size() && n <= window_.size() - (offset - window_at_)) {
    std::memcpy(out, window_.data() + (offset - window_at_), n);
    return true;
  }
  return source_->read(offset, out, n);
}

}  // namespace gpuscope::reader
