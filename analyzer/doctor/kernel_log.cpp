#include "kernel_log.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>

namespace gpuscope::doctor {
namespace {

// Meanings from NVIDIA's Xid documentation (docs.nvidia.com/deploy/xid-errors/).
// A code fails when the GPU itself needs a reset, a reboot or service before
// it is trusted again; it warns when the usual cause is the application, or
// the driver already handled the event (docs/doctor.md, kernel_log).
constexpr XidMeaning kXidMeanings[] = {
    {13, "Graphics Engine Exception (usually the application: an out-of-range access or an illegal instruction)",
     false, "check the application that ran at that time (compute-sanitizer); if it recurs with other programs, "
            "run the GPU's diagnostics (dcgmi diag)"},
    {31, "GPU memory page fault (usually the application: an illegal address)", false,
     "check the application that ran at that time (compute-sanitizer)"},
    {43, "GPU stopped processing (the driver reset a channel, usually after the application's own fault)", false,
     "check the application that ran at that time"},
    {45, "Preemptive cleanup, due to previous errors (the driver ended a context after another error, or a process "
         "was killed)",
     false, "look at the Xid logged before this one"},
    {48, "Double Bit ECC Error (an uncorrectable memory error)", true,
     "drain the node and reset the GPU (nvidia-smi -r); if it recurs, have the GPU serviced"},
    {61, "Internal micro-controller breakpoint/warning", false,
     "watch for Xid 62 after it; update the driver if it recurs"},
    {62, "Internal micro-controller halt", true, "drain the node and reset the GPU (nvidia-smi -r) or reboot"},
    {63, "ECC page retirement or row remapping recording event", false,
     "reset the GPU when convenient so that the remap takes effect (row_remapping check)"},
    {64, "ECC page retirement or row remapper recording failure", true,
     "drain the node, reset the GPU; if it recurs, have the GPU serviced"},
    {74, "NVLink error", true, "drain the node, reset the GPUs on the link; if it recurs, have the link serviced"},
    {79, "GPU has fallen off the bus", true,
     "drain the node and reboot; check the GPU's seating, riser and power cabling, and replace the GPU if it "
     "happens again"},
    {92, "High single-bit ECC error rate", false, "watch the ECC counters (ecc check); have the GPU serviced if the "
                                                  "rate stays high"},
    {94, "Contained ECC error (the affected application was stopped; a row remap is pending until the GPU resets)",
     true, "reset the GPU (nvidia-smi -r) at the first chance so that the row is remapped"},
    {95, "Uncontained ECC error (every application on the GPU is affected)", true,
     "drain the node and reset the GPU (nvidia-smi -r); if it recurs, have the GPU serviced"},
    {119, "GSP RPC timeout (the GPU System Processor stopped answering the driver)", true,
     "drain the node and reset the GPU or reboot; update the driver if it recurs"},
    {120, "GSP error", true, "drain the node and reset the GPU or reboot; update the driver if it recurs"},
};

// NVRM messages that mean the driver could not use a GPU, Xid or not.
constexpr const char* kNvrmFailures[] = {
    "fallen off the bus", "RmInitAdapter failed", "failed to initialize", "GPU is lost",
};

constexpr std::string_view kXidMarker = "NVRM: Xid (";
constexpr std::string_view kAerMarker = "PCIe Bus Error: severity=";

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// "[SECONDS] " from a /dev/kmsg record's microseconds.
std::string kmsg_time(std::string_view usec) {
  unsigned long long us = 0;
  for (char c : usec) us = us * 10 + static_cast<unsigned long long>(c - '0');
  char buf[48];
  std::snprintf(buf, sizeof buf, "[%llu.%06llu] ", us / 1000000, us % 1000000);
  return buf;
}

// A /dev/kmsg record header "PRIORITY,SEQ,USEC,FLAGS;" replaced by its time.
std::string without_kmsg_header(std::string_view line) {
  const size_t semi = line.find(';');
  if (semi == std::string_view::npos || semi > 64) return std::string(line);
  std::string_view fields[3];
  size_t start = 0;
  for (std::string_view& field : fields) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos || comma > semi) return std::string(line);
    field = line.substr(start, comma - start);
    start = comma + 1;
  }
  for (const std::string_view& field : fields)
    if (field.empty() || field.size() > 20 || !std::all_of(field.begin(), field.end(), ::isdigit))
      return std::string(line);
  return kmsg_time(fields[2]) + std::string(line.substr(semi + 1));
}

