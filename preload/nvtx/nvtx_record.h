// NVTX calls as Marker records on the calling thread (the hot path of the
// NVTX injection, preload/nvtx/nvtx_injection.cpp). Every function here is
// lock-free and allocation-free: messages are interned through the bounded
// hot string table, domains and registered strings are handed out as their
// interned ids, so using them later costs no lookup at all.
#pragma once

#include <cstdint>
#include <string_view>

#include "recorder.h"

namespace gpuscope::nvtx {

// Interned id of a message; 0 when the table could not take it, counted on
// `slot` as a StringTableFull or StringSlotBusy drop (the record is kept,
// unnamed).
uint32_t intern_message(capture::ThreadSlot* slot, std::string_view text) noexcept;
// Wide-character text (UTF-32 on Linux) converted to UTF-8, then interned.
uint32_t intern_wide_message(capture::ThreadSlot* slot, const wchar_t* text) noexcept;
// Interned without a thread buffer: domain names and registered strings
// must get an id even while not recording, since later calls reuse them.
uint32_t intern_registration(std::string_view text) noexcept;
uint32_t intern_wide_registration(const wchar_t* text) noexcept;

// UTF-8 of a NUL-terminated wide string into out[0, capacity), truncated
// on a character boundary; returns the bytes written.
size_t wide_to_utf8(const wchar_t* text, char* out, size_t capacity) noexcept;

// A new id for nvtxRangeStart*: process-wide, never 0.
uint64_t next_range_id() noexcept;

// The message of one NVTX call as the program passed it: interned only when
// recorded, compared as text when it may open a capture range.
struct Message {
  enum class Type : uint8_t { None, Ascii, Wide, Registered };
  Type type = Type::None;
  const char* ascii = nullptr;
  const wchar_t* wide = nullptr;
  uint32_t registered = 0;  // a registered string's interned id

  static Message of(const char* text) noexcept { return {text != nullptr ? Type::Ascii : Type::None, text}; }
  static Message of(const wchar_t* text) noexcept {
    return {text != nullptr ? Type::Wide : Type::None, nullptr, text};
  }
  static Message of_registered(uint32_t id) noexcept { return {Type::Registered, nullptr, nullptr, id}; }

  uint32_t intern(capture::ThreadSlot* slot) const noexcept;
  // Whether the message reads `text` (a registered one: whether it is the
  // string registered as `text`, whose id is `text_id`; 0 if unknown).
  bool equals(std::string_view text, uint32_t text_id) const noexcept;
};

void record_marker(capture::ThreadSlot* slot, fb::MarkerKind kind, uint32_t name_id, uint32_t domain_id,
                   uint64_t range_id = 0, uint32_t tid = 0) noexcept;

}  // namespace gpuscope::nvtx
