// The Kineto importer's reading layer on its own: the streaming splitter of
// the traceEvents array (json_stream.h) whatever the read boundaries fall
// on, its one-line errors for hostile documents, the gzip stream, and the
// exact conversion of Kineto's microsecond text to nanoseconds.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "json_stream.h"
#include "kineto_fields.h"

namespace gpuscope::importer {
namespace {

// A document handed out in reads of a few bytes at a time (cycling sizes),
// so that every boundary case of the scanner (inside a string, right after
// a backslash, between a key and its colon) is met somewhere; 0 = whole
// reads, as large as the reader asks for.
class TrickleStream final : public ByteStream {
 public:
  TrickleStream(std::string text, size_t step) : text_(std::move(text)), step_(step) {}
  long read(char* out, size_t n, std::string*) override {
    size_t take = std::min(n, text_.size() - at_);
    if (step_ > 0) take = std::min(take, 1 + (reads_++ * 7) % step_);
    std::copy_n(text_.data() + at_, take, out);
    at_ += take;
    return static_cast<long>(take);
  }

 private:
  std::string text_;
  size_t step_, at_ = 0, reads_ = 0;
};

struct Member {
  std::string key, value;
  uint64_t offset;
  bool operator==(const Member&) const = default;
};

struct Element {
  std::string text;
  uint64_t offset;
  bool operator==(const Element&) const = default;
};

struct Streamed {
  std::vector<Element> events;
  std::vector<Member> members;
  bool ok = false, saw_trace_events = false;
  std::string error;
};

Streamed stream_through(ByteStream& in) {
  Streamed s;
  TraceEventStream stream(
      in,
      [&](std::string_view e, uint64_t offset) {
        // simdjson reads up to kElementPadding bytes past the element.
        volatile char last = e.data()[e.size() + kElementPadding - 1];
        (void)last;
        s.events.push_back({std::string(e), offset});
        return true;
      },
      [&](std::string_view k, std::string_view v, uint64_t offset) { s.members.push_back({std::string(k), std::string(v), offset}); });
  s.ok = stream.run(&s.error);
  s.saw_trace_events = stream.saw_trace_events();
  return s;
}

Streamed stream_text(const std::string& doc, size_t step = 0) {
  TrickleStream in(doc, step);
  return stream_through(in);
}

// Elements laid out in a document, with the offsets they must be handed out at.
struct Layout {
  std::string doc;
  std::vector<Element> events;
  std::vector<Member> members;
};

Layout object_document(const std::vector<std::string>& elements) {
  Layout l;
  l.doc = "{\"schemaVersion\" :1,\r\n \"deviceProperties\": [{\"id\": 0, \"name\": \"x]}\"}],\n\t\"traceEvents\"\t:\n[";
  l.members.push_back({"schemaVersion", "1", l.doc.find("1,")});
  l.members.push_back({"deviceProperties", "[{\"id\": 0, \"name\": \"x]}\"}]", l.doc.find("[{")});
  for (size_t i = 0; i < elements.size(); ++i) {
    l.doc += i == 0 ? "\n  " : " ,\r\n\t";
    l.events.push_back({elements[i], l.doc.size()});
    l.doc += elements[i];
  }
  l.doc += "\n],\"traceName\":\"a \\\"quoted\\\" {name}\", \"baseTimeNanoseconds\" : 1700000000000000000 ,\n";
  l.members.push_back({"traceName", "\"a \\\"quoted\\\" {name}\"", l.doc.find("\"a \\")});
  l.members.push_back({"baseTimeNanoseconds", "1700000000000000000", l.doc.find("17000000000000000")});
  l.doc += "\"distributedInfo\": {\"rank\": 1, \"note\": \"}\"}}\n";
  l.members.push_back({"distributedInfo", "{\"rank\": 1, \"note\": \"}\"}", l.doc.find("{\"rank\"")});
  return l;
}

const std::vector<std::string> kTrickyElements = {
    R"({"ph":"X","name":"a{b}[c]","args":{"s":"]}"}})",
    R"({"name":"quote \" inside, and \\ a backslash","x":[1,[2,{"y":"{"}]]})",
    R"({"name":"ends in a backslash \\","z":"\\\""})",
    R"({"name":"\\\\\"}\"]","n":-1.5e3,"t":true,"f":null})",
    R"({"name":"caf\u00e9 \u2192 utf-8: café → ✓"})",
    R"({})",
    R"({ "spaced" : [ ] , "tab"	:	{ } })",
};

