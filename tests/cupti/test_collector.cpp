// The collector's pure parts (clock fit, correlation table, where libcupti
// is looked for) and its CUPTI setup against a fake CUPTI: version guard,
// a second subscriber, refused kinds, the buffer cap, the clock fallback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

#include "activity_convert.h"
#include "clock.h"
#include "collector.h"
#include "cupti_source.h"
#include "fake_cupti.h"

namespace gpuscope::cupti {
namespace {

using test::fake;
using test::make_fake_api;
using State = fb::DeviceCollectionState;

TEST(ClockFit, NoPairsIsTheIdentityOnePairIsAnOffset) {
  EXPECT_EQ(fit_clock({})(123456789), 123456789u);
  const ClockPair one[] = {{5'000'000'000, 2'000'000'000}};
  const LinearClock c = fit_clock(one);
  EXPECT_EQ(c(5'000'000'000), 2'000'000'000u);
  EXPECT_EQ(c(5'000'001'000), 2'000'001'000u);
  EXPECT_EQ(c(1'000), 0u);  // before monotonic zero: clamped, never wrapped
}

TEST(ClockFit, FitsDriftAcrossPairs) {
  // CUPTI's clock runs 50 ppm fast and 3 s ahead; pairs carry +-200 ns of noise.
  std::vector<ClockPair> pairs;
  for (int i = 0; i < 20; ++i) {
    const uint64_t mono = 1'000'000'000ull + i * 500'000'000ull;
    const int64_t noise = (i % 3 - 1) * 200;
    pairs.push_back({static_cast<uint64_t>(3'000'000'000ll + static_cast<int64_t>(mono) +
                                           static_cast<int64_t>((mono - 1'000'000'000ull) * 50e-6) + noise),
                     mono});
  }
  const LinearClock c = fit_clock(pairs);
  const uint64_t mono = 6'000'000'000ull;  // between pairs
  const uint64_t cupti = 3'000'000'000ull + mono + static_cast<uint64_t>((mono - 1'000'000'000ull) * 50e-6);
  EXPECT_NEAR(static_cast<double>(c(cupti)), static_cast<double>(mono), 500.0);
  EXPECT_NEAR(c.slope, 1.0 / (1.0 + 50e-6), 1e-7);
}

TEST(ClockFit, AWallClockStepFallsBackToTheLatestPair) {
  // Someone set the clock back 10 s between the pairs: no drift explains that.
  const ClockPair pairs[] = {{20'000'000'000, 1'000'000'000}, {12'000'000'000, 3'000'000'000}};
  const LinearClock c = fit_clock(pairs);
  EXPECT_EQ(c.slope, 1.0);
  EXPECT_EQ(c(12'000'000'500), 3'000'000'500u);
}

TEST(CorrelationTable, MapsKnownIdsAndForgetsOverwrittenOnes) {
  CorrelationTable t;
  ASSERT_TRUE(t.usable());
  t.put(77, 0xABCD000000000005ull);
  t.put(78, 9);
  EXPECT_EQ(t.get(77), 0xABCD000000000005ull);
  EXPECT_EQ(t.get(78), 9u);
  EXPECT_EQ(t.get(79), 0u);
  EXPECT_EQ(t.get(0), 0u);
  t.put(77 + CorrelationTable::kSlots, 11);  // a million calls later, same slot
  EXPECT_EQ(t.get(77), 0u) << "an overwritten slot must not pair with the wrong call";
  EXPECT_EQ(t.get(77 + CorrelationTable::kSlots), 11u);
}

TEST(CuptiLibrary, SearchOrderAndMissingLibraryIsNamed) {
  const auto c = cupti_candidates("/opt/x/libcupti.so", "/opt/gpuscope/lib");
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0], "/opt/x/libcupti.so");
  EXPECT_EQ(c[1], "/opt/gpuscope/lib/libcupti.so.13");
  EXPECT_EQ(c[2], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  EXPECT_EQ(c.back(), "libcupti.so.13");
  EXPECT_EQ(cupti_candidates(nullptr, "")[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  CuptiApi api;
  std::string path, error;
  EXPECT_FALSE(load_cupti({"/nonexistent/libcupti.so.13"}, dlsym, &api, &path, &error));
  EXPECT_NE(error.find("libcupti not found at /nonexistent/libcupti.so.13"), std::string::npos) << error;
}

TEST(CuptiLibrary, LoadsTheToolkitLibraryWithEveryFunction) {
  CuptiApi api;
  std::string path, error;
  ASSERT_TRUE(load_cupti({GPUSCOPE_TEST_CUPTI_LIBRARY}, dlsym, &api, &path, &error)) << error;
  EXPECT_EQ(path, GPUSCOPE_TEST_CUPTI_LIBRARY);
  uint32_t version = 0;
  ASSERT_EQ(api.get_version(&version), CUPTI_SUCCESS);
  EXPECT_TRUE(layouts_compatible(version));
}

TEST(NotInjectedReason, NamesWhatIsWrong) {
  EXPECT_EQ(not_injected_reason("/lib/libgpuscope.so", "/lib/libgpuscope.so"), "no driver");
  EXPECT_NE(not_injected_reason(nullptr, "/lib/libgpuscope.so").find("CUDA_INJECTION64_PATH not set"),
            std::string::npos);
  EXPECT_EQ(not_injected_reason("/opt/other/libinject.so", "/lib/libgpuscope.so"),
            "CUDA_INJECTION64_PATH names another library: /opt/other/libinject.so");
}

TEST(CollectorSetup, AnotherCuptiVersionTurnsCollectionOffBeforeTouchingCupti) {
  const CuptiApi api = make_fake_api();
  fake().version = 130200;  // 13.2: Kernel11 layout
  Collector c;
  EXPECT_FALSE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_FALSE(c.active());
  const auto s = c.status();
  EXPECT_EQ(s.state, static_cast<uint8_t>(State::IncompatibleVersion));
  EXPECT_EQ(s.cupti_version, 130200u);
  EXPECT_NE(s.reason.find("incompatible CUPTI version 130200"), std::string::npos) << s.reason;
  EXPECT_FALSE(fake().subscribed);
  EXPECT_TRUE(fake().enabled.empty());
}

TEST(CollectorSetup, ASecondSubscriberLeavesCaptureHostOnlyAndIsNamed) {
  const CuptiApi api = make_fake_api();
  fake().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake().holder = "CUPTI for Nsight Systems";
  Collector c;
  EXPECT_FALSE(c.start(api, "/fake/libcupti.so.13"));
  const auto s = c.status();
  EXPECT_EQ(s.state, static_cast<uint8_t>(State::SecondSubscriber));
  EXPECT_EQ(s.reason, "CUPTI already in use by CUPTI for Nsight Systems");
  EXPECT_TRUE(fake().enabled.empty());
  EXPECT_EQ(fake().request, nullptr);  // no buffers registered either
}

TEST(CollectorSetup, AKindRefusedForAnotherSubscriberUndoesEverything) {
  const CuptiApi api = make_fake_api();
  fake().refuse_kind = CUPTI_ACTIVITY_KIND_MEMSET;
  fake().refuse_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  Collector c;
  EXPECT_FALSE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_EQ(c.status().state, static_cast<uint8_t>(State::SecondSubscriber));
  EXPECT_TRUE(fake().enabled.empty()) << "kinds enabled before the refusal must be disabled again";
  EXPECT_TRUE(fake().unsubscribed);
}

TEST(CollectorSetup, EnablesConcurrentKernelNeverKernelAndNamesOptionalRefusals) {
  const CuptiApi api = make_fake_api();
  fake().refuse_kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  const auto& on = fake().enabled;
  auto has = [&](CUpti_ActivityKind k) { return std::find(on.begin(), on.end(), k) != on.end(); };
  EXPECT_TRUE(has(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_FALSE(has(CUPTI_ACTIVITY_KIND_KERNEL));
  for (auto k : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                 CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_OVERHEAD,
                 CUPTI_ACTIVITY_KIND_DEVICE})
    EXPECT_TRUE(has(k)) << k;
  // Correlation through callbacks, not API activity records.
  EXPECT_FALSE(has(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(has(CUPTI_ACTIVITY_KIND_DRIVER));
  // Callbacks for the calls that queue device work only, not whole domains.
  EXPECT_TRUE(fake().domains.empty());
  EXPECT_TRUE(fake().has_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(fake().has_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(fake().has_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2));
  EXPECT_FALSE(fake().has_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_FALSE(fake().has_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
  EXPECT_NE(fake().timestamp_callback, nullptr);
  const auto s = c.status();
  EXPECT_EQ(s.state, static_cast<uint8_t>(State::Active));
  EXPECT_EQ(s.clock, static_cast<uint8_t>(fb::DeviceClock::TimestampCallback));
  EXPECT_NE(s.reason.find("MEMORY_POOL"), std::string::npos) << s.reason;
  c.finish();
  EXPECT_TRUE(fake().enabled.empty()) << "the end of capture turns every kind off";
  EXPECT_TRUE(fake().domains.empty());
  EXPECT_TRUE(fake().callbacks.empty()) << "and every callback";
  ASSERT_FALSE(fake().flushes.empty());
  EXPECT_EQ(fake().flushes.back(), static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  c.finish();  // idempotent
  EXPECT_EQ(fake().flushes.size(), 1u);
}

// Sampled tracing: a hold turns off every kind and callback start() turned
// on, its release turns the same ones on again, and after finish() nothing
// can turn them on.
TEST(CollectorSampling, HoldAndReleaseSwitchWhatStartEnabledAndFinishWins) {
  using Hold = Collector::Hold;
  for (const CallbackScope scope : {CallbackScope::DeviceWork, CallbackScope::All}) {
    const CuptiApi api = make_fake_api();
    CollectorOptions options;
    options.callbacks = scope;
    Collector c(options);
    c.set_sampling(20'000'000, 2'000'000'000, "20 ms every 2000 ms");
    EXPECT_FALSE(c.release(Hold::Sampling)) << "nothing held";
    ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
    EXPECT_EQ(c.options().window_ns, 20'000'000u);
    EXPECT_NE(c.started_ns(), 0u);
    EXPECT_TRUE(c.collecting());
    const auto kinds = fake().enabled;
    const auto domains = fake().domains;
    const size_t callbacks = fake().callbacks.size();
    ASSERT_FALSE(kinds.empty());
    ASSERT_TRUE(c.hold(Hold::Sampling));
    EXPECT_FALSE(c.collecting());
    EXPECT_TRUE(fake().enabled.empty());
    EXPECT_TRUE(fake().domains.empty());
    EXPECT_TRUE(fake().callbacks.empty());
    EXPECT_FALSE(c.hold(Hold::Sampling)) << "already held";
    ASSERT_TRUE(c.release(Hold::Sampling));
    EXPECT_EQ(fake().enabled, kinds);
    EXPECT_EQ(fake().domains, domains);
    EXPECT_EQ(fake().callbacks.size(), callbacks);
    EXPECT_FALSE(c.release(Hold::Sampling)) << "already on";
    ASSERT_TRUE(c.hold(Hold::Sampling));
    c.finish();
    EXPECT_NE(c.finished_ns(), 0u);
    EXPECT_FALSE(c.release(Hold::Sampling)) << "finish() wins";
    EXPECT_TRUE(fake().enabled.empty());
    EXPECT_TRUE(fake().callbacks.empty());
  }
}

// Capture windows and attaches: CUDA starts (and CUPTI is set up) before
// the first window opens. Collection is off from start()'s end, on only
// while no reason holds it, and a forced flush between attaches leaves the
// collector able to collect again.
TEST(CollectorHolds, AHoldTakenBeforeStartSwitchesCollectionOffAtItsEnd) {
  using Hold = Collector::Hold;
  const CuptiApi api = make_fake_api();
  Collector c;
  ASSERT_TRUE(c.hold(Hold::Window));
  EXPECT_FALSE(c.hold(Hold::Window));
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_TRUE(c.active()) << "set up: a window may open later";
  EXPECT_FALSE(c.collecting());
  EXPECT_TRUE(fake().enabled.empty()) << "every kind off until a window opens";
  EXPECT_TRUE(fake().callbacks.empty());
  EXPECT_TRUE(fake().subscribed);
  ASSERT_TRUE(c.release(Hold::Window));
  EXPECT_TRUE(c.collecting());
  EXPECT_FALSE(fake().enabled.empty());
  EXPECT_FALSE(fake().callbacks.empty());
}

TEST(CollectorHolds, CollectionIsOnOnlyWhileNoReasonHoldsIt) {
  using Hold = Collector::Hold;
  const CuptiApi api = make_fake_api();
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  const auto kinds = fake().enabled;
  ASSERT_TRUE(c.hold(Hold::Window));
  ASSERT_TRUE(c.hold(Hold::Sampling));
  ASSERT_TRUE(c.release(Hold::Sampling)) << "the sampling window opens while no capture window is";
  EXPECT_FALSE(c.collecting());
  EXPECT_TRUE(fake().enabled.empty());
  ASSERT_TRUE(c.release(Hold::Window));
  EXPECT_TRUE(c.collecting());
  EXPECT_EQ(fake().enabled, kinds);
}

TEST(CollectorHolds, AFlushBetweenAttachesLeavesCollectionUsable) {
  using Hold = Collector::Hold;
  const CuptiApi api = make_fake_api();
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  ASSERT_TRUE(fake().hand_out({}));
  c.flush();
  ASSERT_EQ(fake().flushes.size(), 1u);
  EXPECT_EQ(fake().flushes.back(), static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  EXPECT_EQ(c.take_completed().size(), 1u) << "the forced flush completed the buffer being filled";
  EXPECT_EQ(c.finished_ns(), 0u);
  ASSERT_TRUE(c.hold(Hold::Window));
  ASSERT_TRUE(c.release(Hold::Window)) << "the next attach";
  EXPECT_TRUE(c.collecting());
  c.finish();
}

TEST(CollectorSampling, SetAfterStartIsIgnored) {
  const CuptiApi api = make_fake_api();
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  c.set_sampling(20'000'000, 2'000'000'000, "20 ms every 2000 ms");
  EXPECT_EQ(c.options().window_ns, 0u);
  c.finish();
}

TEST(CollectorSetup, CallbackScopeAllTakesWholeDomainsNoneTakesNothingAndSaysSo) {
  CollectorOptions all;
  all.callbacks = CallbackScope::All;
  {
    const CuptiApi api = make_fake_api();
    Collector c(all);
    ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
    EXPECT_EQ(fake().domains.size(), 2u);
    EXPECT_TRUE(fake().callbacks.empty());
  }
  CollectorOptions none;
  none.callbacks = CallbackScope::None;
  const CuptiApi api = make_fake_api();
  Collector c(none);
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_TRUE(fake().domains.empty());
  EXPECT_TRUE(fake().callbacks.empty());
  EXPECT_NE(c.status().reason.find("callbacks turned off"), std::string::npos) << c.status().reason;
}

TEST(CollectorSetup, ACuptiThatNamesNoCallFallsBackToWholeDomains) {
  const CuptiApi api = make_fake_api();
  fake().callback_names_fail = true;
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_EQ(fake().domains.size(), 2u) << "correlation must not be lost";
}

TEST(CollectorSetup, KindsListEnablesOnlyTheNamedKindsAndKernelsAlways) {
  CollectorOptions o;
  o.kinds = "memcpy,MEMSET";
  const CuptiApi api = make_fake_api();
  Collector c(o);
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  std::vector<CUpti_ActivityKind> on = fake().enabled;
  std::sort(on.begin(), on.end());
  EXPECT_EQ(on, (std::vector<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                                 CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}));
}

TEST(CollectorSetup, SelectTakesTheLibrarysSettingsBeforeStartOnly) {
  const CuptiApi api = make_fake_api();
  Collector c;
  c.select("all", "none");  // as GPUSCOPE_CUPTI_CALLBACKS=all GPUSCOPE_CUPTI_KINDS=none
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  EXPECT_EQ(fake().domains.size(), 2u);
  EXPECT_EQ(fake().enabled, std::vector<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  c.select("none", nullptr);  // too late: CUPTI was set up as asked at start
  EXPECT_EQ(fake().domains.size(), 2u);
}

TEST(CallbackScopeParse, NamesAndListsAsDocumented) {
  EXPECT_EQ(parse_callback_scope(nullptr), CallbackScope::DeviceWork);
  EXPECT_EQ(parse_callback_scope(""), CallbackScope::DeviceWork);
  EXPECT_EQ(parse_callback_scope("device-work"), CallbackScope::DeviceWork);
  EXPECT_EQ(parse_callback_scope("all"), CallbackScope::All);
  EXPECT_EQ(parse_callback_scope("none"), CallbackScope::None);
  EXPECT_EQ(parse_callback_scope("everything"), std::nullopt);
  EXPECT_TRUE(is_device_work_call(CUPTI_CB_DOMAIN_RUNTIME_API, "cudaMemcpyAsync_ptsz_v7000"));
  EXPECT_TRUE(is_device_work_call(CUPTI_CB_DOMAIN_DRIVER_API, "cuStreamSynchronize_ptsz"));
  EXPECT_FALSE(is_device_work_call(CUPTI_CB_DOMAIN_DRIVER_API, "cudaMemcpy"));
  EXPECT_FALSE(is_device_work_call(CUPTI_CB_DOMAIN_RUNTIME_API, "cudaStreamQuery_v3020"));
  EXPECT_FALSE(is_device_work_call(CUPTI_CB_DOMAIN_RUNTIME_API, nullptr));
  EXPECT_TRUE(kinds_off("OFF"));
  EXPECT_FALSE(kinds_off(nullptr));
  EXPECT_TRUE(kind_selected(nullptr, "MEMSET"));
  EXPECT_TRUE(kind_selected("memcpy,memset", "MEMSET"));
  EXPECT_FALSE(kind_selected("memcpy,memset", "MEMCPY2"));
  EXPECT_FALSE(kind_selected("", "MEMCPY"));
}

TEST(CollectorSetup, OutstandingBuffersAreCappedAndRefusalsCounted) {
  const CuptiApi api = make_fake_api();
  CollectorOptions o;
  o.buffer_bytes = 4096;
  o.max_buffers = 3;
  Collector c(o);
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  fake().dropped_per_completion = 5;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fake().hand_out({}));
  EXPECT_FALSE(fake().hand_out({}));
  EXPECT_FALSE(fake().hand_out({}));
  EXPECT_EQ(c.status().buffers_refused, 2u);
  fake().complete_all();
  EXPECT_EQ(c.status().dropped, 15u);  // cuptiActivityGetNumDroppedRecords, per completion
  EXPECT_EQ(c.take_completed().size(), 3u);
  EXPECT_TRUE(fake().hand_out({})) << "converted buffers free their place";
  c.finish();
}

TEST(CollectorSetup, RefusedTimestampCallbackFallsBackToCalibration) {
  const CuptiApi api = make_fake_api();
  fake().timestamp_callback_result = CUPTI_ERROR_INVALID_OPERATION;
  fake().timestamp_offset_ns = 7'000'000'000;  // CUPTI's clock 7 s ahead of monotonic
  Collector c;
  ASSERT_TRUE(c.start(api, "/fake/libcupti.so.13"));
  c.calibrate();
  const auto s = c.status();
  EXPECT_EQ(s.clock, static_cast<uint8_t>(fb::DeviceClock::Calibrated));
  EXPECT_EQ(s.calibration_pairs, 2u);
  const uint64_t now = capture::monotonic_ns();
  EXPECT_NEAR(static_cast<double>(c.clock()(now + 7'000'000'000)), static_cast<double>(now), 100'000.0);
  c.finish();
}

}  // namespace
}  // namespace gpuscope::cupti
