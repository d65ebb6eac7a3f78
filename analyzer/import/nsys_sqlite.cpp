#include "nsys_sqlite.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "byte_source.h"

namespace gpuscope::importer::nsys {
namespace {

// Longest string or row SQLite hands back (a demangled template kernel
// name is tens of KiB at most); a longer one is an error, not an allocation.
constexpr int kMaxValueBytes = 16 << 20;
// All of SQLite's memory in this process: page cache, sorter, schema.
// Sorting a table larger than its share spills to temporary files, so a
// legitimate export never comes near it; a hostile schema fails instead.
constexpr int64_t kHeapLimitBytes = int64_t{256} << 20;

// Percent-encodes what a URI filename must not hold as is.
std::string uri_path(const std::string& path) {
  std::string out;
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#' || static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// Nothing in the file may run code or change what is read: no views (a
// table name could be a view with a recursive query behind it), no
// triggers, no functions named by the schema, no writes of any kind (the
// connection is read-only, immutable and query-only). writable_schema
// only makes SQLite read a file shorter than its header says (a copy cut
// short) instead of refusing all of it: the pages that are there are read,
// and the first missing one is an error where it is met.
void harden(sqlite3* db) {
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_exec(db, "PRAGMA query_only = ON; PRAGMA cell_size_check = ON; PRAGMA writable_schema = ON;", nullptr,
               nullptr, nullptr);
}

}  // namespace

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
  if (path_handle_ >= 0) ::close(path_handle_);
}

// O_PATH opens nothing (no FIFO waits, no device acts); SQLite then opens
// the inode that descriptor names, through /proc/self/fd, so the file
// cannot be swapped between the check and the open.
bool Database::open(const std::string& path, std::string* error) {
  path_ = path;
  path_handle_ = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  struct stat st{};
  if (path_handle_ < 0 || fstat(path_handle_, &st) != 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + " is " + reader::file_kind_text(st.st_mode) + ", not an Nsight Systems export";
    return false;
  }
  sqlite3_hard_heap_limit64(kHeapLimitBytes);
  constexpr int kFlags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  const std::string via_proc = "/proc/self/fd/" + std::to_string(path_handle_);
  const std::string target = ::access(via_proc.c_str(), R_OK) == 0 ? via_proc : uri_path(path);
  const std::string uri = "file:" + target + "?immutable=1";
  const int rc = sqlite3_open_v2(uri.c_str(), &db_, kFlags, nullptr);
  if (rc != SQLITE_OK) {
    *error = "cannot open " + path + " as SQLite: " + (db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    return false;
  }
  harden(db_);
  return true;
}

std::string Database::message() const { return db_ != nullptr ? sqlite3_errmsg(db_) : "not open"; }

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), code_(other.code_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    code_ = other.code_;
  }
  return *this;
}

bool Statement::prepare(const Database& db, const std::string& sql, std::string* error) {
  sqlite3_finalize(stmt_);
  stmt_ = nullptr;
  code_ = sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (code_ == SQLITE_OK) return true;
  *error = db.message();
  return false;
}

void Statement::bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

Step Statement::step() {
  code_ = sqlite3_step(stmt_);
  if (code_ == SQLITE_ROW) return Step::Row;
  return code_ == SQLITE_DONE ? Step::Done : Step::Failed;
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string_view Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (p == nullptr) return {};
  return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

int64_t query_integer(const Database& db, const std::string& sql, int64_t fallback) {
  Statement st;
  std::string ignored;
  if (!st.prepare(db, sql, &ignored) || st.step() != Step::Row || st.is_null(0)) return fallback;
  return st.integer(0);
}

std::string quoted(std::string_view identifier) {
  std::string out = "\"";
  for (const char c : identifier) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace gpuscope::importer::nsys
