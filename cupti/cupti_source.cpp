#include "cupti_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <type_traits>
#include <variant>

#include "activity_convert.h"
#include "chunk_builder.h"
#include "clock.h"
#include "session.h"

namespace gpuscope::cupti {
namespace {

// A calibrated clock (CUPTI refused our timestamp callback) gets a fresh
// pair this often; the fit needs a few over the run, not thousands.
constexpr uint64_t kCalibrationPeriodNs = 1'000'000'000;

class CuptiSource final : public capture::TraceSource {
 public:
  CuptiSource(Collector& collector, std::string not_injected, TraceEnd at_end)
      : collector_(collector), not_injected_(std::move(not_injected)), at_end_(at_end) {}

  void begin(capture::ChunkBuilder& out) override {
    // An attach's trace holds its window only: buffers completed before it
    // began (the tail of the previous attach's, work finished while
    // detached) are let go unread.
    if (at_end_ == TraceEnd::FlushForNextTrace) (void)collector_.take_completed();
    write_status(out);
  }
  void poll(uint64_t now_ns, capture::ChunkBuilder& out) override;
  void end() override {
    if (at_end_ == TraceEnd::FinishCollection) collector_.finish();
    else collector_.flush();
    ended_ = true;
  }

 private:
  void convert_buffers(capture::ChunkBuilder& out);
  void write_status(capture::ChunkBuilder& out);
  void sample_windows(uint64_t now_ns, capture::ChunkBuilder& out);
  void close_window(uint64_t end_ns, capture::ChunkBuilder& out);

