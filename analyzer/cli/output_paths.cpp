#include "output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trace_lock.h"

namespace gpuscope::cli {

bool make_private_directories(const std::filesystem::path& dir, std::string* error) {
  std::filesystem::path prefix;
  for (const auto& part : dir.lexically_normal()) {
    prefix /= part;
    if (part.empty() || part == "/") continue;
    if (mkdir(prefix.c_str(), 0700) == 0) {
      chmod(prefix.c_str(), 0700);  // a umask that took the owner's bits away
      continue;
    }
    const int err = errno;
    struct stat st{};
    if (err == EEXIST && stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    *error = fmt::format("cannot create output directory {}: {}", prefix.string(),
                         err == EEXIST ? "something other than a directory is there" : std::strerror(err));
    return false;
  }
  return true;
}

bool remove_unless_live(const std::filesystem::path& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  pid_t writer = 0;
  const bool live = fd >= 0 && container::trace_is_being_written(fd, &writer);
  if (fd >= 0) close(fd);
  if (live) {
    *error = fmt::format("{} is the trace of a capture still running ({}): --force replaces only a finished "
                         "trace; choose another -o",
                         path.string(), writer > 0 ? fmt::format("pid {}", writer) : "in another pid namespace");
    return false;
  }
  if (unlink(path.c_str()) != 0) {
    *error = fmt::format("cannot replace {}: {}", path.string(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace gpuscope::cli
