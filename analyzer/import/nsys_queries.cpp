#include "nsys_queries.h"

namespace gpuscope::importer::nsys {
namespace {

// Builds one SELECT column by column from what the table has.
class Select {
 public:
  Select(const Schema& schema, std::string table) : schema_(schema), table_(std::move(table)) {}

  void required(const std::string& column) {
    if (schema_.has(table_, column)) return add("t." + quoted(column));
    if (query_.missing.empty()) query_.missing = column;
    add("NULL");
  }
  // `note` (may be empty) says what is lost without it.
  void optional(const std::string& column, const std::string& fallback, const std::string& note = {}) {
    if (schema_.has(table_, column)) return add("t." + quoted(column));
    if (!note.empty()) query_.notes.push_back(table_ + " has no " + column + ": " + note);
    add(fallback);
  }
  // A name held as text or as a StringIds reference, whichever the row
  // has, from the first of `columns` that gives a non-empty one.
  void name(const std::vector<std::string>& columns, bool is_required) {
    std::string expr;
    for (const std::string& c : columns)
      if (schema_.has(table_, c)) expr += (expr.empty() ? "" : ", ") + std::string("NULLIF(") + text_of(c) + ", '')";
    if (expr.empty() && is_required && query_.missing.empty()) query_.missing = columns.front();
    add(expr.empty() ? "NULL" : "COALESCE(" + expr + ", NULL)");
  }

  Query finish(const std::string& filter = {}) {
    const std::string pid_column = process_column(schema_, table_);
    std::string where = filter;
    if (!pid_column.empty()) {
      where += (where.empty() ? "" : " AND ") + pid_sql("t." + quoted(pid_column)) + " = ?1";
      query_.by_pid = true;
    } else {
      query_.notes.push_back(table_ + " has no process ids: all its rows are taken as this process's");
    }
    query_.unsorted_sql =
        "SELECT " + columns_ + " FROM " + quoted(table_) + " AS t" + (where.empty() ? "" : " WHERE " + where);
    query_.sql = query_.unsorted_sql + " ORDER BY t.\"start\"";
    return query_;
  }

 private:
  void add(const std::string& expr) { columns_ += (columns_.empty() ? "" : ", ") + expr; }
  std::string text_of(const std::string& column) const {
    const std::string c = "t." + quoted(column);
    const std::string lookup = schema_.has(kStringsTable, "id") && schema_.has(kStringsTable, "value")
                                   ? " ELSE (SELECT s.value FROM StringIds AS s WHERE s.id = " + c + ")"
                                   : "";
    return "CASE typeof(" + c + ") WHEN 'text' THEN " + c + lookup + " END";
  }

  const Schema& schema_;
  std::string table_;
  std::string columns_;
  Query query_;
};

void add_device_columns(Select& s) {
  s.required("start");
  s.required("end");
  s.optional("deviceId", "-1", "device numbers unknown");
  s.optional("streamId", "0", "streams unknown");
  s.optional("correlationId", "0", "device work cannot be matched to its API call");
}

}  // namespace

std::string process_column(const Schema& schema, const std::string& table) {
  return schema.first_of(table, {"globalTid", "globalPid"});
}

Query host_call_query(const Schema& schema, const std::string& table) {
  Select s(schema, table);
  s.required("start");
  s.required("end");
  s.optional("globalTid", "0", "threads unknown");
  s.optional("correlationId", "0", "calls cannot be matched to their device work");
  s.name({"nameId", "name"}, true);
  s.optional("returnValue", "0");
  return s.finish();
}

Query kernel_query(const Schema& schema) {
  Select s(schema, kKernelTable);
  add_device_columns(s);
  s.name({"demangledName", "mangledName", "shortName", "name"}, true);
  for (const char* c : {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"}) s.optional(c, "0");
  s.optional("dynamicSharedMemory", "0");
  return s.finish();
}

Query memcpy_query(const Schema& schema) {
  Select s(schema, kMemcpyTable);
  add_device_columns(s);
  s.required("bytes");
  s.required("copyKind");
  s.optional("srcKind", "NULL", "pageable and pinned copies cannot be told apart");
  s.optional("dstKind", "NULL", "pageable and pinned copies cannot be told apart");
  return s.finish();
}

Query memset_query(const Schema& schema) {
  Select s(schema, kMemsetTable);
  add_device_columns(s);
  s.required("bytes");
  s.optional("value", "0");
  s.optional("memKind", "NULL");
  return s.finish();
}

// Marks are read to be counted; ranges become host ranges. An export
// without eventType holds ranges only.
Query nvtx_query(const Schema& schema) {
  Select s(schema, kNvtxTable);
  s.required("start");
  s.required("end");
  s.optional("globalTid", "0", "NVTX threads unknown");
  s.optional("eventType", std::to_string(kNvtxPushPop));
  s.name({"text", "textId"}, true);
  s.optional("domainId", "0");
  std::string filter;
  if (schema.has(kNvtxTable, "eventType"))
    filter = "t.eventType IN (" + std::to_string(kNvtxMark) + ", " + std::to_string(kNvtxPushPop) + ", " +
             std::to_string(kNvtxStartEnd) + ", " + std::to_string(kNvtxtPushPop) + ", " +
             std::to_string(kNvtxtStartEnd) + ")";
  return s.finish(filter);
}

Query nvtx_domain_query(const Schema& schema) {
  Query q;
  if (!schema.has(kNvtxTable, "eventType") || !schema.has(kNvtxTable, "domainId")) return q;
  Select s(schema, kNvtxTable);
  s.required("domainId");
  s.name({"text", "textId"}, false);
  q = s.finish("t.eventType = " + std::to_string(kNvtxDomainCreate));
  q.notes.clear();
  return q;
}

}  // namespace gpuscope::importer::nsys
