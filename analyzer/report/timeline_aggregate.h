// Aggregation of one timeline lane to screen resolution, for the HTML
// report. A browser cannot draw ten million spans, and a 1400-pixel lane
// cannot show them apart anyway: spans closer than (trace span /
// kTimelineBins) are merged into one block that keeps how many spans it
// holds and their busy time, so nothing is lost from the totals, only from
// the detail. Spans may arrive in any order (threads' buffers are flushed
// independently), so they are binned by start time and merged at the end;
// memory grows with the touched bins (at most kTimelineBins per lane),
// never with the number of spans.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gpuscope::analyzer {

// What a span was: its colour and legend entry in the report.
enum class SpanCategory : uint8_t {
  Kernel, CopyH2D, CopyD2H, CopyD2D, CopyOther, Memset,  // device streams
  Sync, Copy, Alloc, Free, Launch, Init, OtherCall,       // host threads (outermost CUDA calls)
  Nvtx
};
inline constexpr size_t kSpanCategories = 14;
const char* span_category_name(SpanCategory c);

// Merge distance = trace span / kTimelineBins: about 15 bins per pixel of a
// full-screen lane, so the whole-trace view is exact to the pixel and
// zooming in 15x still shows real gaps.
inline constexpr uint64_t kTimelineBins = 20000;
// At most this many blocks per lane bounds the page's size and drawing time
// whatever the trace holds: beyond it, a lane's blocks are merged per
// 1/kMaxBlocksPerLane of the trace (still about 6 per pixel).
inline constexpr size_t kMaxBlocksPerLane = 8000;

struct Block {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t count = 0;    // spans merged into it
  uint64_t busy_ns = 0;  // their summed durations, at most end - start
  SpanCategory category = SpanCategory::OtherCall;  // the one with the most busy time
  int32_t label = -1;    // a single span's name (the caller's string index), else -1
  uint64_t bytes = 0;    // a single span's bytes (copies, memsets, allocations)
};

class LaneAggregator {
 public:
  LaneAggregator(uint64_t begin_ns, uint64_t end_ns, uint64_t bins = kTimelineBins,
                 size_t max_blocks = kMaxBlocksPerLane);
  void add(uint64_t start_ns, uint64_t duration_ns, SpanCategory category, int32_t label = -1, uint64_t bytes = 0);
  // Blocks sorted by start, disjoint, at most max_blocks (or the
  // constructor's cap, whichever is lower) of them.
  std::vector<Block> finish(size_t max_blocks = SIZE_MAX) const;
  uint64_t spans() const { return spans_; }
  uint64_t merge_gap_ns() const { return gap_; }

 private:
  struct Bin {
    uint64_t start = UINT64_MAX, end = 0, count = 0, busy = 0;
    std::array<float, kSpanCategories> busy_by_category{};  // float: only compared, never printed
    int32_t label = -1;
    uint64_t bytes = 0;
  };
  static void absorb(Bin& into, const Bin& from);
  static Block to_block(const Bin& b);
  static std::vector<Bin> merge(const std::vector<Bin>& sorted, uint64_t gap);
  std::vector<Bin> coarsen(const std::vector<Bin>& sorted, uint64_t width) const;

  uint64_t begin_, end_, gap_;
  size_t max_blocks_;
  uint64_t spans_ = 0;
  std::unordered_map<uint64_t, Bin> bins_;  // by (start - begin) / gap
};

}  // namespace gpuscope::analyzer
