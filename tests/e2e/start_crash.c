/* A dynamically linked program that dies by SIGSEGV before any library's
 * initializer runs (DT_PREINIT_ARRAY runs first of all), so before
 * libgpuscope.so could create a trace: what `gpuscope run` must then
 * report is the signal, not "statically linked". */
#include <signal.h>

static void crash_first(int argc, char** argv, char** envp) {
  (void)argc;
  (void)argv;
  (void)envp;
  raise(SIGSEGV);
}

__attribute__((section(".preinit_array"), used)) static void (*const crash_first_entry)(int, char**, char**) =
    crash_first;

int main(void) { return 0; }
