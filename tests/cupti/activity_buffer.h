// A hand-built CUPTI activity buffer: records back to back, 8-byte aligned,
// as CUPTI lays them out; walked with the real cuptiActivityGetNextRecord.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace gpuscope::cupti::test {

class ActivityBuffer {
 public:
  template <class T> void add(const T& record) {
    const size_t at = (bytes_.size() + 7) & ~size_t{7};
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &record, sizeof(T));
  }
  // Every record CUPTI hands back from it.
  std::vector<const CUpti_Activity*> records() {
    pad();
    std::vector<const CUpti_Activity*> out;
    CUpti_Activity* r = nullptr;
    while (cuptiActivityGetNextRecord(bytes_.data(), bytes_.size(), &r) == CUPTI_SUCCESS) out.push_back(r);
    return out;
  }
  // Copies the records into a buffer CUPTI handed out; returns the valid size.
  size_t copy_into(uint8_t* buffer, size_t size) {
    pad();
    const size_t n = bytes_.size() < size ? bytes_.size() : size;
    std::memcpy(buffer, bytes_.data(), n);
    return n;
  }

 private:
  void pad() { bytes_.resize((bytes_.size() + 7) & ~size_t{7}); }
  alignas(8) std::vector<uint8_t> bytes_;
};

}  // namespace gpuscope::cupti::test
