// Offline symbolization of recorded stacks with libdw: a return address in
// this test binary resolves to function, file and line, an inlined call
// shows as its own frame, and a module whose file is gone (or whose
// build-id differs) is left as module+offset.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "kernel_names.h"
#include "symbolizer.h"

namespace gpuscope::analyzer {
namespace {

// A loaded object's address range as the capture side records it.
void describe_loaded(const dl_phdr_info* info, container::ModuleDescription* m) {
  m->load_address = info->dlpi_addr;
  m->low_address = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m->low_address = std::min<uint64_t>(m->low_address, info->dlpi_addr + ph.p_vaddr);
    m->high_address = std::max<uint64_t>(m->high_address, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
}

// The main executable as the capture side records it.
container::ModuleDescription this_executable(const std::string& path) {
  container::ModuleDescription m;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        describe_loaded(info, static_cast<container::ModuleDescription*>(out));
        return 1;  // the first object is the executable
      },
      &m);
  m.id = 1;
  m.path = path;
  return m;
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

__attribute__((noinline)) uint64_t return_address() {
  uint64_t pc = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(pc));  // keep the call a call
  return pc;
}

__attribute__((always_inline)) inline uint64_t inlined_caller() {
  return return_address();  // the line an [inlined] frame must point at
}

__attribute__((noinline)) uint64_t outer_function() {
  const uint64_t pc = inlined_caller();
  asm volatile("" ::: "memory");
  return pc;
}

// Two inlined levels: each frame must carry the line of its own body.
__attribute__((always_inline)) inline uint64_t innermost_inline() {
  return return_address();
}
constexpr int kInnermostCallLine = __LINE__ - 2;

__attribute__((always_inline)) inline uint64_t middle_inline() {
  const uint64_t pc = innermost_inline();
  asm volatile("nop");  // not outer_function's code: the linker would fold the two into one
  return pc;
}
constexpr int kMiddleCallLine = __LINE__ - 4;

__attribute__((noinline)) uint64_t outer_of_two() {
  const uint64_t pc = middle_inline();
  asm volatile("" ::: "memory");
  return pc;
}
constexpr int kOuterCallLine = __LINE__ - 4;

reader::TraceSummary summary_with(const container::ModuleDescription& module, uint64_t pc) {
  reader::TraceSummary s;
  s.modules.push_back(module);
  s.stacks[7] = {pc};
  return s;
}

TEST(Symbolizer, ReturnAddressResolvesWithInlinedFrames) {
  const uint64_t pc = outer_function();
  const reader::TraceSummary s = summary_with(this_executable(self_path()), pc);
  const Symbolizer symbols(s);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_NE(frames[0].function.find("inlined_caller"), std::string::npos) << frames[0].text();
  EXPECT_NE(frames[0].file.find("test_symbolizer.cpp"), std::string::npos) << frames[0].text();
  EXPECT_FALSE(frames[1].inlined);
  EXPECT_NE(frames[1].function.find("outer_function"), std::string::npos) << frames[1].text();
  EXPECT_GT(frames[1].line, 0);
  EXPECT_NE(frames[0].text().find("[inlined]"), std::string::npos);
  EXPECT_EQ(symbols.symbolized(), 1u);
}

// libdw's dwarf_getscopes gives the innermost inlined call only: the
// function around a chain of them was shown with its callee's line.
TEST(Symbolizer, EveryLevelOfInlinedCallsIsAFrameWithItsOwnLine) {
  const reader::TraceSummary s = summary_with(this_executable(self_path()), outer_of_two());
  const auto frames = Symbolizer(s).stack(7, 8);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_NE(frames[0].function.find("innermost_inline"), std::string::npos) << frames[0].text();
  EXPECT_EQ(frames[0].line, kInnermostCallLine) << frames[0].text();
  EXPECT_NE(frames[1].function.find("middle_inline"), std::string::npos) << frames[1].text();
  EXPECT_EQ(frames[1].line, kMiddleCallLine) << frames[1].text();
  EXPECT_NE(frames[2].function.find("outer_of_two"), std::string::npos) << frames[2].text();
  EXPECT_EQ(frames[2].line, kOuterCallLine) << frames[2].text();
  EXPECT_TRUE(frames[0].inlined && frames[1].inlined && !frames[2].inlined);
}

TEST(Symbolizer, MissingBinaryLeavesModuleAndOffset) {
  const uint64_t pc = outer_function();
  container::ModuleDescription gone = this_executable("/nonexistent/dir/app");
  const reader::TraceSummary s = summary_with(gone, pc);
  const Symbolizer symbols(s);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty());
  EXPECT_EQ(frames[0].text(), "app+0x" + fmt::format("{:x}", pc - gone.load_address));
  EXPECT_EQ(symbols.unsymbolized(), 1u);
}

TEST(Symbolizer, ADifferentBuildIdIsNotTrusted) {
  const uint64_t pc = outer_function();
  container::ModuleDescription m = this_executable(self_path());
  m.build_id = {0xde, 0xad, 0xbe, 0xef};  // not this file's
  const reader::TraceSummary s = summary_with(m, pc);
  const Symbolizer symbols(s);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty()) << frames[0].text();
}

