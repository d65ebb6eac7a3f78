#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "chunk_builder.h"
#include "ring.h"

namespace gpuscope::capture {
namespace {

struct Ring {
  alignas(64) std::byte memory[256];
  SpscRing ring;
  Ring() { ring.attach(memory, sizeof memory); }
};

std::vector<uint64_t> drain_values(SpscRing& ring) {
  std::vector<uint64_t> out;
  ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t) {
    EXPECT_EQ(type, RecordType::CpuSample);
    EXPECT_EQ(size, 8u);
    uint64_t v;
    std::memcpy(&v, p, 8);
    out.push_back(v);
  });
  return out;
}

TEST(Ring, DeliversRecordsInOrder) {
  Ring r;
  for (uint64_t v = 1; v <= 5; ++v) ASSERT_TRUE(r.ring.try_push(RecordType::CpuSample, &v, 8));
  EXPECT_EQ(drain_values(r.ring), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(r.ring.empty());
}

TEST(Ring, RefusesWhenFullAndAcceptsAfterDrain) {
  Ring r;  // 256 bytes = 16 records of 16 bytes
  uint64_t v = 0;
  int accepted = 0;
  while (r.ring.try_push(RecordType::CpuSample, &v, 8)) ++accepted, ++v;
  EXPECT_EQ(accepted, 16);
  EXPECT_FALSE(r.ring.try_push(RecordType::CpuSample, &v, 8));
  EXPECT_EQ(drain_values(r.ring).size(), 16u);
  EXPECT_TRUE(r.ring.try_push(RecordType::CpuSample, &v, 8));
}

TEST(Ring, WrapsWithPaddingAndNeverSplitsARecord) {
  Ring r;
  // 24-byte records (8 header + 16 payload) do not divide 256: every lap
  // ends in padding that the consumer must skip.
  uint64_t produced = 0, consumed = 0;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 7; ++i, ++produced) {
      const uint64_t payload[2] = {produced, ~produced};
      ASSERT_TRUE(r.ring.try_push(RecordType::Marker, payload, 16)) << "round " << round;
    }
    r.ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t) {
      ASSERT_EQ(type, RecordType::Marker);
      ASSERT_EQ(size, 16u);
      uint64_t payload[2];
      std::memcpy(payload, p, 16);
      EXPECT_EQ(payload[0], consumed);
      EXPECT_EQ(payload[1], ~consumed);
      ++consumed;
    });
  }
  EXPECT_EQ(consumed, produced);
}

// A group (a call and its typed record) goes in whole or not at all, never
// split by the wrap: the consumer always sees both halves, adjacent.
TEST(Ring, GroupsAreAllOrNothingAndNeverSplitByTheWrap) {
  Ring r;  // 256 bytes; a group of 24 + 32 bytes does not divide it
  uint64_t pushed = 0, refused = 0, consumed = 0;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 1 + round % 6; ++i) {  // sometimes more than fits
      const uint64_t call[2] = {pushed, ~pushed};
      const uint64_t typed[3] = {pushed, pushed * 3, ~pushed};
      if (r.ring.try_push_all<2>({SpscRing::Part{RecordType::ApiCall, call, 16},
                                  SpscRing::Part{RecordType::Copy, typed, 24}}))
        ++pushed;
      else
        ++refused;
    }
    bool expect_typed = false;
    r.ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t) {
      uint64_t first;
      std::memcpy(&first, p, 8);
      EXPECT_EQ(first, consumed);
      if (!expect_typed) {
        EXPECT_EQ(type, RecordType::ApiCall);
        EXPECT_EQ(size, 16u);
      } else {
        EXPECT_EQ(type, RecordType::Copy);
        EXPECT_EQ(size, 24u);
        ++consumed;
      }
      expect_typed = !expect_typed;
    });
    EXPECT_FALSE(expect_typed) << "a call without its typed record, round " << round;
  }
  EXPECT_EQ(consumed, pushed);
  EXPECT_GT(refused, 0u);  // the test did fill the ring
}

