// How large an export its viewers open (docs/export.md, Limits), so that
// `gpuscope export` warns when it wrote a file they will not load.
#pragma once

#include <cstdint>
#include <string>

namespace gpuscope::exporter {

// What a file of `format` ("perfetto", "chrome", "csv") of `bytes` and
// `rows` events is too large for, and what to do instead ("600 MB: more
// than ui.perfetto.dev opens ..."); "" when its viewers open it.
std::string too_large_for_viewer(const std::string& format, uint64_t bytes, uint64_t rows);

}  // namespace gpuscope::exporter