TEST(KinetoJsonStream, HandsOutElementsAndMembersWhateverTheReadBoundaries) {
  const Layout l = object_document(kTrickyElements);
  for (size_t step : {0, 1, 2, 3, 5, 8, 13, 64}) {
    SCOPED_TRACE("read step " + std::to_string(step));
    const Streamed s = stream_text(l.doc, step);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_TRUE(s.saw_trace_events);
    EXPECT_EQ(s.events, l.events);
    EXPECT_EQ(s.members, l.members);
  }
}

TEST(KinetoJsonStream, TopLevelArrayDocument) {
  const std::string doc = " \n[" + kTrickyElements[0] + ",\n" + kTrickyElements[1] + "]\n";
  for (size_t step : {0, 1, 4}) {
    const Streamed s = stream_text(doc, step);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_TRUE(s.saw_trace_events);
    EXPECT_TRUE(s.members.empty());
    ASSERT_EQ(s.events.size(), 2u);
    EXPECT_EQ(s.events[0], (Element{kTrickyElements[0], 3}));
    EXPECT_EQ(s.events[1], (Element{kTrickyElements[1], 3 + kTrickyElements[0].size() + 2}));
  }
}

TEST(KinetoJsonStream, WhitespaceOnlyBetweenTokensAndEmptyArray) {
  const Streamed s = stream_text("\t\r\n{ \"traceEvents\"\n:\r[ \t]\n,\"a\":\"b\" }\r\n");
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_TRUE(s.saw_trace_events);
  EXPECT_TRUE(s.events.empty());
  ASSERT_EQ(s.members.size(), 1u);
  EXPECT_EQ(s.members[0].value, "\"b\"");
}

// sniff_format takes a file that starts with a byte order mark as JSON;
// the stream must then read it too.
TEST(KinetoJsonStream, Utf8ByteOrderMarkIsSkipped) {
  const Streamed s = stream_text("\xEF\xBB\xBF{\"traceEvents\":[{\"a\":1}]}");
  ASSERT_TRUE(s.ok) << s.error;
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0], (Element{"{\"a\":1}", 19}));
}

