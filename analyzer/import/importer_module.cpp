// libgpuscope_importers.so: the importers behind importer_abi.h's C
// interface, over gpuscope_import linked in whole.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <cstring>
#include <exception>
#include <string>

#include "import.h"
#include "importer_abi.h"
#include "progress.h"

namespace gpuscope::importer {
namespace {

void copy_text(const std::string& text, char* out, size_t size) {
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// The caller's progress bar as this module's sink, for one call.
class ForwardedProgress final : public reader::ProgressSink {
 public:
  explicit ForwardedProgress(const gpuscope_import_progress* to) : to_(to) {
    if (to_ != nullptr) reader::set_progress_sink(this);
  }
  ~ForwardedProgress() override {
    if (to_ != nullptr) reader::set_progress_sink(nullptr);
  }
  void begin(std::string_view what, uint64_t total, reader::ProgressUnit unit) override {
    to_->begin(to_->context, what.data(), what.size(), total, static_cast<int>(unit));
  }
  void advance(uint64_t done) override { to_->advance(to_->context, done); }
  void end() override { to_->end(to_->context); }

 private:
  const gpuscope_import_progress* to_;
};

std::unique_ptr<reader::ByteSource> source_of(const char* path, int fd, std::string* error) {
  if (fd < 0) return reader::open_file_source(path, error);
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  auto source = copy < 0 ? nullptr : reader::descriptor_source(copy);
  if (source == nullptr) *error = std::string(path) + ": cannot read it again for the import: " + std::strerror(errno);
  return source;
}

void import_file_entry(const char* path, int fd, int format, int pid, const char* out_path, int force,
                       const gpuscope_import_progress* progress, gpuscope_import_reply* reply) {
  *reply = gpuscope_import_reply{};
  reply->fd = -1;
  const auto f = static_cast<SourceFormat>(format);
  if (f != SourceFormat::KinetoJson && f != SourceFormat::KinetoGzip && f != SourceFormat::NsysSqlite) {
    copy_text(std::string(path) + ": not a format the importers read", reply->error, sizeof reply->error);
    return;
  }
  try {
    // One import at a time: the forwarded progress bar is this module's one
    // sink while it lasts (the CLI imports one file at a time anyway).
    static std::mutex one_at_a_time;
    const std::lock_guard lock(one_at_a_time);
    const ForwardedProgress forwarded(progress);
    ImportResult r;
    auto source = source_of(path, fd, &r.error);
    if (source != nullptr) r = import_foreign(ImportTarget{path, pid}, std::move(source), f, out_path, force != 0);
    reply->fd = r.fd;
    reply->events = r.counts.events;
    reply->records = r.counts.records;
    reply->skipped = r.counts.skipped;
    reply->unjoined = r.counts.unjoined;
    reply->out_of_range = r.counts.out_of_range;
    copy_text(r.error, reply->error, sizeof reply->error);
    copy_text(r.warning, reply->warning, sizeof reply->warning);
  } catch (const std::exception& e) {  // no memory, say: the import fails, the caller goes on
    copy_text(std::string(path) + ": import failed: " + e.what(), reply->error, sizeof reply->error);
  }
}

int processes_entry(const char* path, int* pids, int capacity, char* error, size_t error_size) {
  try {
    std::string why;
    const std::vector<int> found = nsys_processes(path, &why);
    if (found.empty() && !why.empty()) {
      copy_text(why, error, error_size);
      return -1;
    }
    std::copy_n(found.begin(), std::min<size_t>(found.size(), static_cast<size_t>(std::max(capacity, 0))), pids);
    return static_cast<int>(found.size());
  } catch (const std::exception& e) {
    copy_text(std::string(path) + ": " + e.what(), error, error_size);
    return -1;
  }
}

constexpr gpuscope_importers kImporters{GPUSCOPE_IMPORTERS_ABI, import_file_entry, processes_entry};

}  // namespace
}  // namespace gpuscope::importer

extern "C" __attribute__((visibility("default"))) const gpuscope_importers* gpuscope_importers_v1(void) {
  return &gpuscope::importer::kImporters;
}
