// cuGetProcAddress's answers, told apart by address.
//
// The runtime asks cuGetProcAddress for every driver entry point it uses
// (several hundred at its start), and each answer is swapped for our
// wrapper when it is a function we hook (symbol_lookup.cpp). Naming an
// address with dladdr walks the whole symbol table of its object: with the
// driver's thousands of exports that was the largest part of a traced
// process's start. Instead, the first answer from an object builds a table
// of where that object defines each hooked name (one hash lookup per name),
// and every later answer is a binary search in it.
#pragma once

namespace gpuscope::hooks {

struct HookSlot;

// The hook whose real function is exactly `p` (an exported definition of
// its name), or null. Builds the table of p's object on first sight; an
// address in no object (or when the tables are all taken) is named by
// dladdr, as before. Tables are dropped after a successful dlclose.
HookSlot* hook_defined_at(void* p);

// A successful dlclose: an address range may now belong to another object.
void forget_entry_points() noexcept;

// A successful dlclose: every hook's real function whose object is no
// longer loaded is forgotten (resolved again on the next call), and so is
// every remembered library handle (hook_registry.cpp).
void forget_unloaded_reals() noexcept;

}  // namespace gpuscope::hooks
