// A trivial program linked with two libraries that use CUDA from their ELF
// constructors (early_library.cpp): everything they print, then main's line.
#include <cstdio>

extern "C" void early_finish_ctor101();
extern "C" void early_finish_ctor_default();

int main() {
  early_finish_ctor101();
  early_finish_ctor_default();
  std::printf("main: done\n");
  return 0;
}
