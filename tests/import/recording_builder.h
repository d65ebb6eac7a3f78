// A TraceBuilder that records what an importer hands it, for tests of the
// importer alone: recording_builder.cpp defines TraceBuilder's members
// (link it instead of the real builder), and every event arrives here with
// its strings copied, in the order it was handed over.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trace_builder.h"

namespace gpuscope::importer::testing {

enum class EventKind { HostCall, Kernel, Copy, Memset, Range, Allocator };

struct RecordedEvent {
  EventKind kind;
  uint64_t start_ns = 0;
  std::string name, domain;  // copies of the string_views
  HostCall call;
  DeviceKernel kernel;
  DeviceCopy copy;
  DeviceMemset memset;
  HostRange range;
};

struct Recording {
  std::vector<RecordedEvent> events;
  std::vector<container::DeviceDescription> devices;
  std::vector<std::pair<uint32_t, std::string>> thread_names;
  std::vector<std::string> notes;
  protocol::ProcessMetadata process;  // as it was at finish()
  bool finished = false, complete = false;
  std::string damage;

  size_t count(EventKind kind) const;
  bool has_note(const std::string& part) const;
};

// What the most recent TraceBuilder recorded (it stays after the builder is gone).
const Recording& last_recording();

}  // namespace gpuscope::importer::testing
