/* cli/plot.c — the busbw-against-size figure of `compare` and `demo` (one line per
 * algorithm, the lower bound dashed), drawn with PLplot's cairo driver, and the PLplot
 * session shared with cli/heatmap.c (temporary file, silence, fatal-error trap). */
#include "cli/plot_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer (the ASan test build): fontconfig and libltdl, which PLplot's cairo driver
 * loads, keep process-lifetime caches that are never freed. Those allocations are theirs,
 * not ours; suppressing them keeps leak checking on for everything else. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libfontconfig.so\nleak:libltdl.so\nleak:libcairo.so\nleak:libpango\n";
}
/* ... and says nothing about them, so that stderr keeps our one-line errors. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) {
  return "print_suppressions=0";
}
#endif

/* PLplot calls exit() after its exit handler unless the handler leaves by longjmp; the
 * jump buffer is global because PLplot is (one session at a time, documented in cli.h). */
static jmp_buf plot_jmp;
static bool plot_jmp_armed, plot_failed;
static char plot_msg[256];

static int on_plexit(PLCHAR_VECTOR msg) {
  snprintf(plot_msg, sizeof plot_msg, "%s", msg ? msg : "PLplot error");
  plot_failed = true;
  if (plot_jmp_armed) longjmp(plot_jmp, 1);
  return 1;
}

static void on_plabort(PLCHAR_VECTOR msg) {
  if (!plot_failed) snprintf(plot_msg, sizeof plot_msg, "%s", msg ? msg : "PLplot error");
  plot_failed = true;
}

tn_status_t cli_plot_device(const char *path, const char **device, tn_err_t *err) {
  const char *dot = strrchr(path, '.');
  if (dot && strcmp(dot, ".png") == 0) {
    *device = "pngcairo";
  } else if (dot && strcmp(dot, ".svg") == 0) {
    *device = "svgcairo";
  } else {
    return tn_err_set(err, TN_INVAL, "%s: the picture must end in .png or .svg", path);
  }
  return TN_OK;
}

static void set_palette(void) {
  static const int rgb[][3] = {
      {255, 255, 255}, {0, 0, 0},     {215, 215, 215}, /* background, axes, grid */
      {31, 119, 180},  {214, 39, 40}, {44, 160, 44},   {148, 103, 189},
      {255, 127, 14},  {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
  };
  int n = (int)(sizeof rgb / sizeof rgb[0]);
  plscmap0n(16);
  for (int i = 0; i < n; i++)
    plscol0(i, rgb[i][0], rgb[i][1], rgb[i][2]);
}

static void plot_release(plot_session_t *s) {
  free(s->target);
  free(s->tmp);
  s->target = s->tmp = NULL;
}

tn_status_t cli_i_plot_begin(plot_session_t *s, const char *path, int width, int height,
                             tn_err_t *err) {
  const char *device = NULL;
  s->path = path;
  s->target = s->tmp = NULL;
  s->saved_stderr = -1;
  tn_status_t st = cli_plot_device(path, &device, err);
  if (st == TN_OK) st = cli_i_pl_open(err);
  if (st != TN_OK) return st;
  if ((st = tn_out_plan(path, &s->target, &s->tmp, err)) != TN_OK) return st;
  /* Create the file ourselves: PLplot exits the process when it cannot open it. (A device
   * or FIFO written straight into is only checked: opening a FIFO twice would end what its
   * reader sees.) */
  FILE *f = s->tmp ? fopen(s->tmp, "wb") : NULL;
  if (s->tmp ? f == NULL : access(s->target, W_OK) != 0) {
    st = tn_err_set(err, TN_IO, "%s: cannot write: %s", path, strerror(errno));
    plot_release(s);
    return st;
  }
  if (f) fclose(f);
  plot_failed = false;
  plot_msg[0] = '\0';
  /* PLplot and cairo may print warnings; the CLI's stderr is for our one-line errors. */
  fflush(stderr);
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    s->saved_stderr = dup(STDERR_FILENO);
    dup2(devnull, STDERR_FILENO);
    close(devnull);
  }
  plsexit(on_plexit);
  plsabort(on_plabort);
  plsdev(device);
  plsfnam(s->tmp ? s->tmp : s->target);
  plspage(0.0, 0.0, width, height, 0, 0);
  set_palette();
  return TN_OK;
}

