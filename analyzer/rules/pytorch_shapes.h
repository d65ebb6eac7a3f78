// The common PyTorch shapes behind a finding, recognized from the
// symbolized stacks of the calls it is about: the native frames of
// libtorch / libc10_cuda (their real C++ names) and Python frames
// (qualified name and .py path). A finding whose calls come from such a
// frame gets one evidence line naming it and the fix in PyTorch's words
// before its own; findings without a PyTorch frame are left exactly as the
// rules made them (docs/pytorch.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rules.h"
#include "symbolizer.h"

namespace gpuscope::analyzer {

enum class PyTorchShape {
  PrintTensor,      // print(tensor) / repr: torch/_tensor_str.py
  ToList,           // tensor.tolist(): torch::utils::tensor_to_list
  Item,             // tensor.item(): at::native::_local_scalar_dense_cuda
  Synchronize,      // torch.cuda.synchronize(): c10::cuda::device_synchronize
  EmptyCache,       // torch.cuda.empty_cache(): the caching allocator's emptyCache
  CacheFlushOnOom,  // the caching allocator freeing its cache to retry an allocation
  IsAvailable,      // torch.cuda.is_available() / device_count(): c10::cuda::device_count
  TensorCopy,       // .to() / .cuda() / .cpu(): at::native::copy_ and the copy kernels
  DataLoaderInline, // DataLoader(num_workers=0): _SingleProcessDataLoaderIter
  DataLoader,       // torch/utils/data/dataloader.py
};

// One stack's shape: which, the frame that says so, and the innermost
// frame outside PyTorch that led to it (the program's call site; empty
// when the stack has none).
struct ShapeMatch {
  PyTorchShape shape;
  std::string frame;  // the matching frame's function, as symbolized
  std::string call_site;
};

// The most specific shape any frame of the stack (innermost first) shows;
// none when no frame is PyTorch's.
std::optional<ShapeMatch> match_pytorch_shape(const std::vector<Frame>& frames);

// Whether the frame belongs to PyTorch (its C++ namespaces, its libraries,
// or the torch package's Python files).
bool is_pytorch_frame(const Frame& f);

// Names the shapes in the findings whose call sites (or CPU-bound host
// stacks, or a fallback's failing calls) show one.
void name_pytorch_shapes(const Symbolizer& symbols, const TraceModel& model, const Metrics& metrics,
                         Analysis* analysis);

}  // namespace gpuscope::analyzer
