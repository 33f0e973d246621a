/* cli/cmd_synth.c — `tenet synth` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_synth(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet synth: not implemented yet\n");
  return 3;
}
