// Writer thread: Python-stack status and the copied code objects, into the
// trace (python_frames.h).
#include <optional>
#include <string>

#include "chunk_builder.h"
#include "module_map.h"
#include "python_codes.h"
#include "python_frames.h"
#include "python_runtime.h"
#include "recorder.h"

namespace gpuscope::python {
namespace {

// What the last detection found; written at start-up (before the writer
// runs) and then by the writer thread only.
struct Detection {
  bool wanted = false;
  uint32_t version_hex = 0;
  std::string why;
  // The loader's state when detection last ran: taken before it, so that
  // a library loaded meanwhile makes the next poll look again.
  stacks::LoaderGeneration generation;
};
Detection* g_detection = nullptr;

void detect() {
  g_detection->generation = stacks::loader_generation();
  const Interpreter found = detect_and_publish();
  g_detection->version_hex = found.version_hex;
  g_detection->why = found.why;
}

container::PythonStacksData status() {
  container::PythonStacksData d;
  const bool active = runtime() != nullptr;
  d.state = static_cast<uint8_t>(active                      ? fb::PythonStacksState::Active
                                 : !g_detection->why.empty() ? fb::PythonStacksState::Unsupported
                                                             : fb::PythonStacksState::NotPython);
  d.version = g_detection->version_hex;
  if (!active) d.reason = g_detection->why;
  d.chains_cut = chains_cut();
  d.codes_dropped = codes_dropped();
  return d;
}

class PythonSource final : public capture::TraceSource {
 public:
  void begin(capture::ChunkBuilder& out) override { poll(0, out); }

  void poll(uint64_t /*now_ns*/, capture::ChunkBuilder& out) override {
    if (g_detection == nullptr || !g_detection->wanted) return;
    // A libpython loaded after start-up (an embedding plugin) is found here.
    if (runtime() == nullptr && stacks::loader_generation() != g_detection->generation) detect();
    container::PythonStacksData now = status();
    // Nothing to say for a program without Python, unless it says so already.
    if (now.state != static_cast<uint8_t>(fb::PythonStacksState::NotPython) || written_)
      if (!written_ || !(*written_ == now)) {
        written_ = now;
        out.set_python_stacks(std::move(now));
      }
    if (const stacks::StackTable* table = code_table())
      scan_.scan(*table, [&](uint32_t, std::span<const uint64_t> words) {
        container::PythonCodeDescription code;
        if (unpack_code(words, &code)) out.add_python_code(std::move(code));
      });
  }

 private:
  std::optional<container::PythonStacksData> written_;
  stacks::PublishedScan scan_;
};

}  // namespace

void configure_python_stacks(bool enabled) {
  capture::InternalScope internal;
  if (g_detection == nullptr) g_detection = new Detection;
  g_detection->wanted = enabled;
  if (!enabled) {
    unpublish();
    return;
  }
  detect();
}

std::unique_ptr<capture::TraceSource> make_python_source() { return std::make_unique<PythonSource>(); }

}  // namespace gpuscope::python
