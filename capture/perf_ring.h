// Reading the kernel's perf sample buffer (perf_event_open(2), "MMAP layout")
// from the writer thread: the records between the consumer position (data
// tail) and the producer position (data head) of a power-of-two data area,
// records wrapping around its end included. The bytes come from the kernel,
// but they are read as if hostile: a record whose size does not fit what is
// left, or a sample whose call chain overruns its record, is counted and
// skipped, never followed.
//
// The samples are those host_sampler.cpp asks for: sample_type IP | TID |
// TIME | CALLCHAIN, in that order (the kernel's fixed field order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuscope::capture {

// One stack sample: its user frames, innermost first, read as return
// addresses (the sampled instruction's address plus one, so that an
// offline lookup of "the call before this address" finds that instruction
// itself; docs/trace-format.md, HostSample).
struct PerfSample {
  uint64_t time_ns = 0;
  uint32_t pid = 0, tid = 0;
  std::span<const uint64_t> frames;
};

struct PerfReadCounts {
  uint64_t samples = 0;     // handed to the sink
  uint64_t lost = 0;        // samples the kernel reported lost (PERF_RECORD_LOST)
  uint64_t unreadable = 0;  // records that made no sense, skipped
};

// Kernel record types and call-chain markers this reader knows (from
// <linux/perf_event.h>, repeated here so tests can build records without it).
inline constexpr uint32_t kPerfRecordLost = 2;
inline constexpr uint32_t kPerfRecordSample = 9;
inline constexpr uint64_t kPerfContextMax = static_cast<uint64_t>(-4095);  // entries >= this are markers

class PerfRecordReader {
 public:
  // `max_frames`: frames kept per sample (the rest of a deeper chain is cut).
  explicit PerfRecordReader(uint32_t max_frames) : max_frames_(max_frames) {}

  // Reads the records in [tail, head) of `data` (its size a power of two;
  // positions count bytes since the buffer began and wrap modulo its size),
  // calling sink(const PerfSample&) for each sample; adds to `counts`.
  // Returns the position to store as the new data tail: `head` when all was
  // read (a damaged stretch is skipped to the head as a whole).
  template <class Sink>
  uint64_t read(std::span<const std::byte> data, uint64_t tail, uint64_t head, Sink&& sink, PerfReadCounts* counts) {
    while (tail != head) {
      const std::span<const std::byte> record = next_record(data, tail, head, counts);
      if (record.empty()) return head;
      tail += record.size();
      PerfSample sample;
      if (parse(record, &sample, counts)) sink(static_cast<const PerfSample&>(sample));
    }
    return tail;
  }

 private:
  std::span<const std::byte> next_record(std::span<const std::byte> data, uint64_t tail, uint64_t head,
                                         PerfReadCounts* counts);
  bool parse(std::span<const std::byte> record, PerfSample* sample, PerfReadCounts* counts);

  uint32_t max_frames_;
  std::vector<std::byte> wrapped_;  // a record that wraps around the end, made contiguous
  std::vector<uint64_t> frames_;
};

}  // namespace gpuscope::capture
