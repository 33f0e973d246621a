/* cli/plot_internal.h — private to cli/plot.c and cli/heatmap.c: one PLplot session that
 * renders into a temporary file, keeps PLplot silent and survives its fatal errors. */
#ifndef TENET_CLI_PLOT_INTERNAL_H
#define TENET_CLI_PLOT_INTERNAL_H

#include "cli/cli.h"

/* Colour map 0 indices set by cli_i_plot_begin. */
enum { PLOT_BG = 0, PLOT_FG = 1, PLOT_GRID = 2, PLOT_SERIES = 3, PLOT_NSERIES = 8 };

typedef struct plot_session {
  const char *path;
  char *target; /* path with its links followed (tn_out_plan) */
  char *tmp;    /* what PLplot writes; NULL when it writes straight into target */
  int saved_stderr;
} plot_session_t;

/* Checks the extension, makes the temporary file, silences stderr and starts PLplot on
 * a width x height canvas with the project's palette. On failure nothing is left open. */
tn_status_t cli_i_plot_begin(plot_session_t *s, const char *path, int width, int height,
                             tn_err_t *err);
/* Ends PLplot, restores stderr, renames into place (or removes the temporary file when
 * PLplot reported an error: TN_IO with its message). */
tn_status_t cli_i_plot_end(plot_session_t *s, tn_err_t *err);

/* Runs draw(ctx) inside the begun session (one at a time: PLplot's state is global),
 * catching PLplot's fatal errors; cli_i_plot_end reports them. */
void cli_i_plot_run(void (*draw)(void *ctx), void *ctx);

#endif
