// Reads the kernel log for what the GPU driver and the PCIe layer say about
// the GPUs: Xid errors (NVIDIA's numbered driver events), other NVRM
// messages, and PCIe AER errors. Pure text scanning, so it runs the same on
// /dev/kmsg records, `dmesg` output or `journalctl -k` lines; every line is
// treated as hostile (truncated, huge, binary) and only what parses counts.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <string_view>

namespace gpuscope::doctor {

// How many example lines each kind keeps: the newest, the rest are counted.
inline constexpr size_t kKernelLogExamples = 5;
// Longest line kept as an example; longer ones are cut and marked.
inline constexpr size_t kKernelLogLineChars = 300;

// Lines of one kind: how many, and the newest kKernelLogExamples of them.
struct LogLines {
  size_t count = 0;
  std::deque<std::string> newest;
  void add(std::string line);
};

struct XidCode {
  LogLines lines;
  std::map<std::string, size_t> bus_ids;  // "0000:01:00" as the Xid line names it, and how often
};

struct KernelLogScan {
  size_t lines = 0;
  std::map<int, XidCode> xids;      // by Xid code
  LogLines aer_uncorrected, aer_corrected;
  LogLines nvrm_failures;  // NVRM messages that say the GPU could not be used (kNvrmFailures)
  LogLines nvrm_other;     // every other NVRM message: reported, not judged
};

// One Xid code as NVIDIA's Xid catalog describes it.
struct XidMeaning {
  int code;
  const char* meaning;
  bool fails;         // else it warns
  const char* action;
};
// The catalog's entry for `code`; nullptr for a code gpuscope does not name.
const XidMeaning* xid_meaning(int code);

// The message of one log line without its prefix: a /dev/kmsg record's
// "PRIORITY,SEQ,USEC,FLAGS;" becomes "[SECONDS] ", dmesg's "[SECONDS] " and
// journalctl's "Mon DD HH:MM:SS host kernel: " stay; bytes that are not
// printable ASCII become "\xNN", and a line over kKernelLogLineChars is cut.
std::string printable_log_line(std::string_view line);

class KernelLogScanner {
 public:
  void add_line(std::string_view line);
  const KernelLogScan& scan() const { return scan_; }

 private:
  KernelLogScan scan_;
};

// "0000:01:00" of an Xid line's "(PCI:0000:01:00)", or of a PCI address
// "00000000:01:00.0" (NVML's) or "0000:01:00.0" (the kernel's): the domain
// as 4 lowercase hex digits, the bus and the device, without the function.
// Empty when `address` is not one.
std::string pci_slot(std::string_view address);

}  // namespace gpuscope::doctor
