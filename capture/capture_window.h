// Capture windows (issue 7): record only the stretch that matters.
//
// A session with a window configuration starts paused (Phase::Paused: hooks
// pass through at the cost of a flag check, nothing is counted as dropped).
// A window opens after `delay`, at cudaProfilerStart / cuProfilerStart
// when the capture range is the profiler API, or when the named NVTX range
// opens (preload/nvtx/nvtx_capture.cpp); it closes after `duration`, or at
// the matching stop / pop / end. Each closed window becomes one CaptureWindow
// marker in the trace, so the analyzer knows which time was captured. When
// the last window allowed has closed (end policy "stop", or "repeat:N"
// reached), the writer finalizes the trace ("detached") and the program
// runs on untraced.
//
// Transitions are rare and take a mutex; the hot path only ever reads the
// phase.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "capture_range.h"
#include "trace_source.h"

namespace gpuscope::capture {

// The capture range (what opens a window: protocol/capture_range.h) and
// the timing around it.
struct WindowConfig : protocol::CaptureRange {
  uint64_t delay_ns = 0;     // nothing opens before this, from capture start
  uint64_t duration_ns = 0;  // each window's length; 0: until the range ends or the process does
  uint32_t max_windows = 1;  // 0: repeat without limit

  bool active() const { return delay_ns != 0 || duration_ns != 0 || range != Range::None; }
};

// GPUSCOPE_DELAY_MS, GPUSCOPE_DURATION_MS, GPUSCOPE_CAPTURE_RANGE
// (cudaProfilerApi or nvtx:MESSAGE[@DOMAIN]) and GPUSCOPE_CAPTURE_RANGE_END (stop | repeat |
// repeat:N), in the grammar of protocol/capture_range.h. False, with a
// sentence in *error, for a value it cannot honour (capture then proceeds
// unwindowed rather than guessing).
bool read_window_config(WindowConfig* out, std::string* error);

// Before the session starts. True when it must start paused.
bool configure_windows(const WindowConfig& config);

// Profiler API hooks, on the calling thread, whether or not recording:
// start before the call; stop around it (nested runtime -> driver calls
// close the window once, after the outermost). Closing the last window
// ends the trace right there, on the calling thread.
void on_profiler_start() noexcept;
void on_profiler_stop_begin() noexcept;
void on_profiler_stop_end() noexcept;

// Windows opened by an event (a profiler or NVTX range, an attach from
// preload/control/standby.h), whatever drives them. Open: true when this call
// opened a window (not when one was already open, still delayed, or all
// windows were used). Close: closing the last window ends the trace right
// there, on the calling thread.
bool open_range_window() noexcept;
void close_range_window() noexcept;

// Told of every window that opens (true) or closes (false), on the thread
// that switched it and under the windows' lock, so calls come in the
// windows' own order. Device collection follows the windows through it
// (preload/lifecycle.cpp): CUPTI is held off while no window is open. Set
// before capture starts; null: nobody is told.
using WindowListener = void (*)(bool open) noexcept;
void set_window_listener(WindowListener listener) noexcept;

// The NVTX capture range, or null when the range is not NVTX. Set before
// capture starts and never changed after, so the NVTX hooks read it freely.
const WindowConfig* nvtx_capture_range() noexcept;

// The writer-side source: opens and closes time windows, writes closed
// windows as markers, and asks for the capture to end after the last one.
std::unique_ptr<TraceSource> make_window_source();

}  // namespace gpuscope::capture
