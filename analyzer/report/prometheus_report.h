// `gpuscope analyze --format prometheus`: the summary of each trace as
// Prometheus text exposition (version 0.0.4), for node_exporter's textfile
// collector. Fleets already aggregate with Prometheus; gpuscope only has to
// speak its format. Every value is a gauge describing one analyzed run,
// except request latency (--requests), a summary: its quantiles, _sum and
// _count, as a service's own client library would expose them.
#pragma once

#include <string>
#include <vector>

#include "report.h"

namespace gpuscope::analyzer {

struct PrometheusSample {
  std::string family;  // metric name, without labels
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  std::string suffix;  // appended to the family's name: a summary's "_sum" and "_count"
};

// The samples of one analysis, labeled host, exe, pid (and job when given).
std::vector<PrometheusSample> prometheus_samples(const ReportInput& in, const std::string& job);

// All samples as one exposition: each family once, with HELP and TYPE,
// samples of every trace under it.
std::string prometheus_text(const std::vector<PrometheusSample>& samples);

// A label value escaped as the format requires (\\, \", \n).
std::string prometheus_escape(const std::string& value);

}  // namespace gpuscope::analyzer
