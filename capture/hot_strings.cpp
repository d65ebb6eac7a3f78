#include "hot_strings.h"

#include <sys/mman.h>

#include <cstring>
#include <span>

namespace gpuscope::capture {
namespace {

// FNV-1a, never 0 (0 marks a free slot).
uint64_t hash_text(std::string_view text) noexcept {
  uint64_t h = 1469598103934665603ull;
  for (const char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h | 1;
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

HotStrings::HotStrings() noexcept {
  void* mem = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return;
  slots_ = static_cast<Slot*>(mem);
  arena_ = static_cast<char*>(mem) + kSlots * sizeof(Slot);
}

HotStrings::~HotStrings() {
  if (slots_ != nullptr) munmap(slots_, kMappedBytes);
}

std::string_view HotStrings::truncate(std::string_view text) noexcept {
  if (text.size() <= kMaxTextBytes) return text;
  size_t n = kMaxTextBytes;
  // Never cut a UTF-8 sequence: back off continuation bytes (10xxxxxx).
  while (n > 0 && (static_cast<uint8_t>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

uint32_t HotStrings::intern(std::string_view text, std::atomic<uint32_t>& next_id, Miss* miss) noexcept {
  text = truncate(text);
  if (text.empty()) return 0;
  Miss ignored;
  if (miss == nullptr) miss = &ignored;
  *miss = Miss::TableFull;
  if (slots_ == nullptr) return 0;
  const uint64_t h = hash_text(text);
  for (uint32_t probe = 0; probe < kProbeLimit; ++probe) {
    Slot& slot = slots_[(h + probe) & (kSlots - 1)];
    uint64_t seen = hash_of(slot).load(std::memory_order_acquire);
    if (seen == 0) {
      if (hash_of(slot).compare_exchange_strong(seen, h, std::memory_order_acq_rel)) return fill(slot, text, next_id);
      // Lost the race for this slot: `seen` now holds the winner's hash.
    }
    if (seen != h) continue;
    const uint32_t id = await_published(slot);
    if (id == kFilling) *miss = Miss::SlotBusy;
    if (id == kFilling || id == kUnusable) return 0;
    if (holds(slot, text)) return id;
  }
  return 0;
}

uint32_t HotStrings::fill(Slot& slot, std::string_view text, std::atomic<uint32_t>& next_id) noexcept {
  const auto n = static_cast<uint32_t>(text.size());
  const uint32_t offset = arena_used_.fetch_add(n, std::memory_order_relaxed);
  if (offset > kArenaBytes - n) {
    id_of(slot).store(kUnusable, std::memory_order_release);  // the slot stays taken, the arena is spent
    return 0;
  }
  std::memcpy(arena_ + offset, text.data(), n);
  slot.offset = offset;
  slot.length = n;
  const uint32_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  id_of(slot).store(id, std::memory_order_release);
  published_.fetch_add(1, std::memory_order_release);
  return id;
}

// Another thread claimed the slot and is copying its text (a few hundred
// bytes): wait a bounded number of spins, never block.
uint32_t HotStrings::await_published(Slot& slot) const noexcept {
  uint32_t id = id_of(slot).load(std::memory_order_acquire);
  for (int spin = 0; id == kFilling && spin < 4096; ++spin) {
    cpu_relax();
    id = id_of(slot).load(std::memory_order_acquire);
  }
  return id;
}

bool HotStrings::holds(const Slot& slot, std::string_view text) const noexcept {
  return slot.length == text.size() && std::memcmp(arena_ + slot.offset, text.data(), text.size()) == 0;
}

void HotStrings::collect(bool all, std::vector<std::pair<uint32_t, std::string>>* out) {
  const uint32_t published = published_.load(std::memory_order_acquire);
  if (!all && published == collected_count_) return;  // nothing new: skip the scan
  if (slots_ == nullptr) return;
  for (Slot& slot : std::span(slots_, kSlots)) {
    if (hash_of(slot).load(std::memory_order_acquire) == 0) continue;
    const uint32_t id = id_of(slot).load(std::memory_order_acquire);
    if (id == kFilling || id == kUnusable || (slot.collected && !all)) continue;
    slot.collected = true;
    out->emplace_back(id, std::string(arena_ + slot.offset, slot.length));
  }
  collected_count_ = published;
}

}  // namespace gpuscope::capture
