// The streams with work queued since their last synchronization, and
// whether each is blocking (the implicit-sync tally's). A program queues on
// a few streams and synchronizes often, so they are a short flat list: a
// hash map's clear() zeroed its buckets and freed its nodes at every
// synchronization, and that churn was a tenth of the tally. Past
// kFlatStreams (a damaged or hostile trace) a hash map takes over, so a
// lookup never walks thousands.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuscope::analyzer {

class QueuedStreams {
 public:
  static constexpr size_t kFlatStreams = 64;

  bool empty() const { return flat_.empty() && many_.empty(); }
  void set(uint64_t stream, bool blocking) {
    if (!many_.empty()) {
      many_[stream] = blocking;
      return;
    }
    for (auto& [s, b] : flat_)
      if (s == stream) {
        b = blocking;
        return;
      }
    if (flat_.size() < kFlatStreams) {
      flat_.emplace_back(stream, blocking);
      return;
    }
    many_.insert(flat_.begin(), flat_.end());
    many_[stream] = blocking;
    flat_.clear();
  }
  void erase(uint64_t stream) {
    if (!many_.empty()) {
      many_.erase(stream);
      return;
    }
    std::erase_if(flat_, [&](const auto& q) { return q.first == stream; });
  }
  void clear() {
    flat_.clear();
    many_.clear();
  }
  // Drops the blocking streams (a synchronous copy on the legacy stream waits for them).
  void erase_blocking() {
    std::erase_if(flat_, [](const auto& q) { return q.second; });
    std::erase_if(many_, [](const auto& q) { return q.second; });
  }
  // Whether a blocking stream other than `except` has work queued.
  bool blocking_other_than(uint64_t except) const {
    const auto other_blocking = [&](const auto& q) { return q.first != except && q.second; };
    return std::any_of(flat_.begin(), flat_.end(), other_blocking) ||
           std::any_of(many_.begin(), many_.end(), other_blocking);
  }

 private:
  std::vector<std::pair<uint64_t, bool>> flat_;
  std::unordered_map<uint64_t, bool> many_;  // only once flat_ would pass kFlatStreams
};

}  // namespace gpuscope::analyzer
