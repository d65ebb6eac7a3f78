// Turns the CPU stack samples' stacks into a HostProfile (host_samples.h):
// the hottest stacks with their innermost frame symbolized, and the kinds of
// host work (memset, memcpy, the allocator, the program's own code) the
// samples fell in. Run by the pipeline after symbolization, before the rules.
#pragma once

#include <cstddef>

#include "host_samples.h"
#include "symbolizer.h"

namespace gpuscope::analyzer {

void profile_host_samples(const Symbolizer& symbols, HostSampleStats* stats, size_t top_stacks = 5);

}  // namespace gpuscope::analyzer
