// The event tables of one process, merged into the builder in time order:
// one statement per table, each returning its rows sorted by start (SQLite
// sorts a large table in temporary files, not in memory), and at each step
// the earliest head row goes next. Runtime calls sort before the device
// work they caused, so the builder meets a launch before its kernel, as
// its correlation join expects. Memory does not grow with the file: a row
// is converted and handed over, never kept.
//
// Damage (SQLite finding a malformed page, a value over the size limit)
// ends that table where it happened; the others go on, and the damage is
// reported as a warning naming the table and how far it got. Sorting reads
// a whole table before its first row, so a table damaged anywhere is read
// again in the order the file stores it (nsys writes rows nearly in time
// order), to keep the rows before the damage.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "nsys_queries.h"
#include "progress.h"
#include "trace_builder.h"

namespace gpuscope::importer::nsys {

enum class Table : uint8_t { Runtime, Driver, Nvtx, Kernel, Memcpy, Memset };

struct TableStream {
  Table kind = Table::Runtime;
  std::string name;
  Statement statement;
  std::string unsorted_sql;  // the fallback for a damaged table
  uint32_t pid = 0;
  bool by_pid = false, unsorted = false;
  bool live = false;
  int64_t start = 0;   // of the head row
  uint64_t rows = 0;   // handed over so far
};

class EventMerge {
 public:
  EventMerge(const Database& db, const Schema& schema, const KindCodes& codes, TraceBuilder& builder)
      : db_(db), schema_(schema), codes_(codes), builder_(builder) {}

  // Prepares a statement per table the export has. False with one line in
  // *error when a table lacks a column no event can do without.
  bool open(uint32_t pid, std::string* error);
  // Hands every row over in time order, counting them to `progress`.
  void run(reader::ProgressStage& progress);

  // "CUPTI_ACTIVITY_KIND_KERNEL: database disk image is malformed after
  // 1200 rows", one per damaged table; empty when all was read.
  const std::vector<std::string>& damage() const { return damage_; }
  bool any_rows() const { return any_rows_; }
  int64_t earliest_ns() const { return earliest_; }

 private:
  bool add_stream(Table kind, const std::string& table, const Query& query, uint32_t pid, std::string* error);
  void load_domains(uint32_t pid);
  void advance(TableStream& stream);
  bool reread_unsorted(TableStream& stream);
  TableStream* next_stream();
  void emit(TableStream& stream);
  bool times(const Statement& row, int start_col, int end_col, uint64_t* start, uint64_t* duration);
  void emit_host_call(const Statement& row, bool driver);
  void emit_kernel(const Statement& row);
  void emit_copy(const Statement& row);
  void emit_memset(const Statement& row);
  void emit_range(const Statement& row);

  const Database& db_;
  const Schema& schema_;
  const KindCodes& codes_;
  TraceBuilder& builder_;
  std::vector<TableStream> streams_;
  std::vector<std::string> damage_;
  // Where each thread's latest runtime call ends: a driver call inside it
  // is the runtime's own work, counted once (as a native trace does).
  std::unordered_map<uint32_t, uint64_t> runtime_end_;
  std::unordered_map<int64_t, std::string> domains_;
  bool any_rows_ = false;
  int64_t earliest_ = -1;
};

}  // namespace gpuscope::importer::nsys
