#include "nsys_events.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace gpuscope::importer::nsys {
namespace {

// Timestamps past this are no clock's (≈ 146 years of nanoseconds).
constexpr int64_t kMaxTimestamp = int64_t{1} << 62;
constexpr size_t kMaxDomains = 4096;
constexpr size_t kMaxThreadsTracked = 1 << 16;

// nsys names runtime functions with the version that introduced them
// ("cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020"); a native trace
// names the function ("cudaLaunchKernel"). A driver function's own
// version ("cuMemcpyHtoD_v2") is part of its name and stays.
std::string_view function_name(std::string_view name) {
  const size_t at = name.rfind("_v");
  if (at == std::string_view::npos || name.size() - at - 2 < 4) return name;
  const std::string_view digits = name.substr(at + 2);
  const bool all_digits =
      std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return all_digits ? name.substr(0, at) : name;
}

int16_t device_of(int64_t id) { return id >= 0 && id <= std::numeric_limits<int16_t>::max() ? int16_t(id) : -1; }
uint32_t u32(int64_t v) { return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, std::numeric_limits<uint32_t>::max())); }
uint64_t u64(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

bool EventMerge::open(uint32_t pid, std::string* error) {
  const struct {
    Table kind;
    const char* table;
    Query query;
  } tables[] = {
      {Table::Runtime, kRuntimeTable, host_call_query(schema_, kRuntimeTable)},
      {Table::Driver, kDriverTable, host_call_query(schema_, kDriverTable)},
      {Table::Nvtx, kNvtxTable, nvtx_query(schema_)},
      {Table::Kernel, kKernelTable, kernel_query(schema_)},
      {Table::Memcpy, kMemcpyTable, memcpy_query(schema_)},
      {Table::Memset, kMemsetTable, memset_query(schema_)},
  };
  streams_.reserve(std::size(tables));
  for (const auto& t : tables)
    if (schema_.has(t.table) && !add_stream(t.kind, t.table, t.query, pid, error)) return false;
  load_domains(pid);
  for (TableStream& s : streams_) advance(s);
  return true;
}

bool EventMerge::add_stream(Table kind, const std::string& table, const Query& query, uint32_t pid,
                            std::string* error) {
  if (!query.missing.empty()) {
    *error = "table " + table + " has no column '" + query.missing + "'";
    return false;
  }
  TableStream stream;
  std::string why;
  if (!stream.statement.prepare(db_, query.sql, &why)) {
    *error = "cannot read table " + table + ": " + why;
    return false;
  }
  if (query.by_pid) stream.statement.bind(1, pid);
  for (const std::string& note : query.notes) builder_.add_note(note);
  stream.unsorted_sql = query.unsorted_sql;
  stream.pid = pid;
  stream.by_pid = query.by_pid;
  stream.kind = kind;
  stream.name = table;
  stream.live = true;
  streams_.push_back(std::move(stream));
  return true;
}

// Domain-create events name the domains the ranges refer to by id. A
// domain never named keeps its number, so its ranges stay apart.
void EventMerge::load_domains(uint32_t pid) {
  const Query q = nvtx_domain_query(schema_);
  Statement st;
  std::string ignored;
  if (q.sql.empty() || !st.prepare(db_, q.sql, &ignored)) return;
  if (q.by_pid) st.bind(1, pid);
  while (domains_.size() < kMaxDomains && st.step() == Step::Row)
    if (!st.text(1).empty()) domains_.emplace(st.integer(0), std::string(st.text(1).substr(0, 256)));
}

void EventMerge::advance(TableStream& stream) {
  switch (stream.statement.step()) {
    case Step::Row: stream.start = stream.statement.integer(0); return;
    case Step::Done: stream.live = false; return;
    case Step::Failed:
      if (stream.rows == 0 && !stream.unsorted && reread_unsorted(stream)) return advance(stream);
      stream.live = false;
      damage_.push_back(stream.name + ": " + db_.message() + " after " + std::to_string(stream.rows) + " rows" +
                        (stream.unsorted ? " (read in stored order)" : ""));
  }
}

bool EventMerge::reread_unsorted(TableStream& stream) {
  std::string ignored;
  stream.unsorted = true;
  if (!stream.statement.prepare(db_, stream.unsorted_sql, &ignored)) return false;
  if (stream.by_pid) stream.statement.bind(1, stream.pid);
  return true;
}

// The earliest head row; on a tie the table listed first in Table (host
// calls before the device work they caused).
TableStream* EventMerge::next_stream() {
  TableStream* best = nullptr;
  for (TableStream& s : streams_)
    if (s.live && (best == nullptr || s.start < best->start)) best = &s;
  return best;
}

void EventMerge::run(reader::ProgressStage& progress) {
  uint64_t rows = 0;
  while (TableStream* s = next_stream()) {
    emit(*s);
    ++s->rows;
    any_rows_ = true;
    advance(*s);
    if (++rows % 4096 == 0) progress.advance(rows);
  }
}

void EventMerge::emit(TableStream& stream) {
  builder_.count_event();
  switch (stream.kind) {
    case Table::Runtime: return emit_host_call(stream.statement, false);
    case Table::Driver: return emit_host_call(stream.statement, true);
    case Table::Nvtx: return emit_range(stream.statement);
    case Table::Kernel: return emit_kernel(stream.statement);
    case Table::Memcpy: return emit_copy(stream.statement);
    case Table::Memset: return emit_memset(stream.statement);
  }
}

// False (counted) for a row without a usable time: negative, reversed,
// absurd, or CUPTI's "not collected" (both zero).
bool EventMerge::times(const Statement& row, int start_col, int end_col, uint64_t* start, uint64_t* duration) {
  const int64_t s = row.integer(start_col), e = row.integer(end_col);
  if (row.is_null(start_col) || row.is_null(end_col) || s < 0 || e < s || e > kMaxTimestamp || (s == 0 && e == 0)) {
    builder_.count_out_of_range();
    return false;
  }
  if (earliest_ < 0 || s < earliest_) earliest_ = s;
  *start = static_cast<uint64_t>(s);
  *duration = static_cast<uint64_t>(e - s);
  return true;
}

void EventMerge::emit_host_call(const Statement& row, bool driver) {
  HostCall call;
  if (!times(row, kHostStart, kHostEnd, &call.start_ns, &call.duration_ns)) return;
  call.tid = tid_of(row.integer(kHostGlobalTid));
  const uint64_t end = call.start_ns + call.duration_ns;
  if (driver) {
    const auto open = runtime_end_.find(call.tid);
    if (open != runtime_end_.end() && end <= open->second) return builder_.count_skipped();
  } else {
    if (runtime_end_.size() >= kMaxThreadsTracked) runtime_end_.clear();
    runtime_end_[call.tid] = end;
  }
  call.name = function_name(row.text(kHostName));
  call.correlation = u64(row.integer(kHostCorrelation));
  call.result = static_cast<int32_t>(std::clamp<int64_t>(row.integer(kHostResult), INT32_MIN, INT32_MAX));
  call.driver = driver;
  builder_.add(call);
}

void EventMerge::emit_kernel(const Statement& row) {
  DeviceKernel k;
  if (!times(row, kKernelStart, kKernelEnd, &k.start_ns, &k.duration_ns)) return;
  k.name = row.text(kKernelName);
  k.correlation = u64(row.integer(kKernelCorrelation));
  k.stream = u64(row.integer(kKernelStream));
  k.device = device_of(row.integer(kKernelDevice));
  for (int i = 0; i < 3; ++i) {
    k.grid[i] = u32(row.integer(kKernelGridX + i));
    k.block[i] = u32(row.integer(kKernelBlockX + i));
  }
  k.dynamic_shared_bytes = u32(row.integer(kKernelDynamicShared));
  builder_.add(k);
}

void EventMerge::emit_copy(const Statement& row) {
  DeviceCopy c;
  if (!times(row, kCopyStart, kCopyEnd, &c.start_ns, &c.duration_ns)) return;
  c.correlation = u64(row.integer(kCopyCorrelation));
  c.stream = u64(row.integer(kCopyStream));
  c.device = device_of(row.integer(kCopyDevice));
  c.bytes = u64(row.integer(kCopyBytes));
  c.direction = codes_.direction(row.integer(kCopyKind));
  if (!row.is_null(kCopySrcKind)) c.src_kind = codes_.memory(row.integer(kCopySrcKind));
  if (!row.is_null(kCopyDstKind)) c.dst_kind = codes_.memory(row.integer(kCopyDstKind));
  builder_.add(c);
}

void EventMerge::emit_memset(const Statement& row) {
  DeviceMemset m;
  if (!times(row, kSetStart, kSetEnd, &m.start_ns, &m.duration_ns)) return;
  m.correlation = u64(row.integer(kSetCorrelation));
  m.stream = u64(row.integer(kSetStream));
  m.device = device_of(row.integer(kSetDevice));
  m.bytes = u64(row.integer(kSetBytes));
  m.value = static_cast<uint32_t>(row.integer(kSetValue));
  if (!row.is_null(kSetKind)) m.kind = codes_.memory(row.integer(kSetKind));
  builder_.add(m);
}

// Push/pop and start/end ranges; marks and ranges never closed (no end)
// are counted, not kept.
void EventMerge::emit_range(const Statement& row) {
  const int64_t type = row.integer(kRangeType);
  if (type == kNvtxMark || row.is_null(kRangeEnd) || row.integer(kRangeEnd) < row.integer(kRangeStart))
    return builder_.count_skipped();
  HostRange r;
  if (!times(row, kRangeStart, kRangeEnd, &r.start_ns, &r.duration_ns)) return;
  r.name = row.text(kRangeText);
  r.tid = tid_of(row.integer(kRangeGlobalTid));
  const int64_t domain = row.integer(kRangeDomain);
  std::string unnamed;
  if (domain != 0) {
    const auto it = domains_.find(domain);
    if (it != domains_.end()) r.domain = it->second;
    else r.domain = unnamed = "domain " + std::to_string(domain);
  }
  builder_.add(r);
}

}  // namespace gpuscope::importer::nsys
