// capture_stack_id() and the stack source on real stacks of this test
// program: deduplication by call site, the depth limit, frames that are
// real return addresses inside the test binary, and the module map.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <vector>

#include "stacks/module_map.h"
#include "test_stacks_support.h"

namespace gpuscope::stacks {
namespace {

using test::module_containing;
using test::run_source;

void* g_site_a_returns_to = nullptr;

__attribute__((noinline)) uint32_t site_a() {
  g_site_a_returns_to = __builtin_return_address(0);
  const uint32_t id = capture_stack_id();
  GPUSCOPE_KEEP_FRAME();
  return id;
}

__attribute__((noinline)) uint32_t site_b() {
  g_site_a_returns_to = nullptr;  // not identical to site_a: no identical-code folding
  const uint32_t id = capture_stack_id();
  GPUSCOPE_KEEP_FRAME();
  return id;
}

__attribute__((noinline)) uint32_t outer_calls_site_a() {
  const uint32_t id = site_a();
  GPUSCOPE_KEEP_FRAME();
  return id;
}

// site_a() from one call site `n` times, `between(i)` after the i-th: the
// volatile count keeps the loop from being unrolled into several sites.
__attribute__((noinline)) void from_one_site(uint32_t* ids, int count,
                                             const std::function<void(int)>& between) {
  volatile int n = count;
  for (int i = 0; i < n; ++i) {
    ids[i] = site_a();
    between(i);
  }
}

__attribute__((noinline)) uint32_t recurse(int levels) {
  if (levels == 0) return site_a();
  const uint32_t id = recurse(levels - 1);
  GPUSCOPE_KEEP_FRAME();
  return id;
}

// True when `address` is a return address inside `fn`, assuming no test
// call site is more than `size` bytes into its function (these functions
// are a few instructions long).
bool inside(uint64_t address, const void* fn, uint64_t size = 48) {
  const auto start = reinterpret_cast<uint64_t>(fn);
  return address > start && address < start + size;
}

std::string executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// The build-id as the file on disk has it (program headers read from the
// file, not from memory).
std::vector<uint8_t> file_build_id(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < sizeof(Elf64_Ehdr)) return {};
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  for (int i = 0; i < eh->e_phnum; ++i) {
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(bytes.data() + eh->e_phoff + i * eh->e_phentsize);
    if (ph->p_type != PT_NOTE || ph->p_offset + ph->p_filesz > bytes.size()) continue;
    auto id = find_build_id(bytes.data() + ph->p_offset, ph->p_filesz, ph->p_align);
    if (!id.empty()) return id;
  }
  return {};
}

class StacksTest : public ::testing::Test {
 protected:
  void SetUp() override { configure_stacks(true, 32); }
  void TearDown() override { configure_stacks(true, 32); }
};

TEST_F(StacksTest, OneCallSiteGivesOneIdAndOthersDifferentIds) {
  uint32_t in_loop[3];
  from_one_site(in_loop, 3, [](int) {});
  ASSERT_NE(in_loop[0], 0u);
  EXPECT_EQ(in_loop[1], in_loop[0]);
  EXPECT_EQ(in_loop[2], in_loop[0]);
  const uint32_t b = site_b();
  const uint32_t a_elsewhere = site_a();  // same function, another call site
  GPUSCOPE_KEEP_FRAME();
  const uint32_t a_deeper = outer_calls_site_a();
  EXPECT_NE(b, 0u);
  EXPECT_NE(b, in_loop[0]);
  EXPECT_NE(a_elsewhere, in_loop[0]);
  EXPECT_NE(a_deeper, in_loop[0]);
  EXPECT_NE(a_deeper, a_elsewhere);
}

TEST_F(StacksTest, FramesAreReturnAddressesInsideTheTestBinary) {
  auto source = make_stack_source();
  const uint32_t id = outer_calls_site_a();
  const auto out = run_source(*source, true);
  ASSERT_TRUE(out.stacks.count(id)) << "stack " << id << " not emitted";
  const auto& frames = out.stacks.at(id);
  ASSERT_GE(frames.size(), 3u);
  // Innermost first, starting at the hook's own call site: nothing of
  // capture_stack_id() or libunwind is in the stack. The second frame is
  // exactly where site_a() returns to.
  EXPECT_TRUE(inside(frames[0], reinterpret_cast<const void*>(&site_a)));
  EXPECT_EQ(frames[1], reinterpret_cast<uint64_t>(g_site_a_returns_to));
  EXPECT_TRUE(inside(frames[1], reinterpret_cast<const void*>(&outer_calls_site_a)));
  const container::ModuleDescription* m = module_containing(out.modules, frames[0]);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, executable());
  EXPECT_EQ(module_containing(out.modules, frames[2]), m);  // the test body
  // ELF address = runtime address - load address lies inside the file's
  // image: what the analyzer will symbolize.
  EXPECT_LT(frames[0] - m->load_address, m->high_address - m->load_address);
}

