// Something the writer thread polls for data that does not come through the
// thread rings: GPU metrics, device descriptions, new call stacks and
// modules. Sources are called on the writer thread only, so they may
// allocate but must never block for long: a slow source stalls every drain,
// and the thread rings overflow behind it (a source whose queries are slow,
// like NVML's, does them on its own thread and only hands results over).
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
  // Once, before that last poll, when capture stops for good: a source
  // stops its own threads (waiting a bounded time for work in progress).
  virtual void end() {}
  // Asked after every poll: true ends the capture now (the last capture
  // window closed) while the program runs on; the trace ends "detached".
  virtual bool wants_capture_end() const { return false; }
};

}  // namespace gpuscope::capture
