// A map from a string-table id (a kernel's or function's name) to a value.
// The trace's string table numbers names densely from 0, so ids below
// kDenseIds index a vector; an id far out (a hostile or damaged trace) goes
// to a hash map instead, so memory never follows a corrupt id. The model
// looks up a name's facts for every call and kernel: a hash and a division
// by the bucket count each time were a tenth of `analyze`.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gpuscope::analyzer {

template <class T>
class DenseIdMap {
 public:
  static constexpr uint32_t kDenseIds = 1u << 16;

  // The value for `id`, or null when none was made.
  T* find(uint32_t id) {
    if (id < kDenseIds) return id < dense_.size() && dense_[id] ? &*dense_[id] : nullptr;
    auto it = far_.find(id);
    return it != far_.end() ? &it->second : nullptr;
  }
  // The value for `id`, value-initialized when new.
  T& operator[](uint32_t id) {
    if (id >= kDenseIds) return far_[id];
    if (id >= dense_.size()) dense_.resize(id + 1);
    if (!dense_[id]) dense_[id].emplace();
    return *dense_[id];
  }
  // f(id, value) for every id given a value.
  template <class F> void for_each(F&& f) const {
    for (uint32_t id = 0; id < dense_.size(); ++id)
      if (dense_[id]) f(id, *dense_[id]);
    for (const auto& [id, value] : far_) f(id, value);
  }

 private:
  std::vector<std::optional<T>> dense_;
  std::unordered_map<uint32_t, T> far_;
};

}  // namespace gpuscope::analyzer
