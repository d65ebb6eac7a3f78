#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "environment.h"

namespace gpuscope::cli {

// bin/gpuscope -> lib/NAME, in the build tree and in an install or unpacked
// bundle alike; never a path baked in at build time.
std::string locate_own_library(const std::string& name, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    *error = "cannot find this executable's path (/proc/self/exe): " + ec.message();
    return {};
  }
  const fs::path dir = exe.parent_path();
  const std::array<fs::path, 3> candidates = {dir / "../lib" / name, dir / "../lib64" / name, dir / name};
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
  *error = "cannot find " + name + " for " + exe.string() + " (looked in " +
           (dir / "../lib").lexically_normal().string() + " and " + dir.string() + ")";
  return {};
}

std::string locate_capture_library(std::string* error) {
  namespace fs = std::filesystem;
  if (const char* override_path = std::getenv(protocol::env::kLibrary)) {
    if (fs::is_regular_file(override_path)) return fs::absolute(override_path).string();
    *error = protocol::env::entry(protocol::env::kLibrary, override_path) + " is not a file";
    return {};
  }
  return locate_own_library("libgpuscope.so", error);
}

}  // namespace gpuscope::cli
