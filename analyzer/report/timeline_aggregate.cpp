#include "timeline_aggregate.h"

#include <algorithm>

namespace gpuscope::analyzer {

const char* span_category_name(SpanCategory c) {
  static const char* const kNames[kSpanCategories] = {
      "kernel", "copy HtoD", "copy DtoH", "copy DtoD", "copy (other)", "memset", "synchronization",
      "copy",   "allocation", "free",     "launch",    "initialization", "other CUDA call", "NVTX range"};
  const auto i = static_cast<size_t>(c);
  return i < kSpanCategories ? kNames[i] : "?";
}

LaneAggregator::LaneAggregator(uint64_t begin_ns, uint64_t end_ns, uint64_t bins, size_t max_blocks)
    : begin_(begin_ns), end_(std::max(end_ns, begin_ns + 1)), max_blocks_(std::max<size_t>(max_blocks, 1)) {
  gap_ = std::max<uint64_t>(1, (end_ - begin_) / std::max<uint64_t>(bins, 1));
}

void LaneAggregator::add(uint64_t start_ns, uint64_t duration_ns, SpanCategory category, int32_t label,
                         uint64_t bytes) {
  ++spans_;
  // Records outside the process's span (clock outliers, hostile input) are
  // drawn at its edges rather than dropped: their count still matters.
  const uint64_t start = std::clamp(start_ns, begin_, end_);
  const uint64_t end = std::clamp(start_ns + std::min(duration_ns, UINT64_MAX - start_ns), start, end_);
  // One bin per span (by its start), never split across bins: a long span
  // costs the same as a short one, and the bins it covers merge with it.
  Bin& b = bins_[(start - begin_) / gap_];
  b.start = std::min(b.start, start);
  b.end = std::max(b.end, end);
  b.busy += end - start;
  b.busy_by_category[static_cast<size_t>(category)] += static_cast<float>(end - start) + 1.0f;
  b.label = ++b.count == 1 ? label : -1;
  b.bytes = b.count == 1 ? bytes : 0;
}

void LaneAggregator::absorb(Bin& into, const Bin& from) {
  into.start = std::min(into.start, from.start);
  into.end = std::max(into.end, from.end);
  into.count += from.count;
  into.busy += from.busy;
  for (size_t i = 0; i < kSpanCategories; ++i) into.busy_by_category[i] += from.busy_by_category[i];
  into.label = into.count == 1 ? from.label : -1;
  into.bytes = into.count == 1 ? from.bytes : 0;
}

Block LaneAggregator::to_block(const Bin& b) {
  Block out;
  out.start_ns = b.start;
  out.end_ns = b.end;
  out.count = b.count;
  // Spans that overlap inside a lane (host-side records of one stream from
  // two threads) sum to more than the block: the block is busy throughout.
  out.busy_ns = std::min(b.busy, b.end - b.start);
  const auto top = std::max_element(b.busy_by_category.begin(), b.busy_by_category.end());
  out.category = static_cast<SpanCategory>(top - b.busy_by_category.begin());
  out.label = b.label;
  out.bytes = b.bytes;
  return out;
}

// Consecutive bins (by start) whose gap is at most `gap` become one.
std::vector<LaneAggregator::Bin> LaneAggregator::merge(const std::vector<Bin>& sorted, uint64_t gap) {
  std::vector<Bin> out;
  for (const Bin& b : sorted) {
    if (!out.empty() && b.start <= out.back().end + gap) absorb(out.back(), b);
    else out.push_back(b);
  }
  return out;
}

// Blocks that start in the same `width` of the trace (or overlap) become
// one: at most span / width + 1 blocks, evenly spread. Merging by a larger
// distance instead would collapse an evenly busy lane into a single block.
std::vector<LaneAggregator::Bin> LaneAggregator::coarsen(const std::vector<Bin>& sorted, uint64_t width) const {
  std::vector<Bin> out;
  for (const Bin& b : sorted) {
    if (!out.empty() &&
        (b.start <= out.back().end || (b.start - begin_) / width == (out.back().start - begin_) / width))
      absorb(out.back(), b);
    else
      out.push_back(b);
  }
  return out;
}

std::vector<Block> LaneAggregator::finish(size_t max_blocks) const {
  const size_t cap = std::max<size_t>(1, std::min(max_blocks, max_blocks_));
  std::vector<Bin> bins;
  bins.reserve(bins_.size());
  for (const auto& [index, b] : bins_) bins.push_back(b);
  std::sort(bins.begin(), bins.end(), [](const Bin& a, const Bin& b) { return a.start < b.start; });
  // Spans farther apart than the merge distance stay apart: a sparse lane
  // is drawn exactly.
  std::vector<Bin> merged = merge(bins, gap_);
  if (merged.size() > cap) merged = coarsen(merged, (end_ - begin_) / std::max<size_t>(1, cap - 1) + 1);
  std::vector<Block> out;
  out.reserve(merged.size());
  for (const Bin& b : merged) out.push_back(to_block(b));
  return out;
}

}  // namespace gpuscope::analyzer
