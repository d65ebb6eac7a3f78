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

// Interned id of a message; on a full table 0, counted as a StringTableFull
// drop on `slot` (the record is kept, unnamed).
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

void record_marker(capture::ThreadSlot* slot, fb::MarkerKind kind, uint32_t name_id, uint32_t domain_id,
                   uint64_t range_id = 0, uint32_t tid = 0) noexcept;

}  // namespace gpuscope::nvtx
