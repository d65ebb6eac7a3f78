// Perfetto's protobuf trace (schemas/perfetto_trace.proto) read back the
// way trace_processor imports one, for the export tests: packets checked
// for sequence flags and interning (an iid used before the packet that
// defines it, or defined twice, is an error), track events sorted by
// (timestamp, file position) and BEGIN/END paired with a stack per track,
// so a slice comes out as Perfetto would show it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "perfetto_trace.pb.h"

namespace gpuscope::test {

struct PfTrack {
  uint64_t parent = 0;
  std::string name;
  int64_t pid = -1, tid = -1;  // a process track has a pid, a thread track both
  bool counter = false;
};

struct PfSlice {
  uint64_t track = 0;
  std::string name, category;
  uint64_t start = 0, end = 0;
  bool instant = false;
  std::map<std::string, std::string> args;  // values as text
  std::vector<uint64_t> flows_out, flows_in;
};

struct PfCounter {
  uint64_t track = 0;
  uint64_t ts = 0;
  double value = 0;
};

struct PfTrace {
  std::vector<std::string> errors;
  std::map<uint64_t, PfTrack> tracks;
  std::vector<PfSlice> slices;
  std::vector<PfCounter> counters;
  size_t packets = 0;
  bool ok() const { return errors.empty(); }
  // The pid of a track, through its parents.
  int64_t pid_of(uint64_t uuid) const {
    for (int hops = 0; hops < 8; ++hops) {
      auto it = tracks.find(uuid);
      if (it == tracks.end()) return -1;
      if (it->second.pid >= 0) return it->second.pid;
      uuid = it->second.parent;
    }
    return -1;
  }
};

namespace pf_detail {

namespace pb = gpuscope::perfetto;

struct Interned {
  std::map<uint64_t, std::string> names, categories, arg_names, texts;
};

inline void define(std::map<uint64_t, std::string>& table, uint64_t iid, const std::string& text, const char* what,
                   PfTrace& out) {
  auto [it, fresh] = table.try_emplace(iid, text);
  if (!fresh && it->second != text) out.errors.push_back(fmt::format("{} iid {} defined twice", what, iid));
}

inline std::string lookup(const std::map<uint64_t, std::string>& table, uint64_t iid, const char* what,
                          PfTrace& out) {
  auto it = table.find(iid);
  if (it != table.end()) return it->second;
  out.errors.push_back(fmt::format("{} iid {} used before it is defined", what, iid));
  return "";
}

inline std::string arg_text(const pb::DebugAnnotation& d, const Interned& in, PfTrace& out) {
  if (d.has_int_value()) return std::to_string(d.int_value());
  if (d.has_uint_value()) return std::to_string(d.uint_value());
  if (d.has_bool_value()) return d.bool_value() ? "true" : "false";
  if (d.has_string_value()) return d.string_value();
  if (d.has_string_value_iid()) return lookup(in.texts, d.string_value_iid(), "string value", out);
  if (d.has_double_value()) return fmt::format("{}", d.double_value());
  out.errors.push_back("an annotation without a value");
  return "";
}

inline void intern(const pb::InternedData& d, Interned& in, PfTrace& out) {
  for (const auto& n : d.event_names()) define(in.names, n.iid(), n.name(), "event name", out);
  for (const auto& c : d.event_categories()) define(in.categories, c.iid(), c.name(), "category", out);
  for (const auto& n : d.debug_annotation_names()) define(in.arg_names, n.iid(), n.name(), "annotation name", out);
  for (const auto& s : d.debug_annotation_string_values()) define(in.texts, s.iid(), s.str(), "string value", out);
}

inline void describe(const pb::TrackDescriptor& d, PfTrace& out) {
  PfTrack& t = out.tracks[d.uuid()];
  if (d.has_parent_uuid()) t.parent = d.parent_uuid();
  if (d.has_name()) t.name = d.name();
  if (d.has_process()) {
    t.pid = d.process().pid();
    if (d.process().has_process_name()) t.name = d.process().process_name();
  }
  if (d.has_thread()) {
    t.pid = d.thread().pid();
    t.tid = d.thread().tid();
    if (d.thread().has_thread_name()) t.name = d.thread().thread_name();
  }
  if (d.has_counter()) t.counter = true;
}

struct Event {
  uint64_t ts;
  size_t index;
  pb::TrackEvent::Type type;
  PfSlice slice;
  double value = 0;
};

inline Event resolve(const pb::TracePacket& p, size_t index, const Interned& in, PfTrace& out) {
  const pb::TrackEvent& e = p.track_event();
  Event ev{p.timestamp(), index, e.type(), {}};
  PfSlice& s = ev.slice;
  s.track = e.track_uuid();
  if (e.has_name_iid()) s.name = lookup(in.names, e.name_iid(), "event name", out);
  for (uint64_t c : e.category_iids()) s.category = lookup(in.categories, c, "category", out);
  for (const auto& d : e.debug_annotations())
    s.args[lookup(in.arg_names, d.name_iid(), "annotation name", out)] = arg_text(d, in, out);
  s.flows_out.assign(e.flow_ids().begin(), e.flow_ids().end());
  s.flows_in.assign(e.terminating_flow_ids().begin(), e.terminating_flow_ids().end());
  ev.value = e.has_double_counter_value() ? e.double_counter_value() : static_cast<double>(e.counter_value());
  if (!p.has_timestamp()) out.errors.push_back(fmt::format("packet {}: a track event without a timestamp", index));
  if ((p.sequence_flags() & pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE) == 0)
    out.errors.push_back(fmt::format("packet {}: uses interned data without SEQ_NEEDS_INCREMENTAL_STATE", index));
  return ev;
}

// Perfetto's import: sorted by timestamp, ties in file order; END closes
// the innermost open slice of its track.
inline void pair_slices(std::vector<Event>& events, PfTrace& out) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  std::map<uint64_t, std::vector<PfSlice>> open;
  for (Event& e : events) {
    if (!out.tracks.count(e.slice.track)) out.errors.push_back(fmt::format("an event on undescribed track {}", e.slice.track));
    switch (e.type) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
        e.slice.start = e.ts;
        open[e.slice.track].push_back(std::move(e.slice));
        break;
      case pb::TrackEvent::TYPE_SLICE_END: {
        auto& stack = open[e.slice.track];
        if (stack.empty()) {
          out.errors.push_back(fmt::format("an END with nothing open on track {}", e.slice.track));
          break;
        }
        stack.back().end = e.ts;
        out.slices.push_back(std::move(stack.back()));
        stack.pop_back();
        break;
      }
      case pb::TrackEvent::TYPE_INSTANT:
        e.slice.start = e.slice.end = e.ts;
        e.slice.instant = true;
        out.slices.push_back(std::move(e.slice));
        break;
      case pb::TrackEvent::TYPE_COUNTER: out.counters.push_back({e.slice.track, e.ts, e.value}); break;
      default: out.errors.push_back("a track event without a type");
    }
  }
  for (const auto& [track, stack] : open)
    if (!stack.empty()) out.errors.push_back(fmt::format("{} slices never ended on track {}", stack.size(), track));
}

}  // namespace pf_detail

inline PfTrace read_perfetto(const std::string& bytes) {
  namespace pb = gpuscope::perfetto;
  PfTrace out;
  pb::Trace trace;
  if (!trace.ParseFromString(bytes)) {
    out.errors.push_back("not a Trace message");
    return out;
  }
  out.packets = static_cast<size_t>(trace.packet_size());
  pf_detail::Interned interned;
  std::vector<pf_detail::Event> events;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pb::TracePacket& p = trace.packet(i);
    if (p.trusted_packet_sequence_id() == 0) out.errors.push_back(fmt::format("packet {}: no sequence id", i));
    if (i == 0 && (p.sequence_flags() & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) == 0)
      out.errors.push_back("the first packet does not clear incremental state");
    if (p.has_interned_data()) pf_detail::intern(p.interned_data(), interned, out);
    if (p.has_track_descriptor()) pf_detail::describe(p.track_descriptor(), out);
    if (p.has_track_event()) events.push_back(pf_detail::resolve(p, static_cast<size_t>(i), interned, out));
  }
  pf_detail::pair_slices(events, out);
  return out;
}

}  // namespace gpuscope::test
