/* tenet — entry point; everything lives in cli/. */
#include "cli/cli.h"

int main(int argc, char **argv) { return cli_main(argc, argv); }
