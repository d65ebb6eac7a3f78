// A TimelineSink that hands events to another sink on a second thread.
// Encoding (JSON formatting, protobuf serialization) is most of an export
// and needs nothing of the walk's state but the event itself, so the walk
// (reading, decoding, tracks, nesting) runs on the calling thread while the
// encoder formats the events before. Events are copied into batches that
// circulate between the two threads; the encoder sees them in the order
// they were handed over, so the output is the same byte for byte.
// docs/performance.md, "Export on two threads".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "timeline_sink.h"

namespace gpuscope::exporter {

class PipelinedSink final : public TimelineSink {
 public:
  explicit PipelinedSink(TimelineSink& encoder);
  ~PipelinedSink() override;
  PipelinedSink(const PipelinedSink&) = delete;
  PipelinedSink& operator=(const PipelinedSink&) = delete;

  void set_origin(uint64_t origin_ns) override;
  void thread_name(Track t, std::string_view name) override;
  void process_name(Track t, std::string_view name) override;
  void slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, ArgsView args,
             Flow flow) override;
  void instant(Track t, Label name, const char* category, uint64_t at, ArgsView args, Flow flow) override;
  void counter(Track t, Label name, uint64_t at, ArgsView values) override;
  void async_range(Track t, Label name, const char* category, uint64_t id, uint64_t start, uint64_t end,
                   ArgsView args) override;
  // Waits for the encoder, then rethrows what it threw; later events go
  // to the encoder sink directly, on the calling thread.
  void drain() override;
  void finish(const reader::TraceSummary& s, const ExportStats& stats, uint64_t origin_ns) override;
  uint64_t events() const override { return encoder_.events(); }

  // Events per batch: large enough that the hand-over is rare, small
  // enough that three batches stay a few megabytes.
  static constexpr size_t kBatchEvents = 4096;

 private:
  enum class Kind : uint8_t { Origin, ThreadName, ProcessName, Slice, Instant, Counter, Async };
  // An event's category, times and flow, as the sink call had them.
  struct Timing {
    const char* category = nullptr;
    uint64_t a = 0, b = 0, c = 0;  // start or time, duration or end, async id
    Flow flow;
  };
  struct Event {
    Kind kind;
    uint32_t label_id;
    Track track;
    const char* label;    // the walk's text for a label with an id, else nullptr
    size_t label_offset;  // else where its copy is in the batch's text
    size_t label_size;
    Timing timing;
    size_t args_first, args_last, args_text;  // in the batch
  };
  struct Batch {
    std::vector<Event> events;
    std::vector<Arg> args;
    std::string text;
    void clear() {
      events.clear();
      args.clear();
      text.clear();
    }
  };

  void add(Kind kind, Track t, Label name, ArgsView args, const Timing& timing);
  void hand_over();
  void encode_batches();
  void encode(const Batch& b, const Event& e);
  bool direct() const { return current_ == nullptr; }

  TimelineSink& encoder_;
  std::vector<std::unique_ptr<Batch>> batches_;
  Batch* current_ = nullptr;  // being filled; null once drained
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch*> full_, free_;
  bool closing_ = false, abandoned_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace gpuscope::exporter
