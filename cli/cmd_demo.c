/* cli/cmd_demo.c — `tenet demo` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet demo: not implemented yet\n");
  return 3;
}