// The hot path's typed push (try_push_records: sizes known at compile time,
// word copies, the slow path only at the wrap or when the cached tail says
// full) keeps the same contract: whole groups or nothing, never split, in
// order, the flags on every record.
TEST(Ring, TypedGroupsKeepTheContractAcrossLapsAndFullRings) {
  choose_ring_prefetch();  // the pushes ask for their lines as capture would
  Ring r;  // 256 bytes; a group of 64 + 48 bytes does not divide it
  uint64_t pushed = 0, refused = 0, consumed = 0;
  for (int round = 0; round < 300; ++round) {
    for (int i = 0; i < 1 + round % 4; ++i) {  // sometimes more than fits
      const fb::ApiCall call(pushed, 7, pushed, 0, 1, 0, 0, 0, 0, 0, 0, 0);
      const fb::Sync sync(pushed, 7, pushed, ~pushed, fb::SyncKind::Stream, fb::Source::Host, 0, 0);
      if (r.ring.try_push_records(kRecordInTicks, call, sync))
        ++pushed;
      else
        ++refused;
    }
    bool expect_sync = false;
    r.ring.drain([&](RecordType type, const std::byte* p, uint32_t size, uint8_t flags) {
      EXPECT_EQ(flags, kRecordInTicks);
      if (!expect_sync) {
        ASSERT_EQ(type, RecordType::ApiCall);
        ASSERT_EQ(size, sizeof(fb::ApiCall));
        fb::ApiCall call;
        std::memcpy(&call, p, sizeof call);
        EXPECT_EQ(call.correlation_id(), consumed);
      } else {
        ASSERT_EQ(type, RecordType::Sync);
        ASSERT_EQ(size, sizeof(fb::Sync));
        fb::Sync sync;
        std::memcpy(&sync, p, sizeof sync);
        EXPECT_EQ(sync.correlation_id(), consumed);
        EXPECT_EQ(sync.object(), ~consumed);
        ++consumed;
      }
      expect_sync = !expect_sync;
    });
    EXPECT_FALSE(expect_sync) << "a call without its sync, round " << round;
  }
  EXPECT_EQ(consumed, pushed);
  EXPECT_GT(refused, 0u);
}

// PREFETCHW is an invalid instruction on x86-64 CPUs that lack it, so the
// hot path uses it only where CPUID says so; the kernel's flag list reads
// the same CPUID bit.
TEST(Ring, PrefetchForWriteIsUsedOnlyWhereTheCpuHasIt) {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool listed = false, found_flags = false;
  while (!found_flags && std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    found_flags = true;
    listed = (line + " ").find(" 3dnowprefetch ") != std::string::npos;
  }
  if (!found_flags) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  choose_ring_prefetch();
  EXPECT_EQ(detail::g_prefetch_for_write.load(), listed);
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// drain_runs hands over whole records, before and after the wrap point, and
// frees only what the consumer says it consumed.
TEST(Ring, DrainRunsStopsWhereTheConsumerStops) {
  Ring r;
  uint64_t produced = 0, consumed = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 7; ++i, ++produced) {
      const uint64_t payload[2] = {produced, ~produced};
      ASSERT_TRUE(r.ring.try_push(RecordType::Marker, payload, 16)) << "round " << round;
    }
    // First visit takes one record of each run; the second takes the rest.
    for (bool one : {true, false}) {
      r.ring.drain_runs([&](std::span<const std::byte> run) {
        EXPECT_EQ(run.size() % 8, 0u);
        size_t used = 0;
        while (used < run.size()) {
          RingRecordHeader h;
          std::memcpy(&h, run.data() + used, sizeof h);
          if (h.type == RecordType::Marker) {
            uint64_t v;
            std::memcpy(&v, run.data() + used + sizeof h, 8);
            EXPECT_EQ(v, consumed++);
          }
          used += sizeof h + h.payload_size;
          if (one && h.type == RecordType::Marker) break;
        }
        return used;
      });
    }
  }
  EXPECT_EQ(consumed, produced);
  EXPECT_TRUE(r.ring.empty());
}

// The batched drain into a chunk gives the same bytes as adding the records
// one by one, ticks converted, and respects its record limit.
TEST(Ring, RingRecordsBuildTheSameChunkAsSingleAdds) {
  alignas(64) static std::byte memory[4096];
  SpscRing ring;
  ring.attach(memory, sizeof memory);
  TickConverter ticks;
  ticks.start();
  ticks.calibrate();
  ChunkBuilder expected;
  for (uint64_t i = 0; i < 30; ++i) {
    const fb::ApiCall call(1000 + i * 7, 3 + i, i + 1, 0, 42, 0, 0, 5, 0, 0, -1, 0);
    const fb::Sync sync(1002 + i * 7, 1, i + 1, 0, fb::SyncKind::Device, fb::Source::Host, 0, 0);
    const bool in_ticks = i % 3 == 0;
    ASSERT_TRUE(ring.try_push(RecordType::ApiCall, &call, sizeof call, in_ticks ? kRecordInTicks : 0));
    if (i % 4 == 0) {
      ASSERT_TRUE(ring.try_push(RecordType::Sync, &sync, sizeof sync));
    }
    fb::ApiCall converted = call;
    if (in_ticks) {
      converted.mutate_start_ns(ticks.to_ns(call.start_ns()));
      converted.mutate_duration_ns(ticks.span_ns(call.duration_ns()));
    }
    expected.add(converted);
    if (i % 4 == 0) expected.add(sync);
  }
  ChunkBuilder batched;
  size_t visits = 0, records = 0;
  while (!ring.empty()) {
    ring.drain_runs([&](std::span<const std::byte> run) {
      const auto take = batched.add_ring_records(run, ticks, 10);
      records += take.records;
      return take.bytes;
    });
    ++visits;
  }
  EXPECT_EQ(records, 38u);
  EXPECT_EQ(visits, 4u);
  const auto want = expected.build();
  const auto got = batched.build();
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()), std::vector<uint8_t>(want.begin(), want.end()));
}

}  // namespace
}  // namespace gpuscope::capture
