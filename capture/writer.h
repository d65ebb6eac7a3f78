// The writer thread: the only code that touches the trace file, until the
// thread that ends the process takes the writer over for the last frame
// (finish_here).
//
// Every drain interval it empties the thread rings into a ChunkBuilder and
// samples CPU time; at least every flush interval (or when a chunk grows
// large) it compresses the chunk into a frame and appends it. A SIGKILL
// therefore loses at most one flush interval. All signals are blocked in
// this thread so it never runs the program's handlers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "chunk_builder.h"
#include "config.h"
#include "cpu_sampler.h"
#include "string_table.h"
#include "thread_slots.h"
#include "trace_output.h"
#include "trace_source.h"

namespace gpuscope::capture {

class Writer {
 public:
  Writer(const SessionOptions& options, SlotPool& pool, StringTable& strings, TraceOutput& output,
         std::atomic<uint64_t>& unslotted_drops, std::vector<TraceSource*> sources = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Writes the file header and the metadata frame on the calling thread (so
  // a process killed right away still leaves a readable trace), then starts
  // the writer thread.
  bool start(const ProcessMetadata& metadata, std::string* error);

  // Writes everything recorded so far and a Totals frame. With stop=true the
  // thread then ends; stop=false (before exec) keeps capturing, and a later
  // Totals frame supersedes this one. Waits at most timeout_ms.
  bool finish(const EndNote& end, bool stop, uint32_t timeout_ms);

  // The last frame, written by the calling thread (session.h,
  // end_session_here): the writer thread is told to stop touching anything,
  // waited for at most timeout_ms if it is in the middle of a drain, and
  // let go. The Writer must not be destroyed afterwards.
  bool finish_here(const EndNote& end, uint32_t timeout_ms);

 private:
  struct Request {
    bool pending = false;
    bool stop = false;
    EndNote end;
    uint64_t serial = 0;
  };

  void run();
  void begin_sources();
  void work(const Request& req);  // one drain (and flush, and Totals frame when asked)
  void drain_all(bool take_polls, bool wait_for_polls);
  void drain_ring(SpscRing& ring);
  void take_poll_run(ThreadSlot& slot, bool wait);
  void add_call_counts(ThreadSlot& slot);
  void poll_sources(uint64_t now);
  bool capture_end_wanted() const;
  bool write_chunk(const TotalsInfo* totals);
  bool write_chunk_with_strings();  // mid-drain: strings interned so far go first
  bool write_frame(std::span<const uint8_t> chunk, const TotalsInfo* totals);
  void on_output_failure();
  DropCounts current_drops() const;
  TotalsInfo make_totals(const EndNote& end, std::string message) const;

  SessionOptions options_;
  SlotPool& pool_;
  StringTable& strings_;
  TraceOutput& output_;
  std::atomic<uint64_t>& unslotted_drops_;
  ChunkBuilder builder_;
  FrameEncoder encoder_;
  CpuSampler cpu_sampler_;
  std::vector<TraceSource*> sources_;
  TickConverter ticks_;
  uint64_t retired_drops_[kDropReasonCount] = {};
  uint64_t events_written_ = 0;
  uint64_t events_discarded_ = 0;  // drained after the output failed
  uint32_t frames_written_ = 0;
  bool output_dead_ = false;
  bool started_ = false;  // failures after start are reported on stderr by the writer
  bool sources_begun_ = false;
  uint64_t last_flush_ns_ = 0;
  uint64_t last_cpu_sample_ns_ = 0;

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // Under mutex_:
  Request request_;
  uint64_t completed_serial_ = 0;
  bool thread_exited_ = false;
  bool working_ = false;      // the thread is draining or writing (not waiting)
  bool taken_over_ = false;   // finish_here: the thread must touch nothing more
};

}  // namespace gpuscope::capture
