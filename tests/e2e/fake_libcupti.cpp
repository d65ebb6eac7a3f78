// A stand-in libcupti.so.13 for end-to-end tests of what gpuscope asks of
// CUPTI (GPUSCOPE_CUPTI_PATH names it): every call succeeds, no activity
// record ever comes, and the calls that switch collection are written, one
// line each, to the file FAKE_CUPTI_LOG names:
//   subscribe                cuptiSubscribe_v2
//   on / off                 CONCURRENT_KERNEL enabled / disabled (the one
//                            kind gpuscope always enables: collection's state)
//   flush forced|normal      cuptiActivityFlushAll
// The real libcupti needs a driver for all of these (it answers 999 here).
#include <cupti.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

void log_line(const char* line) {
  const char* path = std::getenv("FAKE_CUPTI_LOG");
  if (path == nullptr) return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!write(fd, line, std::strlen(line));
  (void)!write(fd, "\n", 1);
  close(fd);
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult, const char** str) {
  *str = "FAKE_CUPTI_RESULT";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *timestamp = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) {
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*,
                                       CUpti_SubscriberParams*) {
  static int handle;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle);
  log_line("subscribe");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) { return CUPTI_SUCCESS; }
// The runtime domain's switch, in order with the kernel kind's: a kernel
// recorded while no API callback runs has no call to be joined to.
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) log_line(enable != 0 ? "callbacks on" : "callbacks off");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) {
  return CUPTI_SUCCESS;
}
// Names no call: gpuscope then takes the whole callback domains.
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char**) {
  return CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) log_line("on");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) log_line("off");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  log_line((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 ? "flush forced" : "flush normal");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity**) {
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}

}  // extern "C"
