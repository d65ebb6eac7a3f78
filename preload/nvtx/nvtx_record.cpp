#include "nvtx_record.h"

#include <atomic>
#include <cstring>

#include "hot_strings.h"
#include "session.h"

namespace gpuscope::nvtx {
namespace {

std::atomic<uint64_t> g_next_range_id{1};

// Room for the longest message kept, plus one UTF-8 sequence.
constexpr size_t kWideBuffer = capture::HotStrings::kMaxTextBytes + 4;

size_t encode_utf8(uint32_t cp, char* out) noexcept {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;  // not a character: replacement
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace

size_t wide_to_utf8(const wchar_t* text, char* out, size_t capacity) noexcept {
  size_t n = 0;
  if (text == nullptr) return 0;
  for (; *text != 0; ++text) {
    char seq[4];
    const size_t len = encode_utf8(static_cast<uint32_t>(*text), seq);
    if (n + len > capacity) break;
    std::memcpy(out + n, seq, len);
    n += len;
  }
  return n;
}

uint32_t intern_message(capture::ThreadSlot* slot, std::string_view text) noexcept {
  if (text.empty()) return 0;
  capture::HotStrings::Miss miss;
  const uint32_t id = capture::session_strings().intern_hot(text, &miss);
  if (id == 0) {
    const auto reason = miss == capture::HotStrings::Miss::SlotBusy ? fb::DropReason::StringSlotBusy
                                                                     : fb::DropReason::StringTableFull;
    slot->drops[static_cast<size_t>(reason)].add();
  }
  return id;
}

uint32_t intern_wide_message(capture::ThreadSlot* slot, const wchar_t* text) noexcept {
  char utf8[kWideBuffer];
  return intern_message(slot, std::string_view(utf8, wide_to_utf8(text, utf8, sizeof utf8)));
}

uint32_t intern_registration(std::string_view text) noexcept { return capture::session_strings().intern_hot(text); }

uint32_t intern_wide_registration(const wchar_t* text) noexcept {
  char utf8[kWideBuffer];
  return intern_registration(std::string_view(utf8, wide_to_utf8(text, utf8, sizeof utf8)));
}

uint32_t Message::intern(capture::ThreadSlot* slot) const noexcept {
  switch (type) {
    case Type::Ascii: return intern_message(slot, ascii);
    case Type::Wide: return intern_wide_message(slot, wide);
    case Type::Registered: return registered;
    case Type::None: break;
  }
  return 0;
}

bool Message::equals(std::string_view text, uint32_t text_id) const noexcept {
  switch (type) {
    case Type::Ascii: return text == ascii;
    case Type::Wide: {
      char utf8[kWideBuffer];
      return text == std::string_view(utf8, wide_to_utf8(wide, utf8, sizeof utf8));
    }
    case Type::Registered: return text_id != 0 && registered == text_id;
    case Type::None: break;
  }
  return false;
}

uint64_t next_range_id() noexcept { return g_next_range_id.fetch_add(1, std::memory_order_relaxed); }

void record_marker(capture::ThreadSlot* slot, fb::MarkerKind kind, uint32_t name_id, uint32_t domain_id,
                   uint64_t range_id, uint32_t tid) noexcept {
  const bool ticks = capture::hot_timestamps_are_ticks();
  const fb::Marker rec(capture::hot_timestamp(), 0, range_id, name_id, domain_id, tid != 0 ? tid : slot->tid, kind,
                       0, 0);
  capture::record(slot, rec, ticks ? capture::kRecordInTicks : 0);
}

}  // namespace gpuscope::nvtx
