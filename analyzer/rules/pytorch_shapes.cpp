// PyTorch's shapes from stack frames: one table, most specific shape first
// (print(tensor) reaches .item(); .item() reaches the copy kernels), and
// the words each shape's fix takes in PyTorch's terms.
#include "pytorch_shapes.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

// A native row: the function's namespace or class prefix and its last name
// component ("c10::cuda::" + "device_count_impl" matches
// c10::cuda::(anonymous namespace)::device_count_impl(bool)). A Python row:
// the .py path's tail and the qualified name's prefix ("" = any function).
struct ShapePattern {
  PyTorchShape shape;
  const char* scope;
  const char* name;
};

constexpr ShapePattern kPatterns[] = {
    {PyTorchShape::PrintTensor, "torch/_tensor_str.py", ""},
    {PyTorchShape::ToList, "torch::utils::", "tensor_to_list"},
    {PyTorchShape::Item, "at::native::", "_local_scalar_dense_cuda"},
    {PyTorchShape::Item, "at::", "_local_scalar_dense"},
    {PyTorchShape::Item, "at::native::", "item"},
    {PyTorchShape::Synchronize, "torch/cuda/__init__.py", "synchronize"},
    {PyTorchShape::Synchronize, "c10::cuda::", "device_synchronize"},
    {PyTorchShape::EmptyCache, "torch/cuda/memory.py", "empty_cache"},
    {PyTorchShape::EmptyCache, "c10::cuda::CUDACachingAllocator::", "emptyCache"},
    {PyTorchShape::CacheFlushOnOom, "c10::cuda::CUDACachingAllocator::", "release_cached_blocks"},
    {PyTorchShape::IsAvailable, "torch/cuda/__init__.py", "is_available"},
    {PyTorchShape::IsAvailable, "torch/cuda/__init__.py", "device_count"},
    {PyTorchShape::IsAvailable, "c10::cuda::", "device_count_impl"},
    {PyTorchShape::IsAvailable, "c10::cuda::", "device_count"},
    {PyTorchShape::IsAvailable, "c10::cuda::", "device_count_ensure_non_zero"},
    {PyTorchShape::TensorCopy, "at::native::", "copy_kernel_cuda"},
    {PyTorchShape::TensorCopy, "at::native::", "copy_impl"},
    {PyTorchShape::TensorCopy, "at::native::", "copy_"},
    {PyTorchShape::TensorCopy, "at::native::", "_to_copy"},
    {PyTorchShape::DataLoaderInline, "torch/utils/data/dataloader.py", "_SingleProcessDataLoaderIter"},
    {PyTorchShape::DataLoader, "torch/utils/data/dataloader.py", ""},
};

bool is_python(const Frame& f) { return f.python || f.file.ends_with(".py"); }

// "a::(anonymous namespace)::f(int) const" -> "a::f": the name without
// anonymous namespaces, parameters or ABI tags.
std::string qualified_name(const std::string& function) {
  std::string s = function;
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (size_t at; (at = s.find(kAnonymous)) != std::string::npos;) s.erase(at, kAnonymous.size());
  return s.substr(0, s.find_first_of("([ "));
}

bool matches(const ShapePattern& p, const Frame& f) {
  if (is_python(f)) return f.file.ends_with(p.scope) && f.function.starts_with(p.name);
  const std::string name = qualified_name(f.function);
  return name.starts_with(p.scope) && name.ends_with(std::string("::") + p.name);
}

// Frames that are nobody's call site: CPython's own (its library, its
// executable, its C API, its frozen modules) and the C library's start-up.
// A Python frame of a real file is the script's, whatever module it names.
bool is_runtime(const Frame& f) {
  if (is_python(f)) return false;
  if (f.file.starts_with("<frozen ")) return true;
  for (const char* module : {"libpython", "python", "libc.so", "ld-linux"})
    if (f.module.starts_with(module)) return true;
  return f.function.starts_with("_Py") || f.function.starts_with("Py");
}

