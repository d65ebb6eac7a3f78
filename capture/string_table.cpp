#include "string_table.h"

namespace gpuscope::capture {

uint32_t StringTable::intern(std::string_view text) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = ids_.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = next_id_.fetch_add(1, std::memory_order_relaxed);
    pending_.emplace_back(it->second, it->first);
  }
  return it->second;
}

std::vector<std::pair<uint32_t, std::string>> StringTable::take_pending() {
  std::lock_guard lock(mutex_);
  // Under the mutex: HotStrings::collect has one caller at a time.
  hot_.collect(std::exchange(hot_all_pending_, false), &pending_);
  return std::exchange(pending_, {});
}

void StringTable::mark_all_pending() {
  std::lock_guard lock(mutex_);
  pending_.clear();
  for (const auto& [text, id] : ids_) pending_.emplace_back(id, text);
  hot_all_pending_ = true;
}

}  // namespace gpuscope::capture
