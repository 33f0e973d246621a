/* cli/gv.c — rendering through the graphviz library for `tenet topo draw` and `tenet et dot`
 * (cli/gv_internal.h): layout limits, graphviz's errors as one line, all-or-nothing files. */
#include "cli/gv_internal.h"

#include <string.h>

/* What each layout engine lays out in a few seconds. graphviz spends all its time in the
 * layout (reading the graph and rendering it take milliseconds); measured with graphviz
 * 2.42 on the generated fabrics, see docs/architecture.md §6:
 *  - neato (stress majorization over all-pairs distances) grows with the nodes squared and
 *    worse: a ring of 1024 takes 2 s, of 2048 10 s, of 4096 a minute, and of 65536 it
 *    overflows graphviz's stack; the links count far less (fc-128, 16256 links: 4 s);
 *  - dot (ranks, then crossing minimisation over long edges) grows with the links and
 *    their density: a ring of 1024 takes 2 s, a 8x8x8 torus (3072 links) 5 s, a fully
 *    connected fabric of 24 NPUs (552 links) 4 s, of 32 (992 links) 21 s, of 64 minutes.
 * The limits keep every measured fabric below about 3 s. */
static const cli_gv_limit_t limits[] = {
    /* neato, the default, first */
    {.layout = "neato", .max_nodes = 1024, .max_links = 10240, .max_links_per_node = 0},
    {.layout = "dot", .max_nodes = 1024, .max_links = 2048, .max_links_per_node = 16},
};

const cli_gv_limit_t *cli_i_gv_limit(const char *layout) {
  for (size_t i = 0; i < sizeof limits / sizeof *limits; i++)
    if (strcmp(layout, limits[i].layout) == 0) return &limits[i];
  return NULL;
}

bool cli_i_gv_fits(const cli_gv_limit_t *lim, uint32_t nodes, uint64_t links) {
  bool dense = lim->max_links_per_node && links > (uint64_t)lim->max_links_per_node * nodes;
  return nodes <= lim->max_nodes && links <= lim->max_links && !dense;
}

const char *cli_i_gv_format(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *ext = dot && !strchr(dot, '/') ? dot + 1 : "";
  if (strcmp(ext, "svg") == 0) return "svg";
  if (strcmp(ext, "png") == 0) return "png";
  return NULL;
}

/* graphviz reports problems through this hook instead of printing them; the last one is
 * kept for our one-line error. */
static char last_error[256];
static int error_hook(char *msg) {
  snprintf(last_error, sizeof last_error, "%s", msg);
  size_t n = strlen(last_error);
  while (n && (last_error[n - 1] == '\n' || last_error[n - 1] == ' '))
    last_error[--n] = '\0';
  return 0;
}

void cli_i_gv_catch_errors(void) {
  agseterr(AGERR);
  agseterrf(error_hook);
  last_error[0] = '\0';
}

const char *cli_i_gv_last_error(void) {
  return last_error;
}

tn_status_t cli_i_gv_render(GVC_t *gvc, Agraph_t *g, const char *layout, const char *what,
                            const char *out, tn_err_t *err) {
  const char *fmt = cli_i_gv_format(out);
  if (fmt == NULL)
    return tn_err_set(err, TN_INVAL, "%s: the picture must end in .svg or .png", out);
  /* A bitmap past cairo's 32767 pixels a side is scaled down with a warning on stderr;
   * at most 300 inches a side (28800 pixels at 96 dpi) scales it quietly. */
  char size_k[] = "size", size_v[] = "300,300", none[] = "";
  if (strcmp(fmt, "png") == 0) agsafeset(g, size_k, size_v, none);
  if (gvLayout(gvc, g, layout) != 0)
    return tn_err_set(err, TN_INTERNAL, "graphviz layout '%s' failed on %s%s%s", layout, what,
                      last_error[0] ? ": " : "", last_error);
  tn_outfile_t o = {0};
  tn_status_t st = tn_outfile_open(&o, out, err);
  if (st == TN_OK) {
    if (gvRender(gvc, g, fmt, o.f) != 0) {
      tn_outfile_abort(&o);
      st = tn_err_set(err, TN_INTERNAL, "graphviz cannot render %s%s%s", fmt,
                      last_error[0] ? ": " : "", last_error);
    } else {
      st = tn_outfile_commit(&o, err);
    }
  }
  gvFreeLayout(gvc, g);
  return st;
}
