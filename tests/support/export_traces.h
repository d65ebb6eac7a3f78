// Hand-built traces for the exporter tests (tests/analyzer/test_export.cpp,
// test_perfetto_export.cpp): frames of chunks as the writer encodes them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chunk_builder.h"
#include "container.h"

namespace gpuscope::test {

constexpr uint64_t kT0 = 5'000'000'000;  // process start (monotonic ns)
constexpr uint64_t kCorr = (uint64_t{1} << 40) | 7;

// Frames of hand-made chunks, as the writer would encode them.
class TraceBytes {
 public:
  TraceBytes() {
    const auto header = capture::file_header_bytes();
    append(header.data(), header.size());
  }
  capture::ChunkBuilder& chunk() { return *builder_; }
  void frame() {
    const auto f = encoder_->encode(builder_->build(), sequence_++);
    builder_->clear();
    frame_offsets.push_back(bytes.size());
    append(f.data(), f.size());
  }
  std::vector<uint8_t> bytes;
  std::vector<size_t> frame_offsets;

 private:
  template <class T> void append(const T* p, size_t n) {
    bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(p), reinterpret_cast<const uint8_t*>(p) + n);
  }
  std::unique_ptr<capture::ChunkBuilder> builder_ = std::make_unique<capture::ChunkBuilder>();
  std::unique_ptr<capture::FrameEncoder> encoder_ = std::make_unique<capture::FrameEncoder>(1);
  uint32_t sequence_ = 0;
};

inline fb::Marker marker(uint64_t at, fb::MarkerKind kind, uint32_t name, uint32_t tid, uint64_t id = 0, uint32_t domain = 0) {
  return fb::Marker(at, 0, id, name, domain, tid, kind, 0, 0);
}

// One process (pid 777) on a simulated GPU with CUPTI active: a launch
// (runtime call around a driver call, the driver call's record first, as
// hooks write them), its kernel on the device, an overlapping kernel
// (clock skew), NVTX ranges, an allocation and a GPU sample.
inline TraceBytes flow_and_nvtx_trace(bool with_end = true) {
  TraceBytes t;
  auto& b = t.chunk();
  capture::ProcessMetadata m;
  m.pid = 777;
  m.exe = "/opt/app/train";
  m.start_monotonic_ns = kT0;
  m.gpuscope_version = "test";
  b.set_metadata(m);
  b.add_strings({{1, "cudaLaunchKernel"}, {2, "cuLaunchKernel"}, {3, "gemm<float>"}, {4, "outer"}, {5, "inner"},
                 {6, "async \"phase\"\n\xff"}, {7, "cudaMalloc"}, {8, "my.domain"}, {9, "worker"}});
  container::DeviceCollectionData dc;
  dc.state = static_cast<uint8_t>(fb::DeviceCollectionState::Active);
  b.set_device_collection(dc);
  container::DeviceDescription dev;
  dev.index = 0;
  dev.name = "simgpu H200 (simulated)";
  b.add_device(dev);
  const uint32_t tid = 11;
  b.add(fb::ApiCall(kT0 + 500, 20, 99, 0, tid, 0, 0, 7, 0, 0, 0, 0));          // cudaMalloc, ended first
  b.add(fb::ApiCall(kT0 + 1010, 80, kCorr, 0x70, tid, 0, 0, 2, 1, 1, 0, 0));   // driver, inside
  b.add(fb::ApiCall(kT0 + 1000, 100, kCorr, 0x70, tid, 0, 0, 1, 0, 0, 0, 0));  // runtime launch
  b.add(fb::Kernel(kT0 + 1000, 100, kCorr, 0x70, 3, 8, 1, 1, 128, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
  b.add(fb::Kernel(kT0 + 1200, 100, kCorr, 0x70, 3, 8, 1, 1, 128, 1, 1, 0, 0, fb::Source::Device, 0, 0, 0));
  b.add(fb::Kernel(kT0 + 1290, 100, 0, 0x70, 3, 8, 1, 1, 128, 1, 1, 0, 0, fb::Source::Device, 0, 0, 0));
  b.add(marker(kT0 + 900, fb::MarkerKind::RangePush, 4, tid));
  b.add(marker(kT0 + 950, fb::MarkerKind::RangePush, 5, tid));
  b.add(marker(kT0 + 1150, fb::MarkerKind::RangePop, 0, tid));
  b.add(marker(kT0 + 960, fb::MarkerKind::RangePush, 5, tid, 0, 8));  // another domain: a row of its own
  b.add(marker(kT0 + 1000, fb::MarkerKind::RangeStart, 6, tid, 42));
  b.add(marker(kT0 + 1100, fb::MarkerKind::ThreadName, 9, 12));
  b.add(marker(kT0 + 1100, fb::MarkerKind::RangePop, 0, 12));  // nothing open on thread 12
  b.add(fb::Marker(kT0 + 100, 5000, 0, 0, 0, 0, fb::MarkerKind::CaptureWindow, 0, 0));
  b.add(fb::Alloc(kT0 + 500, 20, 99, 0x7f0000, 1 << 20, fb::AllocOp::Alloc, fb::MemoryKind::Device,
                  fb::Source::Host, 0, 0, 0));
  fb::GpuSample g(kT0 + 700, 1 << 30, 0, 100, 200, 0, 1u | 2u | 4u, 1980, 2619, 0, 60, 40, 10, 0xFF, 0xFF, 0, 0);
  b.add(g);
  t.frame();
  // Second frame: the end of the start/end range on another thread, the
  // pop of "outer" (the domain's range stays open: unterminated).
  t.chunk().add(marker(kT0 + 2000, fb::MarkerKind::RangeEnd, 0, 12, 42));
  t.chunk().add(marker(kT0 + 3000, fb::MarkerKind::RangePop, 0, tid));
  if (with_end) {
    capture::TotalsInfo totals;
    totals.end.kind = fb::EndKind::ReturnFromMain;
    totals.end_monotonic_ns = kT0 + 6000;
    t.chunk().set_totals(totals);
  }
  t.frame();
  return t;
}

}  // namespace gpuscope::test
