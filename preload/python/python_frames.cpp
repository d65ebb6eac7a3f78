#include "python_frames.h"

#include <atomic>

#include "python_codes.h"
#include "python_frame.h"
#include "python_runtime.h"

namespace gpuscope::python {
namespace {

std::atomic<const Runtime*> g_runtime{nullptr};
std::atomic<uint64_t> g_chains_cut{0};

const char* innermost_frame(const Layout& l, const char* thread) {
  if (l.thread_cframe < 0) return field<const char*>(thread, l.thread_frame);
  const char* cframe = field<const char*>(thread, l.thread_cframe);
  return cframe == nullptr ? nullptr : field<const char*>(cframe, l.cframe_frame);
}

// The frame's instruction, in 2-byte code units from the start of the bytecode.
uint32_t instruction_index(const Layout& l, const char* frame, const char* code) {
  if (l.instruction == InstructionField::PointerUnits) {
    const char* at = field<const char*>(frame, l.frame_instruction);
    const char* start = code + l.code_bytecode;
    return at < start ? container::kPythonIndexUnknown : static_cast<uint32_t>((at - start) / 2);
  }
  const int lasti = field<int>(frame, l.frame_instruction);
  if (lasti < 0) return container::kPythonIndexUnknown;  // not started
  return static_cast<uint32_t>(l.instruction == InstructionField::LastiBytes ? lasti / 2 : lasti);
}

// Walks at most this many links, whatever the chain holds.
constexpr uint32_t kMaxLinks = 4096;

}  // namespace

const Runtime* runtime() noexcept { return g_runtime.load(std::memory_order_acquire); }

Interpreter detect_and_publish() {
  Interpreter found = detect_interpreter();
  if (found.layout != nullptr) prepare_code_tables();
  if (found.layout != nullptr && runtime() == nullptr)
    g_runtime.store(new Runtime{*found.layout, found.this_thread_state, found.is_initialized, found.code_type,
                                found.unicode_type, found.bytes_type},
                    std::memory_order_release);
  return found;
}

void unpublish() { g_runtime.store(nullptr, std::memory_order_release); }

uint64_t chains_cut() noexcept { return g_chains_cut.load(std::memory_order_relaxed); }

uint32_t append_python_frames(uint64_t* out, uint32_t room) noexcept {
  const Runtime* rt = runtime();
  if (rt == nullptr || room == 0 || rt->is_initialized() == 0) return 0;
  const char* thread = static_cast<const char*>(rt->this_thread_state());
  if (thread == nullptr) return 0;  // a thread Python never ran on
  const Layout& l = rt->layout;
  uint32_t n = 0;
  const char* frame = innermost_frame(l, thread);
  for (uint32_t links = 0; frame != nullptr && links < kMaxLinks; ++links) {
    const char* previous = field<const char*>(frame, l.frame_previous);
    if (l.entry == EntryMark::ShimOwner && field<uint8_t>(frame, l.frame_entry) == l.shim_owner) {
      if (n > 0) out[n - 1] |= container::kPythonCallEndBit;  // a native call of the loop begins here
      frame = previous;
      continue;
    }
    const char* code = field<const char*>(frame, l.frame_code);
    const auto address = reinterpret_cast<uint64_t>(code);
    if (code != nullptr && field<const void*>(code, 8) == rt->code_type && container::python_code_encodable(address)) {
      if (n == room) {
        g_chains_cut.fetch_add(1, std::memory_order_relaxed);
        return n;
      }
      const bool call_end = l.entry == EntryMark::EveryFrame ||
                            (l.entry == EntryMark::IsEntryFlag && field<uint8_t>(frame, l.frame_entry) != 0);
      out[n++] = container::encode_python_frame(address, instruction_index(l, frame, code), call_end);
    }
    frame = previous;
  }
  if (n > 0) out[n - 1] |= container::kPythonCallEndBit;
  return n;
}

}  // namespace gpuscope::python
