// Delta coding of record vectors inside one chunk (docs/trace-format.md).
// Writer and reader share this file so the two directions cannot drift.
// Arithmetic is unsigned and wraps, so any bit pattern decodes without UB;
// the reader's semantic checks catch values that make no sense.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "gpuscope_generated.h"

namespace gpuscope::container {

template <class T>
concept HasCorrelationId = requires(T t) { t.correlation_id(); };

// Format 2.0 (kFlagCallLinked): a typed record the hooks write with its
// call (a host Copy, Sync, Kernel, ...) has the call's start, duration and
// correlation id. Such a record is stored "linked": its duration field holds
// kLinkedDuration and its start field the index of its call in the chunk's
// api_calls, so the times are on disk once. Linked indexes are delta-coded
// in their own chain, apart from the times of unlinked records.
inline constexpr uint64_t kLinkedDuration = ~uint64_t{0};

template <class T>
concept CallLinkable = HasCorrelationId<T> && requires(T t) { t.source(); };

template <class T> bool is_linked(const T& r) {
  if constexpr (CallLinkable<T>) return r.duration_ns() == kLinkedDuration;
  else return false;
}

template <class T> void delta_encode(std::span<T> records, uint64_t base_ns) {
  uint64_t previous_start = base_ns;
  uint64_t previous_index = 0;
  uint64_t previous_correlation = 0;
  for (T& r : records) {
    const uint64_t start = r.start_ns();
    if (is_linked(r)) {
      r.mutate_start_ns(start - previous_index);
      previous_index = start;
    } else {
      r.mutate_start_ns(start - previous_start);
      previous_start = start;
    }
    if constexpr (HasCorrelationId<T>) {
      const uint64_t id = r.correlation_id();
      r.mutate_correlation_id(id - previous_correlation);
      previous_correlation = id;
    }
  }
}

// `linked`: the file's kFlagCallLinked. Without it a duration of all ones is
// only a damaged value (the reader's checks drop the record), never a link.
template <class T> void delta_decode(std::span<T> records, uint64_t base_ns, bool linked) {
  uint64_t start = base_ns;
  uint64_t index = 0;
  uint64_t correlation = 0;
  for (T& r : records) {
    if (linked && is_linked(r)) {
      index += r.start_ns();
      r.mutate_start_ns(index);
    } else {
      start += r.start_ns();
      r.mutate_start_ns(start);
    }
    if constexpr (HasCorrelationId<T>) {
      correlation += r.correlation_id();
      r.mutate_correlation_id(correlation);
    }
  }
}

// Writer side, before delta coding: stores as linked every host record whose
// call is in `calls` with the same start, duration and correlation id. The
// drain appends a call and its typed record in the same order to their
// vectors, so each record's call is at or after the previous one's: a
// forward search, bounded so that a record whose call is in another chunk
// costs at most kLinkSearch comparisons.
template <class T> void link_to_calls(std::span<T> records, std::span<const fb::ApiCall> calls) {
  constexpr size_t kLinkSearch = 1024;
  size_t next = 0;
  for (T& r : records) {
    if (r.source() != fb::Source::Host || r.duration_ns() == kLinkedDuration) continue;
    const size_t end = std::min(calls.size(), next + kLinkSearch);
    for (size_t i = next; i < end; ++i) {
      const fb::ApiCall& c = calls[i];
      if (c.correlation_id() != r.correlation_id()) continue;
      if (c.start_ns() == r.start_ns() && c.duration_ns() == r.duration_ns()) {
        r.mutate_start_ns(i);
        r.mutate_duration_ns(kLinkedDuration);
        next = i;
      }
      break;
    }
  }
}

// Reader side, after delta decoding: gives linked records their call's
// times. An index past the calls (a damaged chunk) leaves the record with
// a duration of all ones, which the reader's checks drop and count.
template <class T> void resolve_call_links(std::span<T> records, std::span<const fb::ApiCall> calls) {
  for (T& r : records) {
    if (!is_linked(r) || r.start_ns() >= calls.size()) continue;
    const fb::ApiCall& c = calls[r.start_ns()];
    r.mutate_start_ns(c.start_ns());
    r.mutate_duration_ns(c.duration_ns());
  }
}

}  // namespace gpuscope::container
