/* cli/cmd_sim.c — `tenet sim`: reads a Chakra ET set (any producer's), runs it on a fabric
 * with the analytical simulator and reports the collective time, per-NPU finish times,
 * bandwidths, the lower bound and the busiest links; optionally a Chrome trace. */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/workload.h"
#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet sim -t TOPO PREFIX [-c COLL -s SIZE] [--ties ORDER [--seed N]] [--json]\n"
    "                 [--trace FILE [--trace-links]] [--top N] [--whole-ns]\n"
    "       tenet sim -t TOPO WORKLOAD_PREFIX --workload DIR [--json]\n"
    "\n"
    "Simulates the Chakra ET set PREFIX.0.et ... PREFIX.<n-1>.et (one file per NPU of TOPO,\n"
    "written by tenet or any other producer) on the fabric TOPO with the analytical,\n"
    "congestion-aware model that ASTRA-sim uses, and reports the collective time (finish of\n"
    "the last NPU), per-NPU finish times, the lower bound and the busiest links. With the\n"
    "collective and its size (from -c/-s, or from the files when tenet wrote them) it also\n"
    "reports algbw and busbw (GB/s = 2^30 B/s, nccl-tests' definitions).\n"
    "\n"
    "  -t, --topo TOPO       topology file, shipped name or KIND-DIMS (e.g. torus-4x4)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE       NCCL size: bytes, or with KB MB GB (10^3) / KiB MiB GiB (2^10)\n"
    "      --trace FILE      write the timeline as Chrome trace-event JSON (one track per\n"
    "                        link, one per NPU; open in Perfetto or chrome://tracing).\n"
    "                        Size: about 100 B per transmission and 200 B per node\n"
    "                        (hierarchical-16x8 greedy All-Gather 64 MiB: 205 MB)\n"
    "      --trace-links     with --trace: the link tracks alone (52 MB for that one)\n"
    "      --top N           busiest links to list (default 5, 0 for none)\n"
    "      --ties ORDER      the order among events of one instant a runtime may pick:\n"
    "                        id (tenet's: ascending node id, ascending link id), reverse,\n"
    "                        or random (drawn from --seed, default 1). Default id\n"
    "      --seed N          seed of --ties random\n"
    "                        Without --ties, a set that leaves such an order open (two\n"
    "                        messages entering one link at one instant) is also run in\n"
    "                        reverse and 4 random orders, and the spread is reported\n"
    "                        when they differ (JSON: order_dependent, time_min_ns,\n"
    "                        time_max_ns); tenet's own sets leave none open\n"
    "      --whole-ns        count every link's serialization and every hop's delay in\n"
    "                        whole ns, rounded down, as ASTRA-sim's analytical backend\n"
    "                        does (it then agrees with ASTRA-sim to the ns where tenet's\n"
    "                        exact ps differ by the rounding; JSON: whole_ns). No lower\n"
    "                        bound is reported (it holds for exact delays), and no spread\n"
    "                        over orders (--ties picks one)\n"
    "      --json            print one JSON object instead of a summary\n"
    "      --workload DIR    PREFIX is a Chakra workload (a training step) and DIR what\n"
    "                        'tenet workload' wrote for it: simulates the whole step, each\n"
    "                        collective running its set from DIR on the shared network\n"
    "                        beside the step's compute and messages (ASTRA-sim's rules: one\n"
    "                        GPU COMP and one communication per rank at a time), and again\n"
    "                        with Ring and with Direct for every collective. Reports the\n"
    "                        step time (JSON: step_ns), the communication it leaves exposed\n"
    "                        (exposed_comm_ns) and each collective's start, end and time\n"
    "  -h, --help            this help\n"
    "\n"
    "Errors (exit 1) name rank, node and reason: an unmatched SEND or RECV, a dependency on\n"
    "a missing node, a cycle, a deadlock, a peer outside the fabric. Exit 2: the fabric is\n"
    "disconnected.\n";

