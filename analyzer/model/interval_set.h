// A set of [start, end) intervals whose union length is what matters: GPU
// busy time from device records that arrive unordered (CUPTI buffers are
// per thread) and overlap (concurrent kernels). Appends are O(1); every
// so often the set is sorted and merged in place, so memory stays at 16
// bytes per disjoint interval at most.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpuscope::analyzer {

class IntervalSet {
 public:
  void add(uint64_t start, uint64_t end) {
    if (end <= start) return;
    spans_.emplace_back(start, end);
    if (spans_.size() >= compact_at_) {
      compact();
      compact_at_ = std::max<size_t>(kMinCompact, spans_.size() * 2);
    }
  }

  // Total length of the union.
  uint64_t length() const {
    compact();
    uint64_t total = 0;
    for (const auto& [s, e] : spans_) total += e - s;
    return total;
  }

  // Length of the union clipped to [from, to).
  uint64_t length_within(uint64_t from, uint64_t to) const {
    compact();
    uint64_t total = 0;
    for (const auto& [s, e] : spans_) {
      const uint64_t a = std::max(s, from), b = std::min(e, to);
      if (b > a) total += b - a;
    }
    return total;
  }

  // Length of the union clipped to a sorted list of disjoint spans (a
  // --range scope): one merge pass over both.
  uint64_t length_within(const std::vector<std::pair<uint64_t, uint64_t>>& scope) const {
    compact();
    uint64_t total = 0;
    size_t i = 0;
    for (const auto& [from, to] : scope) {
      while (i < spans_.size() && spans_[i].second <= from) ++i;
      for (size_t j = i; j < spans_.size() && spans_[j].first < to; ++j) {
        const uint64_t a = std::max(spans_[j].first, from), b = std::min(spans_[j].second, to);
        if (b > a) total += b - a;
      }
    }
    return total;
  }

  // Union with another set (for "any device activity").
  void add_all(const IntervalSet& other) {
    for (const auto& [s, e] : other.spans_) add(s, e);
  }

  bool empty() const { return spans_.empty(); }

  // The union as sorted, disjoint [start, end) spans.
  const std::vector<std::pair<uint64_t, uint64_t>>& spans() const {
    compact();
    return spans_;
  }

 private:
  static constexpr size_t kMinCompact = 1 << 16;

  // Const: merging changes the representation, not the set.
  void compact() const {
    if (spans_.empty()) return;
    std::sort(spans_.begin(), spans_.end());
    size_t out = 0;
    for (size_t i = 1; i < spans_.size(); ++i) {
      if (spans_[i].first <= spans_[out].second) {
        spans_[out].second = std::max(spans_[out].second, spans_[i].second);
      } else {
        spans_[++out] = spans_[i];
      }
    }
    spans_.resize(out + 1);
  }

  mutable std::vector<std::pair<uint64_t, uint64_t>> spans_;
  size_t compact_at_ = kMinCompact;
};

}  // namespace gpuscope::analyzer
