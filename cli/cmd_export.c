/* cli/cmd_export.c — `tenet export` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_export(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet export: not implemented yet\n");
  return 3;
}
