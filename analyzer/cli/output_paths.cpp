#include "output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

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

bool claim_output_file(const std::filesystem::path& path, bool force, bool remove, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (!fs::exists(status)) return true;
  if (!force || !fs::is_regular_file(status)) {
    *error = path.string() + " already exists" +
             (fs::is_regular_file(status) ? "; pass --force to replace it" : " and is not a regular file");
    return false;
  }
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
  if (remove && unlink(path.c_str()) != 0) {
    *error = fmt::format("cannot replace {}: {}", path.string(), std::strerror(errno));
    return false;
  }
  return true;
}

std::string write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return std::strerror(errno);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return why;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::remove(tmp.c_str());
  return ec ? ec.message() : "";
}

}  // namespace gpuscope::cli
