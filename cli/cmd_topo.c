/* cli/cmd_topo.c — `tenet topo` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_topo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet topo: not implemented yet\n");
  return 3;
}
