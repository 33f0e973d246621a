/* cli/cmd_compare.c — `tenet compare` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_compare(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet compare: not implemented yet\n");
  return 3;
}
