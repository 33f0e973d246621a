/* cli/cmd_batch.c — `tenet batch` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_batch(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet batch: not implemented yet\n");
  return 3;
}
