// The importer module's entry point (libgpuscope_importers.so): the
// Kineto and nsys importers with simdjson and SQLite behind them, which the
// CLI loads the first time it opens a foreign file (cli/importers_loaded.cpp)
// instead of at every start. A C interface: the module has a C++ runtime of
// its own (the one simdjson needs), so nothing of the standard library's,
// and no exception, crosses it.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

enum { GPUSCOPE_IMPORTERS_ABI = 1 };

// The caller's progress bar, driven by the import (reader/progress.h).
struct gpuscope_import_progress {
  void* context;
  void (*begin)(void* context, const char* what, size_t what_size, uint64_t total, int unit);
  void (*advance)(void* context, uint64_t done);
  void (*end)(void* context);
};

struct gpuscope_import_reply {
  int fd;  // the native trace (read-only), or -1 with `error` set
  uint64_t events, records, skipped, unjoined, out_of_range;  // ImportCounts
  char error[4096];
  char warning[4096];
};

struct gpuscope_importers {
  uint32_t abi;  // GPUSCOPE_IMPORTERS_ABI
  // import_foreign() of `path`, open as `fd` (the module reads a copy of
  // it; -1: it opens `path`) and sniffed as `format` (a SourceFormat):
  // `pid` 0 for the only or main process, `out_path` "" for an unlinked
  // temporary file, `progress` may be null.
  void (*import_file)(const char* path, int fd, int format, int pid, const char* out_path, int force,
                      const gpuscope_import_progress* progress, gpuscope_import_reply* reply);
  // nsys_processes(): how many there are (those beyond `capacity` not
  // stored), or -1 with `error` set.
  int (*processes)(const char* path, int* pids, int capacity, char* error, size_t error_size);
};

// The module's one exported symbol.
const gpuscope_importers* gpuscope_importers_v1(void);
typedef const gpuscope_importers* (*gpuscope_importers_v1_fn)(void);
}
