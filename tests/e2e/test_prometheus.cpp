// gpuscope analyze --format prometheus end to end: two traces of a run on
// simgpu become one text exposition that follows the format's grammar
// (each family once with HELP and TYPE, every sample line
// `name{labels} value`), labeled host/exe/pid/job, with the verdict as a
// one-hot labeled gauge; with --requests, request latency as a summary.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

struct Exposition {
  std::map<std::string, int> help, type;           // family -> times seen
  std::map<std::string, std::string> type_of;      // family -> gauge or summary
  std::vector<std::pair<std::string, std::string>> samples;  // family, labels
  double verdict_ones = 0;                         // sum of gpuscope_verdict values
  std::multiset<std::string> verdict_classes;      // classes with value 1
  std::vector<std::string> bad_lines;
};

Exposition parse(const std::string& text) {
  static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\} (\S+)$)");
  static const std::regex comment(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$)");
  Exposition e;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, comment)) {
      (m[1] == "HELP" ? e.help : e.type)[m[2]]++;
      if (m[1] == "TYPE") e.type_of[m[2]] = m[3];
      if (m[1] == "TYPE" && m[3] != "gauge" && m[3] != "summary") e.bad_lines.push_back(line);
    } else if (std::regex_match(line, m, sample)) {
      size_t used = 0;
      (void)std::stod(m[3].str(), &used);
      if (used != m[3].str().size()) e.bad_lines.push_back(line);
      e.samples.emplace_back(m[1], m[2]);
      const std::string labels = m[2].str();
      std::smatch c;
      if (m[1] == "gpuscope_verdict" && std::regex_search(labels, c, std::regex(R"re(class="([a-z_]+)")re"))) {
        e.verdict_ones += std::stod(m[3].str());
        if (std::stod(m[3].str()) == 1) e.verdict_classes.insert(c[1]);
      }
    } else {
      e.bad_lines.push_back(line);
    }
  }
  return e;
}

TEST(Prometheus, TwoTracesMakeOneValidExposition) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  TempDir dir;
  for (const char* iters : {"20000", "25000"}) {  // long enough to judge (kMinJudgedSeconds)
    const auto r = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("sync_bound"), "--iters", iters},
                       environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
    ASSERT_EQ(r.exit_code(), 0) << r.err;
  }
  const auto r = run({gpuscope_exe(), "analyze", "--format", "prometheus", "--job", "canary \"a\"", dir.path()},
                     clean_env());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const Exposition e = parse(r.out);
  EXPECT_TRUE(e.bad_lines.empty()) << e.bad_lines.front();
  ASSERT_FALSE(e.samples.empty());
  for (const auto& [family, n] : e.type) EXPECT_EQ(n, 1) << family << ": TYPE more than once";
  for (const auto& [family, n] : e.help) EXPECT_EQ(n, 1) << family << ": HELP more than once";
  // Prometheus names carry base units (seconds, bytes, bytes per second).
  static const std::regex scaled_unit(R"(_(gbps|mbps|[mun]s|[kmg]i?b|percent|milliseconds|microseconds)(_|$))");
  for (const auto& [family, n] : e.type) EXPECT_FALSE(std::regex_search(family, scaled_unit)) << family;
  EXPECT_EQ(e.type.count("gpuscope_copy_bandwidth_bytes_per_second"), 1u);  // sync_bound copies synchronously
  std::set<std::string> pids;
  for (const auto& [family, labels] : e.samples) {
    EXPECT_EQ(e.type.count(family), 1u) << family << " without TYPE";
    EXPECT_NE(labels.find("exe=\"sync_bound\""), std::string::npos) << labels;
    EXPECT_NE(labels.find("job=\"canary \\\"a\\\"\""), std::string::npos) << labels;  // escaped
    const auto p = labels.find("pid=\"");
    ASSERT_NE(p, std::string::npos);
    pids.insert(labels.substr(p, labels.find('"', p + 5) - p));
  }
  EXPECT_EQ(pids.size(), 2u);  // one series set per trace
  EXPECT_EQ(e.verdict_ones, 2.0);  // one class per trace
  // Which class is the verdict tests' business: under a loaded machine the
  // sample's synchronizations can be judged healthy; here, one class each.
  EXPECT_EQ(e.verdict_classes.size(), 2u);
}

// The family a sample line belongs to: a summary's _sum and _count lines
// are its own.
std::string family_of(const Exposition& e, const std::string& name) {
  for (const char* suffix : {"_sum", "_count"})
    if (name.ends_with(suffix)) {
      const std::string base = name.substr(0, name.size() - std::string(suffix).size());
      if (e.type_of.count(base) != 0 && e.type_of.at(base) == "summary") return base;
    }
  return name;
}

// --requests adds request latency as a summary (quantile-labeled samples,
// _sum, _count) to the same exposition, every line still in the grammar.
TEST(Prometheus, RequestLatencyIsASummary) {
  if (!simgpu_built() || !std::filesystem::exists(bin("request_service")))
    GTEST_SKIP() << "simgpu or request_service not built";
  TempDir dir;
  const std::string trace = dir.file("service.gpuscope");
  const auto ran = run({gpuscope_exe(), "run", "-q", "-o", trace, "--", bin("request_service"), "--requests", "30"},
                       environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
  ASSERT_EQ(ran.exit_code(), 0) << ran.err;
  const auto r = run({gpuscope_exe(), "analyze", "--format", "prometheus", trace, "--requests", "request"}, clean_env());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const Exposition e = parse(r.out);
  EXPECT_TRUE(e.bad_lines.empty()) << e.bad_lines.front();
  ASSERT_EQ(e.type_of.count("gpuscope_request_latency_seconds"), 1u) << r.out;
  EXPECT_EQ(e.type_of.at("gpuscope_request_latency_seconds"), "summary");
  std::set<std::string> quantiles;
  int sums = 0, counts = 0;
  for (const auto& [name, labels] : e.samples) {
    const std::string family = family_of(e, name);
    EXPECT_EQ(e.type.count(family), 1u) << name << " without TYPE";
    if (family != "gpuscope_request_latency_seconds") continue;
    EXPECT_NE(labels.find("request=\"request\""), std::string::npos) << labels;
    if (name.ends_with("_sum")) ++sums;
    else if (name.ends_with("_count")) ++counts;
    else quantiles.insert(labels.substr(labels.find("quantile=")));
  }
  EXPECT_EQ(quantiles, (std::set<std::string>{"quantile=\"0.5\"", "quantile=\"0.9\"", "quantile=\"0.95\"",
                                               "quantile=\"0.99\"", "quantile=\"0.999\""}));
  EXPECT_EQ(sums, 1);
  EXPECT_EQ(counts, 1);
  EXPECT_NE(r.out.find("gpuscope_request_latency_seconds_count{host="), std::string::npos);
}

TEST(Prometheus, UnknownFormatIsRefused) {
  const auto r = run({gpuscope_exe(), "analyze", "--format", "xml", "x.gpuscope"}, clean_env());
  EXPECT_EQ(r.exit_code(), 2);
}

}  // namespace
}  // namespace gpuscope::test
