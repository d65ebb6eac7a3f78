#include "viewer_limits.h"

#include <fmt/format.h>

namespace gpuscope::exporter {
namespace {

// Past these sizes a viewer fails to open the file (docs/export.md, Limits):
// chrome://tracing reads the JSON into one string (~256 MB at most);
// ui.perfetto.dev's in-browser engine has about 2 GB of memory, and a
// trace takes 2-4 times its file size there (more for JSON).
constexpr uint64_t kChromeTracingJsonBytes = uint64_t{256} << 20;
constexpr uint64_t kPerfettoUiBytes = uint64_t{512} << 20;
// JSON's alternative: the same timeline as Perfetto's protobuf (docs/performance.md).
constexpr const char* kSmallerFormat = "export --format perfetto (about 40 % of the size)";
constexpr uint64_t kSpreadsheetRows = 1'048'576;  // Excel's and LibreOffice's sheet

}  // namespace

std::string too_large_for_viewer(const std::string& format, uint64_t bytes, uint64_t rows) {
  const std::string size = fmt::format("{:.0f} MB", static_cast<double>(bytes) / (1 << 20));
  if (format == "csv")
    return rows > kSpreadsheetRows ? fmt::format("{} rows: more than a spreadsheet holds ({}); load it with pandas, "
                                                 "DuckDB or sqlite3 instead", rows, kSpreadsheetRows)
                                   : "";
  const std::string smaller = format == "chrome" ? std::string(kSmallerFormat) + ", " : "";
  if (bytes > kPerfettoUiBytes)
    return fmt::format("{}: more than ui.perfetto.dev opens in the browser (~{} MB); {}open it through a local "
                       "trace_processor --httpd, or capture less (gpuscope run --duration or --capture-range)",
                       size, kPerfettoUiBytes >> 20, smaller);
  if (format == "chrome" && bytes > kChromeTracingJsonBytes)
    return fmt::format("{}: more than chrome://tracing loads (~{} MB); open it in ui.perfetto.dev, or {}", size,
                       kChromeTracingJsonBytes >> 20, kSmallerFormat);
  return "";
}

}  // namespace gpuscope::exporter
