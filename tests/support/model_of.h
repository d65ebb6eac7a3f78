// A hand-built trace's bytes read into the analyzer's model, for tests of
// what the analysis makes of records.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trace_model.h"
#include "trace_reader.h"

namespace gpuscope::test {

inline analyzer::TraceModel model_of(const std::vector<uint8_t>& bytes, const std::string& name = "trace") {
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), name, &error)) << error;
  return analyzer::build_model(r);
}

}  // namespace gpuscope::test
