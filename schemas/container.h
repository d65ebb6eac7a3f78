// The gpuscope trace container: the byte layout around the FlatBuffer chunks.
// Shared by the writer (preload/) and the reader (analyzer/); nothing else is.
// docs/trace-format.md is the prose version of this file.
//
//   FileHeader (32 bytes)
//   Frame*     each: FrameHeader (24 bytes) + zstd payload + zero padding to 8
//
// A frame's payload is one zstd frame (with its content size) holding one
// FlatBuffer `gpuscope.fb.Chunk`, protected by the CRC-32C in the frame
// header. Frames start 8-byte aligned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu_features.h"

namespace gpuscope::container {

// Bump major for changes old readers cannot read; minor for additions they
// can skip (new Chunk fields, new vectors).
inline constexpr uint16_t kFormatMajor = 2;
// 1.1: NVTX marker kinds, StringTableFull drops, capture windows, Chunk.device_collection;
// 1.2: Chunk.call_counts; 1.3: Chunk.stack_capture, Totals.began_kind/began_status, EndKind.LastThreadExit,
// Chunk.graph_launches, ApiCall captured and Copy prefetch flags; 1.4: Chunk.host_samples, Chunk.host_sampling
// (CPU stack samples); 1.5: Chunk.import_source (traces imported from other profilers); 1.6: Chunk.python_codes,
// Chunk.python_stacks (Python frames in call stacks); 1.7: DeviceInfo VBIOS, persistence, power limits;
// 1.8: Chunk.process_gpu_samples, Chunk.gpu_processes (NVML per-process utilization).
// 2.0: host typed records linked to their calls (kFlagCallLinked): the same
// schema as 1.8, but a 1.x reader would take the links for times, so it must
// refuse these files. Readers of 2.x read every 1.x file.
// 2.1: MarkerKind.DeviceWindow (sampled device tracing).
// 2.2: ProcessMetadata.host_clock (how the hooks stamped calls).
// 2.3: Totals.tick_rate_restarts (the TSC's rate changed mid-run).
// 2.4: Alloc.flags kAllocPhysical (cuMemCreate / cuMemRelease, keyed by handle).
// 2.5: DropReason.StringSlotBusy (an NVTX message's slot still being filled by another thread).
inline constexpr uint16_t kFormatMinor = 5;

inline constexpr std::array<char, 8> kFileMagic = {'G', 'P', 'U', 'S', 'C', 'O', 'P', 'E'};
inline constexpr std::array<char, 4> kFrameMagic = {'G', 'S', 'F', 'R'};

// Header flags.
inline constexpr uint32_t kFlagDeltaCoded = 1u << 0;  // record timestamps/ids are delta-coded
inline constexpr uint32_t kFlagShuffled = 1u << 1;    // record vectors are byte-shuffled (byte_shuffle.h)
inline constexpr uint32_t kFlagCallLinked = 1u << 2;  // 2.0: typed records may be linked to calls (record_coding.h)
inline constexpr uint32_t kWriterFlags = kFlagDeltaCoded | kFlagShuffled | kFlagCallLinked;

// Hard limits the reader enforces before allocating anything.
inline constexpr uint32_t kMaxFramePayload = 64u << 20;   // compressed bytes
inline constexpr uint32_t kMaxChunkBytes = 128u << 20;    // decompressed bytes

struct FileHeader {
  char magic[8];
  uint16_t format_major;
  uint16_t format_minor;
  uint32_t header_size;  // sizeof(FileHeader) for 1.x; lets later versions grow it
  uint32_t flags;
  uint32_t reserved;
  uint32_t reserved2;
  uint32_t header_crc;   // CRC-32C of the 28 bytes before it
};
static_assert(sizeof(FileHeader) == 32);

struct FrameHeader {
  char magic[4];
  uint32_t payload_size;  // bytes of zstd data following this header
  uint32_t chunk_size;    // bytes of the decompressed FlatBuffer
  uint32_t sequence;      // 0, 1, 2, ... per file: gaps mean lost frames
  uint32_t payload_crc;   // CRC-32C of the payload_size bytes that follow
  uint32_t header_crc;    // CRC-32C of the 20 bytes before it
};
static_assert(sizeof(FrameHeader) == 24);

constexpr size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

// CRC-32C (Castagnoli). The SSE4.2 instruction does 8 bytes a cycle; the
// bytewise table is the portable twin and gives the same values. Checking
// the compressed payload costs a tenth of zstd's own checksum over the
// decompressed bytes (14 % of the writer's time, docs/performance.md), and
// finds every single-bit flip before anything is decompressed.
namespace detail {
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr auto kCrc32cTable = make_crc32c_table();
}  // namespace detail

inline uint32_t crc32c_portable(const void* data, size_t size) {
  auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = detail::kCrc32cTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline uint32_t crc32c_sse42(const void* data, size_t size) {
  auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = 0xFFFFFFFFu;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; size > 0; --size, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32 ^ 0xFFFFFFFFu;
}

#endif

inline uint32_t crc32c(const void* data, size_t size) {
#if defined(__x86_64__)
  if (cpu_has_sse42()) return crc32c_sse42(data, size);
#endif
  return crc32c_portable(data, size);
}

inline FileHeader make_file_header() {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic.data(), sizeof h.magic);
  h.format_major = kFormatMajor;
  h.format_minor = kFormatMinor;
  h.header_size = sizeof(FileHeader);
  h.flags = kWriterFlags;
  h.header_crc = crc32c(&h, offsetof(FileHeader, header_crc));
  return h;
}

inline FrameHeader make_frame_header(uint32_t payload_size, uint32_t chunk_size,
                                     uint32_t sequence, uint32_t payload_crc) {
  FrameHeader h{};
  std::memcpy(h.magic, kFrameMagic.data(), sizeof h.magic);
  h.payload_size = payload_size;
  h.chunk_size = chunk_size;
  h.sequence = sequence;
  h.payload_crc = payload_crc;
  h.header_crc = crc32c(&h, offsetof(FrameHeader, header_crc));
  return h;
}

inline bool frame_header_intact(const FrameHeader& h) {
  return std::memcmp(h.magic, kFrameMagic.data(), sizeof h.magic) == 0 &&
         h.header_crc == crc32c(&h, offsetof(FrameHeader, header_crc));
}

}  // namespace gpuscope::container
