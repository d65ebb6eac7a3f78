// What an Nsight Systems SQLite export holds: its tables and their columns
// as the file declares them (PRAGMA table_info), never as a version number
// promises, and the enumerations its copy and memory kinds are coded in.
// Exports differ between versions (columns added, names moved from text
// columns to StringIds references, tables appearing), so every query is
// built from what this finds.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscope_generated.h"
#include "nsys_sqlite.h"

namespace gpuscope::importer::nsys {

// The tables the importer reads, by their export names.
inline constexpr const char* kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
inline constexpr const char* kDriverTable = "CUPTI_ACTIVITY_KIND_DRIVER";
inline constexpr const char* kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
inline constexpr const char* kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
inline constexpr const char* kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
inline constexpr const char* kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
inline constexpr const char* kNvtxTable = "NVTX_EVENTS";
inline constexpr const char* kStringsTable = "StringIds";

// globalTid / globalPid ("serialized GlobalId"): the process id in bits
// 24..47, the thread id in bits 0..23 (zero in a globalPid), the machine
// above.
std::string pid_sql(const std::string& global_id_column);
inline uint32_t pid_of(int64_t global_id) { return static_cast<uint32_t>((global_id >> 24) & 0xFFFFFF); }
inline uint32_t tid_of(int64_t global_id) { return static_cast<uint32_t>(global_id & 0xFFFFFF); }

class Schema {
 public:
  // Reads the table list and each table's columns. False with SQLite's
  // message in *error when the file is not a database SQLite can read.
  bool load(const Database& db, std::string* error);

  bool has(const std::string& table) const { return tables_.count(table) != 0; }
  bool has(const std::string& table, const std::string& column) const;
  // The first of `columns` the table has, or "".
  std::string first_of(const std::string& table, const std::vector<std::string>& columns) const;
  // "" when every one of `columns` is there; else the first missing one.
  std::string missing(const std::string& table, const std::vector<std::string>& columns) const;

  // META_DATA_EXPORT, where the export has it ("" otherwise).
  const std::string& product_version() const { return product_version_; }
  const std::string& schema_version() const { return schema_version_; }
  // "Nsight Systems 2024.6.2 (export schema 3.16.1)", or what is known of it.
  std::string producer() const;
  // What the importer does not read that this export holds, for coverage.
  std::vector<std::string> unread_notes() const;

 private:
  void load_export_metadata(const Database& db);

  std::map<std::string, std::set<std::string>> tables_;
  std::string product_version_, schema_version_;
};

// The export's codes for copy kinds and memory kinds, as gpuscope's. Read
// from ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND by symbol name where the
// export has them; otherwise the codes every export documented so far uses.
class KindCodes {
 public:
  void load(const Database& db, const Schema& schema);
  fb::CopyDirection direction(int64_t code) const;
  fb::MemoryKind memory(int64_t code) const;

 private:
  static constexpr int kCodes = 64;
  void set_defaults();
  void load_copy_kinds(const Database& db, const Schema& schema);
  void load_memory_kinds(const Database& db, const Schema& schema);

  fb::CopyDirection directions_[kCodes] = {};
  fb::MemoryKind memory_[kCodes] = {};
};

}  // namespace gpuscope::importer::nsys
