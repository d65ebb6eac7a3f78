// Keeps complete ("X") events on one track properly nested, as the
// trace-event format requires (a child inside its parent, never a partial
// overlap), while events stream out in file order with bounded memory.
#pragma once

#include <cstdint>
#include <cstddef>
#include <vector>

namespace gpuscope::exporter {

// Host calls on a thread arrive in the order they ended: a hook writes its
// record when the call returns, so a driver call's record comes before the
// runtime call around it. Given that order, the outermost spans emitted so
// far are disjoint and sorted, and a new span either contains the latest
// ones (it is their parent) or starts after them. Anything else comes from
// damaged input or skewed clocks: a partial overlap is clamped, and a span
// that ended before one already emitted cannot be placed (the caller turns
// it into an instant event).
class NestGuard {
 public:
  enum class Placed { Ok, Clamped, Rejected };

  // May move *start later (never past end).
  Placed place(uint64_t* start, uint64_t end) {
    if (size_ != 0 && (end < back().end || (end == back().end && *start > back().start))) return Placed::Rejected;
    while (size_ != 0 && back().start >= *start) --size_;  // its children
    Placed result = Placed::Ok;
    const uint64_t floor = size_ == 0 ? frontier_ : back().end;
    if (*start < floor) {
      *start = floor;
      result = Placed::Clamped;
    }
    if (size_ == kKept) {
      // Forget the oldest; no later span may reach back past it.
      frontier_ = at(0).end;
      first_ = (first_ + 1) & mask();
      --size_;
    }
    if (size_ == outer_.size()) grow();
    at(size_++) = {*start, end};
    return result;
  }

 private:
  static constexpr size_t kKept = 64;  // a power of two, as every size of the ring
  struct Span {
    uint64_t start, end;
  };
  size_t mask() const { return outer_.size() - 1; }
  Span& at(size_t i) { return outer_[(first_ + i) & mask()]; }
  const Span& back() const { return outer_[(first_ + size_ - 1) & mask()]; }
  void grow() {  // by doubling, to kKept: most tracks hold a few spans
    std::vector<Span> larger(outer_.empty() ? 4 : 2 * outer_.size());
    for (size_t i = 0; i < size_; ++i) larger[i] = at(i);
    outer_.swap(larger);
    first_ = 0;
  }
  // The outermost spans emitted, disjoint, by time: a ring, since the
  // oldest is forgotten on every call once it is full (erasing the front
  // of a vector moved the other 63 each time).
  std::vector<Span> outer_;
  size_t first_ = 0, size_ = 0;
  uint64_t frontier_ = 0;
};

// Device activity on one stream does not overlap, but records whose clocks
// were fitted can (a few ns of skew): a record that starts before the
// previous one on its lane ended goes to the next lane of that stream,
// and past the last lane it is clamped to start where that lane is free.
class StreamLanes {
 public:
  static constexpr unsigned kLanes = 4;
  struct Slot {
    unsigned lane = 0;
    uint64_t start = 0;  // possibly clamped
    bool clamped = false;
  };
  Slot place(uint64_t start, uint64_t end) {
    for (unsigned lane = 0; lane < kLanes; ++lane)
      if (start >= free_at_[lane]) {
        free_at_[lane] = end;
        return {lane, start, false};
      }
    const unsigned last = kLanes - 1;
    const uint64_t clamped = end > free_at_[last] ? free_at_[last] : end;
    free_at_[last] = end > free_at_[last] ? end : free_at_[last];
    return {last, clamped, true};
  }

 private:
  uint64_t free_at_[kLanes] = {};
};

}  // namespace gpuscope::exporter
