// The kernel_log check: Xid errors, NVRM messages and PCIe AER errors since
// boot, read from /dev/kmsg, else from the systemd journal (or a saved log
// given with --kernel-log) and judged by kernel_log.h's scanner.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checks.h"
#include "command_output.h"
#include "kernel_log.h"

namespace gpuscope::doctor {
namespace {

// Bounds on what one run reads, so a log the kernel keeps writing to, or a
// huge file, cannot hold the command up.
constexpr size_t kMaxRecords = 1000000;
constexpr size_t kMaxFileBytes = size_t{256} << 20;
// How long journalctl may take over this boot's kernel messages.
constexpr int kJournalTimeoutMs = 10000;
// How many findings the one-line summary names; -v lists them all.
constexpr size_t kSummaryFindings = 3;

struct KernelLog {
  std::string source;  // "/dev/kmsg", "journalctl -k -b" or the file
  std::string error;   // why it could not be read; empty when it was
  std::string note;    // what the reading could not see (records lost before it)
  KernelLogScan scan;
};

std::string open_error(const std::string& path, int err) {
  if (err == EPERM || err == EACCES)
    return fmt::format("{}: {}: reading the kernel log needs CAP_SYSLOG (root) or kernel.dmesg_restrict=0", path,
                       std::strerror(err));
  if (err == ENOENT)
    return fmt::format("{} does not exist here (a container without it: run doctor on the host, or pass the "
                       "host's log with --kernel-log)",
                       path);
  return fmt::format("{}: {}", path, std::strerror(err));
}

// The record's sequence number (its header "PRIORITY,SEQ,USEC,FLAGS;").
unsigned long long record_sequence(const char* record) {
  const char* comma = std::strchr(record, ',');
  return comma != nullptr ? std::strtoull(comma + 1, nullptr, 10) : 0;
}

// /dev/kmsg without blocking: one record per read(), from the oldest the
// kernel still holds, until EAGAIN says there is no more.
KernelLog read_kmsg(const std::string& path) {
  KernelLog log{path, "", "", {}};
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    log.error = open_error(path, errno);
    return log;
  }
  KernelLogScanner scanner;
  char record[8192 + 1];  // the kernel formats a record into at most 8 KiB (CONSOLE_EXT_LOG_MAX)
  size_t overwritten = 0, records = 0;
  for (; records < kMaxRecords; ++records) {
    const ssize_t n = read(fd, record, sizeof record - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {  // the kernel overwrote records while this one read
      ++overwritten;
      continue;
    }
    if (n <= 0) break;  // EAGAIN: read to the end
    record[n] = '\0';
    if (records == 0 && record_sequence(record) > 0)
      log.note = fmt::format("the kernel's log buffer starts at record {}: the earlier messages since boot were "
                             "overwritten (a larger log_buf_len keeps them)",
                             record_sequence(record));
    // The message is the record's first line; the lines after it are its key=value dictionary.
    const char* end = static_cast<const char*>(std::memchr(record, '\n', static_cast<size_t>(n)));
    scanner.add_line(std::string_view(record, end != nullptr ? static_cast<size_t>(end - record) : n));
  }
  const int read_errno = errno;
  close(fd);
  if (records == 0 && read_errno != EAGAIN) log.error = open_error(path, read_errno);
  if (overwritten > 0) log.note += fmt::format("{}{} records were overwritten while reading", log.note.empty() ? "" : "; ", overwritten);
  log.scan = scanner.scan();
  return log;
}

KernelLog read_file(const std::string& path) {
  KernelLog log{path, "", "", {}};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    log.error = fmt::format("{}: {}", path, std::strerror(errno));
    return log;
  }
  KernelLogScanner scanner;
  size_t bytes = 0;
  for (std::string line; bytes < kMaxFileBytes && std::getline(in, line);) {
    bytes += line.size() + 1;
    scanner.add_line(line);
  }
  if (bytes >= kMaxFileBytes) log.note = fmt::format("read the first {} MiB only", kMaxFileBytes >> 20);
  log.scan = scanner.scan();
  return log;
}

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return printable_log_line(end == std::string::npos ? text : text.substr(0, end));
}

// This boot's kernel messages from the systemd journal, where /dev/kmsg
// cannot be read: members of the systemd-journal or adm groups may read the
// journal without CAP_SYSLOG, and a container may have the host's journal
// mounted but no /dev/kmsg.
KernelLog read_journal(const std::string& journalctl) {
  KernelLog log{"journalctl -k -b", "", "", {}};
  const CommandOutput r =
      run_command_output({journalctl, "-k", "-b", "--no-pager", "-q", "-o", "short"}, kMaxFileBytes, kJournalTimeoutMs);
  if (!r.started) {
    log.error = r.error;
    return log;
  }
  KernelLogScanner scanner;
  for (size_t start = 0; start < r.out.size();) {
    size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    scanner.add_line(std::string_view(r.out).substr(start, end - start));
    start = end + 1;
  }
  log.scan = scanner.scan();
  const std::string said = r.err.empty() ? "" : ": " + first_line(r.err);
  if (r.truncated)
    log.note = fmt::format("journalctl was stopped after {} MiB or {} s: its first part only", kMaxFileBytes >> 20,
                           kJournalTimeoutMs / 1000);
  else if (r.exit_status != 0)
    log.error = fmt::format("{} -k exited with status {}{}", journalctl, r.exit_status, said);
  if (log.error.empty() && log.scan.lines == 0)
    log.error = fmt::format("{} -k showed no kernel message (journal access needs the systemd-journal or adm group, "
                            "or root){}",
                            journalctl, said);
  return log;
}

