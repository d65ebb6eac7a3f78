// PyTorch's shapes end to end (docs/pytorch.md): torch_steps, a training
// loop on a fake libtorch whose functions carry PyTorch's names in
// PyTorch's namespaces (programs/fake_torch), traced on simgpu with
// `gpuscope run` and analyzed with `gpuscope analyze`: each habit's finding
// names it in PyTorch's words, with the loop's call site, and keeps the
// general fix after it. RUN_SERIAL like the other verdict tests: shares
// are about where time goes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "../e2e/e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

// One habit: the program's case, the class it must get ("" where load
// can change it), the finding that must name the habit (in its evidence
// and at the start of its fix, the general fix after), and words the text
// report must or must not show.
struct Case {
  const char* name;
  const char* which;  // torch_steps --case
  int steps;
  const char* node;   // samples/simgpu/nodes file, "" for the default node
  const char* expected_class;
  const char* finding;
  const char* evidence;
  const char* fix_start;
  const char* general_fix;
  std::vector<const char*> text_has;
  std::vector<const char*> text_lacks = {};
};

// Test names in ctest's list: the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Sync-bound when the machine is quiet; under load the host's share
      // of each step grows, so the class is not asserted, the finding is.
      {"item_every_step", "item", 10000, "", "", "sync.host_blocked_in_synchronization",
       "PyTorch: `.item()` (at::native::_local_scalar_dense_cuda(at::Tensor const&)) in the stacks of 10000 of the "
       "10000 cited calls, called from train_step_item(at::Tensor&) (torch_steps.cpp:",
       "`.item()` at train_step_item(at::Tensor&) (torch_steps.cpp:",
       "launch work asynchronously and synchronize once per batch",
       {"in the step loop synchronizes every step: keep the value on the GPU"}},
      // .item() every 20 steps in a loop that synchronizes every step
      // itself: 1 in 21 of the cited calls, the finding is about the loop's
      // synchronizes, so its fix stays general.
      {"item_every_20_steps_in_a_synchronizing_loop", "synchronize", 10000, "", "", "sync.host_blocked_in_synchronization",
       "cudaDeviceSynchronize: 9500 calls", "launch work asynchronously and synchronize once per batch", "",
       {}, {"PyTorch:", "`.item()`"}},
      {"torch_cuda_synchronize_every_step", "torch_synchronize", 10000, "", "",
       "sync.host_blocked_in_synchronization",
       "PyTorch: torch.cuda.synchronize() (c10::cuda::device_synchronize()) in the stacks of 10000 of the 10000",
       "torch.cuda.synchronize() at train_step_synchronize(at::Tensor&, bool, bool) (torch_steps.cpp:",
       "launch work asynchronously and synchronize once per batch", {"drop it from the step loop"}},
      {"pageable_to_cuda", "copies", 1000, "", "", "pcie.host_blocked_in_copies",
       "PyTorch: a tensor copy (.to() / .cuda() / .cpu())",
       "`.to('cuda')` / `.cuda()` from pageable memory: DataLoader(pin_memory=True)",
       "copy from pinned buffers (cudaHostAlloc / cudaHostRegister)",
       {".to(device, non_blocking=True)", "called from train_step_copies(at::Tensor const&) (torch_steps.cpp:"}},
      {"cpu_copies_back", "to_cpu", 1000, "", "", "pcie.host_blocked_in_copies",
       "PyTorch: a tensor copy (.to() / .cuda() / .cpu())",
       "`.cpu()` / `.to('cpu')` copies results back and waits for the GPU: keep them on the GPU",
       "keep tensors resident on the GPU between requests",
       {"called from train_step_to_cpu(at::Tensor&) (torch_steps.cpp:"}, {"DataLoader(pin_memory=True)"}},
      {"empty_cache_in_the_loop", "empty_cache", 1000, "", "memory_bound", "memory.allocator_churn",
       "PyTorch: torch.cuda.empty_cache() (c10::cuda::CUDACachingAllocator::",
       "torch.cuda.empty_cache() at train_step_empty_cache() (torch_steps.cpp:", "allocate once and reuse",
       {"frees the caching allocator's blocks", "remove it"}},
      // The same habit with expandable segments: empty_cache() unmaps and
      // releases the segment's pages (cuMemUnmap, cuMemRelease).
      {"empty_cache_with_expandable_segments", "empty_cache_expandable", 1000, "", "memory_bound",
       "memory.allocator_churn", "PyTorch: torch.cuda.empty_cache() (c10::cuda::CUDACachingAllocator::",
       "torch.cuda.empty_cache() at train_step_empty_cache() (torch_steps.cpp:", "allocate once and reuse",
       {"frees the caching allocator's blocks", "physical memory of CUDA's virtual memory API"}},
      {"is_available_false", "no_gpu", 50, "no-device.json", "cpu_fallback", "fallback.cpu_fallback",
       "PyTorch: torch.cuda.is_available() (c10::cuda::", "torch.cuda.is_available() was False at main (torch_steps.cpp:",
       "make the service fail at start when no GPU is usable",
       {"): cudaGetDeviceCount returned cudaErrorNoDevice (100)"}},
  };
  return all;
}

