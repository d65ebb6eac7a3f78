// The PyTorch shape matcher (analyzer/rules/pytorch_shapes.h) on stacks
// written as the Symbolizer gives them: libtorch's native frames as their
// demangled names read, Python frames as qualified name and .py path. The
// end-to-end check on a traced program is tests/verdicts/test_pytorch_shapes.cpp.
#include <gtest/gtest.h>

#include "pytorch_shapes.h"

namespace gpuscope::analyzer {
namespace {

Frame native(const std::string& function, const std::string& module = "libtorch_cuda.so") {
  return Frame{function, "", 0, module, 0x1000, false};
}
Frame program(const std::string& function, const std::string& file, int line) {
  return Frame{function, file, line, "train", 0x2000, false};
}
Frame python(const std::string& qualname, const std::string& file, int line) {
  return Frame{qualname, file, line, "", 0, false};
}
// A Python frame as the Symbolizer gives it from a captured stack (docs/python.md).
Frame captured_python(const std::string& qualname, const std::string& file, int line, bool user) {
  Frame f{qualname, file, line, "python", 0, false};
  f.python = true;
  f.user = user;
  return f;
}

const std::string kSite = "/usr/lib/python3/site-packages/torch/";

// The stack's shape is `shape`, with `call_site` as the program's frame.
void expect_shape(const std::vector<Frame>& frames, PyTorchShape shape, const std::string& call_site) {
  const auto m = match_pytorch_shape(frames);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->shape, shape);
  EXPECT_EQ(m->call_site, call_site);
}

TEST(PyTorchShapes, ItemIsNamedFromLocalScalarDenseWithTheProgramsCallSite) {
  expect_shape(
      {native("cudaStreamSynchronize", "libcudart.so.12"),
       native("at::cuda::memcpy_and_sync(void*, void const*, long, cudaMemcpyKind, "
              "CUstream_st*)"),
       native("at::native::_local_scalar_dense_cuda(at::Tensor const&)::{lambda()#1}::"
              "operator()() const"),
       native("at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
       native("at::_ops::_local_scalar_dense::call(at::Tensor const&)", "libtorch_cpu.so"),
       native("at::native::item(at::Tensor const&)", "libtorch_cpu.so"),
       native("THPVariable_item(_object*, _object*)", "libtorch_python.so"),
       native("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0"), python("train_one_epoch", "/home/u/train.py", 42)},
      PyTorchShape::Item, "train_one_epoch (train.py:42)");
}

TEST(PyTorchShapes, TheCallSiteIsTheUsersOwnLineNotALibraryBetween) {
  // A training framework between the user's loop and torch: its frame is a
  // library's, so the call site is the user's line outside it.
  expect_shape({native("at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
                captured_python("Tensor.item", kSite + "_tensor.py", 900, false),
                captured_python("Trainer.log_metrics", "/usr/lib/python3/site-packages/lightning/trainer.py", 310, false),
                captured_python("main.<locals>.step", "/home/u/train.py", 42, true),
                captured_python("main", "/home/u/train.py", 60, true)},
               PyTorchShape::Item, "main.<locals>.step (train.py:42)");
}

TEST(PyTorchShapes, TheMostSpecificShapeWins) {
  // print(tensor) reaches .item(); .tolist() reaches the copy kernels.
  expect_shape({native("at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
                python("_tensor_str", kSite + "_tensor_str.py", 180), python("main", "/home/u/train.py", 7)},
               PyTorchShape::PrintTensor, "main (train.py:7)");
  expect_shape({native("at::native::copy_kernel_cuda(at::TensorIterator&, bool)"),
                native("at::native::copy_(at::Tensor&, at::Tensor const&, bool)"),
                native("torch::utils::tensor_to_list(at::Tensor const&)", "libtorch_python.so"),
                program("main", "/src/main.cpp", 3)},
               PyTorchShape::ToList, "main (main.cpp:3)");
}

TEST(PyTorchShapes, TorchCudaSynchronizeIsNamedNativeOrPython) {
  expect_shape({native("cudaDeviceSynchronize", "libcudart.so.12"),
                native("c10::cuda::device_synchronize()", "libc10_cuda.so"), program("step", "/src/train.cpp", 20)},
               PyTorchShape::Synchronize, "step (train.cpp:20)");
  expect_shape({native("cudaDeviceSynchronize", "libcudart.so.12"),
                python("synchronize", kSite + "cuda/__init__.py", 985), python("train", "/home/u/train.py", 61)},
               PyTorchShape::Synchronize, "train (train.py:61)");
}

TEST(PyTorchShapes, CachingAllocatorEmptyCacheAndOutOfMemoryRetryDiffer) {
  const std::string alloc = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::";
  expect_shape(
      {native(alloc + "release_block(c10::cuda::CUDACachingAllocator::Block*)", "libc10_cuda.so"),
       native(alloc + "release_cached_blocks()", "libc10_cuda.so"), native(alloc + "emptyCache()", "libc10_cuda.so"),
       python("empty_cache", kSite + "cuda/memory.py", 192), python("step", "/home/u/train.py", 30)},
      PyTorchShape::EmptyCache, "step (train.py:30)");
  expect_shape({native(alloc + "release_cached_blocks()", "libc10_cuda.so"),
                native(alloc + "malloc(signed char, unsigned long, CUstream_st*)", "libc10_cuda.so")},
               PyTorchShape::CacheFlushOnOom, "");
}

// Without Python frames in the stack (native-only unwinding of a Python
// process), nothing below PyTorch is the program's: no call site, rather
// than CPython's or the C library's start-up.
// A Python frame is the script's whatever module the Symbolizer gives it;
// a frozen module's is the interpreter's.
TEST(PyTorchShapes, APythonFrameIsACallSiteAFrozenOneIsNot) {
  expect_shape({native("at::native::item(at::Tensor const&)", "libtorch_cpu.so"),
                Frame{"<module>", "<frozen runpy>", 88, "", 0, false},
                Frame{"step", "/home/u/train.py", 12, "python3.11", 0, false}},
               PyTorchShape::Item, "step (train.py:12)");
}

TEST(PyTorchShapes, TheInterpreterAndTheCLibraryAreNoCallSite) {
  expect_shape({native("c10::cuda::device_count()", "libc10_cuda.so"),
                native("THCPModule_getDeviceCount_wrap(_object*, _object*)", "libtorch_python.so"),
                native("cfunction_vectorcall_NOARGS", "libpython3.11.so.1.0"),
                native("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0"),
                native("Py_BytesMain", "libpython3.11.so.1.0"), native("main", "python3.11"),
                Frame{"__libc_start_call_main", "libc_start_call_main.h", 58, "libc.so.6", 0x29d90, false}},
               PyTorchShape::IsAvailable, "");
}

TEST(PyTorchShapes, DeviceCountInAnAnonymousNamespaceIsIsAvailable) {
  expect_shape({native("c10::cuda::(anonymous namespace)::device_count_impl(bool)", "libc10_cuda.so"),
                native("c10::cuda::device_count()", "libc10_cuda.so"),
                python("is_available", kSite + "cuda/__init__.py", 118), python("<module>", "/home/u/train.py", 3)},
               PyTorchShape::IsAvailable, "<module> (train.py:3)");
}

TEST(PyTorchShapes, DataLoaderWithoutWorkersIsToldFromOneWithWorkers) {
  expect_shape({python("_SingleProcessDataLoaderIter._next_data", kSite + "utils/data/dataloader.py", 674),
                python("_BaseDataLoaderIter.__next__", kSite + "utils/data/dataloader.py", 631),
                python("train", "/home/u/train.py", 20)},
               PyTorchShape::DataLoaderInline, "train (train.py:20)");
  expect_shape({python("_MultiProcessingDataLoaderIter._next_data", kSite + "utils/data/dataloader.py", 1329)},
               PyTorchShape::DataLoader, "");
}

TEST(PyTorchShapes, StacksWithoutPyTorchFramesMatchNothing) {
  EXPECT_FALSE(match_pytorch_shape({}).has_value());
  // Names that merely resemble PyTorch's: another namespace, another item().
  EXPECT_FALSE(
      match_pytorch_shape({native("cudaStreamSynchronize", "libcudart.so.13"),
                           native("mylib::native::_local_scalar_dense_cuda()", "libmylib.so"),
                           native("Cache::emptyCache()", "app"), native("at::native::items()", "app"),
                           program("main", "/src/main.cpp", 9), python("empty_cache", "/home/u/mycache/memory.py", 3)})
          .has_value());
  EXPECT_FALSE(is_pytorch_frame(program("main", "/src/main.cpp", 9)));
  EXPECT_TRUE(is_pytorch_frame(native("at::native::item(at::Tensor const&)")));
  EXPECT_TRUE(is_pytorch_frame(python("Module._call_impl", kSite + "nn/modules/module.py", 1511)));
}

}  // namespace
}  // namespace gpuscope::analyzer
