// Nsight Systems SQLite exports (`nsys export --type sqlite`) as gpuscope
// traces: the CUDA runtime and driver calls, kernels, copies and memsets of
// one process, its NVTX ranges, thread names and GPUs, handed to the
// TraceBuilder in time order (docs/import.md, "Nsight Systems SQLite").
#include "import.h"
#include "nsys_events.h"
#include "nsys_metadata.h"

namespace gpuscope::importer {
namespace {

std::string no_process(const std::string& path, const nsys::Activity& activity) {
  return path + ": no process with CUDA calls, GPU work or NVTX ranges" +
         (activity.damage.empty() ? "" : " could be read (" + activity.damage + ")");
}

std::string pid_list(const std::map<uint32_t, uint64_t>& rows_by_pid) {
  std::string out;
  for (const auto& [pid, rows] : rows_by_pid) out += (out.empty() ? "" : ", ") + std::to_string(pid);
  return out;
}

// `wanted` when the export has it; for 0 the only process, else the one
// with most CUDA rows (the lowest pid on a tie), saying which in coverage.
bool choose_process(const nsys::Export& ex, int wanted, TraceBuilder& builder, uint32_t* pid, std::string* error) {
  const nsys::Activity activity = nsys::process_activity(ex);
  const auto& rows = activity.rows_by_pid;
  if (rows.empty()) {
    *error = no_process(ex.db.path(), activity);
    return false;
  }
  if (wanted != 0) {
    if (wanted < 0 || rows.count(static_cast<uint32_t>(wanted)) == 0) {
      *error = ex.db.path() + ": no process " + std::to_string(wanted) + " with CUDA activity in this export " +
               "(processes: " + pid_list(rows) + ")";
      return false;
    }
    *pid = static_cast<uint32_t>(wanted);
    return true;
  }
  auto best = rows.begin();
  for (auto it = rows.begin(); it != rows.end(); ++it)
    if (it->second > best->second) best = it;
  *pid = best->first;
  if (rows.size() > 1)
    builder.add_note("the export holds " + std::to_string(rows.size()) + " processes with CUDA activity (" +
                     pid_list(rows) + "); this trace is pid " + std::to_string(*pid) +
                     ", the busiest: import another as FILE@pid=N");
  return true;
}

void add_coverage_notes(const nsys::Export& ex, TraceBuilder& builder) {
  const nsys::Schema& s = ex.schema;
  if (!s.has(nsys::kRuntimeTable)) builder.add_note("no CUDA runtime API table: runtime calls not seen");
  if (!s.has(nsys::kDriverTable)) builder.add_note("no CUDA driver API table: driver calls not seen");
  if (!s.has(nsys::kKernelTable)) builder.add_note("no kernel table: no device records of kernels");
  if (!s.has(nsys::kMemcpyTable)) builder.add_note("no memcpy table: no device records of copies");
  if (!s.has(nsys::kNvtxTable)) builder.add_note("no NVTX_EVENTS table: NVTX ranges not seen");
  // CUPTI's synchronization records repeat the runtime calls that waited
  // (same correlation ids): those calls are the host-side record already.
  if (s.has(nsys::kSyncTable))
    builder.add_note("nsys synchronization records not imported: the synchronizing API calls stand for them");
  for (const std::string& note : s.unread_notes()) builder.add_note(note);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

}  // namespace

ImportResult import_nsys(const std::string& path, int pid, TraceBuilder& builder) {
  ImportResult result;
  nsys::Export ex;
  uint32_t chosen = 0;
  if (!ex.open(path, &result.error) || !choose_process(ex, pid, builder, &chosen, &result.error)) return result;
  const int64_t session_utc_ns = nsys::read_process(ex, chosen, builder);
  add_coverage_notes(ex, builder);
  nsys::EventMerge merge(ex.db, ex.schema, ex.codes, builder);
  std::string why;
  if (!merge.open(chosen, &why)) {
    result.error = path + ": " + why + ex.version_hint();
    return result;
  }
  reader::ProgressStage progress(reader::progress_label("importing", path), 0, reader::ProgressUnit::Events);
  merge.run(progress);
  const std::string damage = joined(merge.damage());
  if (!merge.any_rows() && !damage.empty()) {
    result.error = path + ": " + damage;
    return result;
  }
  if (merge.earliest_ns() >= 0) {
    builder.process().start_monotonic_ns = static_cast<uint64_t>(merge.earliest_ns());
    if (session_utc_ns > 0)
      builder.process().start_realtime_ns = static_cast<uint64_t>(session_utc_ns + merge.earliest_ns());
  }
  result.fd = builder.finish(damage.empty(), damage);
  if (result.fd < 0) result.error = builder.error();
  if (!damage.empty()) result.warning = path + ": " + damage + " (imported what was read before it)";
  result.counts = builder.counts();
  return result;
}

std::vector<int> nsys_processes(const std::string& path, std::string* error) {
  nsys::Export ex;
  if (!ex.open(path, error)) return {};
  const nsys::Activity activity = nsys::process_activity(ex);
  std::vector<int> pids;
  for (const auto& [pid, rows] : activity.rows_by_pid) pids.push_back(static_cast<int>(pid));
  if (pids.empty()) *error = no_process(path, activity);
  return pids;
}

}  // namespace gpuscope::importer
