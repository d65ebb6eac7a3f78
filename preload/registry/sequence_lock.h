// A sequence lock for the registries: tables that writers (allocation,
// instantiate hooks: rare, and already microseconds long) change under a
// mutex, and hot-path hooks read without a lock. A reader reads, then
// checks that no writer ran meanwhile, and reads again if one did.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuscope::registry {

class SequenceLock {
 public:
  // Marks a writer's change (the writer holds the table's mutex): readers
  // that overlap it read again.
  class Write {
   public:
    explicit Write(SequenceLock& lock) noexcept : lock_(lock) {
      lock_.sequence_.fetch_add(1, std::memory_order_acq_rel);  // odd: readers retry
    }
    ~Write() { lock_.sequence_.fetch_add(1, std::memory_order_release); }
    Write(const Write&) = delete;
    Write& operator=(const Write&) = delete;

   private:
    SequenceLock& lock_;
  };

  // `read()` (relaxed loads only) as of a moment no writer was active;
  // `fallback` when writers kept changing the table (an honest "unknown").
  template <class T, class Read> T read(Read&& read, T fallback) const noexcept {
    for (int attempt = 0; attempt < 64; ++attempt) {
      const uint64_t before = sequence_.load(std::memory_order_acquire);
      if (before & 1) continue;  // a writer is mid-change
      T value = read();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (sequence_.load(std::memory_order_relaxed) == before) return value;
    }
    return fallback;
  }

 private:
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace gpuscope::registry
