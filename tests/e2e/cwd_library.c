// A library that must never be loaded: test_cli_conventions.cpp puts it in
// the working directory under the names of the CLI's own libraries. A
// search path with an empty entry (the current directory) would load it.
#include <unistd.h>

__attribute__((constructor)) static void say_loaded(void) {
  static const char message[] = "a library from the working directory was loaded\n";
  (void)!write(2, message, sizeof message - 1);
}