/* Calls plot_fn(plot_ctx) with PLplot's fatal errors turned into a return. The callee and
 * its argument live in statics so that nothing automatic is live across setjmp. */
static void (*plot_fn)(void *);
static void *plot_ctx;

static void guarded_call(void) {
  if (setjmp(plot_jmp) == 0) {
    plot_jmp_armed = true;
    plot_fn(plot_ctx);
  }
  plot_jmp_armed = false;
}

static void start_plplot(void *ctx) {
  (void)ctx;
  plinit();
}

static void end_plplot(void *ctx) {
  (void)ctx;
  plend();
}

void cli_i_plot_run(void (*draw)(void *ctx), void *ctx) {
  plot_fn = start_plplot;
  plot_ctx = NULL;
  guarded_call();
  if (!plot_failed) {
    plot_fn = draw;
    plot_ctx = ctx;
    guarded_call();
  }
}

tn_status_t cli_i_plot_end(plot_session_t *s, tn_err_t *err) {
  tn_status_t st = TN_OK;
  plot_fn = end_plplot;
  plot_ctx = NULL;
  guarded_call();
  plsexit(NULL);
  plsabort(NULL);
  fflush(stderr);
  if (s->saved_stderr >= 0) {
    dup2(s->saved_stderr, STDERR_FILENO);
    close(s->saved_stderr);
    s->saved_stderr = -1;
  }
  if (st == TN_OK && plot_failed)
    st = tn_err_set(err, TN_IO, "%s: plotting failed: %s", s->path, plot_msg);
  if (st == TN_OK && s->tmp)
    st = tn_rename_into_place(s->tmp, s->target, err);
  else if (s->tmp)
    remove(s->tmp);
  plot_release(s);
  return st;
}

/* ---- busbw against size ------------------------------------------------- */

typedef struct series {
  char name[16];
  size_t n;
  PLFLT *x, *y; /* log2(size), busbw */
} series_t;

typedef struct busbw_plot {
  const char *title;
  series_t *series;
  size_t nseries;
  series_t bound;
  double xmin, xmax, ymin, ymax; /* ymin: the least positive busbw */
  bool logy;                     /* y holds log10(busbw) */
} busbw_plot_t;

/* Per series, so that lines drawn over each other stay apart: a marker (Hershey glyphs:
 * open circle, filled square, open triangle, filled down-triangle, diamond, cross, open
 * square, filled triangle) and a dash pattern (PLplot's line styles; the bound is style 2
 * in the foreground colour and thinner). */
void cli_plot_series_style(size_t k, const char **marker, int *dash) {
  static const char *const markers[PLOT_NSERIES] = {"#(840)", "#(851)", "#(842)", "#(854)",
                                                    "#(843)", "#(846)", "#(841)", "#(852)"};
  static const int dashes[PLOT_NSERIES] = {1, 3, 4, 5, 6, 7, 8, 2};
  *marker = markers[k % PLOT_NSERIES];
  *dash = dashes[k % PLOT_NSERIES];
}

/* Whether busbw goes on a log axis: asked for, or (auto) when it spans more than 10x. */
static bool want_logy(cli_plot_y_t y, double ymin, double ymax) {
  if (y == CLI_PLOT_Y_LOG) return ymin > 0;
  return y == CLI_PLOT_Y_AUTO && ymin > 0 && ymax > 10.0 * ymin;
}

static void size_label(PLINT axis, PLFLT value, char *label, PLINT length, PLPointer data) {
  const busbw_plot_t *p = data;
  if (axis != PL_X_AXIS) {
    snprintf(label, (size_t)length, "%g", p->logy ? pow(10.0, value) : value);
    return;
  }
  double b = pow(2.0, value);
  if (b >= 1.0 && b < 1.8e19 && fabs(value - round(value)) < 1e-9) {
    tn_fmt_size((uint64_t)llround(b), label, (size_t)length);
  } else {
    snprintf(label, (size_t)length, "%.3g", b);
  }
}

