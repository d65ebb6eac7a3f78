#include "html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "live_allocations.h"
#include "report_template.h"  // generated from report/html/report_template.html
#include "timeline_aggregate.h"

namespace gpuscope::analyzer {
namespace {

using json = nlohmann::ordered_json;

// Distinct span names the page carries (kernel and function names, NVTX
// messages); later names are shown as their category only.
constexpr size_t kMaxNames = 20000;

SpanCategory call_category(CallKind kind) {
  switch (kind) {
    case CallKind::Sync: return SpanCategory::Sync;
    case CallKind::Copy: return SpanCategory::Copy;
    case CallKind::Memset: return SpanCategory::Memset;
    case CallKind::Alloc: return SpanCategory::Alloc;
    case CallKind::Free: return SpanCategory::Free;
    case CallKind::Launch: return SpanCategory::Launch;
    case CallKind::Init: return SpanCategory::Init;
    default: return SpanCategory::OtherCall;
  }
}

SpanCategory copy_category(fb::CopyDirection d) {
  switch (d) {
    case fb::CopyDirection::HostToDevice: return SpanCategory::CopyH2D;
    case fb::CopyDirection::DeviceToHost: return SpanCategory::CopyD2H;
    case fb::CopyDirection::DeviceToDevice: return SpanCategory::CopyD2D;
    default: return SpanCategory::CopyOther;
  }
}

// Equal-time buckets over the trace, for series sampled at their own pace.
class Buckets {
 public:
  Buckets(uint64_t begin, uint64_t end) : begin_(begin), width_(std::max<uint64_t>(1, (end - begin) / kSeriesPoints)) {}
  size_t index(uint64_t ns) const {
    return std::min<size_t>(kSeriesPoints - 1, (std::max(ns, begin_) - begin_) / width_);
  }
  uint64_t time(size_t i) const { return i * width_ + width_ / 2; }  // middle, from the trace's begin

 private:
  uint64_t begin_, width_;
};

// NVML's samples of one device, averaged per bucket and field.
struct GpuSeries {
  struct Field {
    const char* name;
    const char* unit;
    fb::GpuSampleField bit;
    double (*value)(const fb::GpuSample&);
  };
  static const std::vector<Field>& fields() {
    using F = fb::GpuSampleField;
    static const std::vector<Field> kFields = {
        {"GPU utilization", "%", F::Utilization, [](const fb::GpuSample& s) { return double(s.gpu_util_pct()); }},
        {"memory utilization", "%", F::Utilization, [](const fb::GpuSample& s) { return double(s.memory_util_pct()); }},
        {"SM utilization (GPM)", "%", F::SmUtilization, [](const fb::GpuSample& s) { return double(s.sm_util_pct()); }},
        {"DRAM bandwidth (GPM)", "%", F::DramBandwidth, [](const fb::GpuSample& s) { return double(s.dram_bw_util_pct()); }},
        {"PCIe TX", "MB/s", F::PcieThroughput, [](const fb::GpuSample& s) { return s.pcie_tx_kbps() / 1e3; }},
        {"PCIe RX", "MB/s", F::PcieThroughput, [](const fb::GpuSample& s) { return s.pcie_rx_kbps() / 1e3; }},
        {"SM clock", "MHz", F::Clocks, [](const fb::GpuSample& s) { return double(s.sm_clock_mhz()); }},
        {"memory clock", "MHz", F::Clocks, [](const fb::GpuSample& s) { return double(s.memory_clock_mhz()); }},
        {"power", "W", F::Power, [](const fb::GpuSample& s) { return s.power_mw() / 1e3; }},
        {"temperature", "°C", F::Temperature, [](const fb::GpuSample& s) { return double(s.temperature_c()); }},
        {"memory used", "GiB", F::MemoryUsed, [](const fb::GpuSample& s) { return s.memory_used_bytes() / 1073741824.0; }},
    };
    return kFields;
  }
  // sums[bucket][field], counts alike; a bucket with no sample stays empty.
  std::map<size_t, std::vector<std::pair<double, uint32_t>>> buckets;

