// The trace file: created safely, appended to frame by frame, and on any
// write error cut back to its last whole frame so that what was written
// stays readable. A failure here costs the trace, never the program.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gpuscope::capture {

class TraceOutput {
 public:
  TraceOutput() = default;
  ~TraceOutput();
  TraceOutput(const TraceOutput&) = delete;
  TraceOutput& operator=(const TraceOutput&) = delete;

  // Creates `path` with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC and mode 0600:
  // an existing file, symlink or FIFO at the path is refused, never followed
  // or overwritten. The file stays locked as live (schemas/trace_lock.h)
  // until close(). On failure returns false and sets *error to a sentence.
  bool create(const std::string& path, std::string* error);

  // Takes an already-open descriptor (tests, and callers that opened it).
  void adopt(int fd, std::string path);

  // Appends bytes in full (retrying EINTR and short writes). On failure the
  // output is marked failed, cut back to the last complete append, and
  // every later call returns false at once. A file that created() made and
  // that holds no frame yet (nothing past the file header) is removed
  // instead: a reader could use nothing in it. A failed write never
  // raises SIGXFSZ in the program (a file-size limit is a full disk here).
  bool append(std::span<const std::byte> bytes);

  // After a failure: one best-effort append of a small final frame, so the
  // trace can say why it ends. Returns whether it landed.
  bool append_after_failure(std::span<const std::byte> bytes);

  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return good_size_; }
  void close();

 private:
  bool write_all(std::span<const std::byte> bytes);
  void cut_back();
  bool remove_if_empty();

  int fd_ = -1;
  std::string path_;
  uint64_t good_size_ = 0;  // file size after the last complete append
  bool created_ = false;    // made by create(): ours to remove
  bool failed_ = false;
  std::string failure_;
};

}  // namespace gpuscope::capture
