/* cli/gv_internal.h — private to cli/: what `tenet topo draw` and `tenet et dot` share to
 * render a graph through the graphviz library (no `dot` program needed): the layout
 * engines offered with what each lays out in a few seconds, graphviz's errors caught into
 * one line, and the picture written all or nothing. */
#ifndef TENET_CLI_GV_INTERNAL_H
#define TENET_CLI_GV_INTERNAL_H

#include <graphviz/gvc.h>

#include "cli/cli.h"

/* graphviz is opened on first use (dlopen), not linked: libgvc, libcgraph and what they
 * pull in would otherwise be mapped and relocated at every start of tenet (most commands
 * never draw). cli_i_gv_open opens it; every graphviz call of cli/ goes through cli_gv below
 * (the macros after it), with graphviz's own prototypes. */
#define CLI_GVC_FUNCS(X)                                                                           \
  X(gvContext)                                                                                     \
  X(gvFreeContext)                                                                                 \
  X(gvFreeLayout)                                                                                  \
  X(gvLayout)                                                                                      \
  X(gvRender)
#define CLI_CGRAPH_FUNCS(X)                                                                        \
  X(agclose)                                                                                       \
  X(agedge)                                                                                        \
  X(agmemread)                                                                                     \
  X(agnode)                                                                                        \
  X(agopen)                                                                                        \
  X(agsafeset)                                                                                     \
  X(agseterr)                                                                                      \
  X(agseterrf)                                                                                     \
  X(agsubg)                                                                                        \
  X(agsubnode)

#define CLI_GV_FIELD(name) __typeof__(name) *name;
typedef struct cli_gv_api {
  CLI_GVC_FUNCS(CLI_GV_FIELD)
  CLI_CGRAPH_FUNCS(CLI_GV_FIELD)
  Agdesc_t *Agdirected;
} cli_gv_api_t;
#undef CLI_GV_FIELD
extern cli_gv_api_t cli_gv;

/* Opens graphviz (once; later calls return at once): call before any graphviz call.
 * TN_INTERNAL naming the library or the symbol that is missing. */
tn_status_t cli_i_gv_open(tn_err_t *err);

#ifndef CLI_GV_IMPL
#define gvContext (*cli_gv.gvContext)
#define gvFreeContext (*cli_gv.gvFreeContext)
#define gvFreeLayout (*cli_gv.gvFreeLayout)
#define gvLayout (*cli_gv.gvLayout)
#define gvRender (*cli_gv.gvRender)
#define agclose (*cli_gv.agclose)
#define agedge (*cli_gv.agedge)
#define agmemread (*cli_gv.agmemread)
#define agnode (*cli_gv.agnode)
#define agopen (*cli_gv.agopen)
#define agsafeset (*cli_gv.agsafeset)
#define agseterr (*cli_gv.agseterr)
#define agseterrf (*cli_gv.agseterrf)
#define agsubg (*cli_gv.agsubg)
#define agsubnode (*cli_gv.agsubnode)
#define Agdirected (*cli_gv.Agdirected)
#endif

/* What a layout engine lays out in a few seconds (docs/architecture.md §6). */
typedef struct cli_gv_limit {
  const char *layout;
  uint32_t max_nodes, max_links, max_links_per_node; /* 0: no cap per node */
} cli_gv_limit_t;

/* The limits of layout ("neato", the default, or "dot"), or NULL for another engine. */
const cli_gv_limit_t *cli_i_gv_limit(const char *layout);
/* Whether a graph of nodes and links fits lim. */
bool cli_i_gv_fits(const cli_gv_limit_t *lim, uint32_t nodes, uint64_t links);

/* "svg" or "png" by path's extension, else NULL. */
const char *cli_i_gv_format(const char *path);

/* Routes graphviz's messages into the one kept for cli_i_gv_render's error (call before
 * building a graph). */
void cli_i_gv_catch_errors(void);
/* The last message graphviz reported since cli_i_gv_catch_errors ("" when none). */
const char *cli_i_gv_last_error(void);

/* Lays g out with layout and renders it to out (its format by its extension) through
 * tn_outfile (all or nothing). TN_INTERNAL naming what graphviz said when it fails. */
tn_status_t cli_i_gv_render(GVC_t *gvc, Agraph_t *g, const char *layout, const char *what,
                            const char *out, tn_err_t *err);

#endif