static void draw_busbw(void *ctx) {
  busbw_plot_t *p = ctx;
  double span = p->xmax - p->xmin;
  double pad = span > 0 ? span * 0.03 : 0.5;
  /* Label every power of two on short ranges, else every 2^5 (1KiB, 32KiB, 1MiB ...). */
  double xtick = span <= 8 ? 1.0 : span <= 16 ? 2.0 : span <= 40 ? 5.0 : 10.0;
  PLINT nxsub = xtick >= 5.0 ? (PLINT)xtick : 0;
  pladv(0);
  plvpor(0.10, 0.775, 0.11, 0.91);
  if (p->logy) /* whole decades around the data */
    plwind(p->xmin - pad, p->xmax + pad, floor(log10(p->ymin)), ceil(log10(p->ymax * 1.12)));
  else
    plwind(p->xmin - pad, p->xmax + pad, 0.0, p->ymax > 0 ? p->ymax * 1.12 : 1.0);
  plslabelfunc(size_label, p);
  plcol0(PLOT_GRID);
  plwidth(0.5);
  plbox("g", xtick, nxsub, p->logy ? "gl" : "g", 0.0, 0);
  plcol0(PLOT_FG);
  plwidth(1.0);
  plbox("bcnost", xtick, nxsub, p->logy ? "bcnstvlo" : "bcnstv", 0.0, 0);
  plslabelfunc(NULL, NULL);
  pllab("message size (log2 scale)",
        p->logy ? "bus bandwidth (GB/s, log scale)" : "bus bandwidth (GB/s)", p->title);

  size_t nleg = p->nseries + 1;
  PLINT opt[PLOT_NSERIES + 1], colors[PLOT_NSERIES + 1], styles[PLOT_NSERIES + 1];
  PLINT sym_colors[PLOT_NSERIES + 1], sym_numbers[PLOT_NSERIES + 1];
  PLFLT widths[PLOT_NSERIES + 1], sym_scales[PLOT_NSERIES + 1];
  const char *text[PLOT_NSERIES + 1], *symbols[PLOT_NSERIES + 1];
  /* The bound first, then the algorithms last to first, so that the first ones (auto,
   * the reason for the plot) stay on top where lines overlap. */
  for (size_t j = nleg; j-- > 0;) {
    size_t k = j;
    bool bound = k == p->nseries;
    const series_t *s = bound ? &p->bound : &p->series[k];
    PLINT color = bound ? PLOT_FG : (PLINT)(PLOT_SERIES + k);
    const char *marker = "";
    int dash = 2;
    if (!bound) cli_plot_series_style(k, &marker, &dash);
    plcol0(color);
    pllsty(dash);
    plwidth(bound ? 1.5 : 2.5);
    if (s->n > 0) plline((PLINT)s->n, s->x, s->y);
    plwidth(1.5);
    plssym(0.0, 0.8);
    if (!bound && s->n > 0) plstring((PLINT)s->n, s->x, s->y, marker);
    plssym(0.0, 1.0);
    opt[k] = bound ? PL_LEGEND_LINE : (PL_LEGEND_LINE | PL_LEGEND_SYMBOL);
    colors[k] = color;
    styles[k] = dash;
    widths[k] = bound ? 1.5 : 2.5;
    sym_colors[k] = color;
    sym_numbers[k] = 2;
    sym_scales[k] = 0.8;
    symbols[k] = marker;
    text[k] = bound ? "lower bound" : s->name;
  }
  pllsty(1);
  plwidth(1.0);
  PLFLT lw = 0, lh = 0;
  pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_OUTSIDE | PL_POSITION_RIGHT, 0.015, 0.0, 0.05, PLOT_BG, PLOT_FG, 1, 0, 0,
           (PLINT)nleg, opt, 1.0, 0.9, 2.0, 0.0, colors, text, NULL, NULL, NULL, NULL, colors,
           styles, widths, sym_colors, sym_scales, sym_numbers, symbols);
}

