#include "nsys_metadata.h"

#include <sqlite3.h>

#include "nsys_queries.h"

namespace gpuscope::importer::nsys {
namespace {

constexpr int kMaxThreadNames = 1 << 16;
// Processes listed from one export; a file claiming more is not a capture.
constexpr size_t kMaxProcesses = 4096;
constexpr int kMaxDevices = 256;
constexpr size_t kMaxNameBytes = 4096;

// "t.col", or `fallback` when the table lacks the column.
std::string column_or(const Schema& schema, const std::string& table, const std::string& alias,
                      const std::string& column, const std::string& fallback = "NULL") {
  return schema.has(table, column) ? alias + "." + quoted(column) : fallback;
}

// A name column that holds text in some exports and a StringIds id in others.
std::string name_of(const Schema& schema, const std::string& table, const std::string& alias) {
  if (schema.has(table, "name")) return alias + ".name";
  if (!schema.has(table, "nameId") || !schema.has(kStringsTable, "value")) return "NULL";
  return "(SELECT s.value FROM StringIds AS s WHERE s.id = " + alias + ".nameId)";
}

// Runs `sql` with ?1 bound to `pid` and calls `use(row)` for each row.
template <typename Use>
void each_row(const Export& ex, const std::string& sql, uint32_t pid, Use use) {
  Statement st;
  std::string ignored;
  if (!st.prepare(ex.db, sql, &ignored)) return;
  if (sql.find("?1") != std::string::npos) st.bind(1, pid);
  while (st.step() == Step::Row) use(st);
}

void read_process_name(const Export& ex, uint32_t pid, TraceBuilder& builder) {
  const Schema& s = ex.schema;
  if (!s.has("PROCESSES", "name")) return;
  const std::string pid_expr = s.has("PROCESSES", "pid")         ? "p.pid"
                               : s.has("PROCESSES", "globalPid") ? pid_sql("p.globalPid")
                                                                 : "";
  if (pid_expr.empty()) return;
  each_row(ex, "SELECT p.name FROM PROCESSES AS p WHERE " + pid_expr + " = ?1 LIMIT 1", pid,
           [&](const Statement& row) { builder.process().exe = std::string(row.text(0).substr(0, kMaxNameBytes)); });
}

void read_rank(const Export& ex, uint32_t pid, TraceBuilder& builder) {
  if (!ex.schema.has("MPI_RANKS", "rank") || !ex.schema.has("MPI_RANKS", "globalTid")) return;
  each_row(ex, "SELECT m.rank FROM MPI_RANKS AS m WHERE " + pid_sql("m.globalTid") + " = ?1 LIMIT 1", pid,
           [&](const Statement& row) {
             builder.process().rank = static_cast<int>(row.integer(0));
             builder.process().rank_source = "nsys MPI_RANKS";
           });
}

void read_thread_names(const Export& ex, uint32_t pid, TraceBuilder& builder) {
  if (!ex.schema.has("ThreadNames", "globalTid")) return;
  const std::string name = name_of(ex.schema, "ThreadNames", "n");
  each_row(ex,
           "SELECT n.globalTid, " + name + " FROM ThreadNames AS n WHERE " + pid_sql("n.globalTid") +
               " = ?1 LIMIT " + std::to_string(kMaxThreadNames),
           pid, [&](const Statement& row) {
             if (!row.text(1).empty()) builder.set_thread_name(tid_of(row.integer(0)), row.text(1).substr(0, 256));
           });
}

// The GPUs this process saw, by its CUDA device numbers (the deviceId of
// its kernels): TARGET_INFO_CUDA_DEVICE maps them to TARGET_INFO_GPU rows.
// An export without it gets TARGET_INFO_GPU's own numbering.
std::string device_sql(const Schema& s, bool per_process) {
  const std::string g = "TARGET_INFO_GPU";
  const std::string fields = column_or(s, g, "g", "name") + ", " + column_or(s, g, "g", "uuid") + ", " +
                             column_or(s, g, "g", "busLocation") + ", " + column_or(s, g, "g", "totalMemory", "0");
  if (per_process)
    return "SELECT c.cudaId, " + fields + " FROM TARGET_INFO_CUDA_DEVICE AS c JOIN TARGET_INFO_GPU AS g ON g.id = " +
           "c.gpuId WHERE c.pid = ?1 ORDER BY c.cudaId LIMIT " + std::to_string(kMaxDevices);
  const std::string index = s.has(g, "cuDevice") ? "COALESCE(g.cuDevice, g.id)" : "g.id";
  return "SELECT " + index + ", " + fields + " FROM TARGET_INFO_GPU AS g ORDER BY 1 LIMIT " +
         std::to_string(kMaxDevices);
}

void read_devices(const Export& ex, uint32_t pid, TraceBuilder& builder) {
  const Schema& s = ex.schema;
  if (!s.has("TARGET_INFO_GPU", "id")) {
    builder.add_note("no TARGET_INFO_GPU table: GPU names and memory unknown");
    return;
  }
  int added = 0;
  const auto add = [&](const Statement& row) {
    container::DeviceDescription d;
    d.index = static_cast<uint32_t>(row.integer(0));
    d.name = std::string(row.text(1).substr(0, 256));
    d.uuid = std::string(row.text(2).substr(0, 128));
    d.pci_bus_id = std::string(row.text(3).substr(0, 64));
    d.memory_total_bytes = row.integer(4) > 0 ? static_cast<uint64_t>(row.integer(4)) : 0;
    d.unsupported.push_back("PCIe link, ECC, MIG and NUMA state (not in the nsys export)");
    builder.add_device(std::move(d));
    ++added;
  };
  const bool mapped = s.has("TARGET_INFO_CUDA_DEVICE", "cudaId") && s.has("TARGET_INFO_CUDA_DEVICE", "gpuId") &&
                      s.has("TARGET_INFO_CUDA_DEVICE", "pid");
  if (mapped) each_row(ex, device_sql(s, true), pid, add);
  if (added > 0) return;
  if (!mapped) builder.add_note("no TARGET_INFO_CUDA_DEVICE table: CUDA device numbers taken from TARGET_INFO_GPU");
  each_row(ex, device_sql(s, false), pid, add);
}

}  // namespace

bool Export::open(const std::string& path, std::string* error) {
  if (!db.open(path, error)) return false;
  std::string why;
  if (!schema.load(db, &why)) {
    const bool not_sqlite = sqlite3_errcode(db.handle()) == SQLITE_NOTADB;
    *error = path + (not_sqlite ? ": not an SQLite database (" + why + ")" : ": cannot read its SQLite schema: " + why);
    return false;
  }
  if (!schema.has(kRuntimeTable) && !schema.has(kKernelTable) && !schema.has(kNvtxTable)) {
    *error = path + ": not an Nsight Systems export: SQLite without any of the tables " + kRuntimeTable + ", " +
             kKernelTable + ", " + kNvtxTable;
    return false;
  }
  codes.load(db, schema);
  return true;
}

std::string Export::version_hint() const { return " (" + schema.producer() + ")"; }

Activity process_activity(const Export& ex) {
  Activity out;
  const bool has_cuda = ex.schema.has(kRuntimeTable) || ex.schema.has(kDriverTable) || ex.schema.has(kKernelTable) ||
                        ex.schema.has(kMemcpyTable) || ex.schema.has(kMemsetTable);
  const std::vector<std::string> tables =
      has_cuda ? std::vector<std::string>{kRuntimeTable, kDriverTable, kKernelTable, kMemcpyTable, kMemsetTable}
               : std::vector<std::string>{kNvtxTable};
  for (const std::string& table : tables) {
    if (!ex.schema.has(table)) continue;
    const std::string column = process_column(ex.schema, table);
    const std::string pid = column.empty() ? "0" : pid_sql(quoted(column));
    Statement st;
    std::string why;
    if (!st.prepare(ex.db, "SELECT " + pid + ", count(*) FROM " + quoted(table) + " GROUP BY 1", &why)) {
      out.damage = table + ": " + why;
      continue;
    }
    Step step;
    while ((step = st.step()) == Step::Row) {
      const auto pid = static_cast<uint32_t>(st.integer(0));
      if (out.rows_by_pid.size() < kMaxProcesses || out.rows_by_pid.count(pid) != 0)
        out.rows_by_pid[pid] += static_cast<uint64_t>(st.integer(1));
    }
    if (step == Step::Failed) out.damage = table + ": " + ex.db.message();
  }
  return out;
}

int64_t read_process(const Export& ex, uint32_t pid, TraceBuilder& builder) {
  builder.process().pid = static_cast<int>(pid);
  read_process_name(ex, pid, builder);
  read_rank(ex, pid, builder);
  read_thread_names(ex, pid, builder);
  read_devices(ex, pid, builder);
  if (!ex.schema.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) return 0;
  return query_integer(ex.db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", 0);
}

}  // namespace gpuscope::importer::nsys
