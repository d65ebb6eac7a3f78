// Single-producer single-consumer byte ring carrying fixed-size records.
//
// The producer is one traced thread (the hot path): it copies a record (or a
// group of records that must stay together) in and publishes it with one
// release store. No lock, no allocation, no syscall.
// When the ring is full the record is refused and the caller counts the drop:
// the traced program never waits for gpuscope.
//
// The consumer is the writer thread. Each record is an 8-byte header plus a
// payload whose size is a multiple of 8; a record never wraps: at the end of
// the buffer a Padding header fills the rest and the record starts at 0.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "record_types.h"

namespace gpuscope::capture {

struct RingRecordHeader {
  RecordType type;
  uint8_t flags;  // kRecordInTicks
  uint8_t reserved[2];
  uint32_t payload_size;
};

// The record's start_ns/duration_ns hold TSC ticks (clock.h); the writer
// converts them to nanoseconds.
inline constexpr uint8_t kRecordInTicks = 1;
static_assert(sizeof(RingRecordHeader) == 8);

namespace detail {
// Whether pushes ask for their lines ahead with PREFETCHW (ring.cpp).
extern std::atomic<bool> g_prefetch_for_write;
}
// Reads CPUID once, when capture starts, before any push: PREFETCHW
// (Broadwell and later, every AMD64) is not an instruction everywhere.
void choose_ring_prefetch() noexcept;

class SpscRing {
 public:
  // How far ahead of the head a push asks for lines: a fetch for ownership
  // from the writer's core takes a few hundred ns in a VM, and a call
  // without a stack pushes 48 bytes every ~30 ns, so 256 bytes (five such
  // pushes) arrived late; 1024 and 4096 measured alike (docs/performance.md,
  // thirteenth session).
  static constexpr size_t kPrefetchAhead = 1024;

  // `memory` must be 8-byte aligned, `capacity` a power of two >= 64.
  void attach(std::byte* memory, size_t capacity) noexcept {
    data_ = memory;
    capacity_ = capacity;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_tail_ = 0;
  }

  size_t capacity() const noexcept { return capacity_; }

  // One record of a group pushed together.
  struct Part {
    RecordType type;
    const void* payload;
    uint32_t size;
  };

  // Producer side. Returns false (and writes nothing) when there is no room.
  bool try_push(RecordType type, const void* payload, uint32_t payload_size, uint8_t flags = 0) noexcept {
    return try_push_all<1>({Part{type, payload, payload_size}}, flags);
  }

  // Producer side: the records back to back, published with one store, or
  // none of them (false) when they do not all fit. A call and its typed
  // record go in together, so backpressure never keeps one without the
  // other.
  template <size_t N> bool try_push_all(const std::array<Part, N>& parts, uint8_t flags = 0) noexcept {
    size_t total = 0;
    for (const Part& p : parts) total += sizeof(RingRecordHeader) + p.size;
    return push_slow(parts.data(), N, total, flags);
  }

  // The same for records whose types are known here: the hot path's. Always
  // inlined, so each record is copied by a few 8-byte moves (a memcpy of a
  // non-constant size, or of one the compiler chose not to expand, is a call
  // of its own). The common case, room without wrapping as the producer's
  // cached view of the tail shows, is a mask, two compares and the stores;
  // wrapping and reading the consumer's tail again are in push_slow.
  template <class... T>
  __attribute__((always_inline)) bool try_push_records(uint8_t flags, const T&... records) noexcept {
    static_assert(((sizeof(T) % 8 == 0) && ...), "ring records are whole 8-byte words");
    constexpr size_t total = ((sizeof(RingRecordHeader) + sizeof(T)) + ...);
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t capacity = capacity_;
    const size_t pos = head & (capacity - 1);
    if (__builtin_expect(capacity - pos < total || head + total - cached_tail_ > capacity, 0)) {
      const std::array<Part, sizeof...(T)> parts{Part{RecordTag<T>::value, &records, sizeof(T)}...};
      return push_slow(parts.data(), parts.size(), total, flags);
    }
    std::byte* at = data_ + pos;
    ((put_record(at, RecordTag<T>::value, flags, records), at += sizeof(RingRecordHeader) + sizeof(T)), ...);
    publish(head + total);
    prefetch_ahead<(total + 63) / 64>(data_, capacity, head + total);
    return true;
  }

  // Consumer side: calls f(type, payload, size, flags) for published records (at
  // most max_records of them), then frees their space. Returns how many
  // records were delivered.
  template <class F> size_t drain(F&& f, size_t max_records = SIZE_MAX) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    size_t delivered = 0;
    while (tail < head && delivered < max_records) {
      const size_t pos = tail & (capacity_ - 1);
      RingRecordHeader h;
      std::memcpy(&h, data_ + pos, sizeof h);
      if (h.type != RecordType::Padding) {
        f(h.type, data_ + pos + sizeof h, h.payload_size, h.flags);
        ++delivered;
      }
      tail += sizeof h + h.payload_size;
    }
    tail_.store(tail, std::memory_order_release);
    return delivered;
  }

