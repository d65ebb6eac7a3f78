// The Nsight Systems importer on its own: what it hands the TraceBuilder
// from generated exports of both layouts (make_nsys_db.py), and the one
// line it gives for files it cannot read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "import.h"
#include "recording_builder.h"

namespace gpuscope::importer {
namespace {

using testing::EventKind;
using testing::Recording;

std::string db(const std::string& name) { return std::string(GPUSCOPE_NSYS_DB_DIR) + "/" + name + ".sqlite"; }

ImportResult run_import(const std::string& path, int pid = 0) {
  TraceBuilder builder(ImportSourceInfo{"nsys-sqlite", path, "", {}}, "");
  ImportResult r = import_nsys(path, pid, builder);
  if (r.fd >= 0) ::close(r.fd);
  return r;
}

std::vector<const testing::RecordedEvent*> of_kind(const Recording& rec, EventKind kind) {
  std::vector<const testing::RecordedEvent*> out;
  for (const auto& e : rec.events)
    if (e.kind == kind) out.push_back(&e);
  return out;
}

// Rows are stored out of order; the builder must get them sorted by start.
void expect_time_order(const Recording& rec) {
  for (size_t i = 1; i < rec.events.size(); ++i)
    ASSERT_LE(rec.events[i - 1].start_ns, rec.events[i].start_ns) << "event " << i;
}

TEST(NsysImport, NewLayoutHealthyCallsKernelsRangesInTimeOrder) {
  const ImportResult r = run_import(db("new_healthy"));
  ASSERT_GE(r.fd, 0) << r.error;
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  const Recording& rec = testing::last_recording();
  EXPECT_TRUE(rec.complete);
  expect_time_order(rec);
  const auto calls = of_kind(rec, EventKind::HostCall);
  const auto kernels = of_kind(rec, EventKind::Kernel);
  ASSERT_EQ(kernels.size(), 600u);
  // 604 runtime calls and the application's own driver call; the driver
  // call made inside a launch is the launch's, not counted again.
  ASSERT_EQ(calls.size(), 605u);
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(), [](auto* e) { return e->call.driver; }), 1);
  EXPECT_EQ(r.counts.skipped, 1u /* nested driver call */ + 1u /* NVTX mark */);
  std::set<uint64_t> launches;
  for (auto* c : calls) {
    EXPECT_EQ(c->call.tid, 4242u);  // the machine bits above the pid are masked off
    if (c->name == "cudaLaunchKernel") launches.insert(c->call.correlation);  // "_v7000" gone
  }
  EXPECT_EQ(launches.size(), 600u);
  for (auto* k : kernels) {
    EXPECT_TRUE(launches.count(k->kernel.correlation)) << k->kernel.correlation;
    EXPECT_TRUE(k->name.ends_with("(demangled)")) << k->name;  // demangledName preferred
    EXPECT_EQ(k->kernel.device, 0);
    EXPECT_EQ(k->kernel.stream, 7u);
    EXPECT_EQ(k->kernel.grid[0], 1024u);
    EXPECT_EQ(k->kernel.block[0], 256u);
    EXPECT_EQ(k->kernel.dynamic_shared_bytes, 4096u);
    EXPECT_EQ(k->kernel.duration_ns, 1'000'000u);
  }
  const auto ranges = of_kind(rec, EventKind::Range);
  ASSERT_EQ(ranges.size(), 601u);
  EXPECT_EQ(std::count_if(ranges.begin(), ranges.end(), [](auto* e) { return e->name == "step" && e->domain.empty(); }),
            600);
  EXPECT_EQ(std::count_if(ranges.begin(), ranges.end(),
                          [](auto* e) { return e->name == "epoch" && e->domain == "training"; }),
            1);
  ASSERT_EQ(of_kind(rec, EventKind::Memset).size(), 1u);
  EXPECT_EQ(of_kind(rec, EventKind::Memset)[0]->memset.bytes, 1u << 20);
  EXPECT_EQ(of_kind(rec, EventKind::Memset)[0]->memset.kind, fb::MemoryKind::Device);
}

