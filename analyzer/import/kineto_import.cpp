// PyTorch profiler (Kineto) JSON, plain or gzip, into a gpuscope trace:
// the document is streamed (json_stream.h), each event parsed and mapped
// (kineto_events.h), the records built by the TraceBuilder.
#include <string>

#include "import.h"
#include "json_stream.h"
#include "kineto_events.h"
#include "progress.h"

namespace gpuscope::importer {
namespace {

// What a Kineto trace cannot show, whatever the run.
void add_kineto_notes(TraceBuilder& builder) {
  builder.add_note("no NVML samples (the PyTorch profiler records no GPU utilization, clocks or PCIe counters)");
  builder.add_note("no CPU time or CPU stack samples of the process");
  builder.add_note("CUDA call results are not recorded: failing calls are not seen");
  builder.add_note("no native call stacks of CUDA calls");
}

}  // namespace

ImportResult import_kineto(const std::string& path, std::unique_ptr<reader::ByteSource> source, SourceFormat format,
                           TraceBuilder& builder) {
  ImportResult result;
  if (!builder.ok()) {
    result.error = builder.error();
    return result;
  }
  reader::ProgressStage progress(reader::progress_label("importing", path), source->size());
  source = reader::progress_source(std::move(source), progress);
  auto input = format == SourceFormat::KinetoGzip ? gzip_stream(std::move(source)) : plain_stream(std::move(source));
  builder.set_producer("PyTorch profiler (Kineto)");
  builder.set_mid_run(true);  // torch.profiler records a window of a running program  // the schemaVersion member, when there is one, says more
  KinetoEventMapper mapper(builder);
  std::string element_error;
  uint64_t element_offset = 0;
  TraceEventStream stream(
      *input,
      [&](std::string_view element, uint64_t offset) {
        if (mapper.add_event(element, &element_error)) return true;
        element_offset = offset;
        return false;
      },
      [&](std::string_view key, std::string_view value, uint64_t) { mapper.add_member(key, value); });
  std::string damage;
  bool complete = stream.run(&damage);
  if (!element_error.empty()) {
    complete = false;
    damage = element_error + " at offset " + std::to_string(element_offset);
  }
  if (mapper.events() == 0) {
    result.error = path + ": " +
                   (!complete ? damage
                    : stream.saw_trace_events()
                        ? std::string("the traceEvents array is empty: nothing to analyze")
                        : std::string("not a trace: a JSON document without a traceEvents array"));
    return result;
  }
  add_kineto_notes(builder);
  mapper.finish();
  result.fd = builder.finish(complete, damage);
  result.counts = builder.counts();
  if (result.fd < 0) result.error = builder.error();
  if (!complete) result.warning = path + ": " + damage + " (the events before it were imported)";
  return result;
}

}  // namespace gpuscope::importer
