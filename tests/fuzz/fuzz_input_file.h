// The fuzz input as a file, for targets whose code under test reads a path
// (SQLite, the importers): one temporary file for the whole run, rewritten
// for each input and removed at exit.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace gpuscope::fuzz {

// The file, made on the first call ("gpuscope-fuzz-<tag>-XXXXXX" in $TMPDIR or /tmp).
inline const std::string& input_path(const char* tag) {
  static const std::string path = [tag] {
    const char* tmp = std::getenv("TMPDIR");
    std::string p = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpuscope-fuzz-" + tag + "-XXXXXX";
    const int fd = ::mkstemp(p.data());
    if (fd < 0) std::abort();
    ::close(fd);
    return p;
  }();
  static const bool cleanup = std::atexit([] { ::unlink(input_path("").c_str()); }) == 0;
  (void)cleanup;
  return path;
}

// Replaces the file's contents with `data`; false when it could not.
inline bool write_input(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return done == size;
}

}  // namespace gpuscope::fuzz
