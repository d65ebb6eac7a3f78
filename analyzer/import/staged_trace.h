// The file an import writes. Frames are appended to an unlinked staging
// file as the source is read (sequence 1, 2, ...); the first frame, which
// holds the process metadata that only the whole source can give (the
// earliest timestamp, what the file says at its end), is written last and
// put first when the staged frames are copied behind it: the output holds
// the compressed trace only, so the copy is a small part of an import.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gpuscope::importer {

class StagedTrace {
 public:
  StagedTrace() = default;
  ~StagedTrace();
  StagedTrace(const StagedTrace&) = delete;
  StagedTrace& operator=(const StagedTrace&) = delete;

  // Stages next to `out_path`, or in $TMPDIR (/tmp) when it is empty. False
  // with a one-line reason in *error.
  bool open(const std::string& out_path, bool force, std::string* error);
  bool append(std::span<const std::byte> frame);
  // Writes the file header, `first_frame` and the staged frames to the
  // output; returns a read-only descriptor of the result (the caller owns
  // it) or -1 with *error set. An empty out_path gives an unlinked file.
  int finish(std::span<const std::byte> first_frame, std::string* error);
  const std::string& failure() const { return failure_; }

 private:
  int create_output(std::string* error);
  bool copy_staged(int out_fd, std::string* error);

  std::string out_path_;
  bool force_ = false;
  int staged_fd_ = -1;
  uint64_t staged_bytes_ = 0;
  std::string failure_;
};

}  // namespace gpuscope::importer