typedef struct sim_args {
  const char *topo, *coll, *size, *trace, *top, *ties, *seed, *workload;
  bool trace_links;
  const char *prefix;
  bool json, help, whole_ns;
} sim_args_t;

/* What is known about the collective: from the flags first, else from the files. */
typedef struct coll_info {
  bool has_coll, has_size;
  tn_coll_t coll;
  uint64_t size;
  uint64_t bound_ps; /* the lower bound, when both the collective and the size are known */
  bool whole_ns;     /* --whole-ns: ASTRA-sim's rounding, against which the bound means nothing */
} coll_info_t;

static tn_status_t parse_args(int argc, char **argv, sim_args_t *a, coll_info_t *ci, uint32_t *top,
                              sim_opts_t *so, tn_err_t *err) {
  const cli_opt_t opts[] = {
      {"topo", 't', &a->topo, NULL},
      {"coll", 'c', &a->coll, NULL},
      {"size", 's', &a->size, NULL},
      {"trace", 0, &a->trace, NULL},
      {"trace-links", 0, NULL, &a->trace_links},
      {"top", 0, &a->top, NULL},
      {"json", 0, NULL, &a->json},
      {"ties", 0, &a->ties, NULL},
      {"seed", 0, &a->seed, NULL},
      {"help", 'h', NULL, &a->help},
      {"workload", 0, &a->workload, NULL},
      {"whole-ns", 0, NULL, &a->whole_ns},
  };
  const char *pos[1] = {NULL};
  size_t npos = 0;
  tn_status_t st = cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, &npos, err);
  if (st != TN_OK || a->help) return st;
  if (!a->topo || npos != 1)
    return tn_err_set(err, TN_INVAL, "-t TOPO and PREFIX are required (see 'tenet sim --help')");
  a->prefix = pos[0];
  if (a->trace_links && !a->trace)
    return tn_err_set(err, TN_INVAL, "--trace-links needs --trace FILE");
  if (a->workload &&
      (a->coll || a->size || a->trace || a->top || a->ties || a->seed || a->whole_ns))
    return tn_err_set(err, TN_INVAL,
                      "--workload simulates a whole step: -c, -s, --trace, --top, --ties, "
                      "--seed and --whole-ns do not apply");
  if (a->workload) return TN_OK;
  if (a->coll) {
    if ((st = tn_coll_parse(a->coll, &ci->coll, err)) != TN_OK) return st;
    ci->has_coll = true;
  }
  if (a->size) {
    if ((st = tn_parse_size(a->size, &ci->size, err)) != TN_OK) return st;
    if (ci->size == 0) return tn_err_set(err, TN_INVAL, "--size must be > 0");
    ci->has_size = true;
  }
  uint64_t v = 5;
  if (a->top && (st = tn_parse_u64(a->top, 0, 1000000, "--top", &v, err)) != TN_OK) return st;
  *top = (uint32_t)v;
  so->trace_path = a->trace;
  so->trace_links_only = a->trace_links;
  so->seed = 1;
  so->threads = tn_thread_count();
  ci->whole_ns = a->whole_ns;
  so->quantum_ps = a->whole_ns ? 1000u : 0u;
  if (a->ties && !sim_ties_parse(a->ties, &so->ties))
    return tn_err_set(err, TN_INVAL, "--ties '%s': expected id, reverse or random", a->ties);
  if (a->seed && (!a->ties || so->ties != SIM_TIES_RANDOM))
    return tn_err_set(err, TN_INVAL, "--seed applies only to --ties random");
  if (a->seed && (st = tn_parse_u64(a->seed, 0, UINT64_MAX, "--seed", &so->seed, err)) != TN_OK)
    return st;
  return TN_OK;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
  return p < q ? -1 : p > q;
}

