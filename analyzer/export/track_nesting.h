// Keeps complete ("X") events on one track properly nested, as the
// trace-event format requires (a child inside its parent, never a partial
// overlap), while events stream out in file order with bounded memory.
#pragma once

#include <cstdint>
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
    if (!outer_.empty() && (end < outer_.back().end || (end == outer_.back().end && *start > outer_.back().start)))
      return Placed::Rejected;
    while (!outer_.empty() && outer_.back().start >= *start) outer_.pop_back();  // its children
    Placed result = Placed::Ok;
    const uint64_t floor = outer_.empty() ? frontier_ : outer_.back().end;
    if (*start < floor) {
      *start = floor;
      result = Placed::Clamped;
    }
    outer_.push_back({*start, end});
    if (outer_.size() > kKept) {
      // Forget the oldest; no later span may reach back past it.
      frontier_ = outer_.front().end;
      outer_.erase(outer_.begin());
    }
    return result;
  }

 private:
  static constexpr size_t kKept = 64;
  struct Span {
    uint64_t start, end;
  };
  std::vector<Span> outer_;  // outermost spans emitted, disjoint, by time
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
