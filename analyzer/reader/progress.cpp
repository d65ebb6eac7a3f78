#include "progress.h"

#include <algorithm>
#include <atomic>

namespace gpuscope::reader {
namespace {

std::atomic<ProgressSink*> g_sink{nullptr};
thread_local bool t_muted = false;  // ProgressMuted

class ProgressSource final : public ByteSource {
 public:
  ProgressSource(std::unique_ptr<ByteSource> inner, ProgressStage& stage) : inner_(std::move(inner)), stage_(stage) {}
  uint64_t size() const override { return inner_->size(); }
  bool read(uint64_t offset, void* out, size_t n) const override {
    const bool ok = inner_->read(offset, out, n);
    if (ok && offset + n > furthest_) {
      furthest_ = offset + n;
      stage_.advance(furthest_);
    }
    return ok;
  }
  uint64_t next_data(uint64_t offset) const override { return inner_->next_data(offset); }
  bool wait_for_growth(uint64_t known, uint64_t* size) const override {
    return inner_->wait_for_growth(known, size);
  }

 private:
  std::unique_ptr<ByteSource> inner_;
  ProgressStage& stage_;
  mutable uint64_t furthest_ = 0;
};

}  // namespace

std::string progress_label(std::string_view verb, const std::string& path) {
  return std::string(verb) + " " + path.substr(path.find_last_of('/') + 1);
}

void set_progress_sink(ProgressSink* sink) { g_sink.store(sink, std::memory_order_release); }

ProgressSink* progress_sink() { return t_muted ? nullptr : g_sink.load(std::memory_order_acquire); }

ProgressStage::ProgressStage(std::string_view what, uint64_t total, ProgressUnit unit)
    : sink_(progress_sink()) {
  if (sink_ != nullptr) sink_->begin(what, total, unit);
}

ProgressMuted::ProgressMuted() : was_(t_muted) { t_muted = true; }
ProgressMuted::~ProgressMuted() { t_muted = was_; }

ProgressStage::~ProgressStage() {
  if (sink_ != nullptr) sink_->end();
}

std::unique_ptr<ByteSource> progress_source(std::unique_ptr<ByteSource> source, ProgressStage& stage) {
  if (!stage.observed()) return source;
  return std::make_unique<ProgressSource>(std::move(source), stage);
}

}  // namespace gpuscope::reader
