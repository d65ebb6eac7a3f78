// The stack table on its own (synthetic frames): deduplication, capacity
// limits, and the lock-free insert under concurrent writers; and the parts
// of the module map that need no loaded object (build-id notes, stable ids).
#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "stacks/module_map.h"
#include "stacks/stack_table.h"

namespace gpuscope::stacks {
namespace {

std::vector<uint64_t> synthetic(uint32_t seed, uint32_t count) {
  std::vector<uint64_t> f(count);
  for (uint32_t i = 0; i < count; ++i) f[i] = 0x400000 + seed * 0x1000 + i * 8;
  return f;
}

uint32_t intern(StackTable& t, const std::vector<uint64_t>& f) {
  return t.intern(f.data(), static_cast<uint32_t>(f.size()));
}

TEST(StackTable, EqualStacksShareAnIdAndDifferentOnesDoNot) {
  StackTable t;
  ASSERT_TRUE(t.init(10, 4096));
  const auto a = synthetic(1, 12), b = synthetic(2, 12);
  auto a_prefix = a;
  a_prefix.pop_back();  // a prefix is a different stack
  const uint32_t ia = intern(t, a);
  EXPECT_NE(ia, 0u);
  EXPECT_EQ(intern(t, a), ia);
  EXPECT_NE(intern(t, b), ia);
  EXPECT_NE(intern(t, a_prefix), ia);
  EXPECT_EQ(t.reserved(), 3u);
  EXPECT_EQ(t.state(ia), EntryState::Published);
  const auto frames = t.frames(ia);
  EXPECT_TRUE(std::equal(frames.begin(), frames.end(), a.begin(), a.end()));
  EXPECT_EQ(t.full_drops(), 0u);
  EXPECT_EQ(t.intern(a.data(), 0), 0u);
}

TEST(StackTable, FullTableGivesZeroCountsItAndStillFindsKnownStacks) {
  StackTable t;
  ASSERT_TRUE(t.init(4, 4096));  // 16 slots: at most 12 stacks
  ASSERT_EQ(t.max_stacks(), 12u);
  std::vector<uint32_t> ids;
  for (uint32_t s = 0; s < 20; ++s) ids.push_back(intern(t, synthetic(s, 4)));
  for (uint32_t s = 0; s < 12; ++s) EXPECT_EQ(ids[s], s + 1);
  for (uint32_t s = 12; s < 20; ++s) EXPECT_EQ(ids[s], 0u);
  EXPECT_EQ(t.full_drops(), 8u);
  EXPECT_EQ(t.reserved(), 12u);
  for (uint32_t s = 0; s < 12; ++s) EXPECT_EQ(intern(t, synthetic(s, 4)), s + 1);
  EXPECT_EQ(t.full_drops(), 8u);  // lookups of known stacks are not drops
}

TEST(StackTable, FullArenaGivesZeroAndCountsIt) {
  StackTable t;
  ASSERT_TRUE(t.init(8, 40));  // room for four 10-frame stacks
  for (uint32_t s = 0; s < 4; ++s) EXPECT_EQ(intern(t, synthetic(s, 10)), s + 1);
  EXPECT_EQ(intern(t, synthetic(9, 10)), 0u);
  EXPECT_EQ(intern(t, synthetic(10, 1)), 0u);  // the arena is exhausted for good
  EXPECT_EQ(t.full_drops(), 2u);
  EXPECT_EQ(intern(t, synthetic(2, 10)), 3u);
}

TEST(StackTable, UninitializedTableGivesZero) {
  StackTable t;
  EXPECT_FALSE(t.ready());
  const auto a = synthetic(1, 3);
  EXPECT_EQ(intern(t, a), 0u);
  EXPECT_FALSE(t.init(1, 10));   // too small to be a table
  EXPECT_FALSE(t.init(10, 0));   // no arena
}

// Eight threads insert the same 3000 stacks, each in its own order, so most
// first inserts race. Every thread must see one id per stack, ids must be
// distinct across stacks, and every reserved id must end up either the
// published one of a stack or abandoned.
TEST(StackTable, EightConcurrentWritersAgreeOnEveryId) {
  constexpr uint32_t kStacks = 3000, kThreads = 8;
  StackTable t;
  ASSERT_TRUE(t.init(13, 1 << 20));
  std::vector<std::vector<uint64_t>> stacks;
  for (uint32_t s = 0; s < kStacks; ++s) stacks.push_back(synthetic(s, 1 + s % 40));
  std::vector<std::vector<uint32_t>> seen(kThreads, std::vector<uint32_t>(kStacks));
  std::atomic<uint32_t> ready{0};
  std::vector<std::thread> threads;
  for (uint32_t th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<uint32_t> order(kStacks);
      for (uint32_t s = 0; s < kStacks; ++s) order[s] = s;
      std::shuffle(order.begin(), order.end(), std::mt19937(th % 2));  // pairs of threads collide head-on
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int round = 0; round < 3; ++round)
        for (uint32_t s : order) {
          const uint32_t id = intern(t, stacks[s]);
          if (round == 0) seen[th][s] = id;
          else if (seen[th][s] != id) seen[th][s] = UINT32_MAX;  // unstable id
        }
    });
  }
  for (auto& th : threads) th.join();
  std::map<uint32_t, uint32_t> stack_of_id;
  for (uint32_t s = 0; s < kStacks; ++s) {
    const uint32_t id = seen[0][s];
    ASSERT_NE(id, 0u);
    for (uint32_t th = 1; th < kThreads; ++th) ASSERT_EQ(seen[th][s], id) << "stack " << s;
    ASSERT_TRUE(stack_of_id.emplace(id, s).second) << "id " << id << " given to two stacks";
    const auto f = t.frames(id);
    ASSERT_TRUE(std::equal(f.begin(), f.end(), stacks[s].begin(), stacks[s].end()));
  }
  uint32_t published = 0;
  for (uint32_t id = 1; id <= t.reserved(); ++id) {
    const EntryState st = t.state(id);
    ASSERT_NE(st, EntryState::Pending);
    if (st == EntryState::Published) {
      ++published;
      EXPECT_TRUE(stack_of_id.count(id));
    }
  }
  EXPECT_EQ(published, kStacks);
  EXPECT_EQ(t.full_drops(), 0u);
}

