#include "host_samples.h"

#include <algorithm>
#include <string_view>

namespace gpuscope::analyzer {
namespace {

bool has_any(std::string_view name, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return name.find(p) != name.npos; });
}

}  // namespace

const char* host_cost_name(HostCost cost) {
  switch (cost) {
    case HostCost::Program: return "program code";
    case HostCost::Memset: return "memset";
    case HostCost::Memcpy: return "memcpy/memmove";
    case HostCost::Allocator: return "the allocator";
    case HostCost::Unknown: return "unsymbolized code";
  }
  return "?";
}

HostCost classify_host_function(const std::string& function) {
  if (function.empty()) return HostCost::Unknown;
  // Only the name before the argument list: "f(std::vector<char>&)" is no allocator.
  const std::string_view name = std::string_view(function).substr(0, function.find('('));
  if (has_any(name, {"memset", "bzero"})) return HostCost::Memset;
  if (has_any(name, {"memcpy", "memmove", "mempcpy"})) return HostCost::Memcpy;
  if (has_any(name, {"malloc", "calloc", "realloc", "_int_free", "cfree", "operator new", "operator delete",
                     "tcache", "sysmalloc", "__libc_free", "mmap", "munmap"}) ||
      name == "free")
    return HostCost::Allocator;
  return HostCost::Program;
}

void HostSampleStats::add(const fb::HostSample& s) {
  ++samples;
  ++by_stack[s.stack_id()];
  ++by_thread[s.tid()];
}

void HostSampleStats::add_process_cpu(const fb::CpuSample& s) {
  if (s.tid() != 0) return;
  process_cpu_first = std::min(process_cpu_first, s.cpu_ns());
  process_cpu_last = std::max(process_cpu_last, s.cpu_ns());
  process_system_first = std::min(process_system_first, s.system_ns());
  process_system_last = std::max(process_system_last, s.system_ns());
}

double HostSampleStats::system_share() const {
  if (process_cpu_last <= process_cpu_first || process_system_first == UINT64_MAX) return -1;
  const uint64_t cpu = process_cpu_last - process_cpu_first;
  const uint64_t sys = process_system_last >= process_system_first ? process_system_last - process_system_first : 0;
  return std::min(1.0, static_cast<double>(sys) / static_cast<double>(cpu));
}

}  // namespace gpuscope::analyzer