/* min, median (lower middle) and max of the per-NPU finish times. */
static tn_status_t finish_summary(const sim_result_t *r, uint64_t out[3], tn_err_t *err) {
  uint64_t *v = NULL;
  tn_status_t st = tn_calloc(r->npus, sizeof *v, &v, err);
  if (st != TN_OK) return st;
  memcpy(v, r->npu_finish_ps, r->npus * sizeof *v);
  qsort(v, r->npus, sizeof *v, cmp_u64);
  out[0] = v[0];
  out[1] = v[(r->npus - 1) / 2];
  out[2] = v[r->npus - 1];
  free(v);
  return TN_OK;
}

/* The spread over orders of same-instant events, for a set that leaves them open. */
typedef struct order_info {
  bool open; /* the id-order run met ties that change the time */
  uint64_t min_ps, max_ps;
  uint32_t orders;
} order_info_t;

static void count_tie(void *ctx, const sim_tie_t *tie) {
  (void)tie;
  ++*(uint64_t *)ctx;
}

/* The run and the lower bound are independent: they go side by side, the bound on a
 * second core while the run (one thread) takes the other. Each keeps its own status and
 * error; the bound's failure is reported first, as when it ran before the run. On one
 * worker (TENET_THREADS=1, or a trace to write) the bound goes first and a failed bound
 * skips the run, as before. */
typedef struct run_job {
  const topo_t *t;
  const algo_t *set;
  const sim_opts_t *so;
  sim_result_t *r;
  coll_info_t *ci;
  bool bound;      /* compute ci->bound_ps */
  bool sequential; /* one worker: the bound has finished when the run starts */
  tn_status_t run_st, bound_st;
  tn_err_t run_err, bound_err;
} run_job_t;

static void run_item(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  run_job_t *j = ctx;
  if (i == 0 && j->bound)
    j->bound_st =
        topo_lower_bound_ps(j->t, j->ci->coll, j->ci->size, &j->ci->bound_ps, &j->bound_err);
  else if (i == 1 && (!j->sequential || j->bound_st == TN_OK))
    j->run_st = sim_run(j->t, j->set, j->so, j->r, &j->run_err);
}

static double util(const sim_result_t *r, const sim_link_use_t *l) {
  return r->time_ps ? (double)l->busy_ps / (double)r->time_ps : 0.0;
}

static void print_summary(const topo_t *t, const algo_t *a, const coll_info_t *ci,
                          const sim_result_t *r, const order_info_t *oi, const uint64_t fin[3],
                          uint32_t top, const char *trace) {
  char sz[32];
  printf("%s", a->name);
  if (ci->has_coll) printf(" %s", tn_coll_name(ci->coll));
  if (ci->has_size) printf(" of %s", tn_fmt_size(ci->size, sz, sizeof sz));
  printf(" on %s (%u NPUs): %.3f ns\n", t->name, t->npus, (double)r->time_ps / 1e3);
  if (oi->open)
    printf("order-dependent: %.3f-%.3f ns over %u orders of same-instant events (the set leaves "
           "them open; --ties picks one)\n",
           (double)oi->min_ps / 1e3, (double)oi->max_ps / 1e3, oi->orders);
  printf("NPU finish: min %.3f ns, median %.3f ns, max %.3f ns\n", (double)fin[0] / 1e3,
         (double)fin[1] / 1e3, (double)fin[2] / 1e3);
  if (ci->has_size) {
    double algbw = tn_gbps(ci->size, r->time_ps);
    printf("algbw %.3f GB/s", algbw);
    if (ci->has_coll) printf(", busbw %.3f GB/s", algbw * tn_coll_busbw_factor(ci->coll, t->npus));
    printf("\n");
  }
  if (ci->whole_ns)
    printf("every delay counted in whole ns, rounded down, as ASTRA-sim's analytical backend "
           "counts it (no bound: the bound is for exact delays)\n");
  if (ci->has_coll && ci->has_size && !ci->whole_ns) {
    uint64_t lb = ci->bound_ps;
    printf("lower bound %.3f ns (time/bound %.3f)\n", (double)lb / 1e3,
           lb ? (double)r->time_ps / (double)lb : 0.0);
  }
  printf("%llu messages, %llu events\n", (unsigned long long)r->messages,
         (unsigned long long)r->events);
  if (top > r->nlinks) top = r->nlinks;
  if (top > 0) {
    printf("busiest links:\n  %6s %6s %6s %14s %9s %14s %7s\n", "link", "src", "dst", "bytes",
           "messages", "busy ns", "util");
    for (uint32_t i = 0; i < top; i++) {
      const sim_link_use_t *l = &r->links[i];
      printf("  %6u %6u %6u %14llu %9llu %14.3f %6.1f%%\n", l->link, t->links[l->link].src,
             t->links[l->link].dst, (unsigned long long)l->bytes, (unsigned long long)l->messages,
             (double)l->busy_ps / 1e3, 100.0 * util(r, l));
    }
  }
  if (trace) printf("trace written to %s\n", trace);
}

