// The importers for the CLI: libgpuscope_importers.so (importer_abi.h),
// loaded the first time a foreign file is opened. Linking them would load
// simdjson, SQLite and the shared C++ runtime at every command's start
// (~0.75 ms of a 2.5 ms start, docs/performance.md) for the few commands
// that read another profiler's file.
#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <string>

#include "commands.h"
#include "import.h"
#include "importer_abi.h"
#include "progress.h"

namespace gpuscope::importer {
namespace {

constexpr char kModule[] = "libgpuscope_importers.so";

struct Loaded {
  const gpuscope_importers* importers = nullptr;
  std::string error;  // why not, when importers is null
};

Loaded load_module() {
  Loaded out;
  std::string where_error;
  const std::string path = cli::locate_own_library(kModule, &where_error);
  if (path.empty()) {
    out.error = where_error;
    return out;
  }
  // Never closed: the importers stay for the process's life.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = handle == nullptr ? dlerror() : nullptr;
  const auto entry =
      handle == nullptr ? nullptr : reinterpret_cast<gpuscope_importers_v1_fn>(dlsym(handle, "gpuscope_importers_v1"));
  const gpuscope_importers* importers = entry == nullptr ? nullptr : entry();
  if (importers == nullptr || importers->abi != GPUSCOPE_IMPORTERS_ABI) {
    out.error = path + " cannot be loaded (" +
                (why != nullptr ? std::string(why) : "not this gpuscope's importer module") + ")";
    return out;
  }
  out.importers = importers;
  return out;
}

const Loaded& module() {
  static const Loaded loaded = load_module();
  return loaded;
}

// The CLI's progress bar, driven from the module.
gpuscope_import_progress forwarded_progress(reader::ProgressSink* sink) {
  gpuscope_import_progress p{};
  p.context = sink;
  p.begin = [](void* c, const char* what, size_t n, uint64_t total, int unit) {
    static_cast<reader::ProgressSink*>(c)->begin(std::string_view(what, n), total,
                                                 static_cast<reader::ProgressUnit>(unit));
  };
  p.advance = [](void* c, uint64_t done) { static_cast<reader::ProgressSink*>(c)->advance(done); };
  p.end = [](void* c) { static_cast<reader::ProgressSink*>(c)->end(); };
  return p;
}

}  // namespace

ImportResult import_foreign(const ImportTarget& target, std::unique_ptr<reader::ByteSource> source,
                            SourceFormat format, const std::string& out_path, bool force) {
  ImportResult result;
  const Loaded& m = module();
  if (m.importers == nullptr) {
    result.error = target.path + ": cannot import it: " + m.error;
    return result;
  }
  reader::ProgressSink* sink = reader::progress_sink();
  const gpuscope_import_progress progress = forwarded_progress(sink);
  auto reply = std::make_unique<gpuscope_import_reply>();
  // The file this command opened and sniffed, not the path again: the
  // importer reads those very bytes (it keeps a copy of the descriptor).
  const int fd = source != nullptr ? source->descriptor() : -1;
  m.importers->import_file(target.path.c_str(), fd, static_cast<int>(format), target.pid, out_path.c_str(),
                           force ? 1 : 0, sink != nullptr ? &progress : nullptr, reply.get());
  source.reset();
  result.fd = reply->fd;
  result.error = reply->error;
  result.warning = reply->warning;
  result.counts = ImportCounts{reply->events, reply->records, reply->skipped, reply->unjoined, reply->out_of_range};
  return result;
}

std::vector<int> foreign_processes(const std::string& path, std::string* error) {
  const Loaded& m = module();
  if (m.importers == nullptr) {
    *error = path + ": cannot list its processes: " + m.error;
    return {};
  }
  std::vector<int> pids(64);
  char why[4096] = "";
  int n = m.importers->processes(path.c_str(), pids.data(), static_cast<int>(pids.size()), why, sizeof why);
  if (n > static_cast<int>(pids.size())) {
    pids.resize(static_cast<size_t>(n));
    n = m.importers->processes(path.c_str(), pids.data(), n, why, sizeof why);
  }
  if (n < 0) {
    *error = why;
    return {};
  }
  pids.resize(std::min(static_cast<size_t>(n), pids.size()));
  return pids;
}

}  // namespace gpuscope::importer
