// Where `gpuscope run` and `gpuscope attach` put traces: directories made
// private, and files replaced only when no capture is writing them.
#pragma once

#include <filesystem>
#include <string>

namespace gpuscope::cli {

// Makes the missing directories of `dir`, each mode 0700 whatever the umask
// (in a directory others can write to, they could plant a FIFO or a symlink
// at a trace's name); existing ones are left as they are.
bool make_private_directories(const std::filesystem::path& dir, std::string* error);

// --force: removes the regular file `path`, unless a running capture is
// writing it (schemas/trace_lock.h); false with a sentence otherwise.
bool remove_unless_live(const std::filesystem::path& path, std::string* error);

}  // namespace gpuscope::cli
