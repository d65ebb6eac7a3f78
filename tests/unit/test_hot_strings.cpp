// The lock-free string table NVTX messages are interned with: same text,
// same id, from any thread; ids shared with StringTable; the writer gets
// every string exactly once (again after mark_all_pending); long texts are
// cut on a UTF-8 boundary; a full table answers 0 instead of blocking.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "string_table.h"

namespace gpuscope::capture {
namespace {

std::map<uint32_t, std::string> pending(StringTable& t) {
  std::map<uint32_t, std::string> out;
  for (auto& [id, text] : t.take_pending()) EXPECT_TRUE(out.emplace(id, text).second) << "id " << id << " twice";
  return out;
}

TEST(HotStrings, SameTextSameIdAndIdsSharedWithTheLockedTable) {
  auto t = std::make_unique<StringTable>();
  const uint32_t f = t->intern("cudaMemcpy");
  const uint32_t a = t->intern_hot("train_step");
  const uint32_t b = t->intern_hot("forward");
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_NE(a, f);
  EXPECT_NE(b, f);
  EXPECT_EQ(t->intern_hot("train_step"), a);
  EXPECT_EQ(t->intern_hot(""), 0u);
  const auto first = pending(*t);
  EXPECT_EQ(first, (std::map<uint32_t, std::string>{{f, "cudaMemcpy"}, {a, "train_step"}, {b, "forward"}}));
  EXPECT_TRUE(pending(*t).empty());               // each string once
  EXPECT_EQ(t->intern_hot("forward"), b);
  EXPECT_TRUE(pending(*t).empty());
  t->mark_all_pending();                          // a new trace file: everything again
  EXPECT_EQ(pending(*t), first);
}

TEST(HotStrings, LongTextIsCutOnACharacterBoundaryAndPrefixesShareAnId) {
  auto t = std::make_unique<StringTable>();
  std::string text(HotStrings::kMaxTextBytes - 1, 'a');
  text += "\xC3\xA9";  // 'é' straddles the limit
  text += "tail";
  const uint32_t id = t->intern_hot(text);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(t->intern_hot(text + "more"), id);
  const auto got = pending(*t);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at(id), std::string(HotStrings::kMaxTextBytes - 1, 'a'));
}

TEST(HotStrings, ThreadsInterningTheSameTextsAgreeOnTheIds) {
  auto t = std::make_unique<StringTable>();
  constexpr int kThreads = 4, kTexts = 300;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kTexts));
  std::vector<int> busy_misses(kThreads);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      for (int i = 0; i < kTexts; ++i) {
        HotStrings::Miss miss = HotStrings::Miss::TableFull;
        ids[th][i] = t->intern_hot("range " + std::to_string((i * 7 + th) % kTexts), &miss);
        // 300 short texts never fill the table: a 0 can only be a wait that ran out.
        if (ids[th][i] == 0) busy_misses[th] += miss == HotStrings::Miss::SlotBusy;
      }
    });
  for (auto& th : threads) th.join();
  // A thread that finds a slot another is filling waits a bounded number of
  // spins and then answers 0 (its caller counts a drop): on a loaded
  // machine the filler may be descheduled that long. Every other answer
  // agrees, and once the threads are done every text has its one id.
  std::map<std::string, uint32_t> by_text;
  int gave_up = 0;
  for (int th = 0; th < kThreads; ++th)
    for (int i = 0; i < kTexts; ++i) {
      if (ids[th][i] == 0) {
        ++gave_up;
        continue;
      }
      auto [it, fresh] = by_text.emplace("range " + std::to_string((i * 7 + th) % kTexts), ids[th][i]);
      EXPECT_EQ(it->second, ids[th][i]) << it->first;
    }
  EXPECT_LT(gave_up, kThreads * kTexts / 10);
  EXPECT_EQ(std::accumulate(busy_misses.begin(), busy_misses.end(), 0), gave_up);
  for (int i = 0; i < kTexts; ++i) {
    const std::string text = "range " + std::to_string(i);
    const uint32_t id = t->intern_hot(text);
    ASSERT_NE(id, 0u) << text;
    if (auto it = by_text.find(text); it != by_text.end()) EXPECT_EQ(it->second, id) << text;
    by_text[text] = id;
  }
  const auto got = pending(*t);
  EXPECT_EQ(got.size(), static_cast<size_t>(kTexts));
  for (const auto& [text, id] : by_text) EXPECT_EQ(got.at(id), text);
}

TEST(HotStrings, AFullTableAnswersZeroAndKeepsWhatItHas) {
  auto t = std::make_unique<StringTable>();
  std::set<uint32_t> ids;
  uint32_t refused = 0;
  // 1 MiB of arena in 512-byte texts: about 2048 fit, the rest are refused.
  for (int i = 0; i < 4096; ++i) {
    std::string text = std::to_string(i);
    text.resize(HotStrings::kMaxTextBytes, 'x');
    HotStrings::Miss miss = HotStrings::Miss::SlotBusy;
    const uint32_t id = t->intern_hot(text, &miss);
    if (id == 0) {
      ++refused;
      EXPECT_EQ(miss, HotStrings::Miss::TableFull) << i;  // one thread: no slot is ever being filled by another
    } else {
      ids.insert(id);
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GE(ids.size(), 2000u);
  EXPECT_EQ(pending(*t).size(), ids.size());
  std::string first = "0";
  first.resize(HotStrings::kMaxTextBytes, 'x');
  EXPECT_EQ(t->intern_hot(first), *ids.begin());  // still found after the table filled up
}

}  // namespace
}  // namespace gpuscope::capture
