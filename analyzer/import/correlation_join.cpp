#include "correlation_join.h"

namespace gpuscope::importer {

void CorrelationJoin::add_call(uint64_t correlation, const PendingCall& call) {
  auto it = pending_.find(correlation);
  if (it != pending_.end() && it->second.work) {
    joined_(correlation, call, &*it->second.work);
    pending_.erase(it);
    return;
  }
  if (it != pending_.end()) {  // a second call with the id: the first one's work never came
    ++calls_without_work_;
    joined_(correlation, *it->second.call, nullptr);
    it->second.call = call;
    return;
  }
  make_room();
  pending_.emplace(correlation, Entry{call, std::nullopt});
  order_.push_back(correlation);
}

// A graph launch runs many device records under one id: the first one
// joins its call, the others have nothing left to join and are only counted
// when no call ever comes.
void CorrelationJoin::add_work(uint64_t correlation, const DeviceWork& work) {
  auto it = pending_.find(correlation);
  if (it != pending_.end() && it->second.call) {
    joined_(correlation, *it->second.call, &work);
    pending_.erase(it);
    return;
  }
  if (it != pending_.end()) return;  // already waiting with an earlier record of the id
  make_room();
  pending_.emplace(correlation, Entry{std::nullopt, work});
  order_.push_back(correlation);
}

void CorrelationJoin::make_room() {
  while (pending_.size() >= capacity_ && !order_.empty()) {
    const uint64_t oldest = order_.front();
    order_.pop_front();
    auto it = pending_.find(oldest);
    if (it != pending_.end()) give_up(it);  // else joined since
  }
  // Joined ids leave stale entries in order_; keep it from growing without
  // bound when nearly everything joins.
  if (order_.size() > 2 * capacity_ + 1024) {
    std::deque<uint64_t> live;
    for (uint64_t id : order_)
      if (pending_.count(id) != 0) live.push_back(id);
    order_.swap(live);
  }
}

void CorrelationJoin::flush() {
  for (uint64_t id : order_) {
    auto it = pending_.find(id);
    if (it != pending_.end()) give_up(it);
  }
  order_.clear();
}

// The entry's other half will not come: its call is handed out alone, or
// its device record counted as having no call.
void CorrelationJoin::give_up(Pending::iterator it) {
  if (it->second.call) {
    ++calls_without_work_;
    joined_(it->first, *it->second.call, nullptr);
  } else {
    ++work_without_call_;
  }
  pending_.erase(it);
}

}  // namespace gpuscope::importer
