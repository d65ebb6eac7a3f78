// The SELECTs that stream an export's event tables, built from the columns
// the file has: a column some versions lack becomes a constant (and a note
// in the trace's coverage); one no event can do without (start, end, a
// name, bytes) makes the table unreadable, which is an error naming it.
// Each query returns its rows of one process in time order, with the
// columns in the fixed order its *Col enum gives, so the code that turns
// rows into events never looks at the schema again.
#pragma once

#include <string>
#include <vector>

#include "nsys_schema.h"

namespace gpuscope::importer::nsys {

enum HostCol { kHostStart, kHostEnd, kHostGlobalTid, kHostCorrelation, kHostName, kHostResult };
enum KernelCol {
  kKernelStart, kKernelEnd, kKernelDevice, kKernelStream, kKernelCorrelation, kKernelName,
  kKernelGridX, kKernelGridY, kKernelGridZ, kKernelBlockX, kKernelBlockY, kKernelBlockZ, kKernelDynamicShared
};
enum CopyCol { kCopyStart, kCopyEnd, kCopyDevice, kCopyStream, kCopyCorrelation, kCopyBytes, kCopyKind,
               kCopySrcKind, kCopyDstKind };
enum MemsetCol { kSetStart, kSetEnd, kSetDevice, kSetStream, kSetCorrelation, kSetBytes, kSetValue, kSetKind };
enum RangeCol { kRangeStart, kRangeEnd, kRangeGlobalTid, kRangeType, kRangeText, kRangeDomain };

// NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE).
inline constexpr int kNvtxMark = 34, kNvtxPushPop = 59, kNvtxStartEnd = 60, kNvtxtPushPop = 70,
                     kNvtxtStartEnd = 71, kNvtxDomainCreate = 75;

struct Query {
  std::string sql;      // binds ?1 = the pid when `by_pid`
  std::string unsorted_sql;  // the same rows in the order the file stores them
  bool by_pid = false;
  std::string missing;  // a required column the table lacks: the table cannot be read
  std::vector<std::string> notes;  // optional columns it lacks, as coverage lines
};

Query host_call_query(const Schema& schema, const std::string& table);
Query kernel_query(const Schema& schema);
Query memcpy_query(const Schema& schema);
Query memset_query(const Schema& schema);
Query nvtx_query(const Schema& schema);
// NVTX domain names: (domainId, name) of one process's domain-create events.
Query nvtx_domain_query(const Schema& schema);

// The column that holds a table's process (globalTid or globalPid), "" if none.
std::string process_column(const Schema& schema, const std::string& table);

}  // namespace gpuscope::importer::nsys
