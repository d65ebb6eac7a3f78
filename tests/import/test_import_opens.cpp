// A foreign file is opened and sniffed once on its way into an analysis:
// the bytes whose first ones named the format are the bytes imported (a
// file swapped between two opens could not be imported as what it was
// judged to be), and no file is read more often than it must be. The
// kernel counts the opens: inotify reports each one of the watched file.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "../support/temp_dir.h"
#include "import.h"

namespace gpuscope::importer {
namespace {

// How often `action` opens `path`. Closes are watched too: inotify folds
// an event into an identical one still unread before it, so only opens
// with closes between them can be told apart.
int opens_of(const std::string& path, const std::function<void()>& action) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  EXPECT_GE(fd, 0);
  EXPECT_GE(inotify_add_watch(fd, path.c_str(), IN_OPEN | IN_CLOSE), 0) << path;
  action();
  int opens = 0;
  alignas(inotify_event) char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      opens += (event->mask & IN_OPEN) != 0;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  ::close(fd);
  return opens;
}

// What opening a file as a byte source costs, in opens the kernel reports.
int one_open(const std::string& path) {
  return opens_of(path, [&] {
    std::string error;
    EXPECT_NE(reader::open_file_source(path, &error), nullptr) << error;
  });
}

constexpr const char* kTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
   "ts": 1700000000000000, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1700000000000002, "dur": 10,
   "args": {"correlation": 1, "device": 0, "stream": 7}}]})";

std::string write_json(const test::TempDir& dir) {
  std::ofstream(dir.file("t.json"), std::ios::binary) << kTrace;
  return dir.file("t.json");
}

std::string write_gzip(const test::TempDir& dir) {
  const std::string path = dir.file("t.json.gz");
  gzFile out = gzopen(path.c_str(), "wb");
  EXPECT_NE(out, nullptr);
  gzputs(out, kTrace);
  gzclose(out);
  return path;
}

// The analysis commands' way in: opened once, imported from that opening.
void expect_analysis_opens_once(const std::string& path) {
  const int opens = opens_of(path, [&] {
    std::string error;
    auto source = open_trace_source(path, &error);
    EXPECT_NE(source, nullptr) << error;
  });
  EXPECT_EQ(opens, one_open(path)) << path;
}

TEST(ImportOpens, KinetoJsonOpenedOnceForAnalysis) {
  test::TempDir dir;
  expect_analysis_opens_once(write_json(dir));
}

TEST(ImportOpens, KinetoGzipOpenedOnceForAnalysis) {
  test::TempDir dir;
  expect_analysis_opens_once(write_gzip(dir));
}

// `gpuscope import`: the same.
TEST(ImportOpens, KinetoOpenedOnceForImport) {
  test::TempDir dir;
  const std::string path = write_json(dir);
  const int opens = opens_of(path, [&] {
    const ImportResult r = import_file(ImportTarget{path, 0}, dir.file("out.gpuscope"));
    EXPECT_GE(r.fd, 0) << r.error;
    if (r.fd >= 0) ::close(r.fd);
  });
  EXPECT_EQ(opens, one_open(path));
}

// SQLite opens the export by its path: one opening to sniff it, then what
// the database itself takes (as many as listing its processes takes).
TEST(ImportOpens, NsysExportSniffedOnceForAnalysis) {
  const std::string path = std::string(GPUSCOPE_NSYS_DB_DIR) + "/new_healthy.sqlite";
  const int database = opens_of(path, [&] {
    std::string error;
    EXPECT_FALSE(nsys_processes(path, &error).empty()) << error;
  });
  const int opens = opens_of(path, [&] {
    std::string error;
    auto source = open_trace_source(path, &error);
    EXPECT_NE(source, nullptr) << error;
  });
  EXPECT_EQ(opens, one_open(path) + database);
}

// `gpuscope analyze DIR`: a trace in it is opened once to list it (an nsys
// export stands for each of its processes) and once to analyze it.
TEST(ImportOpens, DirectoryEntryOpenedOnceToListAndOnceToAnalyze) {
  test::TempDir dir;
  const std::string path = write_json(dir);
  const std::string command = std::string(GPUSCOPE_CLI) + " analyze " + dir.path() + " >/dev/null 2>&1";
  const int opens = opens_of(path, [&] { EXPECT_EQ(std::system(command.c_str()), 0) << command; });
  EXPECT_EQ(opens, 2 * one_open(path));
}

// `gpuscope import`, whose importers are a module the CLI loads: the module
// imports the file the CLI opened and sniffed, not the path again.
TEST(ImportOpens, CliImportOpensTheFileOnce) {
  test::TempDir dir;
  const std::string path = write_json(dir);
  const std::string command =
      std::string(GPUSCOPE_CLI) + " import " + path + " -o " + dir.file("out.gpuscope") + " >/dev/null 2>&1";
  const int opens = opens_of(path, [&] { EXPECT_EQ(std::system(command.c_str()), 0) << command; });
  EXPECT_EQ(opens, one_open(path));
}

std::string output_of(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  for (size_t n; pipe != nullptr && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  *status = pipe == nullptr ? -1 : pclose(pipe);
  return out;
}

// A CLI whose lib/ lacks the importer module (a partial copy) still reads
// native traces; a foreign file fails with one line naming it and the
// missing module.
TEST(ImportModule, WithoutItAForeignFileFailsWithOneLineNamingIt) {
  test::TempDir dir;
  const std::string json = write_json(dir);
  const std::string native = dir.file("native.gpuscope");
  int status = 0;
  output_of(std::string(GPUSCOPE_CLI) + " import " + json + " -o " + native, &status);
  ASSERT_EQ(status, 0);
  ::mkdir(dir.file("bin").c_str(), 0755);
  const std::string alone = dir.file("bin/gpuscope");
  ASSERT_EQ(std::system(("cp " + std::string(GPUSCOPE_CLI) + " " + alone).c_str()), 0);

  const std::string failed = output_of(alone + " analyze " + json, &status);
  EXPECT_NE(status, 0) << failed;
  EXPECT_EQ(std::count(failed.begin(), failed.end(), '\n'), 1) << failed;
  EXPECT_NE(failed.find(json + ": cannot import it: cannot find libgpuscope_importers.so"), std::string::npos)
      << failed;

  const std::string read = output_of(alone + " analyze " + native, &status);
  EXPECT_EQ(status, 0) << read;
  EXPECT_NE(read.find("VERDICT: "), std::string::npos) << read;
}

}  // namespace
}  // namespace gpuscope::importer