TEST(NsysImport, NewLayoutProcessThreadsDevicesAndCoverage) {
  ASSERT_GE(run_import(db("new_healthy")).fd, 0);
  const Recording& rec = testing::last_recording();
  EXPECT_EQ(rec.process.pid, 4242);
  EXPECT_EQ(rec.process.exe, "/opt/train/bin/train_4242");
  EXPECT_EQ(rec.process.rank, 0);
  EXPECT_EQ(rec.process.start_monotonic_ns, 500'000u);  // the earliest event: the driver call
  EXPECT_EQ(rec.process.start_realtime_ns, 1764633600000000000ull + 500'000u);
  ASSERT_EQ(rec.thread_names.size(), 1u);
  EXPECT_EQ(rec.thread_names[0], std::make_pair(4242u, std::string("trainer-4242")));
  // CUDA device 0 of this process is GPU 1 (TARGET_INFO_CUDA_DEVICE).
  ASSERT_EQ(rec.devices.size(), 1u);
  EXPECT_EQ(rec.devices[0].index, 0u);
  EXPECT_EQ(rec.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rec.devices[0].pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(rec.devices[0].uuid, "GPU-bbbb");
  EXPECT_EQ(rec.devices[0].memory_total_bytes, 85899345920u);
  EXPECT_TRUE(rec.has_note("synchronization records not imported"));
  EXPECT_TRUE(rec.has_note("COMPOSITE_EVENTS"));
  EXPECT_FALSE(rec.has_note("no CUDA driver API table"));
}

TEST(NsysImport, OldLayoutShortNamesInlineNvtxTextGpuIdsAndNotes) {
  const ImportResult r = run_import(db("old_healthy"));
  ASSERT_GE(r.fd, 0) << r.error;
  const Recording& rec = testing::last_recording();
  expect_time_order(rec);
  const auto kernels = of_kind(rec, EventKind::Kernel);
  ASSERT_EQ(kernels.size(), 600u);
  for (auto* k : kernels) EXPECT_TRUE(k->name == "gemm_f" || k->name == "relu_kernel") << k->name;
  EXPECT_EQ(of_kind(rec, EventKind::HostCall).size(), 604u);
  const auto ranges = of_kind(rec, EventKind::Range);
  ASSERT_EQ(ranges.size(), 600u);
  EXPECT_EQ(ranges[0]->name, "step");
  EXPECT_EQ(rec.process.pid, 4242);
  EXPECT_TRUE(rec.process.exe.empty());
  ASSERT_EQ(rec.devices.size(), 1u);
  EXPECT_EQ(rec.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(of_kind(rec, EventKind::Memset)[0]->memset.kind, fb::MemoryKind::Unknown);
  EXPECT_TRUE(rec.has_note("no CUDA driver API table"));
  EXPECT_TRUE(rec.has_note("no TARGET_INFO_CUDA_DEVICE"));
}

void expect_pageable_copies(const std::string& name) {
  const ImportResult r = run_import(db(name));
  ASSERT_GE(r.fd, 0) << r.error;
  const auto copies = of_kind(testing::last_recording(), EventKind::Copy);
  ASSERT_EQ(copies.size(), 800u);
  size_t to_device = 0;
  for (auto* c : copies) {
    if (c->copy.direction == fb::CopyDirection::HostToDevice) {
      ++to_device;
      EXPECT_EQ(c->copy.bytes, 4u << 20);
      EXPECT_EQ(c->copy.src_kind, fb::MemoryKind::Pageable);
      EXPECT_EQ(c->copy.dst_kind, fb::MemoryKind::Device);
    } else {
      EXPECT_EQ(c->copy.direction, fb::CopyDirection::DeviceToHost);
      EXPECT_EQ(c->copy.src_kind, fb::MemoryKind::Device);
      EXPECT_EQ(c->copy.dst_kind, fb::MemoryKind::Pageable);
    }
  }
  EXPECT_EQ(to_device, 400u);
}

// With ENUM_* tables (read by symbol name) and without (nsys's codes).
TEST(NsysImport, PageableCopiesNewLayout) { expect_pageable_copies("new_pageable"); }
TEST(NsysImport, PageableCopiesOldLayout) { expect_pageable_copies("old_pageable"); }

TEST(NsysImport, MultiProcessListsAndChoosesProcesses) {
  std::string error;
  EXPECT_EQ(nsys_processes(db("new_multiprocess"), &error), (std::vector<int>{5001, 5002})) << error;
  ASSERT_GE(run_import(db("new_multiprocess")).fd, 0);
  const Recording& busiest = testing::last_recording();
  EXPECT_EQ(busiest.process.pid, 5001);
  EXPECT_TRUE(busiest.has_note("2 processes"));
  EXPECT_EQ(of_kind(busiest, EventKind::Kernel).size(), 300u);

  ASSERT_GE(run_import(db("new_multiprocess"), 5002).fd, 0);
  const Recording& other = testing::last_recording();
  EXPECT_EQ(other.process.pid, 5002);
  EXPECT_EQ(other.process.exe, "/opt/train/bin/train_5002");
  EXPECT_EQ(other.process.rank, 1);
  EXPECT_EQ(of_kind(other, EventKind::Kernel).size(), 100u);
  for (auto* call : of_kind(other, EventKind::HostCall)) EXPECT_EQ(call->call.tid, 5002u);

  const ImportResult missing = run_import(db("new_multiprocess"), 777);
  EXPECT_LT(missing.fd, 0);
  EXPECT_EQ(missing.error, db("new_multiprocess") +
                               ": no process 777 with CUDA activity in this export (processes: 5001, 5002)");
}

void expect_error(const std::string& path, const std::string& what) {
  const ImportResult r = run_import(path);
  EXPECT_LT(r.fd, 0);
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  EXPECT_TRUE(r.error.starts_with(path) || r.error.starts_with("cannot open " + path)) << r.error;
  EXPECT_NE(r.error.find(what), std::string::npos) << r.error;
  std::string error;
  EXPECT_TRUE(nsys_processes(path, &error).empty());
  EXPECT_NE(error.find(what), std::string::npos) << error;
}

TEST(NsysImport, BadInputsAreOneLineErrors) {
  expect_error(db("not_sqlite"), "not an SQLite database");
  expect_error(db("other_tool"), "not an Nsight Systems export");
  expect_error(db("no_process"), "no process with CUDA calls");
  expect_error(std::string(GPUSCOPE_NSYS_DB_DIR), "is a directory");
  expect_error(db("does_not_exist"), "No such file");
}

TEST(NsysImport, MissingColumnNamesTableAndColumn) {
  const ImportResult r = run_import(db("missing_column"));
  EXPECT_LT(r.fd, 0);
  EXPECT_EQ(r.error, db("missing_column") +
                         ": table CUPTI_ACTIVITY_KIND_KERNEL has no column 'end' (Nsight Systems 2024.6.2.225 "
                         "(export schema 3.16.1))");
}

TEST(NsysImport, FifoIsRefusedWithoutBlocking) {
  const std::string fifo = ::testing::TempDir() + "nsys-fifo-" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error(fifo, "is a FIFO");
  ::unlink(fifo.c_str());
}

// A copy cut short: the schema and the rows stored before the cut are
// read (in stored order, since sorting would need the whole table), the
// damage is a warning naming the tables it cost.
TEST(NsysImport, TruncatedDatabaseKeepsRowsBeforeTheDamage) {
  const ImportResult r = run_import(db("truncated"));
  ASSERT_GE(r.fd, 0) << r.error;
  EXPECT_NE(r.warning.find("database disk image is malformed"), std::string::npos) << r.warning;
  EXPECT_NE(r.warning.find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos) << r.warning;
  EXPECT_EQ(r.warning.find('\n'), std::string::npos);
  const Recording& rec = testing::last_recording();
  EXPECT_FALSE(rec.complete);
  EXPECT_GT(rec.count(EventKind::HostCall), 100u);
}

}  // namespace
}  // namespace gpuscope::importer
