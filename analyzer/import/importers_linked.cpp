// The importers linked in (gpuscope_import): what import.cpp's functions
// call for a foreign file in the tests and inside the importer module.
#include "import.h"

namespace gpuscope::importer {

ImportResult import_foreign(const ImportTarget& target, std::unique_ptr<reader::ByteSource> source,
                            SourceFormat format, const std::string& out_path, bool force) {
  ImportSourceInfo info;
  info.path = target.path;
  if (format == SourceFormat::NsysSqlite) {
    source.reset();  // SQLite opens the export by its path
    info.format = "nsys-sqlite";
    TraceBuilder builder(info, out_path, force);
    return import_nsys(target.path, target.pid, builder);
  }
  info.format = "kineto";
  TraceBuilder builder(info, out_path, force);
  return import_kineto(target.path, std::move(source), format, builder);
}

std::vector<int> foreign_processes(const std::string& path, std::string* error) {
  return nsys_processes(path, error);
}

}  // namespace gpuscope::importer