// Elements around and across the 4 MiB window, and one larger than it
// (braces and escaped quotes inside its string), with whole reads.
TEST(KinetoJsonStream, ElementsAcrossAndLargerThanTheWindow) {
  std::vector<std::string> elements;
  for (int i = 0; i < 5000; ++i)
    elements.push_back("{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(900 + i % 97, 'x') + "{\\\"}\"}");
  std::string big = "{\"big\":\"";
  for (size_t i = 0; big.size() < (size_t{9} << 20); ++i) big += i % 3 == 0 ? "]}{[" : "\\\"\\\\ ";
  big += "\",\"after\":[1,2,3]}";
  elements.insert(elements.begin() + 4000, big);
  elements.push_back("{\"last\":1}");
  const Layout l = object_document(elements);
  for (size_t step : {0, 1 << 16}) {
    const Streamed s = stream_text(l.doc, step);
    ASSERT_TRUE(s.ok) << s.error;
    ASSERT_EQ(s.events.size(), l.events.size());
    for (size_t i = 0; i < l.events.size(); ++i) ASSERT_EQ(s.events[i], l.events[i]) << "element " << i;
    EXPECT_EQ(s.members, l.members);
  }
}

// Nesting is counted, never recursed into: a million levels are scanned
// as one element, and a million unclosed ones end in an error.
TEST(KinetoJsonStream, DeepNestingIsBoundedByCountingNotRecursion) {
  constexpr size_t kDepth = 1'000'000;
  const std::string deep = std::string(kDepth, '[') + std::string(kDepth, ']');
  const Streamed s = stream_text("{\"traceEvents\":[{\"a\":1}," + deep + ",{\"b\":2}]}");
  ASSERT_TRUE(s.ok) << s.error;
  ASSERT_EQ(s.events.size(), 3u);
  EXPECT_EQ(s.events[1].text.size(), 2 * kDepth);
  EXPECT_EQ(s.events[2].text, "{\"b\":2}");

  const Streamed open = stream_text("{\"traceEvents\":[{\"a\":1}," + std::string(kDepth, '{'));
  EXPECT_FALSE(open.ok);
  EXPECT_EQ(open.events.size(), 1u);
  EXPECT_NE(open.error.find("at offset 24"), std::string::npos) << open.error;
}

struct HostileCase {
  const char* name;
  std::string doc;
  size_t events_before;  // handed out before the damage
  std::string message;   // the error, offset included
};

TEST(KinetoJsonStream, HostileDocumentsGiveOneLineWithTheOffsetAndKeepWhatCameBefore) {
  const std::vector<HostileCase> cases = {
      {"truncated mid-element", "{\"traceEvents\":[{\"a\":1},{\"b\":[2,\"x\"", 1,
       "an unterminated or oversized traceEvents element at offset 24"},
      {"unterminated string", "{\"traceEvents\":[{\"a\":1}, {\"b\":\"no end \\\"}]}", 1,
       "an unterminated or oversized traceEvents element at offset 25"},
      {"unterminated key", "{\"traceEvents\":[{\"a\":1}], \"key without end", 1, "expected a member name at offset 26"},
      {"array cut short", "{\"traceEvents\":[{\"a\":1},{\"b\":2}", 2, "the traceEvents array is cut short at offset 31"},
      {"document cut short", "{\"traceEvents\":[{\"a\":1}]\n", 1, "the document is cut short at offset 25"},
      {"member without colon", "{\"traceEvents\":[{\"a\":1}],\"x\" 1}", 1, "expected ':' after \"x\" at offset 29"},
      {"not JSON", "GPUSCOPE? no, plain text", 0, "not a JSON object or array at offset 0"},
      {"empty file", "", 0, "empty document at offset 0"},
      {"only whitespace", " \n\t ", 0, "empty document at offset 4"},
      {"a number document", "42", 0, "not a JSON object or array at offset 0"},
      {"a string document", "\"traceEvents\"", 0, "not a JSON object or array at offset 0"},
      {"member name with a raw newline", "{\"trace\nEvents\" [1]}", 0, "expected ':' after \"trace?Events\" at offset 16"},
      {"long member name", "{\"" + std::string(100, 'k') + "\"}", 0,
       "expected ':' after \"" + std::string(64, 'k') + "...\" at offset 103"},
      {"unterminated member value", "{\"traceName\": [\"x\"", 0,
       "an unterminated or oversized value of \"traceName\" at offset 14"},
      {"closing bracket in the array", "{\"traceEvents\":[{\"a\":1},}", 1,
       "an unterminated or oversized traceEvents element at offset 24"},
  };
  for (const auto& c : cases) {
    for (size_t step : {0, 1, 3}) {
      SCOPED_TRACE(std::string(c.name) + ", read step " + std::to_string(step));
      const Streamed s = stream_text(c.doc, step);
      EXPECT_FALSE(s.ok);
      EXPECT_EQ(s.error, c.message);
      EXPECT_EQ(s.error.find('\n'), std::string::npos);
      EXPECT_EQ(s.events.size(), c.events_before);
    }
  }
}

TEST(KinetoJsonStream, StopsWhenTheCallerSaysSo) {
  TrickleStream in("[{\"a\":1},{\"b\":2},{\"c\":3}]", 0);
  int seen = 0;
  TraceEventStream stream(in, [&](std::string_view, uint64_t) { return ++seen < 2; }, [](auto, auto, auto) {});
  std::string error;
  EXPECT_TRUE(stream.run(&error));
  EXPECT_EQ(seen, 2);
}

// --- gzip ---------------------------------------------------------------

std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Streamed stream_gzip(const std::string& compressed) {
  auto bytes = std::make_shared<std::string>(compressed);
  auto in = gzip_stream(reader::memory_source({reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()}));
  return stream_through(*in);
}

// Enough events that the compressed stream spans several 1 MiB input reads.
std::string many_events_document(int n) {
  std::string doc = "{\"traceEvents\":[";
  for (int i = 0; i < n; ++i)
    doc += (i ? "," : "") + std::string("{\"ph\":\"X\",\"i\":") + std::to_string(i * 7919 % 100003) + "}";
  return doc + "]}";
}

TEST(KinetoGzip, ReadsAsThePlainDocument) {
  const std::string doc = many_events_document(200'000);
  const Streamed plain = stream_text(doc), zipped = stream_gzip(gzip(doc));
  ASSERT_TRUE(zipped.ok) << zipped.error;
  EXPECT_EQ(zipped.events, plain.events);
}

TEST(KinetoGzip, SeveralMembersReadAsTheirConcatenation) {
  const std::string doc = many_events_document(1000);
  const size_t cut = doc.size() / 3;
  const Streamed s = stream_gzip(gzip(doc.substr(0, cut)) + gzip(doc.substr(cut, 10)) + gzip(doc.substr(cut + 10)));
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.events, stream_text(doc).events);
}

TEST(KinetoGzip, TruncatedSaysWhereTheCompressedStreamEndsAndKeepsTheEventsBefore) {
  const std::string doc = many_events_document(200'000);
  const std::string z = gzip(doc);
  const std::string cut = z.substr(0, z.size() / 2);
  const Streamed s = stream_gzip(cut);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error, "truncated gzip data: the compressed stream ends at offset " + std::to_string(cut.size()));
  EXPECT_GT(s.events.size(), 1000u);
  EXPECT_LT(s.events.size(), 200'000u);
  // Only the trailer missing: every event was inflated, the end is still not trusted.
  const Streamed no_trailer = stream_gzip(z.substr(0, z.size() - 4));
  EXPECT_FALSE(no_trailer.ok);
  EXPECT_NE(no_trailer.error.find("truncated gzip data"), std::string::npos) << no_trailer.error;
}

TEST(KinetoGzip, CorruptDataNamesTheCompressedOffset) {
  const std::string doc = many_events_document(20'000);
  const std::string z = gzip(doc);
  const std::string prefix = "corrupt gzip data at compressed offset ";
  // The first deflate block's type made the reserved one: refused at once.
  std::string block = z;
  block[10] = static_cast<char>(0xff);
  const Streamed s = stream_gzip(block);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error, prefix + "11: invalid block type");
  // Damage in the middle inflates to garbage at first: the garbage's own
  // error or zlib's, whichever comes first, and the events before it kept.
  std::string middle = z;
  for (size_t i = z.size() / 2; i < z.size() / 2 + 64; ++i) middle[i] = static_cast<char>(0xff);
  const Streamed m = stream_gzip(middle);
  EXPECT_FALSE(m.ok);
  EXPECT_TRUE(m.error.starts_with(prefix) || m.error.find("traceEvents element at offset") != std::string::npos)
      << m.error;
  EXPECT_GT(m.events.size(), 1000u);
  // A wrong checksum in the trailer: refused once its 4 bytes are read.
  std::string crc = z;
  crc[crc.size() - 8] ^= 0x55;
  const Streamed t = stream_gzip(crc);
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.error, prefix + std::to_string(z.size() - 4) + ": incorrect data check");
  // Garbage after a complete member is not a second member.
  const Streamed g = stream_gzip(z + "garbage!");
  EXPECT_FALSE(g.ok);
  EXPECT_TRUE(g.error.starts_with("corrupt gzip data at compressed offset ")) << g.error;
}

// --- microseconds -------------------------------------------------------

TEST(KinetoMicroseconds, ExactForEpochScaleValues) {
  // 1700000000123.456 us is not a double: parsed as one, it comes out 1700000000123456000 +- 250.
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.456"), 1'700'000'000'123'456u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.457"), 1'700'000'000'123'457u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.999"), 1'700'000'000'123'999u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.001"), 1'700'000'000'123'001u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.4"), 1'700'000'000'123'400u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.45"), 1'700'000'000'123'450u);
  // Below a nanosecond is cut off, not rounded into the next one.
  EXPECT_EQ(microseconds_text_to_ns("1700000000123.4569"), 1'700'000'000'123'456u);
  EXPECT_EQ(microseconds_text_to_ns("0.001"), 1u);
  EXPECT_EQ(microseconds_text_to_ns("12.5"), 12'500u);
}

TEST(KinetoMicroseconds, Integers) {
  EXPECT_EQ(microseconds_text_to_ns("0"), 0u);
  EXPECT_EQ(microseconds_text_to_ns("7"), 7'000u);
  EXPECT_EQ(microseconds_text_to_ns("1700000000123"), 1'700'000'000'123'000u);
  EXPECT_EQ(microseconds_text_to_ns("18446744073709550"), 18'446'744'073'709'550'000u);
  EXPECT_EQ(microseconds_text_to_ns("18446744073709552"), std::nullopt);  // past 2^64 ns
  EXPECT_EQ(microseconds_text_to_ns("99999999999999999999999"), std::nullopt);
}

TEST(KinetoMicroseconds, Exponents) {
  EXPECT_EQ(microseconds_text_to_ns("1e3"), 1'000'000u);
  EXPECT_EQ(microseconds_text_to_ns("2E-3"), 2u);
  EXPECT_EQ(microseconds_text_to_ns("1.5e3"), 1'500'000u);
  EXPECT_EQ(microseconds_text_to_ns("2.5E+1"), 25'000u);
  EXPECT_EQ(microseconds_text_to_ns("1.7e12"), 1'700'000'000'000'000u);
  EXPECT_EQ(microseconds_text_to_ns("1e300"), std::nullopt);
}

TEST(KinetoMicroseconds, NegativesAndGarbageAreRefused) {
  for (const char* text : {"-1", "-0.5", "-1700000000123.456", "-1e3", "", "abc", "\"12\"", "true", "null", "+5",
                           ".5", "12abc", "1.5x", "1.2.3", "1e", "0x10", "nan", "inf"}) {
    EXPECT_EQ(microseconds_text_to_ns(text), std::nullopt) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace gpuscope::importer
