// Where the CLI's commands write: directories made private (run, attach),
// and files replaced only when asked to and no capture is writing them.
#pragma once

#include <filesystem>
#include <string>

namespace gpuscope::cli {

// Makes the missing directories of `dir`, each mode 0700 whatever the umask
// (in a directory others can write to, they could plant a FIFO or a symlink
// at a trace's name); existing ones are left as they are.
bool make_private_directories(const std::filesystem::path& dir, std::string* error);

// The one overwrite rule for every command's output file (run, export,
// report and import -o): nothing may be there, or, with --force, a regular
// file that no running capture is writing (schemas/trace_lock.h); false
// with a sentence otherwise. With `remove` the old file is removed here
// (run: the library creates the trace afresh); a command that writes a
// temporary file and renames it over the old one leaves it to the rename.
bool claim_output_file(const std::filesystem::path& path, bool force, bool remove, std::string* error);

// Writes `text` to a temporary file next to `path` (PATH.tmp.PID) and
// renames it over `path`, so a reader (a browser, node_exporter's textfile
// collector) never sees half a file and an interrupted run never replaces
// a good one. "" or why not.
std::string write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gpuscope::cli
