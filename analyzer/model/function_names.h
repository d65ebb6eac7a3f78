// Matching CUDA API function names by prefix: the model's classifiers
// (call kinds, implicit synchronization causes, context-free queries) all
// ask "is this one of these families of calls?".
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace gpuscope::analyzer {

inline bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

}  // namespace gpuscope::analyzer
