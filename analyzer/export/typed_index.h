// One chunk's host typed records (copies, syncs, allocations, ...) by
// correlation id, for their API calls to take. Every call looks here, so
// it is a flat open-addressed table of small entries that point at the
// records where the chunk's view has them, instead of a hash map with a
// node (a malloc and a copy) per record: the map's finds and erases were a
// sixth of the export's walk. What no call of the chunk took is copied out
// (adopt_left) before the view goes, for the next chunk's calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "gpuscope_generated.h"

namespace gpuscope::exporter {

// A host-side typed record (copy, sync, ...) waiting for its API call.
using TypedRecord = std::variant<fb::Copy, fb::Memset, fb::Kernel, fb::Sync, fb::Alloc, fb::GraphLaunch>;

class TypedIndex {
 public:
  // `r` must stay where it is until clear(). The first record of an id
  // wins; later ones of the same id are dropped, as they always were.
  template <class Record> void add(uint64_t correlation, const Record& r) {
    if (2 * (entries_.size() + 1) > slots_.size()) rebuild(slots_.empty() ? kFirstSlots : 2 * slots_.size());
    uint32_t* slot = find_slot(correlation);
    if (*slot != 0) return;
    entries_.push_back({correlation, &r, kind_of<Record>(), false});
    *slot = static_cast<uint32_t>(entries_.size());
  }
  std::optional<TypedRecord> take(uint64_t correlation) {
    if (entries_.empty()) return std::nullopt;
    const uint32_t slot = *find_slot(correlation);
    if (slot == 0 || entries_[slot - 1].taken) return std::nullopt;
    entries_[slot - 1].taken = true;
    return load(entries_[slot - 1], std::make_index_sequence<std::variant_size_v<TypedRecord>>());
  }
  // f(record) for each record no call took, in file order.
  template <class F> void for_each_left(F&& f) const {
    for (const Entry& e : entries_)
      if (!e.taken) f(load(e, std::make_index_sequence<std::variant_size_v<TypedRecord>>()));
  }
  // Becomes what `other` holds and no call took, as copies of its own.
  void adopt_left(const TypedIndex& other) {
    clear();
    other.for_each_left([&](const TypedRecord&) { ++kept_; });
    owned_.reserve(kept_);  // entries point into it: no reallocation after this
    other.for_each_left([&](const TypedRecord& r) {
      const uint64_t correlation = std::visit([](const auto& x) { return x.correlation_id(); }, r);
      owned_.push_back(r);
      std::visit([&](const auto& x) { add(correlation, x); }, owned_.back());
    });
  }
  void clear() {
    entries_.clear();
    owned_.clear();
    kept_ = 0;
    std::fill(slots_.begin(), slots_.end(), 0);
  }

 private:
  struct Entry {
    uint64_t correlation;
    const void* record;
    uint8_t kind;  // its alternative in TypedRecord
    bool taken;
  };
  static constexpr size_t kFirstSlots = 1024;
  static constexpr size_t kMaxProbes = 32;

  template <class Record, size_t I = 0> static constexpr uint8_t kind_of() {
    if constexpr (std::is_same_v<std::variant_alternative_t<I, TypedRecord>, Record>) return I;
    else return kind_of<Record, I + 1>();
  }
  template <size_t... I> static TypedRecord load(const Entry& e, std::index_sequence<I...>) {
    TypedRecord out;
    ((e.kind == I ? (out.emplace<I>(*static_cast<const std::variant_alternative_t<I, TypedRecord>*>(e.record)), 0)
                  : 0),
     ...);
    return out;
  }
  // A runtime hands correlation ids out in order, so the id's low bits
  // place a chunk's records side by side, and calls, which come in about
  // the same order, find theirs in the cache. Ids that cluster anyway (a
  // hostile trace) switch the table to a multiplicative hash for good.
  uint32_t* find_slot(uint64_t correlation) {
    const size_t mask = slots_.size() - 1;
    size_t i = scrambled_ ? (correlation * 0x9E3779B97F4A7C15ull) >> shift_ : correlation & mask;
    for (size_t probes = 0;; ++probes, i = (i + 1) & mask) {
      uint32_t& s = slots_[i];
      if (s == 0 || entries_[s - 1].correlation == correlation) return &s;
      if (probes == kMaxProbes && !scrambled_) {
        scrambled_ = true;
        rebuild(slots_.size());
        return find_slot(correlation);
      }
    }
  }
  void rebuild(size_t size) {
    slots_.assign(size, 0);
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(size));
    for (size_t i = 0; i < entries_.size(); ++i) *find_slot(entries_[i].correlation) = static_cast<uint32_t>(i + 1);
  }

  std::vector<Entry> entries_;   // in file order
  std::vector<uint32_t> slots_;  // 0: empty, else 1 + the entry's index
  std::vector<TypedRecord> owned_;
  size_t kept_ = 0;
  unsigned shift_ = 0;
  bool scrambled_ = false;
};

}  // namespace gpuscope::exporter
