// Coalesced polls (format 1.3, docs/trace-format.md "Records"): an ApiCall
// whose `repeat` is above 1 stands for that many consecutive "not ready"
// answers of one query, and so does the Sync with its correlation id.
// Every count of calls goes through here; time figures use the record's
// span as they would any call's duration.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "trace_reader.h"

namespace gpuscope::reader {

// The calls an ApiCall stands for: 0 (every trace before 1.3) and 1 are one.
inline uint64_t calls_in(const fb::ApiCall& c) { return c.repeat() > 1 ? c.repeat() : 1; }

// The repeat of the calls typed records belong to, by correlation id. A
// call and its Sync travel together, but a drain or a frame may fall
// between them: the previous chunk's calls are kept too. Only coalesced
// calls are indexed (a few per chunk), so memory stays within two chunks.
class CallRepeats {
 public:
  // Once per chunk, before calls_of() for its records.
  void add(const ChunkView& v) {
    previous_.swap(current_);
    current_.clear();
    for (const auto& c : v.api_calls)
      if (c.repeat() > 1 && c.depth() == 0) current_[c.correlation_id()] = c.repeat();
  }
  // The calls a host Sync record stands for (device records: one).
  uint64_t calls_of(const fb::Sync& s) const {
    if (s.source() != fb::Source::Host || (current_.empty() && previous_.empty())) return 1;
    for (const auto* table : {&current_, &previous_})
      if (auto it = table->find(s.correlation_id()); it != table->end()) return it->second;
    return 1;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> current_, previous_;
};

}  // namespace gpuscope::reader
