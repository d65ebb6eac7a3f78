// The doctor's kernel log scanner (analyzer/doctor/kernel_log.h): what it
// counts from Xid, NVRM and PCIe AER lines in each log format, and that
// hostile lines (cut, huge, binary) neither count wrongly nor leak
// unprintable bytes into the report.
#include <gtest/gtest.h>

#include <string>

#include "kernel_log.h"

namespace gpuscope::doctor {
namespace {

KernelLogScan scan_of(std::initializer_list<std::string> lines) {
  KernelLogScanner scanner;
  for (const std::string& line : lines) scanner.add_line(line);
  return scanner.scan();
}

TEST(KernelLog, CountsXidByCodeAndBusIdInEveryLogFormat) {
  const KernelLogScan scan = scan_of({
      "4,1021,5230112345,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=<unknown>, GPU has fallen off the bus.",
      "[ 5230.998001] NVRM: Xid (PCI:0000:3B:00): 79, pid=0, GPU has fallen off the bus.",
      "Dec 02 11:00:01 gpu-node-7 kernel: NVRM: Xid (PCI:0000:65:00): 48, pid=2231, name=python3, DBE (0x1)",
      "NVRM: Xid (0000:65:00): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No",
  });
  EXPECT_EQ(scan.lines, 4u);
  ASSERT_EQ(scan.xids.size(), 3u);
  EXPECT_EQ(scan.xids.at(79).lines.count, 2u);
  EXPECT_EQ(scan.xids.at(79).bus_ids.at("0000:3b:00"), 2u);  // case folded
  EXPECT_EQ(scan.xids.at(48).bus_ids.at("0000:65:00"), 1u);
  EXPECT_EQ(scan.xids.at(94).bus_ids.at("0000:65:00"), 1u);
  // The /dev/kmsg header becomes the record's time.
  EXPECT_EQ(scan.xids.at(79).lines.newest.front().rfind("[5230.112345] NVRM: Xid (PCI:0000:3b:00): 79", 0), 0u);
}

TEST(KernelLog, SplitsAerBySeverityAndSetsNvrmFailuresApart) {
  const KernelLogScan scan = scan_of({
      "[  88.1] pcieport 0000:00:01.1: AER: Corrected error received: 0000:3b:00.0",
      "[  88.1] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
      "[  90.2] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
      "[  90.3] pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer",
      "[  91.0] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x56:1474)",
      "[   2.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.82.07",
  });
  EXPECT_EQ(scan.aer_corrected.count, 1u);  // the "error received" line is the same event's header
  EXPECT_EQ(scan.aer_uncorrected.count, 2u);
  EXPECT_EQ(scan.nvrm_failures.count, 1u);
  EXPECT_EQ(scan.nvrm_other.count, 1u);
  EXPECT_TRUE(scan.xids.empty());
}

TEST(KernelLog, KeepsTheNewestExamplesAndCountsAll) {
  KernelLogScanner scanner;
  for (int i = 0; i < 12; ++i)
    scanner.add_line("NVRM: Xid (PCI:0000:01:00): 13, pid=" + std::to_string(i) + ", Graphics Exception");
  const XidCode& xid = scanner.scan().xids.at(13);
  EXPECT_EQ(xid.lines.count, 12u);
  ASSERT_EQ(xid.lines.newest.size(), kKernelLogExamples);
  EXPECT_NE(xid.lines.newest.back().find("pid=11,"), std::string::npos);
  EXPECT_NE(xid.lines.newest.front().find("pid=7,"), std::string::npos);
}

TEST(KernelLog, CutLinesDoNotCountAsAnXid) {
  const KernelLogScan scan = scan_of({
      "NVRM: Xid (PCI:0000:01",                    // cut inside the bus id
      "NVRM: Xid (PCI:0000:01:00): ",               // cut before the code
      "NVRM: Xid (PCI:0000:01:00): x9, junk",       // no number
      "NVRM: Xid (PCI:0000:01:00): 99999999, big",  // not a code
      "nvidia 0000:01:00.0: PCIe Bus Error: severity=",  // cut before the severity
      "4,17,",                                       // a cut kmsg header
      "",
  });
  EXPECT_TRUE(scan.xids.empty());
  EXPECT_EQ(scan.nvrm_other.count, 4u);  // still NVRM messages, shown unjudged
  EXPECT_EQ(scan.aer_corrected.count + scan.aer_uncorrected.count, 0u);
  EXPECT_EQ(scan.lines, 7u);
}

TEST(KernelLog, HugeLinesAreCutInTheReport) {
  const std::string huge = "NVRM: Xid (PCI:0000:01:00): 31, pid=1, " + std::string(1 << 20, 'A');
  const KernelLogScan scan = scan_of({huge});
  ASSERT_EQ(scan.xids.count(31), 1u);
  const std::string& kept = scan.xids.at(31).lines.newest.front();
  EXPECT_LE(kept.size(), kKernelLogLineChars + 10);
  EXPECT_EQ(kept.substr(kept.size() - 5), "[cut]");
}

TEST(KernelLog, BinaryBytesAreEscaped) {
  const char raw[] = "NVRM: Xid (PCI:0000:01:00): 43, \x01\xff\x00tail";
  const std::string binary(raw, sizeof raw - 1);
  const KernelLogScan scan = scan_of({binary, std::string("\0\0\0\xfe", 4)});
  ASSERT_EQ(scan.xids.count(43), 1u);
  const std::string& kept = scan.xids.at(43).lines.newest.front();
  EXPECT_NE(kept.find("\\x01\\xff\\x00tail"), std::string::npos);
  for (unsigned char c : kept) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
  EXPECT_EQ(scan.lines, 2u);
}

TEST(KernelLog, PciSlotNormalizesNvmlAndKernelAddresses) {
  EXPECT_EQ(pci_slot("00000000:3B:00.0"), "0000:3b:00");  // NVML
  EXPECT_EQ(pci_slot("0000:3b:00.0"), "0000:3b:00");      // the kernel
  EXPECT_EQ(pci_slot("PCI:0000:3b:00"), "0000:3b:00");    // an Xid line
  EXPECT_EQ(pci_slot("PCI:0000:3b"), "");
  EXPECT_EQ(pci_slot("zz:3b:00"), "");
  EXPECT_EQ(pci_slot(""), "");
}

TEST(KernelLog, NamesTheCommonXidCodesAndGradesThem) {
  for (int code : {48, 62, 64, 74, 79, 94, 95, 119, 120}) {
    ASSERT_NE(xid_meaning(code), nullptr) << code;
    EXPECT_TRUE(xid_meaning(code)->fails) << code;
  }
  for (int code : {13, 31, 43, 45, 61, 63, 92}) {
    ASSERT_NE(xid_meaning(code), nullptr) << code;
    EXPECT_FALSE(xid_meaning(code)->fails) << code;
  }
  EXPECT_NE(std::string(xid_meaning(79)->meaning).find("fallen off the bus"), std::string::npos);
  EXPECT_EQ(xid_meaning(1), nullptr);
}

}  // namespace
}  // namespace gpuscope::doctor
