// A capture session inside the test process, written to a private file and
// read back through the reader: the fixture of the capture-core tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "session.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::capture {

inline SessionOptions quiet_options() {
  SessionOptions o;
  o.cpu_sample_interval_ms = 0;  // exact record counts: no sampler records
  o.drain_interval_ms = 5;
  o.flush_interval_ms = 20;
  return o;
}

class SessionTest : public ::testing::Test {
 protected:
  void start(const SessionOptions& options) {
    path_ = dir_.file("trace.gpuscope");
    ProcessMetadata m = collect_process_metadata();
    m.run_id = "test-run";
    std::string error;
    ASSERT_TRUE(start_session(options, path_, m, &error)) << error;
  }
  test::TraceContents stop_and_read(fb::EndKind kind = fb::EndKind::Exit, int status = 7) {
    stop_session(kind, status);
    return test::read_trace_file(path_);
  }

  test::TempDir dir_;
  std::string path_;
};

}  // namespace gpuscope::capture
