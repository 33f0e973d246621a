/* cli/plot_internal.h — private to cli/plot.c and cli/heatmap.c: one PLplot session that
 * renders into a temporary file, keeps PLplot silent and survives its fatal errors. */
#ifndef TENET_CLI_PLOT_INTERNAL_H
#define TENET_CLI_PLOT_INTERNAL_H

#include <plplot.h>

#include "cli/cli.h"

/* PLplot is opened on first use (dlopen), not linked: its library and the dozen it pulls in
 * (freetype, qhull, ltdl, ...) would otherwise be mapped and relocated at every start of
 * tenet, about 0.5 ms of each `tenet synth`, which never plots. cli_i_plot_begin opens it;
 * the PLplot calls of plot.c and heatmap.c go through cli_pl below (the macros after it),
 * with PLplot's own prototypes. */
#define CLI_PL_FUNCS(X)                                                                            \
  X(c_pladv)                                                                                       \
  X(c_plbox)                                                                                       \
  X(c_plcol0)                                                                                      \
  X(c_plcol1)                                                                                      \
  X(c_plend)                                                                                       \
  X(c_plfill)                                                                                      \
  X(c_plinit)                                                                                      \
  X(c_pllab)                                                                                       \
  X(c_pllegend)                                                                                    \
  X(c_plline)                                                                                      \
  X(c_pllsty)                                                                                      \
  X(c_plmtex)                                                                                      \
  X(c_plschr)                                                                                      \
  X(c_plscmap0n)                                                                                   \
  X(c_plscmap1l)                                                                                   \
  X(c_plscol0)                                                                                     \
  X(c_plsdev)                                                                                      \
  X(c_plsfnam)                                                                                     \
  X(c_plslabelfunc)                                                                                \
  X(c_plspage)                                                                                     \
  X(c_plssym)                                                                                      \
  X(c_plstring)                                                                                    \
  X(c_plvpor)                                                                                      \
  X(c_plwidth)                                                                                     \
  X(c_plwind)                                                                                      \
  X(plsabort)                                                                                      \
  X(plsexit)

#define CLI_PL_FIELD(name) __typeof__(name) *name;
typedef struct cli_pl_api {
  CLI_PL_FUNCS(CLI_PL_FIELD)
} cli_pl_api_t;
#undef CLI_PL_FIELD
extern cli_pl_api_t cli_pl;

/* Opens PLplot (once; later calls return at once). TN_INTERNAL naming the library or the
 * symbol that is missing. */
tn_status_t cli_i_pl_open(tn_err_t *err);

#ifndef CLI_PL_IMPL
#define c_pladv (*cli_pl.c_pladv)
#define c_plbox (*cli_pl.c_plbox)
#define c_plcol0 (*cli_pl.c_plcol0)
#define c_plcol1 (*cli_pl.c_plcol1)
#define c_plend (*cli_pl.c_plend)
#define c_plfill (*cli_pl.c_plfill)
#define c_plinit (*cli_pl.c_plinit)
#define c_pllab (*cli_pl.c_pllab)
#define c_pllegend (*cli_pl.c_pllegend)
#define c_plline (*cli_pl.c_plline)
#define c_pllsty (*cli_pl.c_pllsty)
#define c_plmtex (*cli_pl.c_plmtex)
#define c_plschr (*cli_pl.c_plschr)
#define c_plscmap0n (*cli_pl.c_plscmap0n)
#define c_plscmap1l (*cli_pl.c_plscmap1l)
#define c_plscol0 (*cli_pl.c_plscol0)
#define c_plsdev (*cli_pl.c_plsdev)
#define c_plsfnam (*cli_pl.c_plsfnam)
#define c_plslabelfunc (*cli_pl.c_plslabelfunc)
#define c_plspage (*cli_pl.c_plspage)
#define c_plssym (*cli_pl.c_plssym)
#define c_plstring (*cli_pl.c_plstring)
#define c_plvpor (*cli_pl.c_plvpor)
#define c_plwidth (*cli_pl.c_plwidth)
#define c_plwind (*cli_pl.c_plwind)
#define plsabort (*cli_pl.plsabort)
#define plsexit (*cli_pl.plsexit)
#endif

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
