// A /proc or /sys file read whole with open and read. std::ifstream did the
// same with a locale, a stream buffer and their allocations, a measurable
// part of a traced program's start (docs/performance.md). Here because both
// sides read such files: the library its process facts and clocksource,
// `gpuscope doctor` the node's.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace gpuscope::protocol {

// The file's bytes (at most `limit`), or what was read before an error.
inline std::string read_small_file(const char* path, size_t limit = size_t{1} << 24) {
  std::string out;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  while (out.size() < limit) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, std::min(static_cast<size_t>(n), limit - out.size()));
  }
  close(fd);
  return out;
}

}  // namespace gpuscope::protocol
