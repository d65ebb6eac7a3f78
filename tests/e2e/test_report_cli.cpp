// `gpuscope report` as a user meets it: one self-contained page per call,
// a section per trace, and unreadable input said and counted. The page's
// drawing is checked in a browser by tests/report/check_report.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

ProcessResult gpuscope(std::vector<std::string> args) {
  args.insert(args.begin(), gpuscope_exe());
  return run(args, clean_env());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON the page embeds.
nlohmann::json page_data(const std::string& page) {
  const std::string open_tag = "<script type=\"application/json\" id=\"gpuscope-data\">";
  const size_t from = page.find(open_tag);
  if (from == std::string::npos) return nullptr;
  const size_t begin = from + open_tag.size();
  return nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin), nullptr, false);
}

void trace_behave(const std::string& path) {
  ASSERT_EQ(gpuscope({"run", "-q", "-o", path, "--", bin("behave"), "spin:50", "return:0"}).exit_code(), 0);
}

TEST(ReportCli, OneTraceIsOneSelfContainedPage) {
  TempDir dir;
  trace_behave(dir.file("a.gpuscope"));
  const auto r = gpuscope({"report", dir.file("a.gpuscope"), "-o", dir.file("r.html")});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("written to " + dir.file("r.html")), std::string::npos) << r.out;
  const std::string page = slurp(dir.file("r.html"));
  EXPECT_EQ(page.find("http://"), std::string::npos);  // nothing fetched: no URL, no external script
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find(" src="), std::string::npos);
  const auto data = page_data(page);
  ASSERT_FALSE(data.is_discarded());
  ASSERT_EQ(data["sections"].size(), 1u);
  EXPECT_EQ(data["sections"][0]["trace"], dir.file("a.gpuscope"));
  EXPECT_TRUE(data["sections"][0]["analysis"].contains("verdict"));
  EXPECT_TRUE(data["sections"][0]["timeline"].contains("lanes"));
}

TEST(ReportCli, ADirectoryGetsASectionPerTrace) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("traces"));
  trace_behave(dir.file("traces/a.gpuscope"));
  trace_behave(dir.file("traces/b.gpuscope"));
  const auto r = gpuscope({"report", dir.file("traces"), "-o", dir.file("r.html")});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto data = page_data(slurp(dir.file("r.html")));
  ASSERT_EQ(data["sections"].size(), 2u);
  EXPECT_EQ(data["sections"][1]["trace"], dir.file("traces/b.gpuscope"));
}

TEST(ReportCli, UnreadableInputIsSaidAndCounted) {
  TempDir dir;
  std::ofstream(dir.file("notes.txt")) << "not a trace";
  auto r = gpuscope({"report", dir.file("notes.txt"), "-o", dir.file("r.html")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("is not a gpuscope trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no report written"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.html")));

  trace_behave(dir.file("a.gpuscope"));  // one good input: its page is written, the status still says 2
  r = gpuscope({"report", dir.file("a.gpuscope"), dir.file("notes.txt"), "-o", dir.file("r.html")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(page_data(slurp(dir.file("r.html")))["sections"].size(), 1u);
}

TEST(ReportCli, AnUnwritableOutputIsAnError) {
  TempDir dir;
  trace_behave(dir.file("a.gpuscope"));
  const auto r = gpuscope({"report", dir.file("a.gpuscope"), "-o", dir.file("no/such/dir/r.html")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscope::test
