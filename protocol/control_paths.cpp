#include "control_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "environment.h"

namespace gpuscope::control {
namespace {

std::string from_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '/' ? std::string(v) : std::string();
}

std::string tmp_dir() { return "/tmp/gpuscope-" + std::to_string(geteuid()); }

}  // namespace

std::string control_dir() { return candidate_dirs().front(); }

std::vector<std::string> candidate_dirs() {
  if (std::string dir = from_env(protocol::env::kControlDir); !dir.empty()) return {dir};
  std::vector<std::string> dirs;
  if (std::string xdg = from_env("XDG_RUNTIME_DIR"); !xdg.empty()) dirs.push_back(xdg + "/gpuscope");
  dirs.push_back(tmp_dir());
  return dirs;
}

bool ensure_private_dir(const std::string& dir, bool create, std::string* error) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory (a symlink or a file is refused)";
    return false;
  }
  if (st.st_uid != geteuid()) {
    *error = dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user: refused";
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    *error = dir + " is open to other users (mode " + mode + ", want 700): refused";
    return false;
  }
  return true;
}

std::string socket_path(const std::string& dir, pid_t pid) { return dir + "/" + std::to_string(pid) + ".sock"; }

bool parse_socket_name(std::string_view name, pid_t* pid) {
  if (!name.ends_with(".sock")) return false;
  name.remove_suffix(5);
  if (name.empty() || (name[0] == '0' && name.size() > 1)) return false;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), *pid);
  return ec == std::errc() && end == name.data() + name.size() && *pid > 0;
}

}  // namespace gpuscope::control
