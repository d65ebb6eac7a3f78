// The SQLite side of the Nsight Systems importer: a database opened so that
// a hostile file can do nothing but be read, and statements that step row
// by row. The file is checked to be a regular file before SQLite sees it
// (a FIFO would hang the open); SQLite then opens that very inode
// read-only and immutable (no lock, no journal, no WAL: nothing is ever
// written next to the file), with views, triggers and schema functions
// switched off, and every string or row bounded in size.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::importer::nsys {

class Database {
 public:
  Database() = default;
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // False with one line naming `path` in *error when it is not a regular
  // file or SQLite cannot open it.
  bool open(const std::string& path, std::string* error);
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // SQLite's last message, e.g. "database disk image is malformed".
  std::string message() const;

 private:
  sqlite3* db_ = nullptr;
  int path_handle_ = -1;  // O_PATH descriptor SQLite opens through /proc/self/fd
  std::string path_;
};

enum class Step { Row, Done, Failed };

class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // False with SQLite's message in *error.
  bool prepare(const Database& db, const std::string& sql, std::string* error);
  bool ready() const { return stmt_ != nullptr; }
  void bind(int index, int64_t value);
  Step step();
  int code() const { return code_; }  // SQLite's result of the last step

  bool is_null(int column) const;
  int64_t integer(int column) const;
  // Text of a column (empty for NULL); valid until the next step.
  std::string_view text(int column) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int code_ = SQLITE_OK;
};

// Runs `sql` (one integer or text column) and returns its first row's
// value, or `fallback` when there is none or it fails.
int64_t query_integer(const Database& db, const std::string& sql, int64_t fallback);

// "CUPTI_ACTIVITY_KIND_KERNEL" -> "\"CUPTI_ACTIVITY_KIND_KERNEL\"": names
// the schema gave us are quoted wherever they go into SQL.
std::string quoted(std::string_view identifier);

}  // namespace gpuscope::importer::nsys
