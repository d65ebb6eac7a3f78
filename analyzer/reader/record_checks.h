// Semantic checks and decoding of the record vectors of one chunk.
// The FlatBuffer verifier only proves the bytes are structurally safe to
// read; these checks throw out records whose values make no sense (an enum
// out of range, a duration of centuries), which is what a flipped bit or a
// crafted file produces.
#pragma once

#include <cstdint>
#include <vector>

#include "gpuscope_generated.h"

namespace gpuscope::reader {

struct ChunkView;

struct DecodedRecords {
  std::vector<fb::ApiCall> api_calls;
  std::vector<fb::Copy> copies;
  std::vector<fb::Memset> memsets;
  std::vector<fb::Kernel> kernels;
  std::vector<fb::Sync> syncs;
  std::vector<fb::Alloc> allocs;
  std::vector<fb::CpuSample> cpu_samples;
  std::vector<fb::Marker> markers;
  std::vector<fb::GpuSample> gpu_samples;
  std::vector<fb::CallCount> call_counts;
  std::vector<fb::GraphLaunch> graph_launches;
  std::vector<fb::HostSample> host_samples;
  std::vector<fb::ProcessGpuSample> process_gpu_samples;

  void fill_view(ChunkView* view) const;
};

// Copies (unshuffling where the file header's `flags` say so), delta-decodes,
// resolves typed records linked to their calls (format 2.0) and checks every
// record vector of `chunk`; returns how many records were rejected.
// `for_other_thread`: another core visits the records next (read ahead),
// so they are unshuffled around this core's cache (byte_shuffle.h).
uint64_t decode_records(const fb::Chunk& chunk, uint32_t flags, DecodedRecords* out, bool for_other_thread = false);

}  // namespace gpuscope::reader
