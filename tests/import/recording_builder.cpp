#include "recording_builder.h"

#include <fcntl.h>

#include <algorithm>

namespace gpuscope::importer {

namespace testing {
namespace {
Recording& current() {
  static Recording recording;
  return recording;
}
}  // namespace

const Recording& last_recording() { return current(); }

size_t Recording::count(EventKind kind) const {
  return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.kind == kind; }));
}

bool Recording::has_note(const std::string& part) const {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}
}  // namespace testing

using testing::EventKind;
using testing::RecordedEvent;

struct TraceBuilder::Impl {
  testing::Recording& rec = testing::current();
};

TraceBuilder::TraceBuilder(ImportSourceInfo info, std::string, bool) : impl_(std::make_unique<Impl>()), info_(std::move(info)) {
  impl_->rec = testing::Recording{};
}

TraceBuilder::~TraceBuilder() {
  if (!impl_->rec.finished) impl_->rec.notes = info_.notes;
}

void TraceBuilder::add_device(container::DeviceDescription device) { impl_->rec.devices.push_back(std::move(device)); }

void TraceBuilder::set_thread_name(uint32_t tid, std::string_view name) {
  impl_->rec.thread_names.emplace_back(tid, std::string(name));
}

void TraceBuilder::add(const HostCall& call) {
  RecordedEvent e{EventKind::HostCall, call.start_ns, std::string(call.name)};
  e.call = call;
  e.call.name = {};
  impl_->rec.events.push_back(std::move(e));
}

void TraceBuilder::add(const DeviceKernel& kernel) {
  RecordedEvent e{EventKind::Kernel, kernel.start_ns, std::string(kernel.name)};
  e.kernel = kernel;
  e.kernel.name = {};
  impl_->rec.events.push_back(std::move(e));
}

void TraceBuilder::add(const DeviceCopy& copy) {
  RecordedEvent e{EventKind::Copy, copy.start_ns};
  e.copy = copy;
  impl_->rec.events.push_back(std::move(e));
}

void TraceBuilder::add(const DeviceMemset& memset) {
  RecordedEvent e{EventKind::Memset, memset.start_ns};
  e.memset = memset;
  impl_->rec.events.push_back(std::move(e));
}

void TraceBuilder::add(const HostRange& range) {
  RecordedEvent e{EventKind::Range, range.start_ns, std::string(range.name), std::string(range.domain)};
  e.range = range;
  e.range.name = e.range.domain = {};
  impl_->rec.events.push_back(std::move(e));
}

void TraceBuilder::add(const AllocatorEvent& event) {
  RecordedEvent e{EventKind::Allocator, event.time_ns};
  impl_->rec.events.push_back(std::move(e));
}

int TraceBuilder::finish(bool complete, const std::string& damage) {
  testing::Recording& rec = impl_->rec;
  rec.finished = true;
  rec.complete = complete;
  rec.damage = damage;
  rec.process = process_;
  rec.notes = info_.notes;
  counts_.records = rec.events.size();
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

}  // namespace gpuscope::importer
