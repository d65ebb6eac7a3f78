// What an Nsight Systems export says about its processes rather than their
// events: which processes did CUDA work and how much, a process's name,
// MPI rank, thread names and GPUs, and when the capture started. Each
// query reads a bounded number of rows; a table or column an export lacks
// leaves the field unknown (and says so in coverage where it matters).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nsys_schema.h"
#include "trace_builder.h"

namespace gpuscope::importer::nsys {

// An export opened and understood: the database, its tables and columns,
// and its codes for copy and memory kinds.
struct Export {
  Database db;
  Schema schema;
  KindCodes codes;

  // False with one line naming the file in *error: not a regular file, not
  // SQLite, or SQLite without any table of an Nsight Systems export.
  bool open(const std::string& path, std::string* error);
  // " (Nsight Systems 2024.6.2 (export schema 3.16.1))", for error lines.
  std::string version_hint() const;
};

struct Activity {
  std::map<uint32_t, uint64_t> rows_by_pid;  // CUDA calls and device records per process
  std::string damage;                        // a table that could not be counted, and why
};

// The processes with CUDA calls or device work (NVTX ranges when the
// export holds no CUDA table at all), with how many rows each has.
Activity process_activity(const Export& ex);

// Process name, MPI rank, thread names and devices of `pid` into the
// builder; the capture's start (UTC, ns) is returned for the caller to
// place the first event in time (0 when the export does not say).
int64_t read_process(const Export& ex, uint32_t pid, TraceBuilder& builder);

}  // namespace gpuscope::importer::nsys
