// Runs a helper program (journalctl) and keeps what it prints, bounded in
// bytes and time: the doctor must answer even when the helper floods its
// output or hangs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuscope::doctor {

struct CommandOutput {
  bool started = false;  // false: not found or not runnable (error says why)
  int exit_status = -1;  // the exit code, or 128+N when killed by signal N
  bool truncated = false;  // stdout reached the byte limit, or the deadline passed: the helper was killed
  std::string out, err;  // stdout (at most max_bytes), stderr (at most 64 KiB)
  std::string error;
};

// Runs argv[0] (looked up on PATH) with no standard input, waits at most
// `timeout_ms`, and kills it (SIGKILL) past that or past `max_bytes` of output.
CommandOutput run_command_output(const std::vector<std::string>& argv, size_t max_bytes, int timeout_ms);

}  // namespace gpuscope::doctor