TEST(Symbolizer, AnAddressInManyStacksResolvesAlikeInEach) {
  const uint64_t pc = outer_function();
  reader::TraceSummary s = summary_with(this_executable(self_path()), pc);
  s.stacks[8] = {pc, pc};
  const Symbolizer symbols(s);
  const auto once = symbols.stack(7, 8);
  const auto twice = symbols.stack(8, 8);
  ASSERT_EQ(once.size(), 2u);
  ASSERT_EQ(twice.size(), 4u);
  for (size_t i = 0; i < twice.size(); ++i) EXPECT_EQ(twice[i].text(), once[i % 2].text());
  EXPECT_EQ(symbols.symbolized(), 3u);  // every use counts, resolved or remembered
}

// For a verdict alone (pipeline.h, Detail::Verdict): the same frames, in
// the same places, each as its module and offset; nothing is opened.
TEST(Symbolizer, ModulesLeftUnreadNameNoFrame) {
  const uint64_t pc = outer_function();
  const container::ModuleDescription self = this_executable(self_path());
  const reader::TraceSummary s = summary_with(self, pc);
  const Symbolizer symbols(s, Symbolizer::Modules::Unread);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty()) << frames[0].text();
  EXPECT_EQ(frames[0].text(), fmt::format("{}+0x{:x}", self_path().substr(self_path().rfind('/') + 1),
                                          pc - self.load_address));
  EXPECT_EQ(symbols.unsymbolized(), 1u);
}

// The loaded object whose path contains `name`, described as the capture
// side records it.
container::ModuleDescription loaded_module(const char* name) {
  struct Search {
    const char* name;
    container::ModuleDescription m;
  } search{name, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto* s = static_cast<Search*>(out);
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, s->name) == nullptr) return 0;
        s->m.path = info->dlpi_name;
        describe_loaded(info, &s->m);
        return 1;
      },
      &search);
  search.m.id = 2;
  return search.m;
}

// libc's frames by their symbols alone, whether or not a debug package
// would give them source lines: those lines say nothing of the program.
TEST(Symbolizer, CRuntimeFramesAreNamedWithoutSourceLines) {
  const container::ModuleDescription libc = loaded_module("/libc.so.6");
  ASSERT_FALSE(libc.path.empty());
  // A return address just past the entry of getpid: the lookup is at pc - 1.
  const uint64_t pc = reinterpret_cast<uint64_t>(&getpid) + 1;
  ASSERT_TRUE(pc >= libc.low_address && pc < libc.high_address);
  const reader::TraceSummary s = summary_with(libc, pc);
  const Symbolizer symbols(s);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].function.find("getpid"), std::string::npos) << frames[0].text();
  EXPECT_TRUE(frames[0].file.empty()) << frames[0].text();
  EXPECT_FALSE(frames[0].inlined);
  EXPECT_EQ(frames[0].module, "libc.so.6");
}

bool is_loaded(const char* name) { return loaded_module(name).low_address != 0; }

// A module without a local debug file (liblzma, which libdw itself loads)
// is named from its own symbols; asking libdw's debuginfod fallback would
// load libcurl and some 25 libraries for a server nobody configured.
TEST(Symbolizer, NoDebuginfodClientUnlessAServerIsConfigured) {
  unsetenv("DEBUGINFOD_URLS");
  void* const lzma_function = dlsym(RTLD_DEFAULT, "lzma_version_number");
  ASSERT_NE(lzma_function, nullptr);
  ASSERT_FALSE(is_loaded("libdebuginfod"));
  const reader::TraceSummary s =
      summary_with(loaded_module("/liblzma.so"), reinterpret_cast<uint64_t>(lzma_function) + 1);
  const Symbolizer symbols(s);
  const auto frames = symbols.stack(7, 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].function.find("lzma_version_number"), std::string::npos) << frames[0].text();
  EXPECT_FALSE(is_loaded("libdebuginfod"));
}

TEST(Symbolizer, UnknownStackIsEmpty) {
  const reader::TraceSummary s;
  const Symbolizer symbols(s);
  EXPECT_TRUE(symbols.stack(99, 8).empty());
}

}  // namespace
}  // namespace gpuscope::analyzer

namespace gpuscope::analyzer {
namespace {

// CUPTI's kernel names on an H200 (docs/gpu-validation.md, run 2), and the
// shapes of names from templates and already-plain names.
TEST(KernelNames, MangledNamesComeOutAsTheKernelsOwnName) {
  EXPECT_EQ(short_kernel_name("_ZN44_GLOBAL__N__47170728_15_memory_bound_cu_main12stream_scaleEPfPKffm"),
            "stream_scale");
  EXPECT_EQ(short_kernel_name("_Z6squarePfi"), "square");
  EXPECT_EQ(short_kernel_name("_ZN3ops4gemmIfLi128EEEvPKT_S3_PS1_i"), "ops::gemm<float, 128>");
  EXPECT_EQ(short_kernel_name("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"),
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32");
  EXPECT_EQ(short_kernel_name("_Znot a real mangled name"), "_Znot a real mangled name");
  EXPECT_EQ(short_kernel_name(""), "");
}

}  // namespace
}  // namespace gpuscope::analyzer
