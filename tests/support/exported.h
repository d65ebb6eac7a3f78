// A trace's bytes exported in memory (Chrome trace JSON, Perfetto protobuf
// or CSV), for exporter tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chrome_trace.h"
#include "output.h"
#include "trace_reader.h"

namespace gpuscope::test {

struct Exported {
  std::string text;
  exporter::ExportResult result;
};

using ExportFunction = exporter::ExportResult (*)(reader::TraceReader&, exporter::Output&, exporter::ExportOptions);

inline Exported export_bytes_with(const std::vector<uint8_t>& bytes, ExportFunction write,
                                  exporter::ExportOptions options = {}) {
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), "trace", &error)) << error;
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  Exported e;
  {
    exporter::Output out(f);
    e.result = write(r, out, std::move(options));
  }
  std::fclose(f);
  e.text.assign(data, size);
  std::free(data);
  return e;
}

inline Exported export_bytes(const std::vector<uint8_t>& bytes, bool csv = false) {
  return export_bytes_with(bytes, csv ? exporter::write_csv : exporter::write_chrome_trace);
}

}  // namespace gpuscope::test