  // Consumer side, batched: hands f(std::span<const std::byte>) the published
  // records as at most two contiguous runs of whole records (header and
  // payload each, Padding included; after a wrap the second run starts at
  // offset 0). f returns how many leading bytes it consumed, always at a
  // record boundary; a run not consumed in full ends the drain. The consumed
  // space is freed with one store. Returns the bytes consumed.
  template <class F> size_t drain_runs(F&& f) {
    const uint64_t first = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t tail = first;
    while (tail < head) {
      const size_t pos = tail & (capacity_ - 1);
      const size_t len = static_cast<size_t>(std::min<uint64_t>(head - tail, capacity_ - pos));
      const size_t used = f(std::span<const std::byte>(data_ + pos, len));
      tail += used;
      if (used < len) break;
    }
    tail_.store(tail, std::memory_order_release);
    return static_cast<size_t>(tail - first);
  }

  // Bytes ever published (producer side) and ever freed (consumer side):
  // positions that only grow, for telling whether the consumer has taken
  // everything the producer had pushed by some point.
  uint64_t produced() const noexcept { return head_.load(std::memory_order_relaxed); }
  uint64_t consumed() const noexcept { return tail_.load(std::memory_order_relaxed); }

  bool empty() const noexcept {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }

 private:
  static void write_header(std::byte* to, RecordType type, uint8_t flags, uint32_t payload_size) noexcept {
    const RingRecordHeader h{type, flags, {}, payload_size};
    std::memcpy(to, &h, sizeof h);
  }

  template <class T> static void put_record(std::byte* to, RecordType type, uint8_t flags, const T& record) noexcept {
    write_header(to, type, flags, sizeof(T));
    copy_words(to + sizeof(RingRecordHeader), &record, std::make_index_sequence<sizeof(T) / 8>{});
  }
  template <size_t... I> static void copy_words(std::byte* to, const void* from, std::index_sequence<I...>) noexcept {
    const auto* src = static_cast<const std::byte*>(from);
    ((copy_word(to + 8 * I, src + 8 * I)), ...);
  }
  static void copy_word(std::byte* to, const std::byte* from) noexcept {
    uint64_t w;
    std::memcpy(&w, from, sizeof w);
    std::memcpy(to, &w, sizeof w);
  }

  void publish(uint64_t head) noexcept {
    head_.store(head, std::memory_order_release);
  }

  // By the time the producer comes back to a line, the writer has read it
  // on its core: the record's stores then wait for the line to come back
  // and for the writer's copy to be invalidated (~45 % of a launch hook's
  // time, docs/performance.md). A push therefore asks, kPrefetchAhead on,
  // for as many lines as it filled (a launch's 136 bytes span more than
  // two), and asks for them to own (PREFETCHW): a plain prefetch brings a
  // shared copy and the store still waits for the invalidation. Each half
  // alone measured nothing; together they took a fifth off what the
  // library adds to a launch-bound loop (docs/performance.md, thirteenth
  // session).
  // The CPU's choice is read once per push, not once per line: compilers
  // do not merge atomic loads.
  template <size_t Lines>
  __attribute__((always_inline)) static void prefetch_ahead(std::byte* data, size_t capacity, uint64_t head) noexcept {
    const bool to_own = detail::g_prefetch_for_write.load(std::memory_order_relaxed);
    [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
      (prefetch_for_write(data + ((head + kPrefetchAhead - 1 - 64 * I) & (capacity - 1)), to_own), ...);
    }(std::make_index_sequence<Lines>{});
  }
  __attribute__((always_inline)) static void prefetch_for_write(const std::byte* line, bool to_own) noexcept {
#if defined(__x86_64__)
    if (__builtin_expect(to_own, 1)) {
      asm volatile("prefetchw %0" ::"m"(*line));
      return;
    }
#else
    (void)to_own;
#endif
    __builtin_prefetch(line, 1, 3);
  }

  // try_push_all when the group does not fit before the end of the buffer
  // (padding, then from 0) or the cached tail says there is no room (read
  // the consumer's tail again). Out of line: once per lap of the ring.
  __attribute__((noinline)) bool push_slow(const Part* parts, size_t count, size_t total, uint8_t flags) noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t pos = head & (capacity_ - 1);
    const size_t to_end = capacity_ - pos;
    const size_t needed = total + (to_end < total ? to_end : 0);
    if (head + needed - cached_tail_ > capacity_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head + needed - cached_tail_ > capacity_) return false;
    }
    uint64_t at = head;
    if (to_end < total) {  // fill the end with padding and start over at 0
      write_header(data_ + pos, RecordType::Padding, 0, static_cast<uint32_t>(to_end - sizeof(RingRecordHeader)));
      at += to_end;
    }
    for (size_t i = 0; i < count; ++i) {  // the group never wraps: it starts where all of it fits
      const size_t start = at & (capacity_ - 1);
      write_header(data_ + start, parts[i].type, flags, parts[i].size);
      std::memcpy(data_ + start + sizeof(RingRecordHeader), parts[i].payload, parts[i].size);
      at += sizeof(RingRecordHeader) + parts[i].size;
    }
    publish(at);
    prefetch_ahead<1>(data_, capacity_, at);
    return true;
  }

  // head_ and the producer's cached view of tail_ share a cache line; tail_
  // lives on its own so the two sides do not false-share.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace gpuscope::capture