static int cmp_point(const void *a, const void *b) {
  const PLFLT *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Sorts a series by x (points are stored as (x, y) pairs in a scratch array). */
static tn_status_t series_fill(series_t *s, const PLFLT *pairs, size_t n, tn_err_t *err) {
  PLFLT *tmp = NULL;
  tn_status_t st = tn_calloc(n ? 2 * n : 1, sizeof *tmp, &tmp, err);
  if (st == TN_OK) st = tn_calloc(n ? n : 1, sizeof *s->x, &s->x, err);
  if (st == TN_OK) st = tn_calloc(n ? n : 1, sizeof *s->y, &s->y, err);
  if (st == TN_OK) {
    memcpy(tmp, pairs, 2 * n * sizeof *tmp);
    qsort(tmp, n, 2 * sizeof *tmp, cmp_point);
    for (size_t i = 0; i < n; i++)
      s->x[i] = tmp[2 * i], s->y[i] = tmp[2 * i + 1];
    s->n = n;
  }
  free(tmp);
  return st;
}

tn_status_t cli_plot_busbw(const cli_result_t *rows, size_t n, const char *title, const char *path,
                           cli_plot_y_t yscale, tn_err_t *err) {
  busbw_plot_t p = {.title = title, .xmin = INFINITY, .xmax = -INFINITY, .ymin = INFINITY};
  series_t series[PLOT_NSERIES];
  memset(series, 0, sizeof series);
  PLFLT *pairs = NULL, *bpairs = NULL;
  size_t nb = 0;
  const char *device = NULL;
  tn_status_t st = cli_plot_device(path, &device, err);
  if (st == TN_OK) st = tn_calloc(2 * n + 2, sizeof *pairs, &pairs, err);
  if (st == TN_OK) st = tn_calloc(2 * n + 2, sizeof *bpairs, &bpairs, err);
  /* One series per algorithm in order of first appearance; the bound once per size. */
  for (size_t i = 0; st == TN_OK && i < n; i++) {
    const cli_result_t *r = &rows[i];
    if (!r->ok || r->size_bytes == 0) continue;
    size_t k = 0;
    while (k < p.nseries && strcmp(series[k].name, r->algorithm) != 0)
      k++;
    if (k == p.nseries) {
      if (k == PLOT_NSERIES) {
        st = tn_err_set(err, TN_INVAL, "%s: at most %d algorithms per plot", path, PLOT_NSERIES);
        break;
      }
      snprintf(series[k].name, sizeof series[k].name, "%s", r->algorithm);
      p.nseries++;
    }
    double x = log2((double)r->size_bytes), bb = cli_result_bound_busbw(r);
    bool seen = false;
    for (size_t j = 0; j < nb; j++)
      seen = seen || bpairs[2 * j] == x;
    if (!seen && r->lower_bound_ps > 0) {
      bpairs[2 * nb] = x, bpairs[2 * nb + 1] = bb, nb++;
      if (bb > p.ymax) p.ymax = bb;
      if (bb > 0 && bb < p.ymin) p.ymin = bb;
    }
    if (x < p.xmin) p.xmin = x;
    if (x > p.xmax) p.xmax = x;
    if (r->busbw_GBps > p.ymax) p.ymax = r->busbw_GBps;
    if (r->busbw_GBps > 0 && r->busbw_GBps < p.ymin) p.ymin = r->busbw_GBps;
  }
  p.logy = want_logy(yscale, p.ymin, p.ymax);
  if (st == TN_OK && p.nseries == 0)
    st = tn_err_set(err, TN_INVAL, "%s: no successful result to plot", path);
  for (size_t k = 0; st == TN_OK && k < p.nseries; k++) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      const cli_result_t *r = &rows[i];
      if (!r->ok || r->size_bytes == 0 || strcmp(r->algorithm, series[k].name) != 0) continue;
      if (p.logy && r->busbw_GBps <= 0) continue; /* no place on a log axis */
      pairs[2 * m] = log2((double)r->size_bytes), pairs[2 * m + 1] = r->busbw_GBps, m++;
    }
    st = series_fill(&series[k], pairs, m, err);
  }
  if (st == TN_OK) st = series_fill(&p.bound, bpairs, nb, err);
  for (size_t k = 0; st == TN_OK && p.logy && k <= p.nseries; k++) {
    series_t *sr = k == p.nseries ? &p.bound : &series[k];
    for (size_t i = 0; i < sr->n; i++)
      sr->y[i] = log10(sr->y[i]);
  }
  p.series = series;
  p.nseries = st == TN_OK ? p.nseries : 0;
  if (st == TN_OK) {
    plot_session_t s;
    st = cli_i_plot_begin(&s, path, 1100, 700, err);
    if (st == TN_OK) {
      cli_i_plot_run(draw_busbw, &p);
      st = cli_i_plot_end(&s, err);
    }
  }
  for (size_t k = 0; k < PLOT_NSERIES; k++)
    free(series[k].x), free(series[k].y);
  free(p.bound.x);
  free(p.bound.y);
  free(pairs);
  free(bpairs);
  return st;
}
