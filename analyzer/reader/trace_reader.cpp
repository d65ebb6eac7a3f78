#include "trace_reader.h"

#include <zstd.h>

#include <cstring>

#include "record_checks.h"

namespace gpuscope::reader {
namespace {

using container::FileHeader;
using container::FrameHeader;

constexpr size_t kMaxListedProblems = 64;  // the rest are counted

std::string version_string(uint16_t major, uint16_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

const char* problem_kind_name(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::Truncated: return "truncated";
    case ProblemKind::CorruptFrame: return "corrupt frame";
    case ProblemKind::MissingFrames: return "missing frames";
    case ProblemKind::InvalidRecords: return "invalid records";
    case ProblemKind::NoTotals: return "no end record";
    case ProblemKind::NewerMinor: return "newer minor version";
  }
  return "problem";
}

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
  info_.flags = h.flags;
  stats_ = {};
  stats_.end_offset = h.header_size;
  if (h.format_minor > container::kFormatMinor)
    add_problem(ProblemKind::NewerMinor, 0,
                "written with format " + version_string(h.format_major, h.format_minor) +
                    ", this gpuscope reads " +
                    version_string(container::kFormatMajor, container::kFormatMinor) +
                    ": newer fields are ignored");
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

void TraceReader::read(const std::function<void(const ChunkView&)>& visit, uint32_t max_frames) {
  uint64_t offset = stats_.end_offset;
  while (offset < info_.size) {
    if (stats_.frames_read >= max_frames) return;
    uint64_t next = offset;
    const FrameResult r = read_frame(offset, &next, visit);
    if (r == FrameResult::Ok) {
      offset = next;
      stats_.end_offset = next;
      continue;
    }
    if (r == FrameResult::End || r == FrameResult::Truncated) break;
    ++stats_.frames_corrupt;
    const uint64_t resume = find_next_frame(offset + 8);
    if (resume >= info_.size) {
      stats_.bytes_skipped += info_.size - offset;
      break;
    }
    stats_.bytes_skipped += resume - offset;
    add_problem(ProblemKind::CorruptFrame, offset,
                "skipped " + std::to_string(resume - offset) +
                    " damaged bytes, resynchronized at offset " + std::to_string(resume));
    offset = resume;
  }
  if (suppressed_problems_ != 0)
    problems_.push_back({ProblemKind::CorruptFrame, 0,
                         std::to_string(suppressed_problems_) + " further problems not listed"});
  if (!stats_.saw_totals)
    problems_.push_back({ProblemKind::NoTotals, stats_.end_offset,
                         "no end-of-trace record after " + std::to_string(stats_.frames_read) +
                             " frames: the process was killed, crashed or is still running; "
                             "everything up to offset " + std::to_string(stats_.end_offset) +
                             " was read"});
}

TraceReader::FrameResult TraceReader::read_frame(uint64_t offset, uint64_t* next,
                                                 const std::function<void(const ChunkView&)>& visit) {
  FrameHeader h{};
  if (info_.size - offset < sizeof h) {
    add_problem(ProblemKind::Truncated, offset,
                "file ends " + std::to_string(info_.size - offset) +
                    " bytes into a frame header at offset " + std::to_string(offset));
    return FrameResult::Truncated;
  }
  source_->read(offset, &h, sizeof h);
  if (!container::frame_header_intact(h)) {
    add_problem(ProblemKind::CorruptFrame, offset,
                "corrupt frame at offset " + std::to_string(offset) + ": bad frame header");
    return FrameResult::Corrupt;
  }
  if (h.payload_size > container::kMaxFramePayload || h.chunk_size > container::kMaxChunkBytes) {
    add_problem(ProblemKind::CorruptFrame, offset,
                "corrupt frame at offset " + std::to_string(offset) + ": claims " +
                    std::to_string(h.payload_size) + " bytes (limit " +
                    std::to_string(container::kMaxFramePayload) + ")");
    return FrameResult::Corrupt;
  }
  const uint64_t payload_at = offset + sizeof h;
  const uint64_t padded = container::align8(h.payload_size);
  if (info_.size - payload_at < h.payload_size) {
    add_problem(ProblemKind::Truncated, offset,
                "file ends inside the frame at offset " + std::to_string(offset) + " (needs " +
                    std::to_string(h.payload_size) + " bytes, " +
                    std::to_string(info_.size - payload_at) + " present)");
    return FrameResult::Truncated;
  }
  payload_.resize(h.payload_size);
  source_->read(payload_at, payload_.data(), h.payload_size);
  *next = std::min<uint64_t>(payload_at + padded, info_.size);
  if (h.sequence != expected_sequence_) {
    if (h.sequence > expected_sequence_)
      add_problem(ProblemKind::MissingFrames, offset,
                  std::to_string(h.sequence - expected_sequence_) + " frame(s) missing before offset " +
                      std::to_string(offset));
    else
      add_problem(ProblemKind::CorruptFrame, offset,
                  "frame at offset " + std::to_string(offset) + " repeats sequence number " +
                      std::to_string(h.sequence));
  }
  expected_sequence_ = h.sequence + 1;
  return decode_chunk(offset, h, visit) ? FrameResult::Ok : FrameResult::Corrupt;
}

bool TraceReader::decode_chunk(uint64_t offset, const FrameHeader& h,
                               const std::function<void(const ChunkView&)>& visit) {
  const auto corrupt = [&](const std::string& why) {
    add_problem(ProblemKind::CorruptFrame, offset, "corrupt frame at offset " + std::to_string(offset) + ": " + why);
    return false;
  };
  if (container::crc32c(payload_.data(), payload_.size()) != h.payload_crc)
    return corrupt("payload checksum mismatch");
  const unsigned long long content = ZSTD_getFrameContentSize(payload_.data(), payload_.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN || content != h.chunk_size)
    return corrupt("compressed payload does not match the frame header");
  std::string why;
  const uint8_t* chunk_bytes = decompress(h.chunk_size, &why);
  if (chunk_bytes == nullptr) return corrupt(why);
  flatbuffers::Verifier verifier(chunk_bytes, h.chunk_size, /*max_depth=*/16, /*max_tables=*/1'000'000);
  if (!fb::VerifyChunkBuffer(verifier)) return corrupt("chunk fails FlatBuffer verification");
  const fb::Chunk* chunk = fb::GetChunk(chunk_bytes);
  DecodedRecords records;
  const uint64_t invalid =
      decode_records(*chunk, (info_.flags & container::kFlagShuffled) != 0, &records);
  if (invalid != 0) {
    stats_.records_invalid += invalid;
    add_problem(ProblemKind::InvalidRecords, offset,
                std::to_string(invalid) + " record(s) with impossible values skipped in the frame at offset " +
                    std::to_string(offset));
  }
  ++stats_.frames_read;
  if (chunk->totals() != nullptr) stats_.saw_totals = true;
  ChunkView view;
  view.offset = offset;
  view.sequence = h.sequence;
  view.chunk = chunk;
  records.fill_view(&view);
  visit(view);
  return true;
}

TraceReader::~TraceReader() { ZSTD_freeDCtx(dctx_); }

// Streams the payload into a buffer that grows only as real output appears:
// a hostile header claiming 100 MiB costs nothing unless the data really
// decompresses that far. zstd verifies the content checksum at the end.
const uint8_t* TraceReader::decompress(uint32_t chunk_size, std::string* why) {
  if (dctx_ == nullptr) dctx_ = ZSTD_createDCtx();
  ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 27);  // <= 128 MiB window
  size_t capacity = std::min<size_t>(chunk_size, size_t{1} << 20);
  chunk_storage_.resize(capacity / 8 + 1);
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
    chunk_storage_.resize(capacity / 8 + 1);
    out.dst = chunk_storage_.data();
    out.size = capacity;
  }
  if (out.pos != chunk_size || in.pos != in.size) {
    *why = "decompressed size differs from the frame header";
    return nullptr;
  }
  return reinterpret_cast<const uint8_t*>(chunk_storage_.data());
}

uint64_t TraceReader::find_next_frame(uint64_t from) {
  constexpr size_t kBlock = 1 << 20;
  uint64_t pos = container::align8(from);
  while (pos + sizeof(FrameHeader) <= info_.size) {
    // Overlap blocks by one header so a header across a boundary is found.
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock + sizeof(FrameHeader), info_.size - pos));
    scan_buffer_.resize(n);
    if (!source_->read(pos, scan_buffer_.data(), n)) break;
    for (size_t i = 0; i + sizeof(FrameHeader) <= n; i += 8) {
      FrameHeader h;
      std::memcpy(&h, scan_buffer_.data() + i, sizeof h);
      if (container::frame_header_intact(h)) return pos + i;
    }
    if (n < kBlock + sizeof(FrameHeader)) break;
    pos += kBlock;
  }
  return info_.size;
}

}  // namespace gpuscope::reader
