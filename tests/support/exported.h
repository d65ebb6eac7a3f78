// A trace's bytes exported in memory (Chrome trace JSON or CSV), for
// exporter tests.
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

inline Exported export_bytes(const std::vector<uint8_t>& bytes, bool csv = false) {
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), "trace", &error)) << error;
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  Exported e;
  {
    exporter::Output out(f);
    e.result = csv ? exporter::write_csv(r, out) : exporter::write_chrome_trace(r, out);
  }
  std::fclose(f);
  e.text.assign(data, size);
  std::free(data);
  return e;
}

}  // namespace gpuscope::test
