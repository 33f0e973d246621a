/* cli/cmd_et.c — `tenet et` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_et(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet et: not implemented yet\n");
  return 3;
}