// /dev/kmsg, else the journal; when neither can be read, both reasons.
KernelLog read_kernel_log(const DoctorOptions& options) {
  KernelLog kmsg = read_kmsg(options.kmsg_path);
  if (kmsg.error.empty()) return kmsg;
  KernelLog journal = read_journal(options.journalctl);
  if (!journal.error.empty()) {
    kmsg.error += "; and the journal: " + journal.error;
    return kmsg;
  }
  journal.note = "instead of " + kmsg.error + (journal.note.empty() ? "" : "; " + journal.note);
  return journal;
}

// "GPU 1" for the bus id of a GPU NVML sees; else what is known.
std::string gpu_at(const NodeProbe& probe, const std::string& slot) {
  for (const Gpu& gpu : probe.gpus)
    if (!slot.empty() && pci_slot(gpu.bus_id) == slot) return fmt::format("GPU {}", gpu.index);
  return probe.nvml_ok ? "not a GPU NVML can open" : "GPU index unknown without NVML";
}

void add_lines(Finding& f, const LogLines& lines) {
  for (const std::string& line : lines.newest) f.evidence.push_back("  " + line);
}

Finding judge_xid(const NodeProbe& probe, int code, const XidCode& xid) {
  const XidMeaning* meaning = xid_meaning(code);
  std::string where;
  for (const auto& [slot, count] : xid.bus_ids)
    where += fmt::format("{}{} ({}, {}x)", where.empty() ? "" : ", ", slot, gpu_at(probe, slot), count);
  const std::string what = fmt::format("Xid {} on {}: {}", code, where,
                                       meaning != nullptr ? meaning->meaning
                                                          : "a code gpuscope does not name (see NVIDIA's Xid catalog)");
  const std::string fix = meaning != nullptr ? meaning->action : "look the code up in NVIDIA's Xid catalog "
                                                                 "(docs.nvidia.com/deploy/xid-errors)";
  Finding f = meaning != nullptr && meaning->fails ? failed(what, fix) : warned(what, fix);
  f.evidence.push_back(fmt::format("{} line{} of Xid {}, the newest:", xid.lines.count,
                                   xid.lines.count == 1 ? "" : "s", code));
  add_lines(f, xid.lines);
  return f;
}

Finding judge_aer(const LogLines& lines, bool uncorrected) {
  if (lines.count == 0) return passed("");
  const std::string what = fmt::format("{} {} PCIe AER error{}", lines.count, uncorrected ? "uncorrected" : "corrected",
                                       lines.count == 1 ? "" : "s");
  Finding f = uncorrected
                  ? failed(what, "an uncorrected PCIe error can lose data or the device: reseat the GPU and its riser, "
                                 "check the slot (lspci -vvv for the device's AER status) and drain the node until it "
                                 "is clean")
                  : warned(what, "the link retried these, but a steady stream means a marginal link: reseat the GPU "
                                 "and riser, and watch the replay counter (pcie_link check)");
  f.evidence.push_back(what + ", the newest:");
  add_lines(f, lines);
  return f;
}

std::vector<Finding> judge_each(const NodeProbe& probe, const KernelLogScan& scan) {
  std::vector<Finding> found;
  for (const auto& [code, xid] : scan.xids) found.push_back(judge_xid(probe, code, xid));
  if (scan.nvrm_failures.count > 0) {
    found.push_back(failed(fmt::format("{} NVRM message{} that the driver could not use a GPU",
                                       scan.nvrm_failures.count, scan.nvrm_failures.count == 1 ? "" : "s"),
                           "drain the node; check the GPU's seating and power, then reboot"));
    found.back().evidence.push_back(found.back().summary + ", the newest:");
    add_lines(found.back(), scan.nvrm_failures);
  }
  if (scan.aer_uncorrected.count > 0) found.push_back(judge_aer(scan.aer_uncorrected, true));
  if (scan.aer_corrected.count > 0) found.push_back(judge_aer(scan.aer_corrected, false));
  std::stable_sort(found.begin(), found.end(), [](const Finding& a, const Finding& b) { return a.state < b.state; });
  return found;
}

// The worst of everything the log holds, the most severe first; the summary
// names the first few findings.
Finding judge(const NodeProbe& probe, const KernelLog& log) {
  const KernelLogScan& scan = log.scan;
  const std::vector<Finding> found = judge_each(probe, scan);
  Finding f = passed(fmt::format("no Xid, NVRM failure or PCIe AER error in {} kernel log lines ({})", scan.lines,
                                 log.source));
  if (!found.empty()) {
    f = found.front();
    std::string summary = f.summary;
    for (size_t i = 1; i < found.size(); ++i) {
      f = worse(std::move(f), found[i]);
      if (i < kSummaryFindings) summary += "; " + found[i].summary;
    }
    if (found.size() > kSummaryFindings) summary += fmt::format("; and {} more (-v)", found.size() - kSummaryFindings);
    f.summary = summary;
  }
  f.evidence.push_back(fmt::format("read {} lines from {}{}", scan.lines, log.source,
                                   log.note.empty() ? "" : " (" + log.note + ")"));
  f.evidence.push_back(fmt::format("{} other NVRM message{} (reported, not judged)", scan.nvrm_other.count,
                                   scan.nvrm_other.count == 1 ? "" : "s"));
  add_lines(f, scan.nvrm_other);
  return f;
}

}  // namespace

Finding check_kernel_log(const NodeProbe& probe) {
  const std::string& file = probe.options.kernel_log_file;
  const KernelLog log = file.empty() ? read_kernel_log(probe.options) : read_file(file);
  if (!log.error.empty()) return not_checked(log.error);
  return judge(probe, log);
}

}  // namespace gpuscope::doctor
