// The CLI's lines on stderr, in one style: an error is "gpuscope: error:
// WHAT (WHERE)", where WHAT names what was wrong and WHERE where (the file
// and offset, the option, the process), e.g. "gpuscope: error: t.gpuscope
// is not a gpuscope trace (no gpuscope file header at offset 0)"; a
// warning is "gpuscope: warning: WHAT". Usage errors found by the option
// parser come out the same way (main.cpp), and with input errors exit 2. What a command reports on success (where a trace is, its
// verdict) is its own output and does not go through here.
#pragma once

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace gpuscope::cli {

inline constexpr const char* kErrorPrefix = "gpuscope: error: ";
inline constexpr const char* kWarningPrefix = "gpuscope: warning: ";

template <class... Args>
void print_error(fmt::format_string<Args...> what, Args&&... args) {
  fmt::print(stderr, "{}{}\n", kErrorPrefix, fmt::format(what, std::forward<Args>(args)...));
}

template <class... Args>
void print_warning(fmt::format_string<Args...> what, Args&&... args) {
  fmt::print(stderr, "{}{}\n", kWarningPrefix, fmt::format(what, std::forward<Args>(args)...));
}

}  // namespace gpuscope::cli
