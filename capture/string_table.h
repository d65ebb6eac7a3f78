// Interned strings (function names, kernel names, thread names, NVTX
// messages). Ids are assigned once per process and never reused; a string is
// written to the trace in the first chunk after it was interned, so readers
// learn every id before (or in the same chunk as) the first record using it.
//
// intern() takes a mutex: it happens at registration time (hook tables,
// __cudaRegisterFunction, new threads), never per event. Strings that do
// arrive per event (NVTX messages) go through intern_hot(): lock-free and
// allocation-free (hot_strings.h), same id space.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hot_strings.h"

namespace gpuscope::capture {

class StringTable {
 public:
  // Returns the id of `text`, interning it if new. Id 0 means "none".
  uint32_t intern(std::string_view text);

  // Same, from the hot path: never blocks, never allocates; 0 when the
  // bounded hot table is full (the caller counts the loss).
  uint32_t intern_hot(std::string_view text, HotStrings::Miss* miss = nullptr) noexcept {
    return hot_.intern(text, next_id_, miss);
  }

  // Moves out the strings interned since the last call (writer thread).
  std::vector<std::pair<uint32_t, std::string>> take_pending();

  // Forgets nothing, but marks every string pending again: used when a new
  // trace file starts in the same process.
  void mark_all_pending();

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::pair<uint32_t, std::string>> pending_;
  bool hot_all_pending_ = false;  // mark_all_pending: collect every hot string again
  std::atomic<uint32_t> next_id_{1};
  HotStrings hot_;
};

}  // namespace gpuscope::capture
