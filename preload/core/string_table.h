// Interned strings (function names, kernel names, thread names, NVTX
// messages). Ids are assigned once per process and never reused; a string is
// written to the trace in the first chunk after it was interned, so readers
// learn every id before (or in the same chunk as) the first record using it.
//
// Interning takes a mutex: it happens at registration time (hook tables,
// __cudaRegisterFunction, new threads), never per event.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuscope::capture {

class StringTable {
 public:
  // Returns the id of `text`, interning it if new. Id 0 means "none".
  uint32_t intern(std::string_view text);

  // Moves out the strings interned since the last call (writer thread).
  std::vector<std::pair<uint32_t, std::string>> take_pending();

  // Forgets nothing, but marks every string pending again: used when a new
  // trace file starts in the same process.
  void mark_all_pending();

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::pair<uint32_t, std::string>> pending_;
};

}  // namespace gpuscope::capture
