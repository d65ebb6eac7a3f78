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
#include <string>
#include <vector>

#include "../e2e/e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

class PyTorchShapes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
    if (!std::filesystem::exists(bin("torch_steps"))) GTEST_SKIP() << "torch_steps is not built (no CUDA samples)";
  }

  // Traces `torch_steps --case WHICH` on simgpu (with SIMGPU_NODE=node when
  // given); the analysis as JSON, and its text in text_.
  json analyze(const std::string& which, int steps, const std::string& node = "") {
    const std::string path = dir_.file(which + ".gpuscope");
    std::vector<std::string> env = {"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)};
    if (!node.empty()) env.push_back("SIMGPU_NODE=" + std::string(GPUSCOPE_SOURCE_DIR) + "/samples/simgpu/nodes/" + node);
    const auto ran = run({gpuscope_exe(), "run", "-q", "-o", path, "--", bin("torch_steps"), "--case", which,
                          "--steps=" + std::to_string(steps)},
                         environment_with(env, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE", "CUDA_VISIBLE_DEVICES"}));
    EXPECT_EQ(ran.exit_code(), 0) << ran.err;
    text_ = run({gpuscope_exe(), "analyze", path}, clean_env()).out;
    const auto r = run({gpuscope_exe(), "analyze", "--json", path}, clean_env());
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  // The finding `id`, which must name the shape in its evidence and start
  // its fix with the PyTorch words (the general fix follows them).
  const json* expect_named(const json& j, const std::string& id, const std::string& evidence,
                           const std::string& fix_start, const std::string& general_fix) {
    for (const auto& f : j["findings"]) {
      if (f["id"] != id) continue;
      const std::string fix = f["fix"].get<std::string>();
      EXPECT_EQ(fix.rfind(fix_start, 0), 0u) << fix;
      EXPECT_NE(fix.find(general_fix), std::string::npos) << fix;
      EXPECT_NE(f["evidence"].dump().find(evidence), std::string::npos) << f["evidence"].dump(2);
      EXPECT_NE(text_.find(fix_start), std::string::npos) << text_;
      return &f;
    }
    ADD_FAILURE() << "no " << id << " in " << j["findings"].dump(2);
    return nullptr;
  }

  TempDir dir_;
  std::string text_;
};

TEST_F(PyTorchShapes, ItemEveryStepIsNamedAtTheStepFunction) {
  // Sync-bound when the machine is quiet; under load the host's share of
  // each step grows, so the class is not asserted, the named finding is.
  const json j = analyze("item", 10000);
  ASSERT_FALSE(j.is_discarded());
  expect_named(j, "sync.host_blocked_in_synchronization",
               "PyTorch: `.item()` (at::native::_local_scalar_dense_cuda(at::Tensor const&)) in the stacks of "
               "10000 of the 10000 cited calls, called from train_step_item(at::Tensor&) (torch_steps.cpp:",
               "`.item()` at train_step_item(at::Tensor&) (torch_steps.cpp:",
               "launch work asynchronously and synchronize once per batch");
  EXPECT_NE(text_.find("in the step loop synchronizes every step: keep the value on the GPU"), std::string::npos);
}

TEST_F(PyTorchShapes, PageableToCudaCopiesAskForPinMemoryAndNonBlocking) {
  const json j = analyze("copies", 1000);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["verdict"]["class"], "pcie_bound") << j["findings"].dump(2);
  expect_named(j, "pcie.host_blocked_in_copies", "PyTorch: a tensor copy (.to() / .cuda() / .cpu())",
               "`.to('cuda')` / `.cuda()` from pageable memory: DataLoader(pin_memory=True)",
               "copy from pinned buffers (cudaHostAlloc / cudaHostRegister)");
  EXPECT_NE(text_.find(".to(device, non_blocking=True)"), std::string::npos) << text_;
  EXPECT_NE(text_.find("called from train_step_copies(at::Tensor const&) (torch_steps.cpp:"), std::string::npos) << text_;
}

TEST_F(PyTorchShapes, EmptyCacheInTheLoopIsToldToGo) {
  const json j = analyze("empty_cache", 1000);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["verdict"]["class"], "memory_bound") << j["findings"].dump(2);
  expect_named(j, "memory.allocator_churn", "PyTorch: torch.cuda.empty_cache() (c10::cuda::CUDACachingAllocator::",
               "torch.cuda.empty_cache() at train_step_empty_cache() (torch_steps.cpp:",
               "allocate once and reuse");
  EXPECT_NE(text_.find("frees the caching allocator's blocks"), std::string::npos) << text_;
  EXPECT_NE(text_.find("remove it"), std::string::npos) << text_;
}

TEST_F(PyTorchShapes, IsAvailableFalseNamesWhatFailed) {
  const json j = analyze("no_gpu", 50, "no-device.json");
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["verdict"]["class"], "cpu_fallback") << j["findings"].dump(2);
  expect_named(j, "fallback.cpu_fallback", "PyTorch: torch.cuda.is_available() (c10::cuda::",
               "torch.cuda.is_available() was False at main (torch_steps.cpp:",
               "make the service fail at start when no GPU is usable");
  EXPECT_NE(text_.find("was False at main (torch_steps.cpp:"), std::string::npos) << text_;
  EXPECT_NE(text_.find("): cudaGetDeviceCount returned cudaErrorNoDevice (100)"), std::string::npos) << text_;
}

}  // namespace
}  // namespace gpuscope::test