static int print_json(const topo_t *t, const algo_t *a, const coll_info_t *ci,
                      const sim_result_t *r, const order_info_t *oi, uint32_t top,
                      const char *trace) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "topology", t->name);
  cJSON_AddNumberToObject(o, "npus", t->npus);
  if (ci->has_coll)
    cJSON_AddStringToObject(o, "collective", tn_coll_name(ci->coll));
  else
    cJSON_AddNullToObject(o, "collective");
  cJSON_AddStringToObject(o, "algorithm", a->name);
  if (ci->has_size)
    cli_json_add_u64(o, "size_bytes", ci->size);
  else
    cJSON_AddNullToObject(o, "size_bytes");
  cli_json_add_ns(o, "time_ns", r->time_ps);
  cJSON_AddBoolToObject(o, "order_dependent", oi->open);
  cli_json_add_ns(o, "time_min_ns", oi->open ? oi->min_ps : r->time_ps);
  cli_json_add_ns(o, "time_max_ns", oi->open ? oi->max_ps : r->time_ps);
  double algbw = ci->has_size ? tn_gbps(ci->size, r->time_ps) : 0.0;
  bool both = ci->has_coll && ci->has_size;
  uint64_t lb = both ? ci->bound_ps : 0;
  if (ci->has_size)
    cJSON_AddNumberToObject(o, "algbw_GBps", algbw);
  else
    cJSON_AddNullToObject(o, "algbw_GBps");
  if (both)
    cJSON_AddNumberToObject(o, "busbw_GBps", algbw * tn_coll_busbw_factor(ci->coll, t->npus));
  else
    cJSON_AddNullToObject(o, "busbw_GBps");
  if (both && !ci->whole_ns) {
    cli_json_add_ns(o, "lower_bound_ns", lb);
    cJSON_AddNumberToObject(o, "ratio_to_bound", lb ? (double)r->time_ps / (double)lb : 0.0);
  } else {
    cJSON_AddNullToObject(o, "lower_bound_ns");
    cJSON_AddNullToObject(o, "ratio_to_bound");
  }
  cJSON_AddBoolToObject(o, "whole_ns", ci->whole_ns);
  cli_json_add_u64(o, "messages", r->messages);
  cli_json_add_u64(o, "events", r->events);
  cJSON *fin = cJSON_AddArrayToObject(o, "npu_finish_ns");
  for (uint32_t i = 0; i < r->npus; i++)
    cJSON_AddItemToArray(fin, cli_json_ns(r->npu_finish_ps[i]));
  cJSON *links = cJSON_AddArrayToObject(o, "links");
  for (uint32_t i = 0; i < top && i < r->nlinks; i++) {
    const sim_link_use_t *l = &r->links[i];
    cJSON *lo = cJSON_CreateObject();
    cJSON_AddNumberToObject(lo, "link", l->link);
    cJSON_AddNumberToObject(lo, "src", t->links[l->link].src);
    cJSON_AddNumberToObject(lo, "dst", t->links[l->link].dst);
    cli_json_add_u64(lo, "bytes", l->bytes);
    cli_json_add_u64(lo, "messages", l->messages);
    cli_json_add_ns(lo, "busy_ns", l->busy_ps);
    cJSON_AddNumberToObject(lo, "utilization", util(r, l));
    cJSON_AddItemToArray(links, lo);
  }
  if (trace) cJSON_AddStringToObject(o, "trace", trace);
  return cli_json_print("sim", o);
}

