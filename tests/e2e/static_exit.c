/* Linked statically: no program interpreter, so LD_PRELOAD never reaches
 * it. Exits with its first argument. */
#include <stdlib.h>

int main(int argc, char** argv) { return argc > 1 ? atoi(argv[1]) : 0; }