  Collector& collector_;
  const std::string not_injected_;
  const TraceEnd at_end_;
  uint64_t written_serial_ = ~uint64_t{0};
  uint64_t written_records_ = 0;
  uint64_t last_calibration_ns_ = 0;
  bool ended_ = false;
  // Writer thread only.
  uint64_t records_ = 0, unconverted_ = 0, uncorrelated_ = 0;
  // Kernels, copies and memsets converted: the program's device work, and
  // the earliest start among those of the first poll that had any.
  uint64_t work_records_ = 0, first_work_ns_ = 0;
  // Sampled tracing: the window open since opened_ns_, or the time the next
  // one opens. Windows are timed (their length runs from opened_ns_) once
  // the program's first device work has been seen; until then the first
  // window stays open.
  bool window_open_ = false, windows_started_ = false, windows_timed_ = false;
  uint64_t opened_ns_ = 0, next_open_ns_ = 0;
  uint32_t schedule_id_ = 0;
};

// Sampled tracing runs on the writer's clock: a window closes at the first
// poll past its length and the next opens at the first poll past the
// period, so both are as late as one drain interval (10 ms by default).
// The markers carry the times the switches were made.
//
// CUPTI is on from collection's start (CUDA's start), but the first window
// begins with the first device work the writer converts, at that work's own
// start, and runs its length from there. So every sampled trace holds some:
// a short program, or a service that starts CUDA and waits for its first
// request, would otherwise spend its one window on set-up, and that idle
// wait is not judged as part of a window. Until then CUPTI is on with
// nothing to record, which costs little; the work is seen up to CUPTI's
// flush period (100 ms) late, so the first window may be that much longer.
void CuptiSource::sample_windows(uint64_t now_ns, capture::ChunkBuilder& out) {
  const CollectorOptions& o = collector_.options();
  if (o.window_ns == 0) return;
  if (!windows_started_) {
    if (collector_.started_ns() == 0) return;  // not (yet) collecting
    windows_started_ = window_open_ = true;
    opened_ns_ = collector_.started_ns();
    schedule_id_ = capture::session_strings().intern(o.schedule.c_str());
  }
  if (window_open_) {
    if (const uint64_t finished = collector_.finished_ns(); finished != 0) return close_window(finished, out);
    if (!windows_timed_ && work_records_ != 0) {
      windows_timed_ = true;
      opened_ns_ = std::clamp(first_work_ns_, opened_ns_, now_ns);
    }
    if (!windows_timed_ || now_ns < opened_ns_ + o.window_ns) return;
    const uint64_t closing = capture::monotonic_ns();
    collector_.hold(Collector::Hold::Sampling);  // false only when collection ended meanwhile
    const uint64_t finished = collector_.finished_ns();
    next_open_ns_ = opened_ns_ + o.period_ns;
    return close_window(finished != 0 ? std::min(finished, closing) : closing, out);
  }
  if (now_ns < next_open_ns_ || collector_.finished_ns() != 0) return;
  if (collector_.release(Collector::Hold::Sampling)) {
    window_open_ = true;
    opened_ns_ = capture::monotonic_ns();
  }
}

void CuptiSource::close_window(uint64_t end_ns, capture::ChunkBuilder& out) {
  window_open_ = false;
  out.add(fb::Marker(opened_ns_, end_ns > opened_ns_ ? end_ns - opened_ns_ : 0, 0, schedule_id_, 0, 0,
                     fb::MarkerKind::DeviceWindow, 0, 0));
}

void CuptiSource::poll(uint64_t now_ns, capture::ChunkBuilder& out) {
  const container::DeviceCollectionData status = collector_.status();
  if (collector_.active() && status.clock == static_cast<uint8_t>(fb::DeviceClock::Calibrated) &&
      now_ns - last_calibration_ns_ >= kCalibrationPeriodNs) {
    collector_.calibrate();
    last_calibration_ns_ = now_ns;
  }
  convert_buffers(out);
  sample_windows(now_ns, out);
  // The status when it changed, and with the final counts in the last chunk.
  if (collector_.status_serial() != written_serial_ || (ended_ && records_ != written_records_)) write_status(out);
}

void CuptiSource::convert_buffers(capture::ChunkBuilder& out) {
  std::vector<CompletedBuffer> buffers = collector_.take_completed();
  if (buffers.empty()) return;
  const CuptiApi& api = collector_.api();
  const CorrelationTable& table = collector_.correlations();
  const LinearClock clock = collector_.clock();
  ConvertContext ctx;
  ctx.to_monotonic = [&clock](uint64_t t) { return clock(t); };
  ctx.correlate = [&table](uint32_t id) { return table.get(id); };
  ctx.intern = [](const char* s) { return s == nullptr ? 0u : capture::session_strings().intern(s); };
  for (CompletedBuffer& b : buffers) {
    CUpti_Activity* record = nullptr;
    while (b.valid != 0 && api.get_next_record(b.data.get(), b.valid, &record) == CUPTI_SUCCESS) {
      const std::optional<DeviceRecord> converted = convert(*record, ctx);
      if (!converted) {
        ++unconverted_;
        continue;
      }
      std::visit([&](const auto& r) {
        out.add(r);
        if (r.correlation_id() == 0) ++uncorrelated_;
        using Kind = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<Kind, fb::Kernel> || std::is_same_v<Kind, fb::Copy> ||
                      std::is_same_v<Kind, fb::Memset>) {
          if (work_records_++ == 0 || r.start_ns() < first_work_ns_) first_work_ns_ = r.start_ns();
        }
      }, *converted);
      ++records_;
    }
  }
}

void CuptiSource::write_status(capture::ChunkBuilder& out) {
  written_serial_ = collector_.status_serial();
  container::DeviceCollectionData s = collector_.status();
  if (s.state == static_cast<uint8_t>(fb::DeviceCollectionState::NotInjected) && s.reason.empty())
    s.reason = not_injected_;
  s.records = records_;
  s.unconverted = unconverted_;
  s.uncorrelated = uncorrelated_;
  written_records_ = records_;
  out.set_device_collection(std::move(s));
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa{}, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::string not_injected_reason(const char* injection_env, const std::string& own_library) {
  if (injection_env == nullptr || *injection_env == '\0')
    return "CUDA_INJECTION64_PATH not set: device activity is collected under `gpuscope run`";
  if (own_library.empty() || same_file(injection_env, own_library) || injection_env == own_library) return "no driver";
  return std::string("CUDA_INJECTION64_PATH names another library: ") + injection_env;
}

std::unique_ptr<capture::TraceSource> make_cupti_source(Collector& collector, std::string not_injected_reason,
                                                       TraceEnd at_end) {
  return std::make_unique<CuptiSource>(collector, std::move(not_injected_reason), at_end);
}

}  // namespace gpuscope::cupti
