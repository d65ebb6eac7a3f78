// The doctor's three outputs: text for people, JSON (docs/doctor.schema.json)
// and Prometheus text exposition for node_exporter's textfile collector.
#include <array>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "doctor.h"
#include "prometheus_report.h"

namespace gpuscope::doctor {
namespace {

constexpr int kSchemaVersion = 1;
constexpr std::array<CheckState, 4> kStates = {CheckState::Fail, CheckState::Warn, CheckState::NotChecked,
                                               CheckState::Pass};

const char* text_label(CheckState state) {
  switch (state) {
    case CheckState::Fail: return "FAIL";
    case CheckState::Warn: return "WARN";
    case CheckState::NotChecked: return "----";
    case CheckState::Pass: return "ok  ";
  }
  return "?";
}

std::string scope(const CheckResult& r) { return r.gpu < 0 ? "node " : fmt::format("GPU {}", r.gpu); }

std::array<size_t, 4> counts(const DoctorReport& report) {
  std::array<size_t, 4> n{};
  for (const CheckResult& r : report.results) ++n[static_cast<size_t>(r.finding.state)];
  return n;
}

void append_details(std::string& out, const CheckResult& r) {
  for (const std::string& e : r.finding.evidence) out += fmt::format("        - {}\n", e);
  if (!r.finding.fix.empty()) out += fmt::format("        fix: {}\n", r.finding.fix);
  out += fmt::format("        threshold: {} (source: {})\n", r.threshold, r.source);
}

// "facts: kernel 6.8.0, driver 580.82.07, ..." and a line per GPU.
void append_facts(std::string& out, const NodeFacts& facts) {
  const auto line = [](const Facts& f) {
    std::string text;
    for (const auto& [name, value] : f) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, value);
    return text;
  };
  out += fmt::format("facts (what --baseline compares): node: {}\n", line(facts.node));
  for (const GpuFacts& g : facts.gpus) out += fmt::format("    GPU {}: {}\n", g.index, line(g.facts));
}

}  // namespace

std::string render_text(const DoctorReport& report, bool verbose) {
  std::string out = fmt::format("gpuscope doctor: {}{}\n", report.host.empty() ? "this node" : report.host,
                                report.simulated ? " (SIMULATED GPU: simgpu, not hardware)" : "");
  for (const CheckResult& r : by_severity(report)) {
    const bool not_checked = r.finding.state == CheckState::NotChecked;
    out += fmt::format("{}  {:<17} {:<6} {}{}\n", text_label(r.finding.state), r.check, scope(r),
                       not_checked ? "not checked: " : "", r.finding.summary);
    if (verbose) append_details(out, r);
  }
  const auto n = counts(report);
  if (verbose) append_facts(out, report.facts);
  out += fmt::format("{} failed, {} warned, {} not checked, {} passed (exit {}){}\n", n[0], n[1], n[2], n[3],
                     exit_status(report), verbose ? "" : "; -v shows the evidence, fixes and thresholds");
  return out;
}

std::string render_json(const DoctorReport& report) {
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const CheckResult& r : report.results) {
    checks.push_back({{"check", r.check},
                      {"gpu", r.gpu < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.gpu)},
                      {"state", state_name(r.finding.state)},
                      {"summary", r.finding.summary},
                      {"evidence", r.finding.evidence},
                      {"fix", r.finding.fix},
                      {"threshold", r.threshold},
                      {"threshold_source", r.source}});
  }
  const auto n = counts(report);
  nlohmann::ordered_json doc = {
      {"schema_version", kSchemaVersion},
      {"host", report.host},
      {"simulated", report.simulated},
      {"exit_status", exit_status(report)},
      {"counts", {{"fail", n[0]}, {"warn", n[1]}, {"not_checked", n[2]}, {"pass", n[3]}}},
      {"checks", std::move(checks)},
      {"facts", facts_json(report.facts)}};
  return doc.dump(2) + "\n";
}

std::string render_prometheus(const DoctorReport& report) {
  std::string out =
      "# HELP gpuscope_doctor_check 1 for the state each gpuscope doctor check is in, 0 for the others "
      "(gpu=\"\": a node-wide check)\n"
      "# TYPE gpuscope_doctor_check gauge\n";
  const std::string host = analyzer::prometheus_escape(report.host);
  for (const CheckResult& r : report.results) {
    const std::string gpu = r.gpu < 0 ? "" : std::to_string(r.gpu);
    for (CheckState s : kStates)
      out += fmt::format("gpuscope_doctor_check{{host=\"{}\",gpu=\"{}\",check=\"{}\",state=\"{}\"}} {}\n", host, gpu,
                         r.check, state_name(s), s == r.finding.state ? 1 : 0);
  }
  out += "# HELP gpuscope_doctor_exit_status What gpuscope doctor exited with: 0 all passed, 1 a check failed, 3 "
         "warnings only\n# TYPE gpuscope_doctor_exit_status gauge\n";
  out += fmt::format("gpuscope_doctor_exit_status{{host=\"{}\"}} {}\n", host, exit_status(report));
  out += "# HELP gpuscope_doctor_simulated 1 when a GPU is simgpu, the project's simulated device, not hardware\n"
         "# TYPE gpuscope_doctor_simulated gauge\n";
  out += fmt::format("gpuscope_doctor_simulated{{host=\"{}\"}} {}\n", host, report.simulated ? 1 : 0);
  return out;
}

}  // namespace gpuscope::doctor
