// Long work (a pass over a trace, importing a foreign one) says how far it
// has come, so that the CLI can draw a progress bar on a terminal. A stage
// costs nothing when no sink is installed (tests, library use, off a
// terminal); the sink decides whether and how often to draw.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "byte_source.h"

namespace gpuscope::reader {

// What advance() counts: bytes of a file, or events (rows of a database).
enum class ProgressUnit { Bytes, Events };

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // `total` in `unit`s; 0 when not known.
  virtual void begin(std::string_view what, uint64_t total, ProgressUnit unit) = 0;
  virtual void advance(uint64_t done) = 0;
  virtual void end() = 0;
};

// "reading big.gpuscope": a verb and the file's name without its folders
// (a terminal line has little room).
std::string progress_label(std::string_view verb, const std::string& path);

// The process's sink (the CLI's terminal bar), or null for none.
void set_progress_sink(ProgressSink* sink);
// The sink a stage begun now on this thread reports to (null when none or
// muted): for work handed to a loaded module with a sink of its own.
ProgressSink* progress_sink();

// While one lives, stages begun on its thread report nothing: work done in
// the background while a program writes to the same terminal (gpuscope
// run reading the trace as it is written) must not draw over its output.
class ProgressMuted {
 public:
  ProgressMuted();
  ~ProgressMuted();
  ProgressMuted(const ProgressMuted&) = delete;
  ProgressMuted& operator=(const ProgressMuted&) = delete;

 private:
  bool was_;
};

// One stage of work, reported to the sink from construction to destruction.
class ProgressStage {
 public:
  ProgressStage(std::string_view what, uint64_t total, ProgressUnit unit = ProgressUnit::Bytes);
  ~ProgressStage();
  ProgressStage(const ProgressStage&) = delete;
  ProgressStage& operator=(const ProgressStage&) = delete;
  void advance(uint64_t done) {
    if (sink_ != nullptr) sink_->advance(done);
  }
  bool observed() const { return sink_ != nullptr; }

 private:
  ProgressSink* sink_;
};

// `source`, telling `stage` the furthest byte read: for readers that go
// through a file from its start to its end (a streamed import).
std::unique_ptr<ByteSource> progress_source(std::unique_ptr<ByteSource> source, ProgressStage& stage);

}  // namespace gpuscope::reader
