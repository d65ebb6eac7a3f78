// Where TraceEventStream cuts the traceEvents array: the same elements
// whether each one ends inside the bytes read so far (the 64-byte block
// scan) or runs past them (the byte-by-byte scan), with brackets, quotes and
// backslashes inside strings and bracket positions on every offset of a
// 64-byte block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "json_stream.h"

namespace gpuscope::importer {
namespace {

// The document in pieces of at most `piece` bytes per read.
class MemoryStream final : public ByteStream {
 public:
  MemoryStream(std::string text, size_t piece) : text_(std::move(text)), piece_(piece) {}
  long read(char* out, size_t n, std::string*) override {
    const size_t take = std::min({n, piece_, text_.size() - at_});
    std::memcpy(out, text_.data() + at_, take);
    at_ += take;
    return static_cast<long>(take);
  }

 private:
  std::string text_;
  size_t piece_, at_ = 0;
};

std::vector<std::string> elements_of(const std::string& document, size_t piece, std::string* error) {
  MemoryStream in(document, piece);
  std::vector<std::string> out;
  TraceEventStream stream(
      in,
      [&](std::string_view element, uint64_t) {
        out.emplace_back(element);
        return true;
      },
      [](std::string_view, std::string_view, uint64_t) {});
  if (!stream.run(error)) out.emplace_back("<stopped>");
  return out;
}

std::vector<std::string> tricky_elements() {
  std::vector<std::string> e = {
      R"({"name": "a]b}c", "args": {"grid": [1, 2, 3]}})",
      R"({"name": "quote \" and ] inside", "x": [{"y": "}"}]})",
      R"({"name": "ends in a backslash \\", "z": {}})",
      R"({"name": "\\\" still a string }", "v": ["[", "{"]})",
      R"([1, "two", {"three": [3]}])",
      R"({})",
  };
  // A closing bracket and a quote at every offset of a 64-byte block.
  for (size_t pad = 0; pad < 130; ++pad)
    e.push_back("{\"k\": \"" + std::string(pad, 'x') + "]\", \"a\": [" + std::string(pad % 7, ' ') + "{}]}");
  return e;
}

std::string document_of(const std::vector<std::string>& elements) {
  std::string doc = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (size_t i = 0; i < elements.size(); ++i) doc += (i > 0 ? ",\n  " : "  ") + elements[i];
  return doc + "\n], \"traceName\": \"t\"}\n";
}

TEST(JsonStream, ElementsAreCutTheSameWhateverTheReadSizes) {
  const auto elements = tricky_elements();
  const std::string doc = document_of(elements);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{4096}, doc.size()}) {
    std::string error;
    EXPECT_EQ(elements_of(doc, piece, &error), elements) << "reads of " << piece << " bytes";
    EXPECT_EQ(error, "");
  }
}

TEST(JsonStream, AnUnterminatedStringStopsWithTheElementsBeforeIt) {
  const auto elements = tricky_elements();
  const std::string doc = document_of(elements);
  const std::string cut = doc.substr(0, doc.find("quote \\\"") + 9);  // inside the second element's string
  for (size_t piece : {size_t{5}, cut.size()}) {
    std::string error;
    const auto got = elements_of(cut, piece, &error);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], elements[0]);
    EXPECT_EQ(got[1], "<stopped>");
    EXPECT_NE(error.find("unterminated"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace gpuscope::importer
