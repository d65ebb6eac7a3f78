// The code objects Python frames run, copied on first sight (internal to
// preload/python). A code object is read while the frame that runs it is
// the calling thread's own (so it is alive), and packed into 64-bit words
// in a second stack table, which the writer drains like the call stacks:
//   [0] the code object's address
//   [1] co_firstlineno | 1 << 32 when the line table was cut
//   [2] file bytes | name bytes << 16 | line table bytes << 32
//   [3..] the file name (UTF-8), the name (UTF-8), the line table, packed.
#pragma once

#include <cstdint>
#include <span>

#include "side_tables.h"
#include "stack_table.h"

namespace gpuscope::python {

// Writer side: the table of copied code objects (null until the first copy
// was attempted) and how many could not be copied.
const stacks::StackTable* code_table() noexcept;
uint64_t codes_dropped() noexcept;
// Maps the tables; before an interpreter is published (start-up or writer).
void prepare_code_tables();

// Writer side: the copied code object in `words`; false when malformed.
bool unpack_code(std::span<const uint64_t> words, container::PythonCodeDescription* out);

}  // namespace gpuscope::python