class PyTorchShapes : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
    if (!std::filesystem::exists(bin("torch_steps"))) GTEST_SKIP() << "torch_steps is not built (no CUDA samples)";
  }
};

TEST_P(PyTorchShapes, TheFindingNamesTheHabitInPyTorchsWordsAtItsCallSite) {
  const Case& c = GetParam();
  TempDir dir;
  const std::string path = dir.file(std::string(c.which) + ".gpuscope");
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)};
  if (*c.node) env.push_back("SIMGPU_NODE=" + std::string(GPUSCOPE_SOURCE_DIR) + "/samples/simgpu/nodes/" + c.node);
  const auto ran = run({gpuscope_exe(), "run", "-q", "-o", path, "--", bin("torch_steps"), "--case", c.which,
                        "--steps=" + std::to_string(c.steps)},
                       environment_with(env, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE", "CUDA_VISIBLE_DEVICES"}));
  ASSERT_EQ(ran.exit_code(), 0) << ran.err;
  const std::string text = run({gpuscope_exe(), "analyze", path}, clean_env()).out;
  const auto analyzed = run({gpuscope_exe(), "analyze", "--json", path}, clean_env());
  ASSERT_EQ(analyzed.exit_code(), 0) << analyzed.err;
  const json j = json::parse(analyzed.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  if (*c.expected_class) {
    EXPECT_EQ(j["verdict"]["class"], c.expected_class) << j["findings"].dump(2);
  }
  const json* named = nullptr;
  for (const auto& f : j["findings"])
    if (f["id"] == c.finding) named = &f;
  ASSERT_NE(named, nullptr) << "no " << c.finding << " in " << j["findings"].dump(2);
  const std::string fix = (*named)["fix"].get<std::string>();
  EXPECT_EQ(fix.rfind(c.fix_start, 0), 0u) << fix;
  EXPECT_NE(fix.find(c.general_fix), std::string::npos) << fix;
  EXPECT_NE((*named)["evidence"].dump().find(c.evidence), std::string::npos) << (*named)["evidence"].dump(2);
  EXPECT_NE(text.find(c.fix_start), std::string::npos) << text;
  for (const char* words : c.text_has) EXPECT_NE(text.find(words), std::string::npos) << words << "\n" << text;
  // What the named finding must not say. Another finding may rightly say
  // it: the .item() copies of a synchronizing loop are real copies, and on
  // a slow host their own finding (copies >= 10 %) names them.
  const std::string named_text = named->dump();
  for (const char* words : c.text_lacks)
    EXPECT_EQ(named_text.find(words), std::string::npos) << words << "\n" << named->dump(2);
}

INSTANTIATE_TEST_SUITE_P(Habits, PyTorchShapes, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpuscope::test
