// The second look at a trace's records for --requests: each outermost CUDA
// call made on a request's own thread while the request was open is summed
// into the request's group (tail or median band, request_latency.h) by part,
// with its call site; copies take their direction and host memory kind,
// and kernels their count, from the typed records linked to the call.
// Implicit synchronization is what the model's ImplicitSyncTally counts as
// blocked time (implicit_syncs.h), so both say the same of one call.
// Every other thread's outermost calls are also summed, by part, into the
// requests they overlap (RequestGroup::concurrent_*): what else the process
// did while the slow requests waited, and their CPU stack samples (host
// code on the CPU, part OutsideCuda).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "co_tenants.h"
#include "driver_tenants.h"
#include "implicit_syncs.h"
#include "request_latency.h"

namespace gpuscope::analyzer {

class RequestTally {
 public:
  // `requests`: the ranges with the requests' name that start in the
  // analyzed window. `names` lives as long as the tally is fed.
  RequestTally(const reader::TraceSummary& names, std::string name, const std::vector<RangeInstance>& requests,
               double tail_quantile);
  void add(const reader::ChunkView& v);
  // Other traces given alongside (`others` of them), and those of them that
  // shared the GPU: their busy time is set against the groups' requests.
  void set_co_tenants(std::vector<const GpuTenant*> co_tenants, uint64_t others);
  // The figures; sites stay ids (SiteKey) for the rules to name.
  RequestLatency finish();

 private:
  struct Member {
    uint64_t start_ns = 0, end_ns = 0;
    uint8_t group = 0;  // 1 tail, 2 median band
    size_t request = 0;
    uint32_t tid = 0;
  };
  using PartTimes = std::array<uint64_t, kRequestParts>;
  struct Linked {  // what a call's typed records say about it
    RequestPart copy_part = RequestPart::CopyOther;
    uint64_t bytes = 0;
    bool copy = false, kernel = false;
  };
  const Member* locate(uint32_t tid, uint64_t ns) const;
  void link_typed_records(const reader::ChunkView& v);
  Linked linked(uint64_t correlation_id) const;
  RequestPart part_of(const fb::ApiCall& c, const Linked& link);
  void add_call(const fb::ApiCall& c);
  void add_device_records(const reader::ChunkView& v);
  void add_device_time(uint64_t correlation_id, uint64_t ns, uint64_t RequestGroup::*kind);
  void link_to_device(uint64_t correlation_id, const Member& in);
  RequestGroup& group(uint8_t g) { return g == 1 ? out_.tail : out_.median_band; }
  size_t started_before(uint64_t ns) const;
  struct OtherWork {  // another thread's call or CPU sample
    uint32_t tid = 0;
    uint64_t start_ns = 0, end_ns = 0;
    RequestPart part = RequestPart::OtherCuda;
    SiteKey site;
  };
  void add_concurrent(const OtherWork& w, size_t started);
  void add_cpu_sample(const fb::HostSample& sample);
  void count_tail_growth();
  void overlap_all_co_tenants();
  void count_concurrent(size_t request, RequestGroup& g);

  const reader::TraceSummary& names_;
  RequestLatency out_;
  std::unordered_map<uint32_t, std::vector<Member>> by_thread_;  // sorted by start
  std::vector<uint64_t> cuda_ns_;  // per request: host time in outermost CUDA calls
  std::unordered_map<size_t, PartTimes> tail_parts_;  // per tail request
  std::vector<Member> by_start_;           // every grouped request, any thread, sorted by start
  std::vector<uint64_t> latest_end_;       // latest end among by_start_[0..i]
  std::unordered_map<size_t, PartTimes> concurrent_;  // per grouped request: other threads' time by part
  std::unordered_map<uint64_t, uint8_t> device_link_;  // correlation id of a grouped request's call -> its group
  // Device records whose call was not seen yet (an imported trace may order
  // them first): this chunk's and the last one's, by correlation id.
  struct EarlyDevice {
    uint64_t ns;
    uint64_t RequestGroup::*kind;
  };
  std::unordered_multimap<uint64_t, EarlyDevice> early_device_, early_device_before_;
  std::vector<uint8_t> groups_;
  std::vector<uint64_t> durations_;
  std::unordered_map<uint64_t, Linked> linked_, linked_before_;  // by correlation id; this chunk's, the last one's
  ImplicitSyncTally implicit_;
  std::unordered_set<const fb::ApiCall*> implicit_calls_;  // this chunk's calls counted as blocked
  std::unordered_map<uint32_t, CallKind> kinds_;
  std::vector<const GpuTenant*> co_tenants_;
  DriverSampleReader driver_samples_;
  GpuTenants untraced_;  // from driver_samples_ at finish(); co-tenants' overlaps point into it
  const uint64_t cpu_period_ns_;  // what one CPU stack sample stands for; 0: no CPU samples
};

}  // namespace gpuscope::analyzer