TEST_F(StacksTest, DepthLimitIsHonoured) {
  auto source = make_stack_source();
  configure_stacks(true, 8);
  const uint32_t shallow = recurse(20);
  configure_stacks(true, 32);
  const uint32_t deep = recurse(40);
  configure_stacks(true, 500);  // clamped to 64
  const uint32_t deepest = recurse(80);
  const auto out = run_source(*source, true);
  ASSERT_TRUE(out.stacks.count(shallow) && out.stacks.count(deep) && out.stacks.count(deepest));
  EXPECT_EQ(out.stacks.at(shallow).size(), 8u);
  EXPECT_EQ(out.stacks.at(deep).size(), 32u);
  EXPECT_EQ(out.stacks.at(deepest).size(), 64u);
  // Below site_a, every frame is a return into recurse().
  const auto& frames = out.stacks.at(deep);
  for (size_t i = 1; i < frames.size(); ++i)
    EXPECT_TRUE(inside(frames[i], reinterpret_cast<const void*>(&recurse))) << i;
}

TEST_F(StacksTest, ModuleMapHasTheExecutableWithItsBuildIdAndLibc) {
  auto source = make_stack_source();
  const auto out = run_source(*source, true);
  const std::string exe = executable();
  const auto by_path = [&](auto pred) {
    return std::find_if(out.modules.begin(), out.modules.end(), pred);
  };
  const auto main = by_path([&](const auto& m) { return m.path == exe; });
  ASSERT_NE(main, out.modules.end());
  EXPECT_FALSE(main->build_id.empty());
  EXPECT_EQ(main->build_id, file_build_id(exe));
  EXPECT_LE(main->low_address, reinterpret_cast<uint64_t>(&site_a));
  EXPECT_GT(main->high_address, reinterpret_cast<uint64_t>(&site_a));
  const auto libc = by_path([](const auto& m) { return m.path.find("/libc.so.6") != std::string::npos; });
  ASSERT_NE(libc, out.modules.end());
  EXPECT_EQ(libc->build_id, file_build_id(libc->path));
  const auto* holding_write =
      module_containing(out.modules, reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "write")));
  ASSERT_NE(holding_write, nullptr);
  EXPECT_EQ(holding_write->path, libc->path);
  std::vector<uint32_t> ids;
  for (const auto& m : out.modules) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "module ids repeat";
}

TEST_F(StacksTest, EachStackAndModuleIsEmittedOnce) {
  auto source = make_stack_source();
  uint32_t ids[2];
  test::SourceOutput out1;
  from_one_site(ids, 2, [&](int i) {
    if (i == 0) out1 = run_source(*source, true);
  });
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_TRUE(out1.stacks.count(ids[0]));
  EXPECT_FALSE(out1.modules.empty());
  const auto out2 = run_source(*source, false);
  EXPECT_TRUE(out2.stacks.empty());
  EXPECT_TRUE(out2.modules.empty());
  // New to this source unless an earlier test (or --gtest_repeat) made it:
  // either way emitted exactly once.
  const uint32_t later = recurse(2);
  const auto out3 = run_source(*source, false);
  EXPECT_EQ(out1.stacks.count(later) + out3.stacks.count(later), 1u);
  for (const auto& [id, frames] : out3.stacks) EXPECT_FALSE(out1.stacks.count(id)) << id;
}

