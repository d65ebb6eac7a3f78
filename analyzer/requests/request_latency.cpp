#include "request_latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace gpuscope::analyzer {

namespace {

struct PartName {
  const char* id;
  const char* label;
};

constexpr std::array<PartName, kRequestParts> kPartNames = {{
    {"copy_to_device_pageable", "host->device copies from pageable memory"},
    {"copy_to_device_pinned", "host->device copies from pinned memory"},
    {"copy_to_host_pageable", "device->host copies to pageable memory"},
    {"copy_to_host_pinned", "device->host copies to pinned memory"},
    {"copy_other", "other copies (device->device, peer, unknown memory)"},
    {"memset", "memsets"},
    {"explicit_sync", "explicit synchronization"},
    {"implicit_sync", "implicit synchronization (calls that wait without saying so)"},
    {"launch", "kernel launches"},
    {"alloc", "allocation"},
    {"free", "freeing"},
    {"other_cuda", "other CUDA calls"},
    {"outside_cuda", "outside CUDA (host code, waiting off CPU)"},
}};

constexpr std::array<double, 5> kReportedQuantiles = {0.5, 0.9, 0.95, 0.99, 0.999};

}  // namespace

const char* request_part_id(RequestPart part) { return kPartNames[static_cast<size_t>(part)].id; }
const char* request_part_label(RequestPart part) { return kPartNames[static_cast<size_t>(part)].label; }

const char* busy_from_name(BusyFrom from) {
  switch (from) {
    case BusyFrom::DeviceRecords: return "device_records";
    case BusyFrom::WaitingCalls: return "waiting_calls";
    case BusyFrom::DriverSamples: return "driver_samples";
  }
  return "unknown";
}

std::string quantile_name(double quantile) {
  char name[16];
  std::snprintf(name, sizeof name, "p%g", quantile * 100);
  return name;
}

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double quantile) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(quantile * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : std::min(sorted.size(), static_cast<size_t>(rank)) - 1;
  return sorted[index];
}

std::vector<LatencyBin> latency_histogram(const std::vector<uint64_t>& sorted) {
  if (sorted.empty()) return {};
  const uint64_t lo = sorted.front(), hi = sorted.back();
  const bool log_spaced = lo > 0 && hi / 2 >= lo;
  std::vector<uint64_t> edges;
  for (size_t i = 0; i <= kHistogramBins; ++i) {
    const double f = static_cast<double>(i) / kHistogramBins;
    const double edge = log_spaced ? lo * std::pow(static_cast<double>(hi) / lo, f) : lo + (hi - lo) * f;
    edges.push_back(i == kHistogramBins ? hi : std::min(hi, static_cast<uint64_t>(std::llround(edge))));
  }
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());  // narrow ranges round to the same ns
  if (edges.size() == 1) return {{lo, hi, sorted.size()}};
  std::vector<LatencyBin> bins;
  size_t below = 0;
  for (size_t k = 0; k + 1 < edges.size(); ++k) {
    const bool last = k + 2 == edges.size();
    const size_t upto = last ? sorted.size()
                             : std::lower_bound(sorted.begin(), sorted.end(), edges[k + 1]) - sorted.begin();
    bins.push_back({edges[k], edges[k + 1], upto - below});
    below = upto;
  }
  return bins;
}

// Ranks are by duration, ties by start time (the earlier ranks lower), so
// the groups are the same on every read of the trace. The tail is the
// requests ranked above ceil(q * n): the slowest n - ceil(q * n).
std::vector<uint8_t> rank_requests(const std::vector<RangeInstance>& requests, double tail_quantile,
                                   RequestLatency* out) {
  std::vector<uint8_t> group(requests.size(), 0);
  std::vector<size_t> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].unterminated) ++out->unterminated;
    else order.push_back(i);
  }
  const auto duration = [&](size_t i) { return requests[i].end_ns - requests[i].start_ns; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return duration(a) < duration(b); });
  std::vector<uint64_t> sorted;
  for (const size_t i : order) sorted.push_back(duration(i));
  const size_t n = sorted.size();
  out->count = n;
  out->tail_quantile = tail_quantile;
  for (const double q : kReportedQuantiles) out->quantiles.push_back({q, nearest_rank(sorted, q)});
  out->max_ns = n ? sorted.back() : 0;
  out->total_ns = std::accumulate(sorted.begin(), sorted.end(), uint64_t{0});
  out->histogram = latency_histogram(sorted);
  for (size_t k = 0; k < std::min(n, kSlowestShown); ++k) {
    const RangeInstance& r = requests[order[n - 1 - k]];
    out->slowest.push_back({r.start_ns, r.end_ns - r.start_ns, r.tid});
  }
  const size_t tail_from = static_cast<size_t>(std::ceil(tail_quantile * static_cast<double>(n)));
  const size_t band_from = static_cast<size_t>(std::floor(kMedianBandLow * static_cast<double>(n)));
  const size_t band_to = static_cast<size_t>(std::ceil(kMedianBandHigh * static_cast<double>(n)));
  for (size_t rank = tail_from; rank < n; ++rank) group[order[rank]] = 1;
  for (size_t rank = band_from; rank < std::min(band_to, tail_from); ++rank) group[order[rank]] = 2;
  out->tail_from_ns = tail_from < n ? sorted[tail_from] : 0;
  if (n < kMinRequestsJudged)
    out->thin_evidence = "only " + std::to_string(n) + " request(s); the tail is compared from " +
                         std::to_string(kMinRequestsJudged);
  else if (n - std::min(n, tail_from) < kMinTailRequests)
    out->thin_evidence = "only " + std::to_string(n - std::min(n, tail_from)) + " request(s) in the tail; it is "
                         "compared from " + std::to_string(kMinTailRequests);
  return group;
}

}  // namespace gpuscope::analyzer
