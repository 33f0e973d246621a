/* cli/cmd_verify.c — `tenet verify` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_verify(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet verify: not implemented yet\n");
  return 3;
}
