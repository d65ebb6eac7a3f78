// Delta coding of record vectors inside one chunk (docs/trace-format.md).
// Writer and reader share this file so the two directions cannot drift.
// Arithmetic is unsigned and wraps, so any bit pattern decodes without UB;
// the reader's semantic checks catch values that make no sense.
#pragma once

#include <cstdint>
#include <span>

namespace gpuscope::container {

template <class T>
concept HasCorrelationId = requires(T t) { t.correlation_id(); };

template <class T> void delta_encode(std::span<T> records, uint64_t base_ns) {
  uint64_t previous_start = base_ns;
  uint64_t previous_correlation = 0;
  for (T& r : records) {
    const uint64_t start = r.start_ns();
    r.mutate_start_ns(start - previous_start);
    previous_start = start;
    if constexpr (HasCorrelationId<T>) {
      const uint64_t id = r.correlation_id();
      r.mutate_correlation_id(id - previous_correlation);
      previous_correlation = id;
    }
  }
}

template <class T> void delta_decode(std::span<T> records, uint64_t base_ns) {
  uint64_t start = base_ns;
  uint64_t correlation = 0;
  for (T& r : records) {
    start += r.start_ns();
    r.mutate_start_ns(start);
    if constexpr (HasCorrelationId<T>) {
      correlation += r.correlation_id();
      r.mutate_correlation_id(correlation);
    }
  }
}

}  // namespace gpuscope::container
