// A fake CUPTI behind the collector's function table: it reports a chosen
// version, refuses what a test asks it to refuse, remembers the callbacks
// the collector registered so a test can play CUPTI (hand out and complete
// buffers, call the API callback), and walks buffers with the real
// cuptiActivityGetNextRecord.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cupti_api.h"

namespace gpuscope::cupti::test {

struct FakeCupti {
  uint32_t version = CUPTI_API_VERSION;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::string holder;  // named by a refused subscribe
  CUptiResult timestamp_callback_result = CUPTI_SUCCESS;
  CUpti_ActivityKind refuse_kind = CUPTI_ACTIVITY_KIND_INVALID;
  CUptiResult refuse_result = CUPTI_ERROR_NOT_SUPPORTED;
  bool callback_names_fail = false;  // a CUPTI that names none of its calls
  uint64_t timestamp_offset_ns = 0;  // cuptiGetTimestamp = monotonic + this
  size_t dropped_per_completion = 0;

  // What the collector did.
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_CallbackFunc callback = nullptr;
  void* callback_userdata = nullptr;
  CUpti_TimestampCallbackFunc timestamp_callback = nullptr;
  std::vector<CUpti_ActivityKind> enabled;
  std::vector<CUpti_CallbackDomain> domains;
  struct Callback {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
  };
  std::vector<Callback> callbacks;  // enabled one by one
  bool has_callback(CUpti_CallbackDomain domain, uint32_t cbid) const;
  std::vector<uint32_t> flushes;  // flags of every cuptiActivityFlushAll
  bool subscribed = false, unsubscribed = false;
  // Buffers handed out and not completed yet: a forced flush completes them.
  struct Pending {
    uint8_t* data;
    size_t size;
    size_t valid;
  };
  std::vector<Pending> pending;

  // CUPTI's side: asks for a buffer and fills it (not completed yet).
  bool hand_out(const std::vector<uint8_t>& records);
  // Completes every pending buffer, as a flush would.
  void complete_all();
  // An API entry callback, as the driver would make inside a CUDA call.
  void api_enter(CUpti_CallbackDomain domain, uint32_t correlation_id);
};

// The one fake the table's functions talk to (CUPTI has no user data on
// most of them); reset by make_fake_api().
FakeCupti& fake();
CuptiApi make_fake_api();

}  // namespace gpuscope::cupti::test
