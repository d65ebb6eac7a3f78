// Where a trace's bytes come from: a file, or memory (tests, fuzzing).
// Opening a file treats its path as hostile: it may name a FIFO (whose
// open blocks until a writer comes), a device (whose open can act: a
// watchdog starts counting), a socket, a directory or a symlink loop, and
// may be swapped for one of those between a check and the open.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace gpuscope::reader {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset; false if they are not all there.
  virtual bool read(uint64_t offset, void* out, size_t n) const = 0;
  // The first offset at or after `offset` that may hold data other than
  // zeros (the end of a sparse file's hole; size() when only a hole is
  // left). A source that cannot tell returns `offset`.
  virtual uint64_t next_data(uint64_t offset) const { return offset; }
};

// A regular file, opened for reading without ever opening anything else:
// nullptr and one line in *error ("PATH is a FIFO (named pipe), not a
// trace file", "cannot open PATH: ...") otherwise.
std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string* error);
std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes);
// A descriptor the caller opened (a temporary file); the source owns and
// closes it. nullptr when it is not a regular file.
std::unique_ptr<ByteSource> descriptor_source(int fd);

// "a FIFO (named pipe)", "a directory", ...: what a file of this st_mode is.
const char* file_kind_text(unsigned mode);

}  // namespace gpuscope::reader
