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
  // A file another process may still be appending to: waits until its
  // size differs from `known` (true, the new size in *size) or its writer
  // has ended with the size unchanged (false). Every other source is whole
  // when opened and says false at once.
  virtual bool wait_for_growth(uint64_t known, uint64_t* size) const {
    (void)known;
    (void)size;
    return false;
  }
  // The open file behind this source, still owned by it; -1 when none. For
  // handing the very file to a loaded module (cli/importers_loaded.cpp).
  virtual int descriptor() const { return -1; }
};

// What a reader of a file still being written waits on (a traced program's
// trace while `gpuscope run` reads it).
class FileGrowth {
 public:
  virtual ~FileGrowth() = default;
  // False once the writer has ended: the file's size is then final.
  virtual bool writer_running() const = 0;
  // Sleeps until the file may have grown or the writer ended; false: stop
  // waiting (the reader gives up, as at the end of a whole file).
  virtual bool wait() const = 0;
};

// A regular file, opened for reading without ever opening anything else:
// nullptr and one line in *error ("PATH is a FIFO (named pipe), not a
// trace file", "cannot open PATH: ...") otherwise.
std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string* error);
// The same for a file still being written: its size is read again when the
// reader reaches the end (ByteSource::wait_for_growth).
std::unique_ptr<ByteSource> open_growing_file_source(const std::string& path, std::shared_ptr<const FileGrowth> growth,
                                                     std::string* error);
std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes);
// A descriptor the caller opened (a temporary file); the source owns and
// closes it. nullptr when it is not a regular file.
std::unique_ptr<ByteSource> descriptor_source(int fd);

// "a FIFO (named pipe)", "a directory", ...: what a file of this st_mode is.
const char* file_kind_text(unsigned mode);

}  // namespace gpuscope::reader
