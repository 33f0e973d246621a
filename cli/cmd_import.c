/* cli/cmd_import.c — `tenet import` (not finished: not listed in --help). */
#include "cli/cli.h"

int cmd_import(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "tenet import: not implemented yet\n");
  return 3;
}
