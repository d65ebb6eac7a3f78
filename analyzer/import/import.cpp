#include "import.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>

namespace gpuscope::importer {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// "PATH@pid=N" names one process of a multi-process export; a file that
// really is called that way wins.
ImportTarget parse_target(const std::string& name) {
  const size_t at = name.rfind("@pid=");
  std::error_code ec;
  if (at == std::string::npos || std::filesystem::exists(name, ec)) return {name, 0};
  const std::string digits = name.substr(at + 5);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return {name, 0};
  return {name.substr(0, at), std::stoi(digits)};
}

}  // namespace

const char* source_format_name(SourceFormat format) {
  switch (format) {
    case SourceFormat::Native: return "gpuscope trace";
    case SourceFormat::KinetoJson: return "PyTorch profiler (Kineto) JSON";
    case SourceFormat::KinetoGzip: return "PyTorch profiler (Kineto) JSON, gzip";
    case SourceFormat::NsysSqlite: return "Nsight Systems SQLite export";
    case SourceFormat::Unknown: break;
  }
  return "unknown";
}

SourceFormat sniff_format(const reader::ByteSource& source) {
  std::array<char, 64> head{};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(source.size(), head.size()));
  if (n == 0 || !source.read(0, head.data(), n)) return SourceFormat::Unknown;
  const std::string_view bytes(head.data(), n);
  if (bytes.starts_with(std::string_view("GPUSCOPE"))) return SourceFormat::Native;
  if (bytes.starts_with(kSqliteMagic)) return SourceFormat::NsysSqlite;
  if (n >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b)
    return SourceFormat::KinetoGzip;
  size_t i = bytes.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte order mark
  while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  if (i < n && (head[i] == '{' || head[i] == '[')) return SourceFormat::KinetoJson;
  return SourceFormat::Unknown;
}

namespace {

// `source`, the file target.path names, opened once and judged `format` by
// its first bytes: the importer reads those very bytes (an nsys export
// excepted: SQLite opens it again by its path).
ImportResult import_source(const ImportTarget& target, std::unique_ptr<reader::ByteSource> source,
                           SourceFormat format, const std::string& out_path, bool force) {
  ImportResult result;
  switch (format) {
    case SourceFormat::KinetoJson:
    case SourceFormat::KinetoGzip:
    case SourceFormat::NsysSqlite: return import_foreign(target, std::move(source), format, out_path, force);
    case SourceFormat::Native:
      result.error = target.path + " is already a gpuscope trace";
      return result;
    case SourceFormat::Unknown: break;
  }
  result.error = target.path +
                 " is not a trace gpuscope can read: not a gpuscope trace, PyTorch profiler (Kineto) JSON or "
                 "Nsight Systems SQLite export (judged by its first bytes)";
  return result;
}

}  // namespace

ImportResult import_file(const ImportTarget& target, const std::string& out_path, bool force) {
  ImportResult result;
  auto source = reader::open_file_source(target.path, &result.error);
  if (source == nullptr) return result;
  const SourceFormat format = sniff_format(*source);
  return import_source(target, std::move(source), format, out_path, force);
}

std::unique_ptr<reader::ByteSource> open_trace_source(const std::string& name, std::string* error,
                                                      std::string* warning) {
  const ImportTarget target = parse_target(name);
  auto source = reader::open_file_source(target.path, error);
  if (source == nullptr) return nullptr;
  const SourceFormat format = sniff_format(*source);
  if (format == SourceFormat::Native) return source;
  if (format == SourceFormat::Unknown) {
    *error = name + " is not a gpuscope trace (no gpuscope file header at offset 0), nor PyTorch profiler (Kineto) "
                    "JSON or an Nsight Systems SQLite export (judged by its first bytes)";
    return nullptr;
  }
  ImportResult imported = import_source(target, std::move(source), format, "", false);
  if (imported.fd < 0) {
    *error = imported.error;
    return nullptr;
  }
  if (warning != nullptr) *warning = imported.warning;
  auto out = reader::descriptor_source(imported.fd);
  if (out == nullptr) *error = name + ": the imported trace cannot be read back";
  return out;
}

bool open_trace(reader::TraceReader& reader, const std::string& name, std::string* error) {
  auto source = open_trace_source(name, error);
  return source != nullptr && reader.open(std::move(source), name, error);
}

std::vector<std::string> expand_foreign_inputs(const std::string& path, SourceFormat* format) {
  std::string error;
  auto source = reader::open_file_source(path, &error);
  const SourceFormat sniffed = source == nullptr ? SourceFormat::Unknown : sniff_format(*source);
  if (format != nullptr) *format = sniffed;
  if (sniffed != SourceFormat::NsysSqlite) return {path};
  source.reset();
  const std::vector<int> pids = foreign_processes(path, &error);
  if (pids.size() <= 1) return {path};
  std::vector<std::string> out;
  for (int pid : pids) out.push_back(ImportTarget{path, pid}.name());
  return out;
}

}  // namespace gpuscope::importer
