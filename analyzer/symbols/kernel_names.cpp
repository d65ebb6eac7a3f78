#include "kernel_names.h"

#include "symbolizer.h"

namespace gpuscope::analyzer {
namespace {

// The index of the '(' that opens the trailing parameter list, or npos.
size_t parameters_start(const std::string& s) {
  if (s.empty() || s.back() != ')') return std::string::npos;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    else if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string::npos;
}

void erase_all(std::string& s, const std::string& what) {
  for (size_t at; (at = s.find(what)) != std::string::npos;) s.erase(at, what.size());
}

}  // namespace

std::string short_kernel_name(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  std::string s = demangle(name.c_str());
  if (s == name) return name;  // not demangled: keep what CUPTI said
  if (const size_t open = parameters_start(s); open != std::string::npos && open > 0) s.erase(open);
  if (s.starts_with("void ")) s.erase(0, 5);
  erase_all(s, "(anonymous namespace)::");
  return s.empty() ? name : s;
}

}  // namespace gpuscope::analyzer
