// Samples the CPU time of every thread of the process (and of the process
// as a whole) from the writer thread, so the analyzer can tell "host busy
// computing" from "host waiting". Threads are found through /proc/self/task,
// so threads that never call CUDA are seen too; each thread's name is
// recorded as a ThreadName marker when first seen or when it changes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "chunk_builder.h"
#include "string_table.h"

namespace gpuscope::capture {

class CpuSampler {
 public:
  explicit CpuSampler(StringTable& strings) : strings_(strings) {}

  // Appends one CpuSample per live thread plus one for the process.
  void sample(uint64_t now_ns, ChunkBuilder& out);

 private:
  void sample_thread(uint32_t tid, uint64_t now_ns, bool refresh_name, ChunkBuilder& out);

  struct KnownThread {
    std::string name;
    uint64_t last_seen = 0;  // sample number
  };

  StringTable& strings_;
  std::unordered_map<uint32_t, KnownThread> threads_;
  uint64_t samples_taken_ = 0;
};

}  // namespace gpuscope::capture
