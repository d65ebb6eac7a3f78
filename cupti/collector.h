// The CUPTI activity collector (issue 6): set up once by InitializeInjection
// (the driver calls it at CUDA init when CUDA_INJECTION64_PATH names
// libgpuscope.so), it enables the activity kinds gpuscope converts, hands
// CUPTI buffers out and takes completed ones back, and maps CUPTI's
// correlation ids to the hooked calls' own. The writer-side half, turning
// completed buffers into trace records, is cupti_source.h.
//
// Lock rules (as kineto writes them down): mutex_ guards only the queue of
// completed buffers and the status; no CUPTI function is ever called with
// it held, since CUPTI calls back into the collector (buffer completion) from
// inside its own functions, flushes included.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "callback_scope.h"
#include "clock_fit.h"
#include "correlation_table.h"
#include "cupti_api.h"
#include "side_tables.h"

namespace gpuscope::cupti {

struct CollectorOptions {
  // CUPTI's recommendation is a few MB; kineto uses 4 MB.
  size_t buffer_bytes = 4u << 20;
  // Outstanding buffers (handed to CUPTI, not yet converted) at most: a
  // writer that falls behind costs records (counted), not unbounded memory.
  uint32_t max_buffers = 32;
  // CUPTI's own periodic flush, so records arrive during the run, not only
  // when a 4 MB buffer fills; 0 leaves CUPTI's default.
  uint32_t flush_period_ms = 100;
  // Which calls CUPTI calls back for (correlation ids), and which activity
  // kinds beyond CONCURRENT_KERNEL are enabled (all of them, or the list in
  // `kinds`); callback_scope.h. Chosen by select() before start().
  CallbackScope callbacks = CallbackScope::DeviceWork;
  std::optional<std::string> kinds;
  // Sampled tracing: collection on for window_ns, then off until period_ns
  // after the window opened (0: on all the time). `schedule` names it in the
  // trace. Chosen by set_sampling() before start().
  uint64_t window_ns = 0, period_ns = 0;
  std::string schedule;
};

// A buffer CUPTI filled (valid bytes) and gave back.
struct CompletedBuffer {
  struct Free {
    void operator()(uint8_t* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
  size_t valid = 0;
};

class Collector {
 public:
  explicit Collector(CollectorOptions options = {});
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Sets CUPTI up through `api` (loaded from `path`); on any failure every
  // step taken is undone, the program goes on with host-only capture and
  // the reason is in status(). Once per collector; false when not active.
  bool start(const CuptiApi& api, const std::string& path);
  // GPUSCOPE_CUPTI_CALLBACKS and GPUSCOPE_CUPTI_KINDS as the library read
  // them (null: unset); ignored once started.
  void select(const char* callbacks, const char* kinds);
  // GPUSCOPE_DEVICE_SAMPLING as the library parsed it; ignored once started.
  void set_sampling(uint64_t window_ns, uint64_t period_ns, std::string schedule);
  // Records why collection never started (libcupti missing, ...).
  void mark_unavailable(uint8_t state, std::string reason);

  // End of capture: a forced flush (records of buffers still being filled
  // included), then every activity kind and callback off so the program
  // stops paying for CUPTI. Idempotent; a second caller waits (bounded)
  // for the first to finish.
  void finish();

  // A forced flush with collection left as it is: the end of one attach's
  // trace (standby), after which a later attach collects again. Records
  // completed by it wait in take_completed().
  void flush();

  // Why collection is held off. Each reason is independent: every enabled
  // activity kind and callback is off while any is held, and on again (as
  // start() left them) once none is. A hold taken before start() applies
  // from its end: CUPTI is set up (so the kinds it refuses are known) and
  // switched off at once.
  enum class Hold : uint8_t {
    Sampling = 1,  // sampled tracing between its windows (cupti_source.cpp)
    Window = 2,    // no capture window open: before, between and after windows, standby between attaches
  };
  // True when the reason changed (held now / released now) on a collector
  // not finished; finish() wins: nothing is enabled after it.
  bool hold(Hold why);
  bool release(Hold why);
  // Whether collection is on now (started, not held, not finished).
  bool collecting() const;
  const CollectorOptions& options() const { return options_; }
  // When start() succeeded, and when finish() turned collection off (0: not yet).
  uint64_t started_ns() const { return started_ns_.load(std::memory_order_acquire); }
  uint64_t finished_ns() const { return finished_ns_.load(std::memory_order_acquire); }

  // Writer side: the buffers completed since the last call.
  std::vector<CompletedBuffer> take_completed();
  // Status and counters; the source adds its own counts.
  container::DeviceCollectionData status() const;
  // Bumped on every status change, so the source writes it only then.
  uint64_t status_serial() const { return status_serial_.load(std::memory_order_acquire); }
  bool active() const { return active_.load(std::memory_order_acquire); }
  const CuptiApi& api() const { return api_; }
  // CUPTI time -> monotonic for records converted now.
  LinearClock clock();
  // A calibration pair now (only while the clock is Calibrated).
  void calibrate();
  const CorrelationTable& correlations() const { return correlations_; }

  // CUPTI's callbacks land here (static trampolines in collector.cpp).
  void on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t valid);
  void on_api_enter(uint32_t cupti_correlation);

 private:
  bool subscribe();
  bool setup_clock_and_buffers();
  bool enable_kinds();
  std::string enable_callbacks();
  uint32_t enable_device_work_callbacks(CUpti_CallbackDomain domain);
  void switch_off();
  void switch_on();
  // Under toggle_mutex_: the kinds and callbacks are enabled exactly while
  // the collector is active and nothing holds it.
  bool switched_on() const { return active_.load(std::memory_order_acquire) && held_ == 0; }
  void undo();
  void fail(uint8_t state, std::string reason);
  void bump() { status_serial_.fetch_add(1, std::memory_order_acq_rel); }

  CollectorOptions options_;  // select() may change it before start()
  CuptiApi api_;  // written by start() before active_ is set
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_ActivityKind> enabled_;
  // What enable_callbacks() turned on, so release() turns on the same.
  std::vector<CUpti_CallbackDomain> whole_domains_;
  struct EnabledCallback {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
  };
  std::vector<EnabledCallback> callbacks_;
  // Serializes holds, the end of start() and finish()'s switch-off. Not
  // mutex_: CUPTI may complete buffers (taking mutex_) inside the calls made
  // under it.
  mutable std::mutex toggle_mutex_;
  uint8_t held_ = 0;         // Hold bits, under toggle_mutex_
  std::atomic<uint64_t> started_ns_{0}, finished_ns_{0};
  CorrelationTable correlations_;
  std::atomic<bool> started_{false};
  std::atomic<bool> active_{false};
  std::atomic<uint64_t> status_serial_{0};
  std::atomic<uint32_t> outstanding_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> dropped_{0};

  mutable std::mutex mutex_;
  std::condition_variable finished_cv_;
  int finish_state_ = 0;  // under mutex_: 0 not yet, 1 in progress, 2 done
  std::vector<CompletedBuffer> completed_;   // under mutex_
  container::DeviceCollectionData status_;     // under mutex_
  std::vector<ClockPair> calibration_;       // under mutex_
};

// The collector of this process (never destroyed: CUPTI may call back
// during exit).
Collector& process_collector();

}  // namespace gpuscope::cupti