TEST(StackTable, HashDependsOnEveryFrameAndTheCount) {
  const auto a = synthetic(5, 32);
  const uint64_t h = hash_frames(a.data(), 32);
  for (uint32_t i = 0; i < 32; ++i) {
    auto b = a;
    b[i] ^= 0x10;
    EXPECT_NE(hash_frames(b.data(), 32), h) << "frame " << i;
  }
  EXPECT_NE(hash_frames(a.data(), 31), h);
}

// Notes as a linker lays them out: a property note first, then the build-id.
std::vector<uint8_t> note_area(const std::vector<uint8_t>& id, size_t align) {
  std::vector<uint8_t> out;
  const auto put = [&](uint32_t type, const char* name, const std::vector<uint8_t>& desc) {
    const uint32_t h[3] = {static_cast<uint32_t>(std::strlen(name) + 1),
                           static_cast<uint32_t>(desc.size()), type};
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(h), reinterpret_cast<const uint8_t*>(h) + 12);
    out.insert(out.end(), name, name + h[0]);
    while (out.size() % align != 0) out.push_back(0);
    out.insert(out.end(), desc.begin(), desc.end());
    while (out.size() % align != 0) out.push_back(0);
  };
  put(NT_GNU_PROPERTY_TYPE_0, "GNU", std::vector<uint8_t>(16, 0xAA));
  put(NT_GNU_BUILD_ID, "GNU", id);
  return out;
}

TEST(ModuleMap, FindsTheBuildIdNoteAndRejectsDamagedOnes) {
  const std::vector<uint8_t> id{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  for (size_t align : {4, 8}) {
    const auto notes = note_area(id, align);
    EXPECT_EQ(find_build_id(notes.data(), notes.size(), align), id) << align;
    // Cut inside the build-id's descriptor: no id rather than a read past the end.
    EXPECT_TRUE(find_build_id(notes.data(), notes.size() - 8, align).empty()) << align;
  }
  auto bad = note_area(id, 4);
  const uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(bad.data() + 4, &huge, 4);  // first note's descsz
  EXPECT_TRUE(find_build_id(bad.data(), bad.size(), 4).empty());
}

TEST(ModuleMap, IdsAreStableAndOnlyNewOrMovedModulesAreReturned) {
  ModuleIds ids;
  container::ModuleDescription a{0, "/lib/a.so", {1, 2}, 0x1000, 0x1000, 0x2000};
  container::ModuleDescription b{0, "/lib/b.so", {3}, 0x5000, 0x5000, 0x6000};
  const auto first = ids.assign({a, b});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, 1u);
  EXPECT_EQ(first[1].id, 2u);
  EXPECT_TRUE(ids.assign({a, b}).empty());
  container::ModuleDescription moved = b;
  moved.load_address = moved.low_address = 0x9000;
  moved.high_address = 0xA000;
  const auto again = ids.assign({a, moved});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, 3u);
  EXPECT_EQ(again[0].path, "/lib/b.so");
}

}  // namespace
}  // namespace gpuscope::stacks