// The user's own Python line where the stack has one (the headline rule of
// docs/python.md), else the first frame outward that is neither PyTorch's
// nor the runtime's.
std::string call_site_after(const std::vector<Frame>& frames, size_t matched) {
  for (size_t i = matched + 1; i < frames.size(); ++i)
    if (frames[i].python && frames[i].user) return frames[i].text();
  for (size_t i = matched + 1; i < frames.size(); ++i)
    if (!is_pytorch_frame(frames[i]) && !is_runtime(frames[i]) && !frames[i].function.empty())
      return frames[i].text();
  return {};
}

}  // namespace

bool is_pytorch_frame(const Frame& f) {
  if (is_python(f)) return f.file.find("/torch/") != std::string::npos;
  for (const char* lib : {"libtorch", "libc10", "libcaffe2"})
    if (f.module.starts_with(lib)) return true;
  const std::string name = qualified_name(f.function);
  for (const char* ns : {"at::", "c10::", "torch::", "caffe2::", "THP"})
    if (name.starts_with(ns)) return true;
  return false;
}

std::optional<ShapeMatch> match_pytorch_shape(const std::vector<Frame>& frames) {
  for (const ShapePattern& p : kPatterns)
    for (size_t i = 0; i < frames.size(); ++i)
      if (matches(p, frames[i])) return ShapeMatch{p.shape, frames[i].function, call_site_after(frames, i)};
  return std::nullopt;
}

