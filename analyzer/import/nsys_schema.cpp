#include "nsys_schema.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace gpuscope::importer::nsys {
namespace {

// Every table the importer reads or names in coverage; the columns of no
// other table are ever looked at (a hostile file may declare thousands).
constexpr const char* kKnownTables[] = {
    kRuntimeTable, kDriverTable, kKernelTable, kMemcpyTable, kMemsetTable, kSyncTable, kNvtxTable, kStringsTable,
    "ThreadNames", "PROCESSES", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_EXPORT", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "MPI_RANKS", "COMPOSITE_EVENTS",
    "OSRT_API", "CUDA_GPU_MEMORY_USAGE_EVENTS", "GPU_METRICS", "CUDA_GRAPH_NODE_EVENTS"};

bool known_table(std::string_view name) {
  return std::any_of(std::begin(kKnownTables), std::end(kKnownTables),
                     [&](const char* known) { return name == known; });
}

// "Host-to-Device", "CUDA_MEMCPY_KIND_HTOD" -> "HOSTTODEVICE", "CUDAMEMCPYKINDHTOD".
std::string letters(std::string_view s) {
  std::string out;
  for (const char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

struct CopyCode {
  const char* symbol;  // after CUDA_MEMCPY_KIND_
  const char* label;
  fb::CopyDirection direction;
};
// Arrays are device memory: a copy to or from one crosses the same link
// as one to or from linear device memory. Unified-memory migrations move
// pages over the link too.
constexpr CopyCode kCopyCodes[] = {
    {"UNKNOWN", "Unknown", fb::CopyDirection::Unknown},
    {"HTOD", "Host-to-Device", fb::CopyDirection::HostToDevice},
    {"DTOH", "Device-to-Host", fb::CopyDirection::DeviceToHost},
    {"HTOA", "Host-to-Array", fb::CopyDirection::HostToDevice},
    {"ATOH", "Array-to-Host", fb::CopyDirection::DeviceToHost},
    {"ATOA", "Array-to-Array", fb::CopyDirection::DeviceToDevice},
    {"ATOD", "Array-to-Device", fb::CopyDirection::DeviceToDevice},
    {"DTOA", "Device-to-Array", fb::CopyDirection::DeviceToDevice},
    {"DTOD", "Device-to-Device", fb::CopyDirection::DeviceToDevice},
    {"HTOH", "Host-to-Host", fb::CopyDirection::HostToHost},
    {"PTOP", "Peer-to-Peer", fb::CopyDirection::PeerToPeer},
    {"UVM_HTOD", "Unified Host-to-Device", fb::CopyDirection::HostToDevice},
    {"UVM_DTOH", "Unified Device-to-Host", fb::CopyDirection::DeviceToHost},
    {"UVM_DTOD", "Unified Device-to-Device", fb::CopyDirection::DeviceToDevice},
};

struct MemoryCode {
  const char* symbol;  // after CUDA_MEMOPR_MEMORY_KIND_
  const char* label;
  fb::MemoryKind kind;
};
// nsys numbers these from 0 = pageable (CUPTI from 1): the order below.
constexpr MemoryCode kMemoryCodes[] = {
    {"PAGEABLE", "Pageable", fb::MemoryKind::Pageable},
    {"PINNED", "Pinned", fb::MemoryKind::Pinned},
    {"DEVICE", "Device", fb::MemoryKind::Device},
    {"ARRAY", "Array", fb::MemoryKind::Array},
    {"MANAGED", "Managed", fb::MemoryKind::Managed},
    {"DEVICE_STATIC", "Device Static", fb::MemoryKind::DeviceStatic},
    {"MANAGED_STATIC", "Managed Static", fb::MemoryKind::ManagedStatic},
    {"UNKNOWN", "Unknown", fb::MemoryKind::Unknown},
};

// The row's symbol ("CUDA_MEMCPY_KIND_HTOD") or label ("Host-to-Device")
// matched against a table of codes; nullptr when neither is known.
template <typename Code, size_t N>
const Code* match_code(const Code (&codes)[N], std::string_view prefix, std::string_view symbol,
                       std::string_view label) {
  for (const Code& code : codes) {
    if (!symbol.empty() && letters(symbol) == letters(std::string(prefix) + code.symbol)) return &code;
    if (!label.empty() && letters(label) == letters(code.label)) return &code;
  }
  return nullptr;
}

// Calls `use(id, symbol, label)` for each row of an ENUM_* table.
template <typename Use>
void read_enum(const Database& db, const Schema& schema, const std::string& table, Use use) {
  if (!schema.has(table) || !schema.has(table, "id")) return;
  const std::string symbol = schema.has(table, "name") ? "name" : "NULL";
  const std::string label = schema.has(table, "label") ? "label" : "NULL";
  Statement st;
  std::string ignored;
  if (!st.prepare(db, "SELECT id, " + symbol + ", " + label + " FROM " + quoted(table) + " LIMIT 256", &ignored))
    return;
  while (st.step() == Step::Row) use(st.integer(0), st.text(1), st.text(2));
}

}  // namespace

std::string pid_sql(const std::string& global_id_column) {
  return "((" + global_id_column + " >> 24) & 16777215)";
}

bool Schema::load(const Database& db, std::string* error) {
  Statement list;
  if (!list.prepare(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table'", error)) return false;
  std::vector<std::string> names;
  Step step;
  while ((step = list.step()) == Step::Row) {
    const std::string name(list.text(0));
    // A virtual table runs a module's code on every read: never one of ours.
    if (known_table(name) && !list.text(1).starts_with("CREATE VIRTUAL")) names.push_back(name);
  }
  if (step == Step::Failed) {
    *error = db.message();
    return false;
  }
  for (const std::string& name : names) {
    Statement info;
    // `name` is one of kKnownTables: nothing of the file's goes into this SQL.
    if (!info.prepare(db, "SELECT name FROM pragma_table_info('" + name + "')", error)) return false;
    std::set<std::string>& columns = tables_[name];
    while (info.step() == Step::Row) columns.emplace(info.text(0));
  }
  load_export_metadata(db);
  return true;
}

void Schema::load_export_metadata(const Database& db) {
  if (!has("META_DATA_EXPORT", "name") || !has("META_DATA_EXPORT", "value")) return;
  Statement st;
  std::string ignored;
  if (!st.prepare(db, "SELECT name, value FROM META_DATA_EXPORT LIMIT 1000", &ignored)) return;
  while (st.step() == Step::Row) {
    const std::string_view name = st.text(0);
    const std::string value(st.text(1).substr(0, 64));
    if (name == "EXPORT_PRODUCT_VERSION") product_version_ = value;
    if (name == "EXPORT_SCHEMA_VERSION") schema_version_ = value;
  }
}

bool Schema::has(const std::string& table, const std::string& column) const {
  const auto it = tables_.find(table);
  return it != tables_.end() && it->second.count(column) != 0;
}

std::string Schema::first_of(const std::string& table, const std::vector<std::string>& columns) const {
  for (const std::string& c : columns)
    if (has(table, c)) return c;
  return {};
}

std::string Schema::missing(const std::string& table, const std::vector<std::string>& columns) const {
  for (const std::string& c : columns)
    if (!has(table, c)) return c;
  return {};
}

std::string Schema::producer() const {
  std::string out = "Nsight Systems";
  if (!product_version_.empty()) out += " " + product_version_;
  if (!schema_version_.empty()) out += " (export schema " + schema_version_ + ")";
  return out;
}

std::vector<std::string> Schema::unread_notes() const {
  std::vector<std::string> notes;
  if (has("COMPOSITE_EVENTS")) notes.push_back("nsys CPU samples (COMPOSITE_EVENTS) are not imported");
  if (has("OSRT_API")) notes.push_back("nsys OS runtime calls (OSRT_API) are not imported");
  if (has("CUDA_GPU_MEMORY_USAGE_EVENTS"))
    notes.push_back("nsys device memory usage events are not imported (allocations come from the API calls)");
  if (has("GPU_METRICS")) notes.push_back("nsys GPU metrics samples are not imported");
  return notes;
}

void KindCodes::set_defaults() {
  for (int i = 0; i < kCodes; ++i) {
    directions_[i] = fb::CopyDirection::Unknown;
    memory_[i] = fb::MemoryKind::Unknown;
  }
  for (size_t i = 0; i < std::size(kCopyCodes); ++i) directions_[i] = kCopyCodes[i].direction;
  for (size_t i = 0; i < std::size(kMemoryCodes); ++i) memory_[i] = kMemoryCodes[i].kind;
}

void KindCodes::load(const Database& db, const Schema& schema) {
  set_defaults();
  load_copy_kinds(db, schema);
  load_memory_kinds(db, schema);
}

void KindCodes::load_copy_kinds(const Database& db, const Schema& schema) {
  read_enum(db, schema, "ENUM_CUDA_MEMCPY_OPER", [&](int64_t id, std::string_view symbol, std::string_view label) {
    const CopyCode* code = match_code(kCopyCodes, "CUDA_MEMCPY_KIND_", symbol, label);
    if (id >= 0 && id < kCodes) directions_[id] = code != nullptr ? code->direction : fb::CopyDirection::Unknown;
  });
}

void KindCodes::load_memory_kinds(const Database& db, const Schema& schema) {
  read_enum(db, schema, "ENUM_CUDA_MEM_KIND", [&](int64_t id, std::string_view symbol, std::string_view label) {
    const MemoryCode* code = match_code(kMemoryCodes, "CUDA_MEMOPR_MEMORY_KIND_", symbol, label);
    if (id >= 0 && id < kCodes) memory_[id] = code != nullptr ? code->kind : fb::MemoryKind::Unknown;
  });
}

fb::CopyDirection KindCodes::direction(int64_t code) const {
  return code >= 0 && code < kCodes ? directions_[code] : fb::CopyDirection::Unknown;
}

fb::MemoryKind KindCodes::memory(int64_t code) const {
  return code >= 0 && code < kCodes ? memory_[code] : fb::MemoryKind::Unknown;
}

}  // namespace gpuscope::importer::nsys