// A library loaded after the first map shows up at the next poll, alone,
// whether or not the dlopen hook said so (the loader's counters change).
// Loaded by a relative path, it is still named by an absolute one.
TEST_F(StacksTest, LibraryLoadedLaterJoinsTheModuleMap) {
  auto source = make_stack_source();
  const auto before = run_source(*source, true);
  const auto libc = std::find_if(before.modules.begin(), before.modules.end(), [](const auto& m) {
    return m.path.find("/libc.so.6") != std::string::npos;
  });
  ASSERT_NE(libc, before.modules.end());
  const std::string dir = libc->path.substr(0, libc->path.rfind('/'));
  std::string name;
  for (const char* c : {"libbz2.so.1.0", "libz.so.1", "libelf.so.1", "libdw.so.1"})
    if (dlopen(c, RTLD_NOW | RTLD_NOLOAD) == nullptr && access((dir + "/" + c).c_str(), R_OK) == 0) {
      name = c;
      break;
    }
  if (name.empty()) GTEST_SKIP() << "no library left to load from " << dir;
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  void* handle = dlopen(("./" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
  const std::string error = handle == nullptr ? dlerror() : "";
  const auto after = run_source(*source, false);
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_NE(handle, nullptr) << error;
  // Same file, though maybe through another directory link (/lib -> usr/lib).
  const auto same_file = [](const std::string& a, const std::string& b) {
    char ra[4096], rb[4096];
    return realpath(a.c_str(), ra) != nullptr && realpath(b.c_str(), rb) != nullptr &&
           std::string(ra) == rb;
  };
  const auto loaded = std::find_if(after.modules.begin(), after.modules.end(), [&](const auto& m) {
    return m.path[0] == '/' && same_file(m.path, dir + "/" + name);
  });
  EXPECT_NE(loaded, after.modules.end()) << name;
  for (const auto& m : after.modules)
    for (const auto& old : before.modules) EXPECT_NE(m.id, old.id);
  note_modules_changed();  // nothing new since: nothing emitted
  EXPECT_TRUE(run_source(*source, false).modules.empty());
}

// libunwind.so.8 exports a weak `backtrace`: loaded RTLD_LOCAL it stays
// out of the global scope, so the program's backtrace() is still glibc's.
TEST_F(StacksTest, LibunwindStaysOutOfTheGlobalScope) {
  ASSERT_NE(site_a(), 0u);
  // The fast walker's fallback loads later, on a thread of its own.
  start_fallback_unwinder_load();
  for (int i = 0; i < 5000 && !fallback_unwinder_settled(); ++i) usleep(1000);
  ASSERT_TRUE(fallback_unwinder_settled());
  EXPECT_NE(dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "unw_backtrace"), nullptr);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "backtrace"), dlsym(libc, "backtrace"));
}

TEST_F(StacksTest, DisabledStacksGiveZeroAndEmitNothing) {
  configure_stacks(false, 32);
  EXPECT_EQ(site_a(), 0u);
  auto source = make_stack_source();
  const auto out = run_source(*source, true);
  EXPECT_TRUE(out.stacks.empty());
  EXPECT_TRUE(out.modules.empty());
  EXPECT_TRUE(out.markers.empty());  // off by choice: nothing to explain on the timeline
  ASSERT_TRUE(out.status.has_value());  // ... but the trace says they were off
  EXPECT_EQ(out.status->state, static_cast<uint8_t>(fb::StackCaptureState::Off));
  EXPECT_EQ(out.status->reason, "");
  configure_stacks(true, 32);
  EXPECT_NE(site_a(), 0u);
}

TEST_F(StacksTest, TheTraceSaysStacksWereOnAndOnlyWhatChanged) {
  configure_stacks(true, 24);
  auto source = make_stack_source();
  const auto first = run_source(*source, true);
  ASSERT_TRUE(first.status.has_value());
  EXPECT_EQ(first.status->state, static_cast<uint8_t>(fb::StackCaptureState::Active));
  EXPECT_EQ(first.status->depth, 24u);
  EXPECT_FALSE(run_source(*source, false).status.has_value());  // unchanged: not repeated
  configure_stacks(true, 32);
}

}  // namespace
}  // namespace gpuscope::stacks
