#include "perf_ring.h"

#include <cstring>

namespace gpuscope::capture {
namespace {

struct RecordHeader {
  uint32_t type;
  uint16_t misc;
  uint16_t size;
};
static_assert(sizeof(RecordHeader) == 8);

// Fixed part of a sample: header, ip, pid and tid, time, call-chain length.
constexpr size_t kSampleFixedBytes = 8 + 8 + 8 + 8 + 8;
constexpr size_t kLostBytes = 8 + 8 + 8;  // header, id, lost

uint64_t load_u64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::span<const std::byte> PerfRecordReader::next_record(std::span<const std::byte> data, uint64_t tail,
                                                         uint64_t head, PerfReadCounts* counts) {
  const uint64_t size = data.size();
  const uint64_t available = head - tail;
  // The kernel never lets the head run more than a buffer ahead of the tail,
  // nor backwards; positions that say otherwise are not to be followed.
  if (size == 0 || (size & (size - 1)) != 0 || available > size || available < sizeof(RecordHeader)) {
    ++counts->unreadable;
    return {};
  }
  const uint64_t offset = tail & (size - 1);
  RecordHeader h;
  for (size_t i = 0; i < sizeof h; ++i)  // the header itself may wrap
    reinterpret_cast<std::byte*>(&h)[i] = data[(offset + i) & (size - 1)];
  if (h.size < sizeof(RecordHeader) || h.size > available || h.size % 8 != 0) {
    ++counts->unreadable;
    return {};
  }
  if (offset + h.size <= size) return data.subspan(offset, h.size);
  wrapped_.resize(h.size);
  const size_t first = size - offset;
  std::memcpy(wrapped_.data(), data.data() + offset, first);
  std::memcpy(wrapped_.data() + first, data.data(), h.size - first);
  return wrapped_;
}

bool PerfRecordReader::parse(std::span<const std::byte> record, PerfSample* sample, PerfReadCounts* counts) {
  RecordHeader h;
  std::memcpy(&h, record.data(), sizeof h);
  if (h.type == kPerfRecordLost) {
    if (record.size() >= kLostBytes) counts->lost += load_u64(record.data() + 16);
    else ++counts->unreadable;
    return false;
  }
  if (h.type != kPerfRecordSample) return false;  // throttling notes and the like: nothing to keep
  if (record.size() < kSampleFixedBytes) {
    ++counts->unreadable;
    return false;
  }
  const std::byte* p = record.data() + 8;
  const uint64_t ip = load_u64(p);
  const uint64_t ids = load_u64(p + 8);
  sample->pid = static_cast<uint32_t>(ids);
  sample->tid = static_cast<uint32_t>(ids >> 32);
  sample->time_ns = load_u64(p + 16);
  const uint64_t nr = load_u64(p + 24);
  if (nr > (record.size() - kSampleFixedBytes) / 8) {
    ++counts->unreadable;
    return false;
  }
  // The chain starts with the sampled address itself (after the "user
  // context" marker); markers are left out, the leaf becomes ip + 1.
  frames_.clear();
  frames_.push_back(ip + 1);
  const std::byte* chain = p + 32;
  bool leaf_seen = false;
  for (uint64_t i = 0; i < nr && frames_.size() < max_frames_; ++i) {
    const uint64_t pc = load_u64(chain + i * 8);
    if (pc >= kPerfContextMax || pc == 0) continue;
    if (!leaf_seen && pc == ip) {
      leaf_seen = true;
      continue;
    }
    leaf_seen = true;
    frames_.push_back(pc);
  }
  sample->frames = frames_;
  ++counts->samples;
  return true;
}

}  // namespace gpuscope::capture
