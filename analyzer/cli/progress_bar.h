// The progress bar the offline commands (analyze, diff, export, report,
// import, info) draw on stderr while they read a trace or import one:
//   reading big.gpuscope (pass 2) [#####-----]  52%  1.4 GB/2.7 GB  3.1 s
// Only on a terminal, only once the command has run half a second (a
// quick command never flickers), redrawn at most ten times a second, and
// erased when the stage ends, so that what the command prints is untouched.
// -q turns it off; GPUSCOPE_PROGRESS=never does too, and =always draws
// every stage from its start even off a terminal (logs, tests).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "progress.h"

namespace gpuscope::cli {

class TerminalProgress final : public reader::ProgressSink {
 public:
  // `immediate`: draw from the first stage on, not after the delay.
  TerminalProgress(int fd, bool immediate);
  ~TerminalProgress() override;
  void begin(std::string_view what, uint64_t total, reader::ProgressUnit unit) override;
  void advance(uint64_t done) override;
  void end() override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Stage {
    std::string what;
    uint64_t total = 0;
    uint64_t done = 0;
    reader::ProgressUnit unit = reader::ProgressUnit::Bytes;
    Clock::time_point started;
  };
  void draw(Clock::time_point now);
  std::string line(const Stage& stage, Clock::time_point now, size_t width) const;
  void erase();

  int fd_;
  Clock::time_point shown_from_;  // no drawing before
  Clock::time_point last_draw_{};
  std::vector<Stage> stages_;  // nested stages: the innermost is drawn
  bool drawn_ = false;         // a line is on the terminal
};

// The bar for an offline command, installed as the process's progress
// sink for as long as the result lives; null when it must not be drawn
// (quiet, not a terminal, GPUSCOPE_PROGRESS=never).
std::unique_ptr<TerminalProgress> install_progress_bar(bool quiet);

}  // namespace gpuscope::cli
