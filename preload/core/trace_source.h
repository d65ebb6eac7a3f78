// Something the writer thread polls for data that does not come through the
// thread rings: GPU metrics, device descriptions, new call stacks and
// modules. Sources run on the writer thread only, so they may block briefly
// and allocate, but never for long: a slow source delays every flush.
#pragma once

#include <cstdint>

namespace gpuscope::capture {

class ChunkBuilder;

class TraceSource {
 public:
  virtual ~TraceSource() = default;
  // Once, on the writer thread, before the first drain.
  virtual void begin(ChunkBuilder& /*out*/) {}
  // After every drain (about every 10 ms) and once more before the last
  // frame; a source keeps its own sampling period.
  virtual void poll(uint64_t now_ns, ChunkBuilder& out) = 0;
};

}  // namespace gpuscope::capture
