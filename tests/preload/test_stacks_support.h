// Shared by the call-stack tests: call sites that cannot be inlined or
// turned into tail calls, and the stack source's output read back from a
// built chunk, the way the trace carries it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chunk_builder.h"
#include "record_checks.h"
#include "side_tables.h"
#include "stacks/stack_capture.h"

// After a call whose frame must stay on the stack: no tail call, no
// merging of two call sites.
#define GPUSCOPE_KEEP_FRAME() asm volatile("" ::: "memory")

namespace gpuscope::stacks::test {

struct SourceOutput {
  std::map<uint32_t, std::vector<uint64_t>> stacks;
  std::vector<container::ModuleDescription> modules;
  std::vector<fb::Marker> markers;
  std::optional<container::StackCaptureData> status;  // Chunk.stack_capture
};

// Runs begin() (when asked) and one poll() of `source` into a fresh chunk and
// decodes what it added.
inline SourceOutput run_source(capture::TraceSource& source, bool begin) {
  capture::ChunkBuilder builder;
  if (begin) source.begin(builder);
  source.poll(0, builder);
  const auto bytes = builder.build();
  const fb::Chunk* chunk = fb::GetChunk(bytes.data());
  SourceOutput out;
  if (chunk->stacks() != nullptr)
    for (const auto* s : *chunk->stacks())
      out.stacks[s->id()].assign(s->frames()->begin(), s->frames()->end());
  if (chunk->modules() != nullptr)
    for (const auto* m : *chunk->modules()) {
      container::ModuleDescription d;
      d.id = m->id();
      d.path = m->path() != nullptr ? m->path()->str() : "";
      if (m->build_id() != nullptr) d.build_id.assign(m->build_id()->begin(), m->build_id()->end());
      d.load_address = m->load_address();
      d.low_address = m->low_address();
      d.high_address = m->high_address();
      out.modules.push_back(d);
    }
  if (const auto* st = chunk->stack_capture(); st != nullptr)
    out.status = container::StackCaptureData{static_cast<uint8_t>(st->state()),
                                           st->reason() != nullptr ? st->reason()->str() : "", st->depth(),
                                           st->unwind_failures(), st->table_full()};
  reader::DecodedRecords records;
  reader::decode_records(*chunk, container::kWriterFlags, &records);
  out.markers = records.markers;
  return out;
}

inline const container::ModuleDescription* module_containing(
    const std::vector<container::ModuleDescription>& modules, uint64_t address) {
  for (const auto& m : modules)
    if (address >= m.low_address && address < m.high_address) return &m;
  return nullptr;
}

}  // namespace gpuscope::stacks::test
