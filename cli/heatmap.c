/* cli/heatmap.c — per-link utilization picture of a finished simulation (the heatmaps
 * `tenet demo` draws): the busiest links as bars coloured from cool to hot by busy time over
 * the collective time, drawn with PLplot. */
#include "cli/plot_internal.h"

#include <stdlib.h>
#include <string.h>

#define HEAT_MAX_BARS 48

typedef struct heat_plot {
  const char *title;
  size_t n, total;
  double util[HEAT_MAX_BARS];
  char label[HEAT_MAX_BARS][32];
  double mean_util; /* over every link */
} heat_plot_t;

static void draw_heat(void *ctx) {
  heat_plot_t *h = ctx;
  pladv(0);
  plvpor(0.09, 0.97, 0.20, 0.90);
  plwind(-0.5, (double)h->n - 0.5, 0.0, 1.05);
  plcol0(PLOT_GRID);
  plwidth(0.5);
  plbox("", 0.0, 0, "g", 0.2, 0);
  plcol0(PLOT_FG);
  plwidth(1.0);
  plbox("bc", 1.0, 0, "bcnstv", 0.2, 4);
  char sub[96];
  snprintf(sub, sizeof sub, "link (src>dst), the %zu busiest of %zu", h->n, h->total);
  pllab("", "utilization (busy / collective time)", h->title);
  plmtex("b", 5.2, 0.5, 0.5, sub);
  /* Cool-to-hot colour map 1: blue, yellow, red. */
  PLFLT pos[] = {0.0, 0.5, 1.0}, r[] = {0.2, 1.0, 0.85}, g[] = {0.35, 0.8, 0.1},
        b[] = {0.8, 0.2, 0.1};
  plscmap1l(1, 3, pos, r, g, b, NULL);
  plschr(0, 0.7);
  for (size_t i = 0; i < h->n; i++) {
    PLFLT x[4] = {(double)i - 0.38, (double)i - 0.38, (double)i + 0.38, (double)i + 0.38};
    PLFLT y[4] = {0.0, h->util[i], h->util[i], 0.0};
    plcol1(h->util[i] < 0 ? 0 : h->util[i] > 1 ? 1 : h->util[i]);
    plfill(4, x, y);
    plcol0(PLOT_FG);
    plline(4, x, y);
    /* Vertical label under bar i: plmtex positions along the bottom edge in [0,1]. */
    plmtex("bv", 0.6, ((double)i + 0.5) / (double)h->n, 1.0, h->label[i]);
  }
  plschr(0, 1.0);
  PLFLT mx[2] = {-0.5, (double)h->n - 0.5}, my[2] = {h->mean_util, h->mean_util};
  pllsty(2);
  plcol0(PLOT_FG);
  plline(2, mx, my);
  pllsty(1);
  char mean[64];
  snprintf(mean, sizeof mean, "dashed: mean over all %zu links %.2f", h->total, h->mean_util);
  plmtex("t", -1.5, 0.99, 1.0, mean);
}

tn_status_t cli_heatmap_write(const topo_t *t, const sim_result_t *r, const char *title,
                              const char *path, tn_err_t *err) {
  heat_plot_t *h = NULL;
  const char *device = NULL;
  tn_status_t st = cli_plot_device(path, &device, err);
  if (st == TN_OK && (r->nlinks == 0 || r->time_ps == 0))
    st = tn_err_set(err, TN_INVAL, "%s: the simulation moved no data, nothing to draw", path);
  if (st == TN_OK) st = tn_calloc(1, sizeof *h, &h, err);
  if (st != TN_OK) return st;
  h->title = title;
  h->total = r->nlinks;
  double sum = 0;
  for (uint32_t i = 0; i < r->nlinks; i++)
    sum += (double)r->links[i].busy_ps;
  h->mean_util = sum / (double)r->nlinks / (double)r->time_ps;
  /* r->links is sorted by busy time (descending, then id): the first ones are busiest. */
  h->n = r->nlinks < HEAT_MAX_BARS ? r->nlinks : HEAT_MAX_BARS;
  for (size_t i = 0; i < h->n; i++) {
    const sim_link_use_t *u = &r->links[i];
    h->util[i] = (double)u->busy_ps / (double)r->time_ps;
    if (u->link < t->nlinks)
      snprintf(h->label[i], sizeof h->label[i], "%u>%u", t->links[u->link].src,
               t->links[u->link].dst);
    else
      snprintf(h->label[i], sizeof h->label[i], "#%u", u->link);
  }
  plot_session_t s;
  st = cli_i_plot_begin(&s, path, 1200, 650, err);
  if (st == TN_OK) {
    cli_i_plot_run(draw_heat, h);
    st = cli_i_plot_end(&s, err);
  }
  free(h);
  return st;
}

tn_status_t cli_heatmap_run(const topo_t *t, const char *label, tn_coll_t coll, uint64_t size_bytes,
                            const char *algo, uint64_t seed, const char *path, tn_err_t *err) {
  synth_result_t out = {0};
  sim_opts_t sopt = {0};
  sim_result_t res = {0};
  tn_status_t st = cli_synth_named(t, coll, size_bytes, algo, seed, 0, 0.0, &out, err);
  if (st == TN_OK) st = sim_run(t, out.algo, &sopt, &res, err);
  if (st == TN_OK) {
    char title[256], size[32], time[32];
    snprintf(title, sizeof title, "%s: %s %s %s, %s - link utilization", label, tn_coll_name(coll),
             tn_fmt_size(size_bytes, size, sizeof size), algo,
             cli_fmt_time_ns((double)res.time_ps / 1000.0, time, sizeof time));
    st = cli_heatmap_write(t, &res, title, path, err);
  }
  sim_result_free(&res);
  synth_result_free(&out);
  return st;
}