// The Xid code after "NVRM: Xid (PCI:...): ", or -1 when the line is cut
// before it or holds no number there.
int xid_code(std::string_view line, size_t marker) {
  const size_t close = line.find("): ", marker);
  if (close == std::string_view::npos) return -1;
  int code = 0;
  size_t i = close + 3, digits = 0;
  for (; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && digits < 6; ++i, ++digits)
    code = code * 10 + (line[i] - '0');
  return digits == 0 || digits == 6 ? -1 : code;
}

// False when the line is cut before its code: then it counts as a plain NVRM message.
bool scan_xid(KernelLogScan& scan, std::string_view line, size_t marker) {
  const int code = xid_code(line, marker);
  if (code < 0) return false;
  XidCode& xid = scan.xids[code];
  xid.lines.add(printable_log_line(line));
  const size_t open = marker + kXidMarker.size();
  const std::string slot = pci_slot(line.substr(open, line.find(')', open) - open));
  ++xid.bus_ids[slot.empty() ? "unknown bus id" : slot];
  return true;
}

void scan_aer(KernelLogScan& scan, std::string_view line, size_t marker) {
  const std::string_view severity = line.substr(marker + kAerMarker.size());
  if (severity.compare(0, 9, "Corrected") == 0) scan.aer_corrected.add(printable_log_line(line));
  else if (severity.compare(0, 11, "Uncorrected") == 0) scan.aer_uncorrected.add(printable_log_line(line));
}

void scan_nvrm(KernelLogScan& scan, std::string_view line) {
  const bool failure = std::any_of(std::begin(kNvrmFailures), std::end(kNvrmFailures),
                                   [&](const char* text) { return line.find(text) != std::string_view::npos; });
  (failure ? scan.nvrm_failures : scan.nvrm_other).add(printable_log_line(line));
}

}  // namespace

const XidMeaning* xid_meaning(int code) {
  for (const XidMeaning& m : kXidMeanings)
    if (m.code == code) return &m;
  return nullptr;
}

void LogLines::add(std::string line) {
  ++count;
  newest.push_back(std::move(line));
  if (newest.size() > kKernelLogExamples) newest.pop_front();
}

std::string printable_log_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const std::string message = without_kmsg_header(line.substr(0, 4 * kKernelLogLineChars));
  std::string out;
  for (unsigned char c : message) {
    if (out.size() >= kKernelLogLineChars) {
      out += " [cut]";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string pci_slot(std::string_view address) {
  if (address.compare(0, 4, "PCI:") == 0) address.remove_prefix(4);
  // DOMAIN:BUS:DEVICE[.FUNCTION], the domain 4 or 8 hex digits.
  const size_t first = address.find(':');
  if (first == std::string_view::npos || (first != 4 && first != 8) || address.size() < first + 6) return "";
  const std::string_view domain = address.substr(0, first), bus = address.substr(first + 1, 2),
                         device = address.substr(first + 4, 2);
  if (address[first + 3] != ':' || !std::all_of(domain.begin(), domain.end(), is_hex) ||
      !std::all_of(bus.begin(), bus.end(), is_hex) || !std::all_of(device.begin(), device.end(), is_hex))
    return "";
  std::string slot = std::string(domain.substr(domain.size() - 4)) + ":" + std::string(bus) + ":" + std::string(device);
  std::transform(slot.begin(), slot.end(), slot.begin(), [](unsigned char c) { return std::tolower(c); });
  return slot;
}

void KernelLogScanner::add_line(std::string_view line) {
  ++scan_.lines;
  if (const size_t xid = line.find(kXidMarker); xid != std::string_view::npos && scan_xid(scan_, line, xid)) return;
  if (const size_t aer = line.find(kAerMarker); aer != std::string_view::npos) scan_aer(scan_, line, aer);
  else if (line.find("NVRM: ") != std::string_view::npos) scan_nvrm(scan_, line);
}

}  // namespace gpuscope::doctor