  void add(size_t bucket, const fb::GpuSample& s) {
    auto& row = buckets[bucket];
    row.resize(fields().size());
    for (size_t f = 0; f < fields().size(); ++f)
      if (s.valid() & static_cast<uint32_t>(fields()[f].bit)) {
        row[f].first += fields()[f].value(s);
        ++row[f].second;
      }
  }
  json to_json(uint16_t device, const Buckets& time) const {
    json t = json::array(), series = json::array();
    for (const auto& [i, row] : buckets) t.push_back(time.time(i));
    for (size_t f = 0; f < fields().size(); ++f) {
      json values = json::array();
      bool any = false;
      for (const auto& [i, row] : buckets) {
        any = any || row[f].second > 0;
        values.push_back(row[f].second > 0 ? json(std::round(row[f].first / row[f].second * 100) / 100) : json(nullptr));
      }
      if (any) series.push_back(json{{"name", fields()[f].name}, {"unit", fields()[f].unit}, {"values", values}});
    }
    return json{{"device", device}, {"t", t}, {"series", series}};
  }
};

// Live device memory from the allocation records (the model's rule,
// live_allocations.h), per bucket.
class MemorySeries {
 public:
  void add(size_t bucket, const fb::Alloc& a) {
    if (!live_.apply(a)) return;
    // The bucket's highest point, and where it ended (the next bucket starts there).
    auto& [peak, last] = points_[bucket];
    peak = std::max(peak, live_.live_bytes());
    last = live_.live_bytes();
  }
  json to_json(const Buckets& time) const {
    json t = json::array(), peak = json::array(), last = json::array();
    for (const auto& [i, p] : points_) {
      t.push_back(time.time(i));
      peak.push_back(p.first);
      last.push_back(p.second);
    }
    return json{{"t", t},
                {"peak", peak},
                {"last", last},
                {"max_bytes", live_.peak_bytes()},
                {"untracked", live_.untracked()}};
  }
  bool empty() const { return points_.empty(); }

 private:
  LiveAllocations live_;
  std::map<size_t, std::pair<int64_t, int64_t>> points_;
};

// The streaming pass: every record goes to its lane's aggregator, its
// bucket of the GPU-metric and memory series, and is then forgotten.
class TimelinePass {
 public:
  TimelinePass(const TraceModel& model, const Metrics& metrics);
  void add(const reader::ChunkView& v);
  void add_ranges();
  json timeline_json() const;
  json gpu_json() const;
  json memory_json() const { return memory_.empty() ? json(nullptr) : memory_.to_json(buckets_); }

 private:
  // Lanes sort by (group, rank, sub-lane): threads (busiest first) with their
  // NVTX lanes under them, then streams.
  using LaneKey = std::tuple<int, uint64_t, uint64_t>;
  struct Lane {
    std::string label, kind;
    uint32_t tid = 0;
    LaneAggregator spans;
  };
  Lane* thread_lane(uint32_t tid, uint16_t nvtx_depth_plus_one);
  Lane* stream_lane(uint64_t stream, int16_t device);
  int32_t name(uint32_t string_id);
  void add_call(const fb::ApiCall& c);
  template <class R> void add_device_record(const R& r, SpanCategory category, uint32_t name_id, uint64_t bytes);
  void select_threads();
  std::string thread_label(uint32_t tid) const;

