// Deterministic trace bytes built with the real writer-side encoder, for
// reader tests, the fuzz corpus and benchmarks.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "chunk_builder.h"
#include "container.h"

namespace gpuscope::test {

struct SampleTrace {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> frame_offsets;  // where each frame starts
  std::vector<uint64_t> frame_ends;     // one past its padded payload
  uint64_t records = 0;
};

// A whole trace of one frame: the file header, then a chunk with `meta`,
// whatever `fill` adds (records, strings) and the end record `totals`.
inline std::vector<uint8_t> one_frame_trace(const capture::ProcessMetadata& meta, const capture::TotalsInfo& totals,
                                            const std::function<void(capture::ChunkBuilder&)>& fill) {
  const auto header = capture::file_header_bytes();
  std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(header.data()),
                             reinterpret_cast<const uint8_t*>(header.data()) + header.size());
  capture::ChunkBuilder b;
  b.set_metadata(meta);
  fill(b);
  b.set_totals(totals);
  capture::FrameEncoder encoder(1);
  const auto frame = encoder.encode(b.build(), 0);
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(frame.data()),
               reinterpret_cast<const uint8_t*>(frame.data()) + frame.size());
  return bytes;
}

// The same with a clean end at `end_ns`.
inline std::vector<uint8_t> one_frame_trace(const capture::ProcessMetadata& meta, uint64_t end_ns,
                                            const std::function<void(capture::ChunkBuilder&)>& fill) {
  capture::TotalsInfo totals;
  totals.end.kind = fb::EndKind::ReturnFromMain;
  totals.end_monotonic_ns = end_ns;
  return one_frame_trace(meta, totals, fill);
}

// Appends a realistic mix to `b`: per step one API call, plus a copy, sync,
// kernel or allocation for some, with timestamps a few microseconds apart.
inline uint64_t add_realistic_mix(capture::ChunkBuilder& b, uint64_t steps, uint64_t* clock,
                                  uint64_t* correlation, std::mt19937_64& rng) {
  uint64_t added = 0;
  for (uint64_t i = 0; i < steps; ++i) {
    const uint64_t start = *clock += 2'000 + rng() % 6'000;
    const uint64_t duration = 1'000 + rng() % 20'000;
    const uint64_t corr = ++*correlation;
    const uint32_t tid = 1000 + static_cast<uint32_t>(i % 4);
    b.add(fb::ApiCall(start, duration, corr, 0x7000 + (i % 4), tid, 1 + rng() % 8, 0,
                      1 + static_cast<uint32_t>(rng() % 12), 0, 0, 0, 0));
    ++added;
    switch (i % 5) {
      case 0:
        b.add(fb::Copy(start, duration, corr, 4096u << (rng() % 8), 0x7000, fb::CopyDirection::HostToDevice,
                       fb::MemoryKind::Pageable, fb::MemoryKind::Device, fb::Source::Host, 0, 0));
        ++added;
        break;
      case 1:
        b.add(fb::Sync(start, duration, corr, 0x7000, fb::SyncKind::Stream, fb::Source::Host, 0, 0));
        ++added;
        break;
      case 2:
        b.add(fb::Kernel(start, duration, corr, 0x7000, 20, 256, 1, 1, 128, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
        ++added;
        break;
      case 3:
        b.add(fb::Alloc(start, duration, corr, 0x7f0000000000 + i * 4096, 1 << 20, fb::AllocOp::Alloc,
                        fb::MemoryKind::Device, fb::Source::Host, 0, 0, 0));
        ++added;
        break;
      default: break;
    }
  }
  return added;
}

inline SampleTrace make_sample_trace(int frames, uint64_t steps_per_frame, uint64_t seed = 42) {
  SampleTrace t;
  const auto header = capture::file_header_bytes();
  t.bytes.insert(t.bytes.end(), reinterpret_cast<const uint8_t*>(header.data()),
                 reinterpret_cast<const uint8_t*>(header.data()) + header.size());
  capture::ChunkBuilder builder;
  capture::FrameEncoder encoder(1);
  std::mt19937_64 rng(seed);
  uint64_t clock = 1'000'000'000, correlation = 0;
  for (int f = 0; f < frames; ++f) {
    if (f == 0) {
      capture::ProcessMetadata m;
      m.pid = 4242;
      m.exe = "/opt/app/serve";
      m.argv = {"serve", "--port", "8080"};
      m.hostname = "node7";
      m.environment = {{"CUDA_VISIBLE_DEVICES", "0"}};
      m.gpuscope_version = "test";
      builder.set_metadata(m);
      std::vector<std::pair<uint32_t, std::string>> names;
      // API calls use ids 1..12: real CUDA names, so an analysis of this
      // trace (the golden reports) reads like one of a real program.
      static const char* const kNames[] = {"cudaMemcpy", "cudaStreamSynchronize", "__cudaLaunchKernel",
                                           "cudaMalloc", "cudaGetDevice", "cudaMemcpyAsync",
                                           "cudaDeviceSynchronize", "cudaFree", "cudaLaunchKernel",
                                           "cudaEventSynchronize", "cudaStreamQuery", "cudaMemset"};
      for (uint32_t id = 1; id <= 20; ++id)
        names.emplace_back(id, id <= 12 ? kNames[id - 1] : "function_" + std::to_string(id));
      builder.add_strings(names);
    }
    t.records += add_realistic_mix(builder, steps_per_frame, &clock, &correlation, rng);
    if (f == frames - 1) {
      capture::TotalsInfo totals;
      totals.end.kind = fb::EndKind::ReturnFromMain;
      totals.events_written = t.records;
      builder.set_totals(totals);
    }
    const auto frame = encoder.encode(builder.build(), static_cast<uint32_t>(f));
    builder.clear();
    t.frame_offsets.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), reinterpret_cast<const uint8_t*>(frame.data()),
                   reinterpret_cast<const uint8_t*>(frame.data()) + frame.size());
    t.frame_ends.push_back(t.bytes.size());
  }
  return t;
}

// n frames of 24 bytes, sequence numbers from `first_sequence`: intact
// headers with no payload, so each fails its payload check. A damaged
// stretch of the worst density for a reader that resynchronizes per frame.
inline std::vector<uint8_t> broken_frames(uint32_t first_sequence, size_t n) {
  std::vector<uint8_t> bytes(n * sizeof(container::FrameHeader));
  for (size_t i = 0; i < n; ++i) {
    const auto h = container::make_frame_header(0, 0, first_sequence + static_cast<uint32_t>(i), 0xBADC0DEu);
    std::memcpy(bytes.data() + i * sizeof h, &h, sizeof h);
  }
  return bytes;
}

}  // namespace gpuscope::test
