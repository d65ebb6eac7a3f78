#include "gpu_breakdown.h"

#include <algorithm>
#include <bit>
#include <new>
#include <set>
#include <string>

namespace gpuscope::analyzer {
namespace {

// Device-side synchronizations HTA sees on a stream (Kineto's cuda_sync
// events "Stream Sync" and "Stream Wait Event"); event and context
// synchronizations have no stream there and are not GPU time.
bool on_a_stream(fb::SyncKind kind) { return kind == fb::SyncKind::Stream || kind == fb::SyncKind::StreamWaitEvent; }

}  // namespace

bool is_compute_kernel_name(std::string_view name) {
  if (name.starts_with("nccl") && name.find("Kernel", 4) != std::string_view::npos) return false;
  if (name.starts_with("Memset")) return false;
  return name.find("Memcpy") == std::string_view::npos && name.find("Sync") == std::string_view::npos;
}

uint64_t last_profiler_step_start(const RangeModel& ranges, const reader::TraceSummary& names) {
  std::unordered_map<uint32_t, bool> is_step;  // by name id
  std::set<std::string> step_names;
  uint64_t last = 0;
  for (const RangeInstance& r : ranges.ranges) {
    auto [it, fresh] = is_step.try_emplace(r.name_id, false);
    if (fresh && r.name_id != 0) {
      const std::string name = names.name_of(r.name_id);
      it->second = name.find("ProfilerStep") != std::string::npos;
      if (it->second) step_names.insert(name);
    }
    if (it->second) last = std::max(last, r.start_ns);
  }
  return step_names.size() >= 2 ? last : 0;
}

GpuBreakdownBuilder::GpuBreakdownBuilder(const reader::TraceSummary& names, uint64_t last_step_start_ns,
                                         const GpuBreakdownLimits& limits)
    : names_(names), last_step_start_ns_(last_step_start_ns), limits_(limits) {}

// Nested calls (a driver call under a runtime call) may share the id: the
// earliest start is the launch as the program made it.
void GpuBreakdownBuilder::remember_launch(const fb::ApiCall& c) {
  const uint64_t id = c.correlation_id();
  if (id == 0) return;
  if (launch_slots_ == nullptr) allocate_launch_slots(std::min(limits_.pending_launches, kHostOnlyLaunchSlots));
  LaunchSlot& slot = launch_slots_[id & launch_mask_];
  if (slot.correlation == id) {
    slot.start_ns = std::min(slot.start_ns, c.start_ns());
    return;
  }
  // Kept after use: a graph launch's kernels all carry its id.
  if (slot.correlation != 0) ++out_.launches_forgotten;
  if (slot.correlation > id) return;  // older than the slot's: forgotten itself
  slot = {id, c.start_ns()};
}

// The calls remembered so far move to the new table; where two land on one
// slot the newer stays, as remember_launch keeps it.
void GpuBreakdownBuilder::allocate_launch_slots(size_t slots) {
  const uint64_t mask = std::bit_ceil(std::max<size_t>(slots, 1)) - 1;
  std::unique_ptr<LaunchSlot[], FreeSlots> table(static_cast<LaunchSlot*>(std::calloc(mask + 1, sizeof(LaunchSlot))));
  if (table == nullptr) throw std::bad_alloc();
  if (launch_slots_ != nullptr)
    for (uint64_t i = 0; i <= launch_mask_; ++i) {
      const LaunchSlot& old = launch_slots_[i];
      LaunchSlot& now = table[old.correlation & mask];
      if (old.correlation != 0 && old.correlation > now.correlation) now = old;
    }
  launch_slots_ = std::move(table);
  launch_mask_ = mask;
}

std::optional<uint64_t> GpuBreakdownBuilder::launch_of(uint64_t correlation) const {
  if (correlation == 0 || launch_slots_ == nullptr) return std::nullopt;
  const LaunchSlot& slot = launch_slots_[correlation & launch_mask_];
  if (slot.correlation != correlation) return std::nullopt;
  return slot.start_ns;
}

bool GpuBreakdownBuilder::is_compute(uint32_t name_id) {
  if (const bool* known = compute_by_name_.find(name_id)) return *known;
  return compute_by_name_[name_id] = is_compute_kernel_name(names_.name_of(name_id));
}

void GpuBreakdownBuilder::add(const reader::ChunkView& v, const std::function<bool(uint64_t)>& keep) {
  for (const auto& c : v.api_calls) remember_launch(c);
  const auto device_op = [&](const auto& r) { return r.source() == fb::Source::Device && keep(r.start_ns()); };
  for (const auto& k : v.kernels)
    if (device_op(k))
      push(Op{k.start_ns(), k.start_ns() + k.duration_ns(), k.correlation_id(), k.stream(), k.device(),
              is_compute(k.name_id()) ? OpKind::Compute : OpKind::NonCompute});
  for (const auto& c : v.copies)
    if (device_op(c))
      push(Op{c.start_ns(), c.start_ns() + c.duration_ns(), c.correlation_id(), c.stream(), c.device(),
              OpKind::NonCompute});
  for (const auto& m : v.memsets)
    if (device_op(m))
      push(Op{m.start_ns(), m.start_ns() + m.duration_ns(), m.correlation_id(), m.stream(), m.device(),
              OpKind::NonCompute});
  for (const auto& s : v.syncs)
    if (device_op(s) && on_a_stream(s.kind()))
      push(Op{s.start_ns(), s.start_ns() + s.duration_ns(), s.correlation_id(), s.object(), s.device(),
              OpKind::DeviceSync});
}

void GpuBreakdownBuilder::push(const Op& op) {
  if (!full_launch_table_) {
    full_launch_table_ = true;
    if (limits_.pending_launches > launch_mask_ + 1 || launch_slots_ == nullptr)
      allocate_launch_slots(limits_.pending_launches);
  }
  const auto later = [](const Op& a, const Op& b) { return a.start > b.start; };  // earliest on top
  window_.push_back(op);
  std::push_heap(window_.begin(), window_.end(), later);
  if (window_.size() <= limits_.reorder_window) return;
  std::pop_heap(window_.begin(), window_.end(), later);
  place(window_.back());
  window_.pop_back();
}

// An operation leaves the window in start order (per stream, unless late).
void GpuBreakdownBuilder::place(const Op& op) {
  const std::optional<uint64_t> launch = launch_of(op.correlation);
  if (last_step_start_ns_ != 0 && (!launch || *launch >= last_step_start_ns_)) {
    ++out_.left_out;
    return;
  }
  StreamState* stream = nullptr;
  if (auto it = streams_.find(op.stream); it != streams_.end()) {
    stream = &it->second;
  } else if (op.kind != OpKind::DeviceSync) {  // a sync's stream may be an event handle: never a new stream
    if (streams_.size() >= limits_.streams) {
      ++out_.streams_over_limit;
      return;
    }
    stream = &streams_[op.stream];
  }
  if (stream != nullptr && stream->device < 0) stream->device = op.device;
  const int16_t device = op.device >= 0 || stream == nullptr ? op.device : stream->device;
  DeviceState& d = devices_[device];
  ++d.operations;
  d.all.add(op.start, op.end);
  if (op.kind == OpKind::Compute) d.compute.add(op.start, op.end);
  if (op.kind == OpKind::DeviceSync) return;  // HTA's idle split is over kernels, copies and memsets
  if (stream->has_previous && op.start < stream->previous_start) {
    ++out_.late;
    return;
  }
  if (stream->has_previous) split_gap(op, *stream, launch, d.idle);
  stream->has_previous = true;
  stream->previous_start = op.start;
  stream->previous_end = op.end;
}

void GpuBreakdownBuilder::split_gap(const Op& op, const StreamState& s, std::optional<uint64_t> launch,
                                    IdleSplit& idle) {
  const int64_t gap = static_cast<int64_t>(op.start) - static_cast<int64_t>(s.previous_end);
  if (launch && *launch > s.previous_end) idle.host_wait_ns += gap;
  else if (gap < kKernelWaitBelowNs) idle.kernel_wait_ns += gap;
  else idle.other_ns += gap;
}

// Operations whose device is unknown (synchronization records say none)
// belong to the only device when there is one.
namespace {

// The windows' parts between `from` and `to`.
std::vector<std::pair<uint64_t, uint64_t>> clip(const std::vector<std::pair<uint64_t, uint64_t>>& windows,
                                                uint64_t from, uint64_t to) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& [s, e] : windows)
    if (std::max(s, from) < std::min(e, to)) out.emplace_back(std::max(s, from), std::min(e, to));
  return out;
}

}  // namespace

