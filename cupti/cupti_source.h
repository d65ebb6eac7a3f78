// The writer-side half of device collection: a TraceSource that converts the
// buffers the collector got back from CUPTI into Source::Device records
// (activity_convert.h) and writes the collection status into the trace.
// Conversion runs on the writer thread, where records may be appended; it
// calls no CUPTI function that can block (cuptiActivityGetNextRecord only
// parses a buffer, cuptiGetTimestamp reads a clock). The forced flush at the
// end runs in end(), before the writer's last poll and final frame.
#pragma once

#include <memory>
#include <string>

#include "collector.h"
#include "trace_source.h"

namespace gpuscope::cupti {

// Why no device activity is expected when InitializeInjection never runs,
// from CUDA_INJECTION64_PATH (`injection_env`, may be null) and this
// library's own path: "no driver" when it names us (the driver would have
// called us at CUDA init), otherwise what is wrong with it.
std::string not_injected_reason(const char* injection_env, const std::string& own_library);

// What the end of a trace does to collection. A `gpuscope run` trace ends
// with capture itself (the process exits, or its last window closed):
// collection is finished, so the program stops paying for CUPTI. In standby
// each attach is one trace of many: its end flushes (the window's records
// land in it) and a later attach collects again; the capture window's hold
// (Collector::Hold::Window) keeps CUPTI off in between.
enum class TraceEnd : uint8_t { FinishCollection, FlushForNextTrace };

std::unique_ptr<capture::TraceSource> make_cupti_source(Collector& collector, std::string not_injected_reason,
                                                       TraceEnd at_end = TraceEnd::FinishCollection);

}  // namespace gpuscope::cupti
