// Standby and attach (issue 7): the library loads idle and writes nothing
// until `gpuscope attach PID` asks for a trace.
//
// Idle is Phase::Paused with no session: every hook passes through at the
// flag check it makes outside a capture window. An attach is a capture
// window opened from the control channel: a fresh session writes a fresh
// trace file at the path the CLI sent (fresh sources, header and metadata,
// one CaptureWindow marker); detach, or the end of the attach's duration,
// finalizes it ("detached") and the process is idle again, ready for the
// next attach. The process ending while attached ends the trace as usual.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "control_protocol.h"
#include "process_info.h"
#include "trace_source.h"

namespace gpuscope::standby {

using SourceFactory = std::function<std::vector<std::unique_ptr<capture::TraceSource>>()>;

struct StandbyConfig {
  capture::SessionOptions options;
  capture::ProcessMetadata metadata;  // of the process, written into every attach's trace
  SourceFactory make_sources;         // one set per attach: a source lives as long as its trace
  std::string control_dir;            // control_paths.h; empty: the default
};

// Goes idle (Phase::Paused) and serves the control socket. False with a
// sentence in *error when the socket cannot be made safely; the process
// then runs untraced.
bool start_standby(StandbyConfig config, std::string* error);

// What the control channel asks; also called directly by tests.
bool attach(const std::string& path, uint64_t duration_ms, std::string* error);
// Finalizes the attach's trace; *path is where it is.
bool detach(std::string* path, std::string* error);
control::ProcessState state();

// The control request handler (control_server.h).
control::Reply handle_request(const control::Request& request);

// Process exit, before the session is finalized: no attach starts any
// more and the socket goes away.
void shutdown_standby();

// The child of fork(): nothing to serve, nothing to finalize.
void after_fork_child();

}  // namespace gpuscope::standby