GpuBreakdown GpuBreakdownBuilder::finish(const std::vector<std::pair<uint64_t, uint64_t>>& device_windows) {
  std::sort(window_.begin(), window_.end(), [](const Op& a, const Op& b) { return a.start < b.start; });
  for (const Op& op : window_) place(op);
  window_.clear();
  if (auto unknown = devices_.find(-1); unknown != devices_.end() && devices_.size() == 2) {
    DeviceState& only = std::next(unknown)->second;
    only.all.add_all(unknown->second.all);
    only.compute.add_all(unknown->second.compute);
    only.idle += unknown->second.idle;
    only.operations += unknown->second.operations;
    devices_.erase(unknown);
  }
  for (const auto& [device, d] : devices_) {
    const auto& spans = d.all.spans();
    if (spans.empty()) continue;
    DeviceBreakdown b;
    b.device = device;
    b.span_ns = spans.back().second - spans.front().first;
    b.busy_ns = d.all.length();
    b.compute_ns = d.compute.length();
    b.idle = d.idle;
    b.operations = d.operations;
    if (!device_windows.empty()) {
      const auto windows = clip(device_windows, spans.front().first, spans.back().second);
      b.span_ns = b.busy_ns = b.compute_ns = 0;
      for (const auto& [s, e] : windows) b.span_ns += e - s;
      b.busy_ns = d.all.length_within(windows);
      b.compute_ns = d.compute.length_within(windows);
      b.idle = {};
      b.sampled_windows = static_cast<uint32_t>(windows.size());
    }
    out_.devices.push_back(b);
  }
  out_.last_step_start_ns = last_step_start_ns_;
  return std::move(out_);
}

}  // namespace gpuscope::analyzer
