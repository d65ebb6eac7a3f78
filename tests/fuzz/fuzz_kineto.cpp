// Fuzz target: arbitrary bytes as a PyTorch profiler (Kineto) JSON trace,
// through the importer (it reads a file, so the input goes to a temporary
// file first), then the native trace it wrote read back and analyzed by
// the pipeline every command uses. Plain input is imported as JSON (and
// some of it, gzip-compressed, as a .json.gz); input that is gzip already
// (mutated gzip seeds) is imported as one. Nothing may crash, leak, read out of bounds
// or hang, and a trace the importer wrote must read back undamaged. Run
// under libFuzzer (clang, GPUSCOPE_FUZZ=ON) or replayed over generated
// seeds with deterministic mutations by replay_main.cpp in the ordinary and
// sanitizer builds.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input_file.h"
#include "import.h"
#include "pipeline.h"

namespace {

const std::string& input_path() { return gpuscope::fuzz::input_path("kineto"); }

bool write_input(const uint8_t* data, size_t size) { return gpuscope::fuzz::write_input(input_path(), data, size); }

std::vector<uint8_t> gzip_compress(const uint8_t* data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, size) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Imports the input file as `format`; the trace it wrote (if any) is read
// back whole, and analyzed when `analyze`.
void import_and_check(gpuscope::importer::SourceFormat format, bool analyze) {
  using namespace gpuscope;
  importer::TraceBuilder builder(importer::ImportSourceInfo{"kineto", input_path(), "", {}}, "");
  std::string open_error;
  auto source = reader::open_file_source(input_path(), &open_error);
  if (source == nullptr) std::abort();  // written just before
  const importer::ImportResult r = importer::import_kineto(input_path(), std::move(source), format, builder);
  if (r.fd < 0) {
    if (r.error.empty() || r.error.find('\n') != std::string::npos) {  // one line, always
      std::fprintf(stderr, "not one line: [%s]\n", r.error.c_str());
      std::abort();
    }
    return;
  }
  if (!analyze) {
    reader::TraceReader trace;
    std::string error;
    if (!trace.open(reader::descriptor_source(r.fd), "imported", &error)) std::abort();
    trace.read([](const reader::ChunkView&) {});
    if (!trace.problems().empty()) std::abort();
    return;
  }
  analyzer::PipelineResult result = analyzer::analyze_trace(reader::descriptor_source(r.fd), "imported");
  if (result.analysis == nullptr || !result.analysis->problems().empty()) {
    std::fprintf(stderr, "imported trace unreadable: %s %s\n", result.error.message.c_str(),
                 result.analysis ? reader::describe(result.analysis->problems().front()).c_str() : "");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpuscope::importer::SourceFormat;
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    if (write_input(data, size)) import_and_check(SourceFormat::KinetoGzip, true);
    return 0;
  }
  if (write_input(data, size)) import_and_check(SourceFormat::KinetoJson, true);
  // The same document through the gzip stream, for one input in eight (by
  // its length): each import costs a 4 MiB window, and the replay under
  // the sanitizers must stay fast.
  if (size % 8 != 0) return 0;
  const std::vector<uint8_t> compressed = gzip_compress(data, size);
  if (write_input(compressed.data(), compressed.size())) import_and_check(SourceFormat::KinetoGzip, false);
  return 0;
}
