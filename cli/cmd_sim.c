/* cli/cmd_sim.c — `tenet sim` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_sim(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet sim: not implemented yet\n");
  return 3;
}