namespace {

// Each shape's name in the evidence and its fix: the habit, " at SITE"
// when the stack has one, then the rest. The enum's order indexes it.
struct ShapeText {
  const char* words;
  const char* habit;
  const char* fix;
};

constexpr ShapeText kTexts[] = {
    {"print(tensor)", "print(tensor)",
     " copies the tensor to the host and synchronizes: print every N steps, or a value accumulated on the GPU"},
    {"`.tolist()`", "`.tolist()`",
     " copies the tensor to the host and synchronizes: keep it on the GPU and convert it once, or every N steps"},
    {"`.item()`", "`.item()`",
     " in the step loop synchronizes every step: keep the value on the GPU (accumulate it in a tensor) and read it "
     "every N steps"},
    {"torch.cuda.synchronize()", "torch.cuda.synchronize()",
     " waits for all the GPU's work: drop it from the step loop (keep it only around a timing measurement, or "
     "wait on one stream or event)"},
    {"torch.cuda.empty_cache()", "torch.cuda.empty_cache()",
     " in the loop frees the caching allocator's blocks (cudaFree synchronizes the device; with expandable "
     "segments it unmaps and releases their pages), and the next step allocates them again: remove it"},
    {"the caching allocator's out-of-memory retry",
     "the caching allocator ran out of memory and freed its cached blocks to retry",
     " (fragmentation or growing shapes): keep shapes static (pad or bucket them), set "
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or lower the batch size"},
    {"torch.cuda.is_available()", "torch.cuda.is_available() was False", ": "},  // + what failed
    {"a tensor copy (.to() / .cuda() / .cpu())", "", ""},                      // worded by direction
    {"DataLoader(num_workers=0)", "DataLoader(num_workers=0)",
     " loads every batch on the training thread: raise num_workers, with pin_memory=True and "
     "persistent_workers=True"},
    {"the DataLoader", "the DataLoader",
     " holds the GPU: raise num_workers and prefetch_factor, keep persistent_workers=True, and move decoding and "
     "augmentation to the GPU"},
};
static_assert(std::size(kTexts) == static_cast<size_t>(PyTorchShape::DataLoader) + 1);

const ShapeText& text_of(PyTorchShape s) { return kTexts[static_cast<size_t>(s)]; }

// Why CUDA was unavailable, from the trace: the first failing call and the
// first library that failed to load.
std::string unavailable_cause(const Metrics& x) {
  std::vector<std::string> causes;
  if (!x.failures.empty()) {
    const CudaError& e = x.failures.front();
    causes.push_back(fmt::format("{} returned {} ({})", e.function, e.name.empty() ? "an error" : e.name, e.code));
  }
  if (!x.failed_loads.empty()) causes.push_back("failed to load " + x.failed_loads.front());
  if (x.driver_problem) causes.push_back("driver: " + *x.driver_problem);
  if (x.devices_hidden) causes.push_back(fmt::format("CUDA_VISIBLE_DEVICES='{}'", *x.visible_devices));
  return causes.empty() ? "the CUDA calls failed" : fmt::format("{}", fmt::join(causes, "; "));
}

std::string copy_fix(const Metrics& x) {
  if (x.d2h_bytes > x.h2d_bytes)
    return "`.cpu()` / `.to('cpu')` copies results back and waits for the GPU: keep them on the GPU, or copy into a "
           "pinned tensor with non_blocking=True and read them after one synchronize";
  if (x.pageable_share && *x.pageable_share >= kPageableWarn)
    return "`.to('cuda')` / `.cuda()` from pageable memory: DataLoader(pin_memory=True) (or tensor.pin_memory()) and "
           ".to(device, non_blocking=True)";
  return "`.to('cuda')` / `.cuda()` copies hold the step: move batches with .to(device, non_blocking=True) from "
         "pinned memory and keep tensors on the GPU between steps";
}

std::string shape_fix(PyTorchShape s, const std::string& at, const Metrics& x) {
  if (s == PyTorchShape::TensorCopy) return copy_fix(x);
  const ShapeText& t = text_of(s);
  std::string fix = std::string(t.habit) + at + t.fix;
  if (s == PyTorchShape::IsAvailable) fix += unavailable_cause(x);
  return fix;
}

struct Cited {
  uint32_t stack_id;
  uint64_t count;  // calls, or CPU samples for a sampled host stack
  Symbolizer::Walk walk;
};

// The stacks a finding is about: its call sites and host stacks; for a
// fallback, every stack the failing functions were called from.
std::vector<Cited> cited_stacks(const Finding& f, const TraceModel& m, const Metrics& x) {
  std::vector<Cited> out;
  for (const CallSite& s : f.sites) out.push_back({s.stack_id, s.count, Symbolizer::Walk::Unwound});
  for (const HostStackSite& s : f.host_stacks) out.push_back({s.stack_id, s.samples, Symbolizer::Walk::Sampled});
  if (f.id.starts_with("fallback.")) {
    std::set<std::string> failing;
    for (const CudaError& e : x.failures) failing.insert(e.function);
    for (const auto& [key, site] : m.sites)
      if (failing.count(m.summary.name_of(key.function_id)))
        out.push_back({key.stack_id, site.calls.count, Symbolizer::Walk::Unwound});
  }
  return out;
}

constexpr size_t kFramesSearched = 64;
// A habit behind fewer of the cited calls than this share is not what the
// finding is about (one .item() at the end of a loop that synchronizes
// every step): it is not named.
constexpr double kShapeShare = 0.10;

void name_shapes_in(Finding* f, const Symbolizer& symbols, const TraceModel& m, const Metrics& x) {
  std::map<PyTorchShape, std::pair<ShapeMatch, uint64_t>> seen;  // the first match, and the calls showing it
  uint64_t total = 0;
  bool sampled_only = true;
  for (const Cited& c : cited_stacks(*f, m, x)) {
    total += c.count;
    sampled_only &= c.walk == Symbolizer::Walk::Sampled;
    if (auto match = match_pytorch_shape(symbols.stack(c.stack_id, kFramesSearched, c.walk)))
      seen.try_emplace(match->shape, *match, 0).first->second.second += c.count;
  }
  std::vector<std::string> fixes;
  for (const auto& [shape, first] : seen) {
    const auto& [match, count] = first;
    if (static_cast<double>(count) < kShapeShare * static_cast<double>(total)) continue;
    f->evidence.push_back(fmt::format("PyTorch: {} ({}) in the stacks of {} of the {} cited {}{}", text_of(shape).words,
                                      match.frame, count, total, sampled_only ? "CPU samples" : "calls",
                                      match.call_site.empty() ? "" : ", called from " + match.call_site));
    fixes.push_back(shape_fix(shape, match.call_site.empty() ? "" : " at " + match.call_site, x));
  }
  if (!fixes.empty()) f->fix = fmt::format("{}. {}", fmt::join(fixes, "; "), f->fix);
}

}  // namespace

void name_pytorch_shapes(const Symbolizer& symbols, const TraceModel& model, const Metrics& metrics,
                         Analysis* analysis) {
  for (Finding& f : analysis->findings) name_shapes_in(&f, symbols, model, metrics);
}

}  // namespace gpuscope::analyzer
