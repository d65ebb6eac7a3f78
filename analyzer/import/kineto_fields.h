// The fields of a Kineto event that the importer uses, read in one pass
// over the event's JSON (simdjson on-demand: fields in the order they come,
// everything else skipped unparsed). Strings point into the parser's
// buffer: valid until the next event is parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "trace_builder.h"

namespace gpuscope::importer {

struct KinetoArgs {
  int64_t correlation = -1, device = -1, stream = -1, bytes = -1;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  // "[memory]" events: the caching allocator's block and its change.
  int64_t addr = 0, alloc_bytes = 0, device_id = -1, device_type = -1;
  std::string_view name;  // metadata events: the process or thread name
};

struct KinetoEvent {
  std::string_view ph, cat, name;
  int64_t pid = -1, tid = -1;
  std::optional<uint64_t> ts_ns;  // unset when missing or unusable
  uint64_t dur_ns = 0;
  KinetoArgs args;
};

// Microseconds as Kineto writes them ("1700000000123.456") to nanoseconds,
// exactly: a double holds epoch microseconds only to a quarter of one.
std::optional<uint64_t> microseconds_text_to_ns(std::string_view text);

// Parses one traceEvents element into *out; false with *error when it is
// not a JSON object (or is malformed inside).
bool parse_kineto_event(simdjson::ondemand::parser& parser, std::string_view element, KinetoEvent* out,
                        std::string* error);

// A top-level member of the document: what the file says about the run
// (deviceProperties, distributedInfo, schemaVersion, baseTimeNanoseconds).
void apply_kineto_member(simdjson::ondemand::parser& parser, std::string_view key, std::string_view value,
                         TraceBuilder& builder);

}  // namespace gpuscope::importer