  const TraceModel& m_;
  const Metrics& metrics_;
  uint64_t begin_, end_;
  Buckets buckets_;
  bool device_records_;  // stream lanes show the device's times, not the host's calls
  std::unordered_map<uint32_t, uint64_t> thread_rank_;
  std::unordered_map<uint32_t, std::string> thread_names_;
  std::map<LaneKey, Lane> lanes_;
  std::map<std::pair<int16_t, uint64_t>, uint64_t> stream_order_;
  uint64_t omitted_spans_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<uint32_t, int32_t> name_index_;
  std::unordered_map<uint32_t, CallKind> kinds_;
  std::map<uint16_t, GpuSeries> gpu_;
  MemorySeries memory_;
};

TimelinePass::TimelinePass(const TraceModel& model, const Metrics& metrics)
    : m_(model), metrics_(metrics), begin_(model.begin_ns), end_(std::max(model.end_ns, model.begin_ns + 1)),
      buckets_(begin_, end_), device_records_(model.device_records > 0) {
  select_threads();
}

// The threads drawn: the busiest in CUDA calls first (the feeding thread
// leads), then threads that only opened NVTX ranges.
void TimelinePass::select_threads() {
  std::vector<std::pair<uint64_t, uint32_t>> busy;
  for (const auto& [tid, t] : m_.threads) {
    uint64_t ns = 0;
    for (uint64_t b : t.blocked_ns) ns += b;
    busy.emplace_back(tid == metrics_.feeder_tid ? UINT64_MAX : ns, tid);
  }
  std::sort(busy.begin(), busy.end(), [](const auto& a, const auto& b) { return a > b; });
  for (const auto& [ns, tid] : busy)
    if (thread_rank_.size() < kMaxThreadLanes) thread_rank_.emplace(tid, thread_rank_.size());
  for (const RangeInstance& r : m_.ranges.ranges)
    if (thread_rank_.size() < kMaxThreadLanes && !thread_rank_.count(r.tid)) thread_rank_.emplace(r.tid, thread_rank_.size());
}

std::string TimelinePass::thread_label(uint32_t tid) const {
  auto it = thread_names_.find(tid);
  std::string label = fmt::format("thread {}", tid);
  if (it != thread_names_.end()) label += fmt::format(" \"{}\"", it->second);
  if (tid == metrics_.feeder_tid && m_.threads.count(tid)) label += " (feeding)";
  return label;
}

TimelinePass::Lane* TimelinePass::thread_lane(uint32_t tid, uint16_t nvtx_depth_plus_one) {
  auto rank = thread_rank_.find(tid);
  if (rank == thread_rank_.end()) return nullptr;
  const LaneKey key{0, rank->second, std::min<uint16_t>(nvtx_depth_plus_one, kMaxNvtxDepthLanes)};
  auto it = lanes_.find(key);
  if (it == lanes_.end()) {
    Lane lane{"", nvtx_depth_plus_one == 0 ? "thread" : "nvtx", tid, LaneAggregator(begin_, end_)};
    it = lanes_.emplace(key, std::move(lane)).first;
  }
  return &it->second;
}

TimelinePass::Lane* TimelinePass::stream_lane(uint64_t stream, int16_t device) {
  auto order = stream_order_.find({device, stream});
  if (order == stream_order_.end()) {
    if (stream_order_.size() >= kMaxStreamLanes) return nullptr;
    order = stream_order_.emplace(std::pair{device, stream}, stream_order_.size()).first;
    const std::string name = stream == 0 ? "default stream" : fmt::format("stream {:#x}", stream);
    const std::string where = device_records_ ? "device times" : "host-side times";
    Lane lane{fmt::format("GPU {} {} ({})", device < 0 ? 0 : device, name, where), "stream", 0,
              LaneAggregator(begin_, end_)};
    lanes_.emplace(LaneKey{1, order->second, 0}, std::move(lane));
  }
  return &lanes_.at(LaneKey{1, order->second, 0});
}

int32_t TimelinePass::name(uint32_t string_id) {
  auto it = name_index_.find(string_id);
  if (it != name_index_.end()) return it->second;
  if (names_.size() >= kMaxNames) return -1;
  names_.push_back(m_.summary.name_of(string_id));
  return name_index_[string_id] = static_cast<int32_t>(names_.size() - 1);
}

void TimelinePass::add_call(const fb::ApiCall& c) {
  if (c.depth() != 0) return;  // a runtime call's own driver calls are inside it
  Lane* lane = thread_lane(c.tid(), 0);
  if (lane == nullptr) {
    ++omitted_spans_;
    return;
  }
  auto kind = kinds_.find(c.function_id());
  if (kind == kinds_.end())
    kind = kinds_.emplace(c.function_id(), classify_function(m_.summary.name_of(c.function_id()))).first;
  lane->spans.add(c.start_ns(), c.duration_ns(), call_category(kind->second), name(c.function_id()));
}

template <class R>
void TimelinePass::add_device_record(const R& r, SpanCategory category, uint32_t name_id, uint64_t bytes) {
  if ((r.source() == fb::Source::Device) != device_records_) return;  // the other side's copy of the same work
  Lane* lane = stream_lane(r.stream(), r.device());
  if (lane == nullptr) {
    ++omitted_spans_;
    return;
  }
  lane->spans.add(r.start_ns(), r.duration_ns(), category, name_id == 0 ? -1 : name(name_id), bytes);
}

void TimelinePass::add(const reader::ChunkView& v) {
  for (const auto& c : v.api_calls) add_call(c);
  for (const auto& k : v.kernels) add_device_record(k, SpanCategory::Kernel, k.name_id(), 0);
  for (const auto& c : v.copies) add_device_record(c, copy_category(c.direction()), 0, c.bytes());
  for (const auto& s : v.memsets) add_device_record(s, SpanCategory::Memset, 0, s.bytes());
  for (const auto& a : v.allocs)  // CUPTI's copies of hooked allocations: the model's rule (trace_model.cpp)
    if (a.source() != fb::Source::Device) memory_.add(buckets_.index(a.start_ns()), a);
  for (const auto& s : v.gpu_samples)
    if (gpu_.size() < kMaxStreamLanes || gpu_.count(s.device())) gpu_[s.device()].add(buckets_.index(s.start_ns()), s);
  for (const auto& mk : v.markers)
    if (mk.kind() == fb::MarkerKind::ThreadName && mk.name_id() != 0)
      thread_names_[mk.tid()] = m_.summary.name_of(mk.name_id());
}

// NVTX ranges come paired from the model (it already read them); a lane per
// nesting depth under the thread that opened the range.
void TimelinePass::add_ranges() {
  for (const RangeInstance& r : m_.ranges.ranges) {
    Lane* lane = thread_lane(r.tid, static_cast<uint16_t>(std::min<uint32_t>(r.depth + 1u, UINT16_MAX)));
    if (lane == nullptr) {
      ++omitted_spans_;
      continue;
    }
    lane->spans.add(r.start_ns, r.end_ns - r.start_ns, SpanCategory::Nvtx, name(r.name_id));
  }
}

// One lane's blocks as columns (a row per block would repeat every key):
// t = start as a delta from the previous block's start, d = length, n =
// spans merged, b = busy time, c = category, l = name index, x = bytes.
json blocks_json(const std::vector<Block>& blocks, uint64_t begin) {
  json t = json::array(), d = json::array(), n = json::array(), b = json::array(), c = json::array(),
       l = json::array(), x = json::array();
  uint64_t previous = begin;
  for (const Block& k : blocks) {
    t.push_back(k.start_ns - previous);
    previous = k.start_ns;
    d.push_back(k.end_ns - k.start_ns);
    n.push_back(k.count);
    b.push_back(k.busy_ns);
    c.push_back(static_cast<int>(k.category));
    l.push_back(k.label);
    x.push_back(k.bytes);
  }
  return json{{"t", t}, {"d", d}, {"n", n}, {"b", b}, {"c", c}, {"l", l}, {"x", x}};
}

json TimelinePass::timeline_json() const {
  json lanes = json::array(), categories = json::array();
  for (size_t i = 0; i < kSpanCategories; ++i) categories.push_back(span_category_name(static_cast<SpanCategory>(i)));
  uint64_t spans = 0, blocks = 0, merged = 0, gap = 0;
  const size_t lane_cap = kMaxBlocksPerSection / std::max<size_t>(1, lanes_.size());
  for (const auto& [key, lane] : lanes_) {
    const std::vector<Block> b = lane.spans.finish(lane_cap);
    spans += lane.spans.spans();
    blocks += b.size();
    for (const Block& k : b) merged += k.count > 1 ? 1 : 0;
    gap = lane.spans.merge_gap_ns();
    const uint64_t depth = std::get<2>(key);
    std::string label = lane.label;
    if (lane.kind == "thread") label = thread_label(lane.tid);
    if (lane.kind == "nvtx")
      label = fmt::format("{} NVTX{}", thread_label(lane.tid),
                          depth == 1 ? "" : fmt::format(" depth {}{}", depth - 1, depth == kMaxNvtxDepthLanes ? "+" : ""));
    json j = json{{"label", label}, {"kind", lane.kind}, {"spans", lane.spans.spans()}, {"blocks", b.size()}};
    j.update(blocks_json(b, begin_));
    lanes.push_back(std::move(j));
  }
  const size_t threads_total = std::max(m_.threads.size(), thread_rank_.size());
  return json{{"span_ns", end_ - begin_},
              {"merge_gap_ns", gap},
              {"spans", spans},
              {"blocks", blocks},
              {"merged_blocks", merged},
              {"omitted_spans", omitted_spans_},
              {"omitted_threads", threads_total - thread_rank_.size()},
              {"categories", categories},
              {"names", names_},
              {"lanes", lanes}};
}

json TimelinePass::gpu_json() const {
  json out = json::array();
  for (const auto& [device, series] : gpu_) out.push_back(series.to_json(device, buckets_));
  return out;
}

json devices_json(const reader::TraceSummary& s) {
  json out = json::array();
  for (const auto& d : s.devices)
    out.push_back(json{{"index", d.index},
                       {"name", d.name},
                       {"memory_total_bytes", d.memory_total_bytes},
                       {"pcie", d.pcie_gen_current ? fmt::format("Gen{} x{} (max Gen{} x{})", d.pcie_gen_current,
                                                                 d.pcie_width_current, d.pcie_gen_max, d.pcie_width_max)
                                                   : ""}});
  return out;
}

// The analysis exactly as `gpuscope analyze --json` has it, plus the
// symbolization line the text report adds to the coverage.
json analysis_json(const ReportInput& in) {
  json a = json_report(in);
  if (const std::string stacks = stacks_coverage_line(in); !stacks.empty()) a["coverage"].push_back(stacks);
  return a;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The template with its two placeholders filled; both are found in the
// template itself, so nothing inserted (a path, a kernel name) is searched.
std::string fill_template(const std::string& title, const std::string& data) {
  const std::string page = kReportTemplate;
  const std::string kTitle = "__GPUSCOPE_TITLE__", kData = "__GPUSCOPE_DATA__";
  const size_t t = page.find(kTitle), d = page.find(kData);
  if (t == std::string::npos || d == std::string::npos || t > d) return page;  // a broken template, caught by tests
  return page.substr(0, t) + title + page.substr(t + kTitle.size(), d - t - kTitle.size()) + data +
         page.substr(d + kData.size());
}

}  // namespace

struct Timeline::Impl : TimelinePass {
  using TimelinePass::TimelinePass;
};

Timeline::Timeline(const TraceModel& model, const Metrics& metrics) : impl_(std::make_unique<Impl>(model, metrics)) {}
Timeline::~Timeline() = default;
void Timeline::add(const reader::ChunkView& chunk) { impl_->add(chunk); }

json html_section(const ReportInput& in, reader::TraceReader& reader) {
  Timeline timeline(in.model, in.metrics);
  reader.read([&](const reader::ChunkView& v) { timeline.add(v); });
  return html_section(in, timeline);
}

json html_section(const ReportInput& in, Timeline& timeline) {
  TimelinePass& pass = *timeline.impl_;
  pass.add_ranges();
  const auto& s = in.model.summary;
  json argv = json::array();
  if (s.process) argv = s.process->argv;
  return json{{"trace", in.trace_path},
              {"program", s.process ? s.process->exe : ""},
              {"argv", argv},
              {"pid", s.process ? s.process->pid : 0},
              {"host", s.process ? s.process->hostname : ""},
              {"wall_s", in.metrics.wall_s},
              {"devices", devices_json(s)},
              {"simulated", s.on_simulated_gpu()},
              {"headline", in.analysis.verdict.headline},
              {"analysis", analysis_json(in)},
              {"timeline", pass.timeline_json()},
              {"gpu_metrics", pass.gpu_json()},
              {"memory", pass.memory_json()}};
}

std::string script_safe_json(const json& j) {
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  // '<' occurs only inside JSON strings, where \u003c means the same.
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string html_page(const json& sections, const std::string& title) {
  return fill_template(html_escape(title), script_safe_json(json{{"sections", sections}}));
}

}  // namespace gpuscope::analyzer
