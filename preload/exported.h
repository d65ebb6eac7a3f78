// What libgpuscope.so shows the world: a hook or entry point is an extern
// "C" symbol with default visibility (everything else is hidden), listed by
// name in exports.map. One definition, used by every file that exports.
#pragma once

#define GPUSCOPE_EXPORT extern "C" __attribute__((visibility("default")))
