// The pipelined sink (sink_pipeline.h): the walk fills a batch, the encoder
// thread empties the one before.
#include "sink_pipeline.h"

#include <pthread.h>

#include <utility>

namespace gpuscope::exporter {

namespace {
constexpr size_t kBatches = 3;  // one being filled, one being encoded, one spare
const ArgsView kNoArgs(nullptr, nullptr, {});
}  // namespace

PipelinedSink::PipelinedSink(TimelineSink& encoder) : encoder_(encoder) {
  for (size_t i = 0; i < kBatches; ++i) {
    batches_.push_back(std::make_unique<Batch>());
    batches_.back()->events.reserve(kBatchEvents);
    if (i != 0) free_.push_back(batches_.back().get());
  }
  current_ = batches_.front().get();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gpuscope-encode");  // for top and perf
    encode_batches();
  });
}

PipelinedSink::~PipelinedSink() {
  if (direct()) return;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    abandoned_ = true;  // the walk failed and is gone, with the names its events point to
  }
  changed_.notify_all();
  thread_.join();
}

// ---- the walk's side ----

void PipelinedSink::add(Kind kind, Track t, Label name, ArgsView args, const Timing& timing) {
  if (current_->events.size() >= kBatchEvents) hand_over();
  Batch& b = *current_;
  Event& e = b.events.emplace_back();
  e.kind = kind;
  e.label_id = name.id;
  e.track = t;
  e.timing = timing;
  e.label_size = name.text.size();
  if (name.id != 0) {
    e.label = name.text.data();  // the walk keeps names with an id until it ends
  } else {
    e.label = nullptr;
    e.label_offset = b.text.size();
    b.text.append(name.text);
  }
  e.args_first = b.args.size();
  e.args_text = b.text.size();
  b.args.insert(b.args.end(), args.list().begin(), args.list().end());  // offsets stay relative to args_text
  b.text.append(args.all_text());
  e.args_last = b.args.size();
}

void PipelinedSink::hand_over() {
  std::unique_lock lock(mutex_);
  full_.push_back(current_);
  changed_.notify_all();
  changed_.wait(lock, [&] { return !free_.empty(); });
  current_ = free_.front();
  free_.pop_front();
}

void PipelinedSink::set_origin(uint64_t origin_ns) {
  if (direct()) return encoder_.set_origin(origin_ns);
  add(Kind::Origin, {}, {}, kNoArgs, {nullptr, origin_ns});
}

void PipelinedSink::thread_name(Track t, std::string_view name) {
  if (direct()) return encoder_.thread_name(t, name);
  add(Kind::ThreadName, t, {name}, kNoArgs, {});
}

void PipelinedSink::process_name(Track t, std::string_view name) {
  if (direct()) return encoder_.process_name(t, name);
  add(Kind::ProcessName, t, {name}, kNoArgs, {});
}

void PipelinedSink::slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, ArgsView args,
                          Flow flow) {
  if (direct()) return encoder_.slice(t, name, category, start, duration, args, flow);
  add(Kind::Slice, t, name, args, {category, start, duration, 0, flow});
}

void PipelinedSink::instant(Track t, Label name, const char* category, uint64_t at, ArgsView args, Flow flow) {
  if (direct()) return encoder_.instant(t, name, category, at, args, flow);
  add(Kind::Instant, t, name, args, {category, at, 0, 0, flow});
}

void PipelinedSink::counter(Track t, Label name, uint64_t at, ArgsView values) {
  if (direct()) return encoder_.counter(t, name, at, values);
  add(Kind::Counter, t, name, values, {nullptr, at});
}

void PipelinedSink::async_range(Track t, Label name, const char* category, uint64_t id, uint64_t start, uint64_t end,
                                ArgsView args) {
  if (direct()) return encoder_.async_range(t, name, category, id, start, end, args);
  add(Kind::Async, t, name, args, {category, start, end, id});
}

void PipelinedSink::drain() {
  if (direct()) return;
  {
    std::lock_guard lock(mutex_);
    full_.push_back(current_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
  current_ = nullptr;
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void PipelinedSink::finish(const reader::TraceSummary& s, const ExportStats& stats, uint64_t origin_ns) {
  drain();
  encoder_.finish(s, stats, origin_ns);
}

// ---- the encoder's side ----

void PipelinedSink::encode_batches() {
  for (;;) {
    Batch* b = nullptr;
    bool skip = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !full_.empty() || closing_; });
      if (full_.empty()) return;
      b = full_.front();
      full_.pop_front();
      skip = abandoned_;
    }
    try {
      if (!failure_ && !skip)
        for (const Event& e : b->events) encode(*b, e);
    } catch (...) {
      failure_ = std::current_exception();  // the rest is dropped; drain() rethrows
    }
    b->clear();
    {
      std::lock_guard lock(mutex_);
      free_.push_back(b);
    }
    changed_.notify_all();
  }
}

void PipelinedSink::encode(const Batch& b, const Event& e) {
  const char* text = e.label != nullptr ? e.label : b.text.data() + e.label_offset;
  const Label label{{text, e.label_size}, e.label_id};
  const ArgsView args(b.args.data() + e.args_first, b.args.data() + e.args_last,
                      std::string_view(b.text).substr(e.args_text));
  const Timing& w = e.timing;
  switch (e.kind) {
    case Kind::Origin: encoder_.set_origin(w.a); break;
    case Kind::ThreadName: encoder_.thread_name(e.track, label.text); break;
    case Kind::ProcessName: encoder_.process_name(e.track, label.text); break;
    case Kind::Slice: encoder_.slice(e.track, label, w.category, w.a, w.b, args, w.flow); break;
    case Kind::Instant: encoder_.instant(e.track, label, w.category, w.a, args, w.flow); break;
    case Kind::Counter: encoder_.counter(e.track, label, w.a, args); break;
    case Kind::Async: encoder_.async_range(e.track, label, w.category, w.c, w.a, w.b, args); break;
  }
}

}  // namespace gpuscope::exporter
