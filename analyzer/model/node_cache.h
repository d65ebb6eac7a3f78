// A small direct-mapped cache in front of a node-based hash map (whose
// elements never move once inserted): the model looks up a site or a thread
// for every call, and a program's loop calls the same few again and again.
// A hit is one compare instead of a hash, a division by the bucket count and
// a bucket walk.
#pragma once

#include <array>
#include <cstddef>
#include <functional>

namespace gpuscope::analyzer {

template <class Map, size_t kSlots = 256>
class NodeCache {
  static_assert((kSlots & (kSlots - 1)) == 0, "a power of two");

 public:
  using Key = typename Map::key_type;
  using Value = typename Map::mapped_type;

  explicit NodeCache(Map& map) : map_(map) {}
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  // map[key], inserting a value-initialized element when absent.
  Value& operator[](const Key& key) {
    Slot& slot = slots_[mix(typename Map::hasher{}(key)) & (kSlots - 1)];
    if (slot.value == nullptr || !(slot.key == key)) slot = {key, &map_[key]};
    return *slot.value;
  }

 private:
  struct Slot {
    Key key{};
    Value* value = nullptr;
  };
  // std::hash of an integer is the integer: spread it so that keys differing
  // in high bits do not share a slot.
  static size_t mix(size_t h) { return (h * 0x9E3779B97F4A7C15ull) >> 32; }

  Map& map_;
  std::array<Slot, kSlots> slots_{};
};

}  // namespace gpuscope::analyzer
