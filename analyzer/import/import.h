// Traces from other profilers as gpuscope traces: PyTorch profiler
// (Kineto) JSON, plain or gzip, and Nsight Systems SQLite exports. Every
// analysis command opens its inputs through open_trace_source(), which
// tells the formats apart by content (never by file name) and imports a
// foreign file into an unlinked temporary native trace; `gpuscope import`
// writes that trace to a file for repeated use (docs/import.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "byte_source.h"
#include "trace_reader.h"
#include "trace_builder.h"

namespace gpuscope::importer {

enum class SourceFormat { Native, KinetoJson, KinetoGzip, NsysSqlite, Unknown };
const char* source_format_name(SourceFormat format);

// What the first bytes of a file say it is.
SourceFormat sniff_format(const reader::ByteSource& source);

// One importable process of a foreign file. A Kineto file holds one; an
// nsys export may hold several, each analyzed like a trace of its own
// ("PATH@pid=N" names one of them).
struct ImportTarget {
  std::string path;  // the file
  int pid = 0;       // 0: the only (or the main) process
  std::string name() const { return pid == 0 ? path : path + "@pid=" + std::to_string(pid); }
};

struct ImportResult {
  int fd = -1;           // the native trace (read-only descriptor), or -1
  std::string error;     // one line naming the file and where, when fd < 0
  std::string warning;   // damage after which the import stopped (fd >= 0)
  ImportCounts counts;
};

// Importers: read a foreign file into `builder` and finish it. The Kineto
// one reads `source`, the file opened and sniffed as `format` (`path` names
// it in messages); SQLite opens an export by its path.
ImportResult import_kineto(const std::string& path, std::unique_ptr<reader::ByteSource> source, SourceFormat format,
                           TraceBuilder& builder);
ImportResult import_nsys(const std::string& path, int pid, TraceBuilder& builder);
// The processes of an nsys export that made CUDA calls or ran GPU work
// (empty with *error set when the file cannot be read as one).
std::vector<int> nsys_processes(const std::string& path, std::string* error);

// The importers proper, behind the functions above: Kineto (simdjson) and
// nsys (SQLite). gpuscope_import links them in (import/importers_linked.cpp:
// tests, the importer module); the CLI gets them from
// libgpuscope_importers.so, loaded the first time a foreign file is opened
// (cli/importers_loaded.cpp), so that no command pays for loading simdjson,
// SQLite and the C++ runtime they bring at its start. `format` is
// KinetoJson, KinetoGzip or NsysSqlite.
ImportResult import_foreign(const ImportTarget& target, std::unique_ptr<reader::ByteSource> source,
                            SourceFormat format, const std::string& out_path, bool force);
// nsys_processes(), through the same door.
std::vector<int> foreign_processes(const std::string& path, std::string* error);

// Imports `target` into `out_path` ("" = an unlinked temporary file).
ImportResult import_file(const ImportTarget& target, const std::string& out_path, bool force = false);

// Opens a trace for reading, whatever its format: a native trace as is, a
// foreign one imported first. nullptr and one line in *error otherwise.
// `warning` (may be null) receives import damage to print.
std::unique_ptr<reader::ByteSource> open_trace_source(const std::string& name, std::string* error,
                                                      std::string* warning = nullptr);

// The same, opened in `reader` under `name`.
bool open_trace(reader::TraceReader& reader, const std::string& name, std::string* error);

// The inputs' import targets: a path names itself, except an nsys export
// of several processes, which names each of them. `format` (may be null)
// receives what the file is (Unknown when it cannot be opened).
std::vector<std::string> expand_foreign_inputs(const std::string& path, SourceFormat* format = nullptr);

}  // namespace gpuscope::importer