int cmd_sim(int argc, char **argv) {
  sim_args_t a = {0};
  coll_info_t ci = {0};
  uint32_t top = 5;
  tn_err_t err = {0};
  topo_t *t = NULL;
  algo_t *set = NULL;
  sim_result_t r = {0};
  uint64_t fin[3] = {0, 0, 0};
  int code = 0;
  sim_opts_t so = {0};
  if (parse_args(argc, argv, &a, &ci, &top, &so, &err) != TN_OK) return cli_report("sim", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (a.workload) return cli_wl_sim(a.topo, a.prefix, a.workload, a.json);
  /* One file per NPU of the fabric: the reader refuses a missing one and one too many. */
  if (cli_load_topo(a.topo, &t, &err) != TN_OK || cli_read_set(a.prefix, t, &set, &err) != TN_OK)
    goto fail;
  /* The files' own header (tenet's extra metadata) fills what the flags left open. */
  if (set->has_coll) {
    if (!ci.has_coll) ci.coll = set->coll, ci.has_coll = true;
    if (!ci.has_size && set->size_bytes > 0) ci.size = set->size_bytes, ci.has_size = true;
    /* A size the files do not move would give bandwidths of no meaning. */
    if (set->size_bytes > 0 && ci.size != set->size_bytes) {
      char want[32], got[32];
      tn_err_set(&err, TN_INVAL, "--size %s disagrees with the set %s, whose files say %s",
                 tn_fmt_size(ci.size, got, sizeof got), a.prefix,
                 tn_fmt_size(set->size_bytes, want, sizeof want));
      goto fail;
    }
  }
  /* Unless an order was asked for, a set whose run meets ties (two messages entering one
   * link at one instant) is run under more orders, and a spread is reported. */
  uint64_t ties = 0;
  order_info_t oi = {0};
  if (!a.ties && !a.whole_ns) so.on_tie = count_tie, so.tie_ctx = &ties;
  run_job_t job = {t, set, &so, &r, &ci, ci.has_coll && ci.has_size, true, TN_OK, TN_OK, {0}, {0}};
  unsigned workers = job.bound && !so.trace_path && tn_thread_count() > 1 ? 2 : 1;
  job.sequential = workers == 1;
  tn_parallel_for(2, workers, run_item, &job);
  if (job.bound_st != TN_OK) {
    err = job.bound_err;
    goto fail;
  }
  if (job.run_st != TN_OK) {
    err = job.run_err;
    if (err.status == TN_PARSE) tn_err_prefix(&err, "%s", a.prefix); /* "rank r node i: ..." */
    goto fail;
  }
  if (ties > 0) {
    sim_spread_t sp;
    if (sim_order_spread(t, set, SIM_SPREAD_SEEDS, &sp, &err) != TN_OK) goto fail;
    oi = (order_info_t){sp.min_ps != sp.max_ps, sp.min_ps, sp.max_ps, sp.orders};
  }
  if (finish_summary(&r, fin, &err) != TN_OK) goto fail;
  if (a.json)
    code = print_json(t, set, &ci, &r, &oi, top, a.trace);
  else
    print_summary(t, set, &ci, &r, &oi, fin, top, a.trace);
  goto done;
fail:
  code = cli_report("sim", &err);
done:
  sim_result_free(&r);
  algo_free(set);
  topo_free(t);
  return code;
}
