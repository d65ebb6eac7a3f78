#include "gates.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "units.h"

namespace gpuscope::analyzer {
namespace {

bool is_environment_key(const std::string& key) {
  for (const auto& k : environment_keys())
    if (k == key) return true;
  return false;
}

bool parse_changed(const std::string& text, Gate* g, std::string* error) {
  const std::string subject = text.substr(0, text.size() - 8);  // without "-changed"
  if (subject == "verdict") {
    g->kind = Gate::Kind::VerdictChanged;
    return true;
  }
  if (subject == "tail-cause") {
    g->kind = Gate::Kind::TailCauseChanged;
    return true;
  }
  g->kind = Gate::Kind::EnvironmentChanged;
  if (subject == "env") return true;
  if (!is_environment_key(subject)) {
    *error = fmt::format("--fail-on: '{}': unknown; expected verdict-changed, tail-cause-changed, env-changed or one "
                         "of {}-changed",
                         text, fmt::join(environment_keys(), "-changed, "));
    return false;
  }
  g->subject = subject;
  return true;
}

// FIGURE, then > or <, then a signed number, then %, pp or nothing.
bool parse_threshold(const std::string& text, Gate* g, std::string* error) {
  const size_t op = text.find_first_of("<>");
  const auto fail = [&](const std::string& why) {
    *error = fmt::format("--fail-on: '{}': {}", text, why);
    return false;
  };
  if (op == std::string::npos) return fail("expected FIGURE>+N%, FIGURE<-Npp, FIGURE>+N or NAME-changed");
  g->subject = text.substr(0, op);
  g->above = text[op] == '>';
  const FigureSpec* spec = find_figure(g->subject);
  if (spec == nullptr) {
    std::vector<std::string> names;
    for (const auto& f : figure_specs()) names.push_back(f.name);
    return fail(fmt::format("unknown figure '{}'; known: {}", g->subject, fmt::join(names, ", ")));
  }
  std::string number = text.substr(op + 1);
  g->kind = Gate::Kind::Absolute;
  if (number.ends_with("%")) {
    g->kind = Gate::Kind::Relative;
    number.pop_back();
  } else if (number.ends_with("pp")) {
    g->kind = Gate::Kind::Points;
    number.resize(number.size() - 2);
  }
  if (g->kind == Gate::Kind::Points && spec->unit != FigureUnit::Share)
    return fail(fmt::format("pp (percentage points) applies to shares only; '{}' is not a share", g->subject));
  const size_t skip = !number.empty() && number[0] == '+' ? 1 : 0;  // from_chars takes no '+'
  const char* first = number.data() + skip;
  const char* last = number.data() + number.size();
  const auto [end, ec] = std::from_chars(first, last, g->threshold);
  if (ec != std::errc() || end != last || first == last || !std::isfinite(g->threshold))
    return fail("expected a number after the comparison (e.g. +5%, -3pp, +0)");
  return true;
}

// The change a gate measures, or nothing when a run does not know the figure.
std::optional<double> measured_change(const Gate& g, const RunSnapshot& base, const RunSnapshot& next,
                                      std::string* detail) {
  const auto b = base.figure(g.subject), n = next.figure(g.subject);
  if (!b || !n) {
    *detail = fmt::format("not evaluated: {} unknown in the {} run", g.subject, !b ? "base" : "new");
    return std::nullopt;
  }
  switch (g.kind) {
    case Gate::Kind::Points:
      *detail = fmt::format("{:+.1f} pp ({} -> {})", (*n - *b) * 100, pct(*b), pct(*n));
      return (*n - *b) * 100;
    case Gate::Kind::Relative:
      if (*b == 0) {
        *detail = fmt::format("from 0 to {:.6g}", *n);
        return *n == 0 ? 0.0 : std::copysign(INFINITY, *n);
      }
      *detail = fmt::format("{:+.1f}% ({:.6g} -> {:.6g})", (*n - *b) / std::fabs(*b) * 100, *b, *n);
      return (*n - *b) / std::fabs(*b) * 100;
    default:
      *detail = fmt::format("{:+.6g} ({:.6g} -> {:.6g})", *n - *b, *b, *n);
      return *n - *b;
  }
}

GateResult evaluate(const Gate& g, const RunSnapshot& base, const RunSnapshot& next) {
  GateResult r{g};
  using S = GateResult::Status;
  if (g.kind == Gate::Kind::VerdictChanged) {
    r.status = base.verdict_class != next.verdict_class ? S::Fail : S::Pass;
    r.detail = fmt::format("{} -> {}", base.verdict_class, next.verdict_class);
    return r;
  }
  if (g.kind == Gate::Kind::TailCauseChanged) {
    r.status = base.tail_cause != next.tail_cause ? S::Fail : S::Pass;
    r.detail = fmt::format("{} -> {}", base.tail_cause, next.tail_cause);
    return r;
  }
  if (g.kind == Gate::Kind::EnvironmentChanged) {
    std::vector<std::string> changed;
    for (const auto& key : environment_keys())
      if ((g.subject.empty() || g.subject == key) && base.environment.at(key) != next.environment.at(key))
        changed.push_back(fmt::format("{}: {} -> {}", key, base.environment.at(key), next.environment.at(key)));
    r.status = changed.empty() ? S::Pass : S::Fail;
    r.detail = changed.empty() ? "unchanged" : fmt::format("{}", fmt::join(changed, "; "));
    return r;
  }
  const auto change = measured_change(g, base, next, &r.detail);
  if (!change) r.status = S::NotEvaluated;
  else r.status = (g.above ? *change > g.threshold : *change < g.threshold) ? S::Fail : S::Pass;
  return r;
}

}  // namespace

bool parse_gates(const std::string& spec, std::vector<Gate>* out, std::string* error) {
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    std::string text = spec.substr(start, comma - start);
    text.erase(0, text.find_first_not_of(' '));
    text.erase(text.find_last_not_of(' ') + 1);
    start = comma + 1;
    if (text.empty()) continue;
    Gate g;
    g.text = text;
    const bool ok = text.ends_with("-changed") ? parse_changed(text, &g, error) : parse_threshold(text, &g, error);
    if (!ok) return false;
    out->push_back(std::move(g));
  }
  if (out->empty()) {
    *error = "--fail-on: no gate given";
    return false;
  }
  return true;
}

bool gate_needs_requests(const Gate& g) {
  if (g.kind == Gate::Kind::TailCauseChanged) return true;
  if (g.kind == Gate::Kind::VerdictChanged || g.kind == Gate::Kind::EnvironmentChanged) return false;
  const FigureSpec* spec = find_figure(g.subject);
  return spec != nullptr && spec->per_request;
}

std::vector<GateResult> evaluate_gates(const std::vector<Gate>& gates, const RunSnapshot& base,
                                       const RunSnapshot& next) {
  std::vector<GateResult> out;
  for (const Gate& g : gates) out.push_back(evaluate(g, base, next));
  return out;
}

}  // namespace gpuscope::analyzer
