/* cli/workload.c — a step's plan (cli/workload.h): its collectives and their sets, the
 * cache, the comparison with Ring and Direct, the directory ASTRA-sim runs and its
 * manifest. docs/workload.md. */
#include "cli/workload.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit/emit.h"
#include "tenet_source_digest.h"

#define NONE UINT32_MAX
#define MANIFEST_MAX (64u << 20)

static const char why_bcast[] = "BROADCAST: ASTRA-sim replays its duration";
static const char why_group[] =
    "a process group short of every rank: tenet's sets span every rank, ASTRA-sim runs its "
    "own algorithm";
static const char why_id[] = "node id above 2^31-1: ASTRA-sim's per-node YAML keys are int";
static const char why_shared[] =
    "its node id names a collective of another kind or size on another rank: ASTRA-sim's "
    "per-node YAML maps an id to one set for every rank";

void cli_wl_plan_free(cli_wl_plan_t *p) {
  for (uint32_t i = 0; i < p->nsets; i++) {
    algo_free(p->sets[i].algo);
    free(p->sets[i].alone.fin_ps);
    if (p->sets[i].base[1] != p->sets[i].base[0]) algo_free(p->sets[i].base[1]);
    algo_free(p->sets[i].base[0]);
  }
  for (int b = 0; b < 2; b++) {
    for (uint32_t k = 0; p->fill[b] && k < p->cs.n; k++)
      algo_free(p->fill[b][k]);
    free(p->fill[b]);
  }
  for (int r = 0; r < CLI_WL_RUNS; r++)
    sim_step_result_free(&p->step[r]);
  free(p->sets);
  free(p->set_of);
  free(p->why);
  wl_colls_free(&p->cs);
  wl_free(p->w);
  topo_free(p->t);
  cli_rundir_free(&p->d);
}

/* ---- loading ------------------------------------------------------------------- */

static int set_key_cmp(const cli_wl_set_t *a, tn_coll_t coll, uint64_t bytes) {
  if (a->coll != coll) return a->coll < coll ? -1 : 1;
  return (a->bytes > bytes) - (a->bytes < bytes);
}

/* The set slot of (coll, bytes), added in sorted place among p->sets[0..nsets). */
static uint32_t set_slot(cli_wl_plan_t *p, tn_coll_t coll, uint64_t bytes) {
  uint32_t lo = 0, hi = p->nsets;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = set_key_cmp(&p->sets[mid], coll, bytes);
    if (c == 0) return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(&p->sets[lo + 1], &p->sets[lo], (p->nsets - lo) * sizeof *p->sets);
  memset(&p->sets[lo], 0, sizeof *p->sets);
  p->sets[lo].coll = coll;
  p->sets[lo].bytes = bytes;
  p->nsets++;
  return lo;
}

/* A set's name: what made it, as a digest, so a cached set is reused only for the same
 * fabric, collective, size, method, seed and chunks, made by a tenet built from the same
 * sources (a cache filled by another build, whose synthesis may differ, is not read). */
static void set_name(const cli_wl_plan_t *p, cli_wl_set_t *s) {
  char text[256];
  int n = snprintf(text, sizeof text, "%016" PRIx64 " %s %" PRIu64 " %s %" PRIu64 " %u %s %s",
                   p->digest, tn_coll_name(s->coll), s->bytes, synth_method_name(p->so.method),
                   p->so.seed, p->so.chunks_per_npu, TENET_VERSION, TENET_SOURCE_DIGEST);
  uint64_t h = tn_fnv1a64(text, n > 0 ? (size_t)n : 0, TN_FNV1A64_INIT);
  snprintf(s->name, sizeof s->name, "%s-%" PRIu64 "-%016" PRIx64, tn_coll_name(s->coll), s->bytes,
           h);
}

/* The nodes of collective c on every rank: ids the YAML's int keys hold. */
static bool ids_fit(const cli_wl_plan_t *p, const wl_coll_t *c) {
  for (uint32_t q = 0; q < c->nranks; q++)
    if (wl_node(p->w, c->ranks[q], c->index[q])->id > INT32_MAX) return false;
  return true;
}

/* One node id of one rank that the YAML maps to a collective's set. */
typedef struct id_use {
  uint64_t id;
  uint32_t coll; /* index into cs */
} id_use_t;

static int id_use_cmp(const void *x, const void *y) {
  const id_use_t *a = x, *b = y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return (a->coll > b->coll) - (a->coll < b->coll);
}

/* The (id, collective) pairs of every rank of the collectives in line for a set (why
 * NULL), sorted by id. */
static tn_status_t id_uses(const cli_wl_plan_t *p, tn_vec_t *v, tn_err_t *err) {
  tn_vec_init(v, sizeof(id_use_t));
  tn_status_t st = TN_OK;
  for (uint32_t k = 0; k < p->cs.n && st == TN_OK; k++) {
    const wl_coll_t *c = &p->cs.c[k];
    for (uint32_t q = 0; p->why[k] == NULL && q < c->nranks && st == TN_OK; q++)
      st = tn_vec_push(v, &(id_use_t){wl_node(p->w, c->ranks[q], c->index[q])->id, k}, err);
  }
  if (st == TN_OK && v->len > 1) qsort(v->data, v->len, sizeof(id_use_t), id_use_cmp);
  return st;
}

/* An id that ranks use for collectives of different kinds or sizes cannot name one set in
 * the YAML: those collectives are left to ASTRA-sim. */
static tn_status_t shared_ids(cli_wl_plan_t *p, tn_err_t *err) {
  tn_vec_t v;
  tn_status_t st = id_uses(p, &v, err);
  const id_use_t *u = v.data;
  for (size_t i = 0; st == TN_OK && i < v.len;) {
    size_t j = i;
    bool clash = false;
    for (; j < v.len && u[j].id == u[i].id; j++) {
      const wl_coll_t *a = &p->cs.c[u[i].coll], *b = &p->cs.c[u[j].coll];
      clash = clash || a->coll != b->coll || a->bytes != b->bytes;
    }
    for (size_t k = i; clash && k < j; k++)
      p->why[u[k].coll] = why_shared;
    i = j;
  }
  tn_vec_free(&v);
  return st;
}

tn_status_t cli_wl_load(cli_wl_plan_t *p, tn_err_t *err) {
  tn_status_t st;
  if ((st = cli_load_topo(p->topo_arg, &p->t, err)) != TN_OK ||
      (st = cli_topo_digest(p->topo_arg, &p->digest, err)) != TN_OK)
    return st;
  if ((st = emit_chakra_read_workload(p->prefix, 0, &p->w, err)) != TN_OK) return st;
  if (p->w->npus != p->t->npus)
    return tn_err_set(err, TN_INVAL,
                      "%s: a workload of %u ranks, but the fabric '%s' has %u NPUs: each NPU "
                      "runs one rank file",
                      p->prefix, p->w->npus, p->t->name, p->t->npus);
  if ((st = wl_check(p->w, &p->cs, err)) != TN_OK) {
    tn_err_prefix(err, "%s", p->prefix);
    return st;
  }
  uint32_t n = p->cs.n;
  if ((st = tn_calloc((size_t)n + 1, sizeof *p->sets, &p->sets, err)) != TN_OK ||
      (st = tn_malloc((size_t)n + 1, sizeof *p->set_of, &p->set_of, err)) != TN_OK ||
      (st = tn_calloc((size_t)n + 1, sizeof *p->why, &p->why, err)) != TN_OK ||
      (st = tn_calloc((size_t)n + 1, sizeof *p->fill[0], &p->fill[0], err)) != TN_OK ||
      (st = tn_calloc((size_t)n + 1, sizeof *p->fill[1], &p->fill[1], err)) != TN_OK)
    return st;
  for (uint32_t k = 0; k < n; k++) {
    const wl_coll_t *c = &p->cs.c[k];
    p->set_of[k] = NONE;
    if (!c->synthesizable)
      p->why[k] = why_bcast;
    else if (c->nranks != p->t->npus)
      p->why[k] = why_group;
    else if (!ids_fit(p, c))
      p->why[k] = why_id;
  }
  if ((st = shared_ids(p, err)) != TN_OK) return st;
  for (uint32_t k = 0; k < n; k++)
    if (p->why[k] == NULL) set_slot(p, p->cs.c[k].coll, p->cs.c[k].bytes);
  /* Slots are final (sorted): map each collective to its own. */
  for (uint32_t k = 0; k < n; k++)
    if (p->why[k] == NULL) p->set_of[k] = set_slot(p, p->cs.c[k].coll, p->cs.c[k].bytes);
  for (uint32_t i = 0; i < p->nsets; i++)
    set_name(p, &p->sets[i]);
  return TN_OK;
}

/* ---- making the sets --------------------------------------------------------------- */

/* A cached set's time alone lives beside its files in NAME.time: "tenet-set-time 1
 * <set id> <time ps>". The name already pins the fabric, the collective, the size and how
 * the set was made; the set id pins its content, so the time is the one the simulator
 * gives that set on that fabric. The id is the set's as read back (emit_chakra_read_id),
 * recomputed from the set as read: a set stored with its files' own id (emit_chakra_set_id,
 * which counts a dependency listed twice twice, as order-proofing's gates once could) would
 * miss on the first run that reads it. Sets stored by an older tenet have none, or that other
 * id: they are simulated, as every cached set was, and their time stored again. */
#define TIME_MAGIC "tenet-set-time 1"

static char *time_path(const char *prefix) {
  size_t n = strlen(prefix) + sizeof ".time";
  char *path = malloc(n);
  if (path) snprintf(path, n, "%s.time", prefix);
  return path;
}

/* The time NAME.time holds for the set of read id `id`, or 0 when it is absent, unreadable
 * or names another set. */
static uint64_t stored_time(const char *prefix, uint64_t id_want) {
  char *path = time_path(prefix), *text = NULL;
  size_t len = 0;
  uint64_t id = 0, ps = 0;
  char tail = 0;
  bool ok = path && tn_read_file(path, 256, &text, &len, &(tn_err_t){0}) == TN_OK &&
            sscanf(text, TIME_MAGIC " %16" SCNx64 " %20" SCNu64 "%c", &id, &ps, &tail) == 3 &&
            tail == '\n' && id != 0 && id == id_want;
  free(text);
  free(path);
  return ok ? ps : 0;
}

/* Writes NAME.time for set a of time_ps (best effort: a cache that cannot take it only
 * costs a simulation the next time). */
static void store_time(const char *prefix, uint64_t id, uint64_t time_ps) {
  char *path = time_path(prefix);
  char text[96];
  snprintf(text, sizeof text, TIME_MAGIC " %016" PRIx64 " %" PRIu64 "\n", id, time_ps);
  tn_outfile_t o = {0};
  tn_err_t e = {0};
  if (path && time_ps != 0 && tn_outfile_open(&o, path, &e) == TN_OK) {
    if (fputs(text, o.f) < 0)
      tn_outfile_abort(&o);
    else
      (void)tn_outfile_commit(&o, &e);
  }
  free(path);
}

/* A set read back from prefix when it is what s needs (made for this fabric, this
 * collective and size) and passes algo_verify on t; a missing file is a miss, a bad one
 * (unreadable, or failing verification: an edited file) a miss with a note. Its time
 * comes from NAME.time when the cache holds it for this very set (store_time). */
static bool from_cache(const cli_wl_plan_t *p, const topo_t *t, const char *dir, cli_wl_set_t *s) {
  char *prefix = NULL, first[4200];
  tn_err_t e = {0};
  bool hit = false;
  if (cli_path_join(dir, s->name, &prefix, &e) != TN_OK) return false;
  struct stat sb;
  snprintf(first, sizeof first, "%s.0.et", prefix);
  if (stat(first, &sb) == 0) {
    algo_t *a = NULL;
    bool fits = false;
    if (emit_chakra_read(prefix, p->t->npus, &a, &e) == TN_OK)
      fits = a->has_coll && a->coll == s->coll && a->size_bytes == s->bytes &&
             strcmp(a->fabric, p->t->name) == 0;
    if (e.status != TN_OK || (fits && algo_verify(a, t, NULL, &e) != TN_OK)) {
      fprintf(stderr, "tenet workload: note: cached set %s not used: %s%s\n", prefix,
              a && fits ? "it fails verification: " : "", e.msg);
    } else if (fits) {
      s->algo = a;
      a = NULL;
      s->cached = hit = true;
      snprintf(s->source, sizeof s->source, "%s", prefix);
      snprintf(s->method, sizeof s->method, "%s", s->algo->name);
      s->read_id = emit_chakra_read_id(s->algo);
      s->time_ps = stored_time(prefix, s->read_id);
    }
    algo_free(a);
  }
  free(prefix);
  return hit;
}

typedef struct make_ctx {
  cli_wl_plan_t *p;
  topo_t **topos; /* one copy per worker */
  char *old_sets; /* DIR/sets of the directory being replaced, or NULL */
} make_ctx_t;

/* cli_wl_make_sets's jobs. */
typedef struct make_run {
  make_ctx_t c;
  uint32_t *order; /* the sets, costliest synthesis first (NULL: set order) */
} make_run_t;

/* The Ring (All-to-All: Direct) and Direct of the comparison, at their best configuration
 * as synth makes them; an All-to-All's two are one set, made once. */
static tn_status_t make_bases(const topo_t *t, cli_wl_set_t *s, tn_err_t *err) {
  for (int b = 0; b < 2; b++) {
    if (b == 1 && s->coll == TN_ALLTOALL) {
      s->base[1] = s->base[0];
      snprintf(s->base_variant[1], sizeof s->base_variant[1], "%s", s->base_variant[0]);
      break;
    }
    synth_result_t r;
    tn_status_t st =
        synth_baseline(t, s->coll, s->bytes,
                       b == 0 && s->coll != TN_ALLTOALL ? SYNTH_RING : SYNTH_DIRECT, &r, err);
    if (st != TN_OK) return st;
    s->base[b] = r.algo;
    snprintf(s->base_variant[b], sizeof s->base_variant[b], "%s", r.variant);
    r.algo = NULL;
    synth_result_free(&r); /* anything else a result holds */
  }
  return TN_OK;
}

static void make_job(void *arg, size_t item, unsigned worker) {
  make_run_t *run = arg;
  make_ctx_t *c = &run->c;
  cli_wl_plan_t *p = c->p;
  cli_wl_set_t *s = &p->sets[run->order ? run->order[item] : item];
  tn_err_t *e = &s->err;
  tn_status_t st = TN_OK;
  if (c->topos[worker] == NULL) st = topo_clone(p->t, &c->topos[worker], e);
  const topo_t *t = c->topos[worker];
  bool in_cache = st == TN_OK && p->cache && from_cache(p, t, p->cache, s);
  bool hit = in_cache || (st == TN_OK && c->old_sets && from_cache(p, t, c->old_sets, s));
  if (st == TN_OK && !hit) {
    synth_result_t r;
    if ((st = synth_run(t, s->coll, s->bytes, &p->so, &r, e)) == TN_OK) {
      s->algo = r.algo;
      s->time_ps = r.time_ps; /* synth times every set it returns */
      snprintf(s->method, sizeof s->method, "%s", synth_method_name(r.method));
    }
  } else if (st == TN_OK && s->time_ps == 0) { /* no stored time: simulate it */
    sim_result_t sr = {0};
    if ((st = sim_run(t, s->algo, NULL, &sr, e)) == TN_OK) s->time_ps = sr.time_ps;
    sim_result_free(&sr);
    if (st == TN_OK && in_cache) store_time(s->source, s->read_id, s->time_ps);
  }
  if (st == TN_OK && p->cache && !s->cached) {
    /* Stored, then linked into the directory from there (fill_dir) rather than written
     * twice; verified there, beside the step's prediction (a set that fails is taken out
     * of the cache again). */
    char *prefix = NULL;
    if ((st = cli_path_join(p->cache, s->name, &prefix, e)) == TN_OK &&
        (st = emit_chakra_write(s->algo, prefix, e)) == TN_OK) {
      if (s->read_id == 0) s->read_id = emit_chakra_read_id(s->algo);
      store_time(prefix, s->read_id, s->time_ps);
      snprintf(s->source, sizeof s->source, "%s", prefix);
    }
    free(prefix);
  }
  if (st != TN_OK && e->status == TN_OK) e->status = st;
}

/* Ring and Direct for the collectives without a set, on their ranks. */
static tn_status_t make_fills(cli_wl_plan_t *p, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t k = 0; k < p->cs.n && st == TN_OK; k++) {
    const wl_coll_t *c = &p->cs.c[k];
    if (p->set_of[k] != NONE || !c->synthesizable) continue;
    for (int b = 0; b < 2 && st == TN_OK; b++) {
      algo_t *own = NULL;
      bool ring = b == 0 && c->coll != TN_ALLTOALL;
      st = ring ? algo_ring(c->coll, c->nranks, c->bytes, 1, &own, err)
                : algo_direct(c->coll, c->nranks, c->bytes, 1, &own, err);
      if (st == TN_OK) st = algo_embed(own, c->ranks, p->t->npus, &p->fill[b][k], err);
      algo_free(own);
    }
    if (st != TN_OK) tn_err_prefix(err, "collective node %" PRIu64, c->id);
  }
  return st;
}

/* The first failed job, in set order (the same whatever the thread count). */
static tn_status_t first_failure(const cli_wl_plan_t *p, tn_err_t *err) {
  for (uint32_t i = 0; i < p->nsets; i++)
    if (p->sets[i].err.status != TN_OK) {
      *err = p->sets[i].err;
      char size[32];
      tn_err_prefix(err, "%s of %s", tn_coll_name(p->sets[i].coll),
                    tn_fmt_size(p->sets[i].bytes, size, sizeof size));
      return err->status;
    }
  return TN_OK;
}

/* A synthesis's rough cost, to start the longest first: it grows with the size, All-to-All
 * and All-Reduce most (on mesh-8x8 the All-to-All of 8 MiB takes twice the All-Reduce's
 * time and twenty times the All-Gather's). */
static uint64_t cost_of(const cli_wl_set_t *s) {
  uint64_t w = s->coll == TN_ALLTOALL ? 4 : s->coll == TN_ALLREDUCE ? 2 : 1;
  return s->bytes > UINT64_MAX / 4 ? UINT64_MAX : s->bytes * w;
}

typedef struct costed {
  uint64_t cost;
  uint32_t set;
} costed_t;

static int by_cost(const void *x, const void *y) {
  const costed_t *a = x, *b = y;
  if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
  return (a->set > b->set) - (a->set < b->set);
}

/* The sets' order, costliest first (ties in set order). */
static tn_status_t cost_order(const cli_wl_plan_t *p, uint32_t **order, tn_err_t *err) {
  costed_t *v = NULL;
  tn_status_t st = tn_malloc((size_t)p->nsets + 1, sizeof *v, &v, err);
  if (st == TN_OK) st = tn_malloc((size_t)p->nsets + 1, sizeof **order, order, err);
  if (st == TN_OK) {
    for (uint32_t i = 0; i < p->nsets; i++)
      v[i] = (costed_t){cost_of(&p->sets[i]), i};
    qsort(v, p->nsets, sizeof *v, by_cost);
    for (uint32_t i = 0; i < p->nsets; i++)
      (*order)[i] = v[i].set;
  }
  free(v);
  return st;
}

tn_status_t cli_wl_make_sets(cli_wl_plan_t *p, tn_err_t *err) {
  make_run_t r = {{p, NULL, NULL}, NULL};
  unsigned jobs = p->jobs ? p->jobs : 1;
  if (jobs > p->nsets) jobs = p->nsets ? p->nsets : 1;
  tn_status_t st = tn_calloc(jobs, sizeof *r.c.topos, &r.c.topos, err);
  /* Costliest first, so that no long synthesis starts last while the other workers idle;
   * each job writes only its own set, so the order changes no output. */
  if (st == TN_OK && jobs > 1) st = cost_order(p, &r.order, err);
  if (st == TN_OK && p->d.replace) st = cli_path_join(p->d.dir, "sets", &r.c.old_sets, err);
  if (st == TN_OK) st = cli_parallel(p->nsets, jobs, make_job, &r, NULL, err);
  for (unsigned w = 0; r.c.topos && w < jobs; w++)
    topo_free(r.c.topos[w]);
  free(r.c.topos);
  free(r.c.old_sets);
  free(r.order);
  if (st == TN_OK) st = first_failure(p, err);
  if (st == TN_OK) st = make_fills(p, err);
  return st;
}

static void bases_job(void *arg, size_t i, unsigned worker) {
  make_ctx_t *c = arg;
  cli_wl_set_t *s = &c->p->sets[i];
  tn_status_t st = TN_OK;
  if (c->topos[worker] == NULL) st = topo_clone(c->p->t, &c->topos[worker], &s->err);
  if (st == TN_OK) st = make_bases(c->topos[worker], s, &s->err);
  if (st != TN_OK && s->err.status == TN_OK) s->err.status = st;
}

/* The comparison's Ring and Direct of every set, p->jobs (or all cores) at a time. */
static tn_status_t bases_parallel(cli_wl_plan_t *p, tn_err_t *err) {
  make_ctx_t c = {p, NULL, NULL};
  unsigned jobs = p->jobs ? p->jobs : cli_cores();
  if (jobs > p->nsets) jobs = p->nsets ? p->nsets : 1;
  tn_status_t st = tn_calloc(jobs, sizeof *c.topos, &c.topos, err);
  if (st == TN_OK) st = cli_parallel(p->nsets, jobs, bases_job, &c, NULL, err);
  for (unsigned w = 0; c.topos && w < jobs; w++)
    topo_free(c.topos[w]);
  free(c.topos);
  return st == TN_OK ? first_failure(p, err) : st;
}

/* ---- reading a directory back ------------------------------------------------------ */

static const cJSON *member(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A collective's set in the manifest: its node id and the set's name. */
typedef struct named {
  uint64_t id;
  size_t at; /* its place in the array: the last of an id wins */
  const char *set;
} named_t;

static int named_cmp(const void *x, const void *y) {
  const named_t *a = x, *b = y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return (a->at > b->at) - (a->at < b->at);
}

/* The entries of colls with a numeric node and a string set, sorted by (id, place). */
static tn_status_t named_sets(const cJSON *colls, named_t **out, size_t *n, tn_err_t *err) {
  size_t len = (size_t)cJSON_GetArraySize(colls), at = 0;
  *n = 0;
  tn_status_t st = tn_malloc(len + 1, sizeof **out, out, err);
  const cJSON *it;
  cJSON_ArrayForEach(it, colls) {
    const cJSON *node = member(it, "node"), *set = member(it, "set");
    if (st == TN_OK && *n < len && cJSON_IsNumber(node) && cJSON_IsString(set))
      (*out)[(*n)++] = (named_t){(uint64_t)node->valuedouble, at, set->valuestring};
    at++;
  }
  if (st == TN_OK && *n > 1) qsort(*out, *n, sizeof **out, named_cmp);
  return st;
}

/* The set the manifest names for node id (the last entry of it), or NULL. */
static const char *set_named(const named_t *v, size_t n, uint64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the first entry past id */
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].id <= id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && v[lo - 1].id == id ? v[lo - 1].set : NULL;
}

typedef struct read_ctx {
  cli_wl_plan_t *p;
  const char *dir;
  const char **names; /* per set: its name in the manifest ("" none, NULL not needed) */
  topo_t **topos;     /* one copy per worker */
  uint32_t *order;    /* the sets, largest first (NULL: set order) */
  bool ids;           /* the manifest's runs alone may apply: each set's read_id wanted */
} read_ctx_t;

/* Reads the item-th set (cli_job_fn); a failure is kept in its err. */
static void read_job(void *arg, size_t item, unsigned worker) {
  read_ctx_t *c = arg;
  size_t i = c->order ? c->order[item] : item;
  cli_wl_set_t *s = &c->p->sets[i];
  const char *name = c->names[i];
  if (name == NULL || name[0] == '\0') return;
  char *prefix = NULL;
  tn_status_t st = TN_OK;
  if (c->topos[worker] == NULL) st = topo_clone(c->p->t, &c->topos[worker], &s->err);
  if (st == TN_OK && (st = cli_path_join(c->dir, name, &prefix, &s->err)) == TN_OK &&
      (st = cli_read_set(prefix, c->topos[worker], &s->algo, &s->err)) == TN_OK) {
    snprintf(s->method, sizeof s->method, "%s", s->algo->name);
    if (c->ids) s->read_id = emit_chakra_read_id(s->algo); /* a pass over the set: on demand */
  }
  if (st != TN_OK && s->err.status == TN_OK) s->err.status = st;
  free(prefix);
}

/* Parses "N N ... N" (npus + 1 numbers) into a; false when it is not that. */
static bool parse_alone(const char *text, uint32_t npus, sim_alone_t *a, tn_err_t *err,
                        tn_status_t *st) {
  uint64_t *v = NULL;
  if ((*st = tn_malloc((size_t)npus + 2, sizeof *v, &v, err)) != TN_OK) return false;
  const char *q = text;
  uint32_t n = 0;
  while (*q != '\0' && n < npus + 2) {
    char *end = NULL;
    errno = 0;
    if (*q < '0' || *q > '9') break;
    unsigned long long x = strtoull(q, &end, 10);
    if (errno != 0 || end == q) break;
    v[n++] = (uint64_t)x;
    q = end;
    if (*q == ' ')
      q++;
    else if (*q != '\0')
      break;
  }
  if (*q != '\0' || n != npus + 1) {
    free(v);
    return false;
  }
  a->net_end_ps = v[0];
  memmove(v, v + 1, npus * sizeof *v);
  a->fin_ps = v;
  a->nranks = npus;
  return true;
}

/* Whether manifest m's runs alone may apply: this tenet (tenet_source) made them on this
 * fabric (fabric_digest). */
static bool records_apply(const cli_wl_plan_t *p, const cJSON *m) {
  const cJSON *src = member(m, "tenet_source"), *fab = member(m, "fabric_digest");
  char hex[24];
  snprintf(hex, sizeof hex, "%016" PRIx64, p->digest);
  return cJSON_IsString(src) && strcmp(src->valuestring, TENET_SOURCE_DIGEST) == 0 &&
         cJSON_IsString(fab) && strcmp(fab->valuestring, hex) == 0;
}

/* Takes each set's run alone from the manifest m (records_apply) for the very set read
 * (set_id); a record that does not fit is passed over (its collectives are simulated). */
static tn_status_t alone_records(cli_wl_plan_t *p, const cJSON *m, const char **names,
                                 tn_err_t *err) {
  tn_status_t st = TN_OK;
  const cJSON *it;
  cJSON_ArrayForEach(it, member(m, "sets")) {
    const cJSON *set = member(it, "set"), *id = member(it, "set_id"), *al = member(it, "alone_ps");
    if (!cJSON_IsString(set) || !cJSON_IsString(id) || !cJSON_IsString(al)) continue;
    for (uint32_t i = 0; i < p->nsets && st == TN_OK; i++) {
      cli_wl_set_t *s = &p->sets[i];
      char sid[24];
      snprintf(sid, sizeof sid, "%016" PRIx64, s->read_id);
      if (s->algo == NULL || s->alone.nranks != 0 || names[i] == NULL ||
          strcmp(set->valuestring, names[i]) != 0 || strcmp(id->valuestring, sid) != 0)
        continue;
      (void)parse_alone(al->valuestring, p->t->npus, &s->alone, err, &st);
    }
  }
  return st;
}

tn_status_t cli_wl_read_dir(cli_wl_plan_t *p, const char *dir, tn_err_t *err) {
  char *path = NULL, *text = NULL;
  size_t len = 0;
  cJSON *m = NULL;
  tn_status_t st = cli_path_join(dir, CLI_WL_MANIFEST, &path, err);
  if (st == TN_OK) st = tn_read_file(path, MANIFEST_MAX, &text, &len, err);
  if (st != TN_OK) goto out;
  m = cJSON_ParseWithLength(text, len);
  const cJSON *fmt = member(m, "tenet_workload"), *colls = member(m, "collectives");
  if (!cJSON_IsNumber(fmt) || fmt->valuedouble != CLI_WL_FORMAT || !cJSON_IsArray(colls)) {
    st = tn_err_set(err, TN_PARSE, "%s: not a manifest 'tenet workload' wrote", path);
    goto out;
  }
  const cJSON *fab = member(m, "fabric");
  if (cJSON_IsString(fab) && strcmp(fab->valuestring, p->t->name) != 0)
    fprintf(stderr, "tenet sim: note: %s was made for the fabric '%s', not '%s'\n", dir,
            fab->valuestring, p->t->name);
  /* Each collective of the workload that has a set slot needs its set named; the sets
   * are read on every core, and the first collective in order whose set is missing or
   * cannot be read is the one reported. */
  read_ctx_t rc = {p, dir, NULL, NULL, NULL, records_apply(p, m)};
  unsigned jobs = p->jobs ? p->jobs : cli_cores();
  if (jobs > p->nsets) jobs = p->nsets ? p->nsets : 1;
  if ((st = tn_calloc((size_t)p->nsets + 1, sizeof *rc.names, &rc.names, err)) == TN_OK)
    st = tn_calloc(jobs, sizeof *rc.topos, &rc.topos, err);
  /* The manifest's (node, set) entries by node id, the last entry of an id winning. */
  named_t *by_id = NULL;
  size_t nid = 0;
  if (st == TN_OK) st = named_sets(colls, &by_id, &nid, err);
  for (uint32_t k = 0; k < p->cs.n && st == TN_OK; k++) {
    uint32_t i = p->set_of[k];
    if (i == NONE || p->sets[i].algo || rc.names[i]) continue;
    rc.names[i] = set_named(by_id, nid, p->cs.c[k].id);
    if (rc.names[i] == NULL) rc.names[i] = ""; /* none: reported below, in order */
  }
  free(by_id);
  /* The largest first (cost_of grows with the files too), so that no large set is read
   * last while the other workers idle; each job fills only its own set. */
  if (st == TN_OK && jobs > 1) st = cost_order(p, &rc.order, err);
  const char **dir_names = NULL; /* per set: the name it was read by (alone_records) */
  if (st == TN_OK) st = tn_calloc((size_t)p->nsets + 1, sizeof *dir_names, &dir_names, err);
  if (st == TN_OK) memcpy(dir_names, rc.names, p->nsets * sizeof *dir_names);
  if (st == TN_OK) st = cli_parallel(p->nsets, jobs, read_job, &rc, NULL, err);
  free(rc.order);
  for (uint32_t k = 0; k < p->cs.n && st == TN_OK; k++) {
    uint32_t i = p->set_of[k];
    if (i == NONE || rc.names[i] == NULL) continue;
    cli_wl_set_t *s = &p->sets[i];
    if (rc.names[i][0] == '\0')
      st = tn_err_set(err, TN_INVAL,
                      "%s: collective node %" PRIu64 " (%s of %" PRIu64
                      " B) has no set there; run 'tenet workload' again for this workload",
                      dir, p->cs.c[k].id, tn_coll_name(s->coll), s->bytes);
    else if (s->err.status != TN_OK)
      *err = s->err, st = s->err.status;
    else if (!s->algo->has_coll || s->algo->coll != s->coll || s->algo->size_bytes != s->bytes) {
      char *prefix = NULL;
      if ((st = cli_path_join(dir, rc.names[i], &prefix, err)) == TN_OK)
        st = tn_err_set(err, TN_INVAL,
                        "%s: the set for node %" PRIu64 " does not hold %s of %" PRIu64 " B",
                        prefix, p->cs.c[k].id, tn_coll_name(s->coll), s->bytes);
      free(prefix);
    }
    rc.names[i] = NULL; /* checked (for the first collective that needs it) */
  }
  for (unsigned w = 0; rc.topos && w < jobs; w++)
    topo_free(rc.topos[w]);
  free(rc.topos);
  free(rc.names);
  if (st == TN_OK && rc.ids) st = alone_records(p, m, dir_names, err);
  free(dir_names);
  if (st != TN_OK) goto out;
  if (st == TN_OK) st = bases_parallel(p, err);
  if (st == TN_OK) st = make_fills(p, err);
out:
  cJSON_Delete(m);
  free(text);
  free(path);
  return st;
}

/* ---- the step, three ways ----------------------------------------------------------- */

typedef struct predict_ctx {
  cli_wl_plan_t *p;
  tn_err_t err[CLI_WL_RUNS];
} predict_ctx_t;

/* One run of the step (cli_job_fn), on its own copy of the fabric. */
static void predict_job(void *arg, size_t run, unsigned worker) {
  (void)worker;
  predict_ctx_t *c = arg;
  cli_wl_plan_t *p = c->p;
  tn_err_t *err = &c->err[run];
  const algo_t **algos = NULL;
  sim_alone_t *known = NULL;
  topo_t *t = NULL;
  tn_status_t st = tn_calloc((size_t)p->cs.n + 1, sizeof *algos, &algos, err);
  if (st == TN_OK) st = tn_calloc((size_t)p->cs.n + 1, sizeof *known, &known, err);
  if (st == TN_OK) st = topo_clone(p->t, &t, err);
  for (uint32_t k = 0; st == TN_OK && k < p->cs.n; k++) {
    uint32_t s = p->set_of[k];
    if (s != NONE)
      algos[k] = run == CLI_WL_TENET ? p->sets[s].algo : p->sets[s].base[run - 1];
    else /* tenet's run models ASTRA-sim's own algorithm there by Ring */
      algos[k] = p->fill[run == CLI_WL_DIRECT ? 1 : 0][k];
    if (s != NONE && run == CLI_WL_TENET && p->sets[s].alone.nranks == p->cs.c[k].nranks)
      known[k] = p->sets[s].alone; /* (a shallow copy: the set owns it) */
  }
  /* tenet's run learns its sets' runs alone, for the manifest. */
  sim_step_opts_t so = {.known = known, .learn = run == CLI_WL_TENET};
  if (st == TN_OK) st = sim_step_with(t, p->w, &p->cs, algos, &so, &p->step[run], err);
  if (st == TN_PARSE) tn_err_prefix(err, "%s", p->prefix);
  if (st != TN_OK && err->status == TN_OK) err->status = st;
  topo_free(t);
  free(algos);
  free(known);
}

tn_status_t cli_wl_predict(cli_wl_plan_t *p, tn_err_t *err) {
  predict_ctx_t c = {.p = p};
  unsigned jobs = p->jobs ? p->jobs : cli_cores();
  if (jobs > CLI_WL_RUNS) jobs = CLI_WL_RUNS;
  tn_status_t st = cli_parallel(CLI_WL_RUNS, jobs, predict_job, &c, NULL, err);
  for (unsigned run = 0; st == TN_OK && run < CLI_WL_RUNS; run++)
    if (c.err[run].status != TN_OK) {
      *err = c.err[run];
      st = err->status;
    }
  return st;
}

/* ---- writing the directory ------------------------------------------------------------ */

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Copies the workload's rank files byte for byte into dir/workload/NAME.<r>.et. */
static tn_status_t copy_workload(const cli_wl_plan_t *p, const char *dir, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; r < p->w->npus && st == TN_OK; r++) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s.%u.et", p->prefix, r);
    snprintf(dst, sizeof dst, "%s/workload/%s.%u.et", dir, base_name(p->prefix), r);
    char *data = NULL;
    size_t len = 0;
    tn_outfile_t o = {0};
    if ((st = tn_read_file(src, EMIT_CHAKRA_MAX_FILE_BYTES, &data, &len, err)) == TN_OK &&
        (st = tn_mkdir_parents(dst, err)) == TN_OK &&
        (st = tn_outfile_open(&o, dst, err)) == TN_OK) {
      if (fwrite(data, 1, len, o.f) != len) {
        tn_outfile_abort(&o);
        st = tn_err_set(err, TN_IO, "%s: write failed", dst);
      } else {
        st = tn_outfile_commit(&o, err);
      }
    }
    free(data);
  }
  return st;
}

static tn_status_t per_node_yaml(const cli_wl_plan_t *p, const char *final, tn_sb_t *b,
                                 tn_err_t *err) {
  tn_sb_printf(b, "# tenet workload: the Chakra set of each collective node (ASTRA-sim's\n"
                  "# per-node-custom-implementation); collectives not listed run ASTRA-sim's "
                  "own.\n");
  tn_vec_t v;
  tn_status_t st = id_uses(p, &v, err); /* every rank's id of every collective with a set */
  const id_use_t *u = v.data;
  uint32_t listed = 0;
  for (size_t i = 0; st == TN_OK && i < v.len; i++) {
    if (i > 0 && u[i].id == u[i - 1].id) continue; /* the same set (shared_ids) */
    tn_sb_printf(b, "%" PRIu64 ": \"%s/sets/%s\"\n", u[i].id, final,
                 p->sets[p->set_of[u[i].coll]].name);
    listed++;
  }
  if (listed == 0) tn_sb_printf(b, "{}\n");
  tn_vec_free(&v);
  return st != TN_OK ? st : b->st;
}

static bool has_groups(const cli_wl_plan_t *p) {
  for (uint32_t k = 0; k < p->cs.n; k++)
    if (p->cs.c[k].pg != 0) return true;
  return false;
}

/* comm_group.json: each process group's ranks, as ASTRA-sim reads them (NULL when out of
 * memory). */
static cJSON *comm_groups(const cli_wl_plan_t *p) {
  cJSON *o = cJSON_CreateObject();
  bool ok = o != NULL;
  for (uint32_t k = 0; ok && k < p->cs.n; k++) {
    const wl_coll_t *c = &p->cs.c[k];
    char key[32];
    snprintf(key, sizeof key, "%" PRId64, c->pg);
    if (c->pg == 0 || cJSON_GetObjectItemCaseSensitive(o, key)) continue;
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (uint32_t q = 0; a && q < c->nranks; q++)
      ok = ok && cJSON_AddItemToArray(a, cJSON_CreateNumber(c->ranks[q]));
    ok = ok && a;
  }
  if (!ok) cJSON_Delete(o);
  return ok ? o : NULL;
}

static tn_status_t run_sh(const cli_wl_plan_t *p, bool groups, tn_sb_t *b) {
  char pred[64], what[512];
  snprintf(pred, sizeof pred, "%.3f", (double)p->step[CLI_WL_TENET].step_ps / 1e3);
  snprintf(what, sizeof what, "tenet workload: %s on %s", base_name(p->prefix), p->t->name);
  cli_astra_run_t r = {what, p->aware, base_name(p->prefix), groups, "step ", pred};
  return cli_astra_run_sh(&r, b);
}

/* Set i's run alone in tenet's step (NULL when the step did not learn it). */
static const sim_alone_t *alone_of(const cli_wl_plan_t *p, uint32_t i) {
  const sim_alone_t *a = p->step[CLI_WL_TENET].alone;
  for (uint32_t k = 0; a && k < p->cs.n; k++)
    if (p->set_of[k] == i && a[k].nranks == p->t->npus) return &a[k];
  return NULL;
}

/* The manifest's record of set i's run alone (for 'tenet sim --workload'): "set_id", the
 * set's emit_chakra_read_id, and "alone_ps", its last delivery and every rank's finish
 * in ps ("N N ... N": exact, which JSON numbers are not past 2^53). False when out of
 * memory. */
static bool add_alone(const cli_wl_plan_t *p, uint32_t i, cJSON *x) {
  const sim_alone_t *a = alone_of(p, i);
  if (a == NULL) return true;
  tn_sb_t b;
  tn_err_t e = {0};
  tn_sb_init(&b, &e);
  tn_sb_printf(&b, "%" PRIu64, a->net_end_ps);
  for (uint32_t r = 0; r < a->nranks; r++)
    tn_sb_printf(&b, " %" PRIu64, a->fin_ps[r]);
  char id[24];
  snprintf(id, sizeof id, "%016" PRIx64, p->sets[i].read_id);
  bool ok = b.st == TN_OK && cJSON_AddStringToObject(x, "set_id", id) &&
            cJSON_AddStringToObject(x, "alone_ps", b.v.data);
  tn_vec_free(&b.v);
  return ok;
}

static cJSON *manifest(const cli_wl_plan_t *p) {
  cJSON *o = cJSON_CreateObject(), *sets = NULL, *colls = NULL;
  if (!o) return NULL;
  char size[32];
  cJSON_AddNumberToObject(o, "tenet_workload", CLI_WL_FORMAT);
  cJSON_AddStringToObject(o, "fabric", p->t->name);
  cJSON_AddStringToObject(o, "tenet_source", TENET_SOURCE_DIGEST);
  char hex[24];
  snprintf(hex, sizeof hex, "%016" PRIx64, p->digest);
  cJSON_AddStringToObject(o, "fabric_digest", hex);
  cJSON_AddNumberToObject(o, "npus", p->t->npus);
  cJSON_AddStringToObject(o, "source", p->prefix);
  cJSON_AddStringToObject(o, "algorithm", synth_method_name(p->so.method));
  cli_json_add_u64(o, "seed", p->so.seed);
  cJSON_AddNumberToObject(o, "chunks_per_npu", p->so.chunks_per_npu);
  if ((sets = cJSON_AddArrayToObject(o, "sets")) != NULL)
    for (uint32_t i = 0; i < p->nsets; i++) {
      const cli_wl_set_t *s = &p->sets[i];
      cJSON *x = cJSON_CreateObject();
      if (!x || !cJSON_AddItemToArray(sets, x)) break;
      char rel[128];
      snprintf(rel, sizeof rel, "sets/%s", s->name);
      cJSON_AddStringToObject(x, "set", rel);
      cJSON_AddStringToObject(x, "collective", tn_coll_name(s->coll));
      cli_json_add_u64(x, "size_bytes", s->bytes);
      cJSON_AddStringToObject(x, "size", tn_fmt_size(s->bytes, size, sizeof size));
      cJSON_AddStringToObject(x, "method", s->method);
      cli_json_add_ns(x, "time_ns", s->time_ps);
      cJSON_AddBoolToObject(x, "cached", s->cached);
      if (!add_alone(p, i, x)) break;
    }
  if ((colls = cJSON_AddArrayToObject(o, "collectives")) != NULL)
    for (uint32_t k = 0; k < p->cs.n; k++) {
      const wl_coll_t *c = &p->cs.c[k];
      cJSON *x = cJSON_CreateObject();
      if (!x || !cJSON_AddItemToArray(colls, x)) break;
      char tb[24], rel[128];
      cli_json_add_u64(x, "node", c->id);
      cJSON_AddStringToObject(x, "type", wl_comm_type_name(c->comm_type, tb));
      cli_json_add_u64(x, "size_bytes", c->bytes);
      cJSON_AddNumberToObject(x, "ranks", c->nranks);
      cJSON_AddNumberToObject(x, "process_group", (double)c->pg);
      if (p->set_of[k] != NONE) {
        snprintf(rel, sizeof rel, "sets/%s", p->sets[p->set_of[k]].name);
        cJSON_AddStringToObject(x, "set", rel);
      } else {
        cJSON_AddNullToObject(x, "set");
        cJSON_AddStringToObject(x, "fallback", p->why[k]);
      }
      cli_json_add_ns(x, "start_ns", p->step[CLI_WL_TENET].coll_start_ps[k]);
      cli_json_add_ns(x, "end_ns", p->step[CLI_WL_TENET].coll_end_ps[k]);
    }
  cli_json_add_ns(o, "step_ns", p->step[CLI_WL_TENET].step_ps);
  cli_json_add_ns(o, "exposed_comm_ns", p->step[CLI_WL_TENET].exposed_ps);
  cJSON_AddBoolToObject(o, "astra", p->astra_ok);
  if (!p->astra_ok) cJSON_AddStringToObject(o, "astra_note", p->astra_why);
  return o;
}

static tn_status_t put_json(const char *dir, const char *name, cJSON *o, tn_err_t *err) {
  char *text = o ? cli_json_text(o, true) : NULL;
  cJSON_Delete(o);
  if (!text) return tn_err_set(err, TN_NOMEM, "out of memory writing %s", name);
  size_t n = strlen(text);
  char *t2 = realloc(text, n + 2);
  if (!t2) {
    free(text);
    return tn_err_set(err, TN_NOMEM, "out of memory writing %s", name);
  }
  memcpy(t2 + n, "\n", 2);
  tn_status_t st = cli_put_text(dir, name, t2, false, err);
  free(t2);
  return st;
}

/* A stored set's files, hard-linked under the new prefix (the same bytes: verified when it
 * was read from the cache, or written there by this run and verified before this call):
 * true when every rank's file was linked; else none is left and the caller writes the
 * set. */
static bool link_set(const char *from, const char *to, uint32_t npus) {
  char a[4200], b[4200];
  snprintf(b, sizeof b, "%s", to);
  if (tn_mkdir_parents(b, &(tn_err_t){0}) != TN_OK) return false;
  for (uint32_t r = 0; r < npus; r++) {
    snprintf(a, sizeof a, "%s.%u.et", from, r);
    snprintf(b, sizeof b, "%s.%u.et", to, r);
    if (link(a, b) != 0) {
      cli_unlink_ranks(to, r);
      return false;
    }
  }
  return true;
}

/* Removes a set's files and NAME.time at prefix: one this run stored that failed. */
static void drop_set(const char *prefix, uint32_t npus) {
  cli_unlink_ranks(prefix, npus);
  char *path = time_path(prefix);
  if (path) unlink(path);
  free(path);
}

typedef struct fill_ctx {
  cli_wl_plan_t *p;
  const cli_rundir_t *d;
  predict_ctx_t pc; /* the step's run with tenet's sets */
} fill_ctx_t;

/* Item 0 runs the step with tenet's sets (the figure the manifest and run.sh quote); item
 * 1 + i writes set i under d->tmp, its failure kept in its err: a set made by this run is
 * verified first, as `tenet synth` verifies its sets (algo_verify: one that fails is not
 * written, and taken out of the cache if this run stored it there; a set read from a cache
 * was verified as it was read), then linked from where it was stored, else encoded. */
static void fill_job(void *arg, size_t item, unsigned worker) {
  fill_ctx_t *c = arg;
  if (item == 0) {
    predict_job(&c->pc, CLI_WL_TENET, worker);
    return;
  }
  cli_wl_set_t *s = &c->p->sets[item - 1];
  char *prefix = NULL, rel[128];
  snprintf(rel, sizeof rel, "sets/%s", s->name);
  tn_status_t st = TN_OK;
  if (!s->cached && (st = cli_verify_made(c->p->t, s->algo, NULL, &s->err)) != TN_OK) {
    if (s->source[0]) drop_set(s->source, c->p->t->npus); /* stored by this run */
  } else if ((st = cli_path_join(c->d->tmp, rel, &prefix, &s->err)) == TN_OK &&
             !(s->source[0] && link_set(s->source, prefix, c->p->t->npus))) {
    st = emit_chakra_write(s->algo, prefix, &s->err);
  }
  if (st == TN_OK && s->read_id == 0) s->read_id = emit_chakra_read_id(s->algo); /* set_id */
  if (st != TN_OK && s->err.status == TN_OK) s->err.status = st;
  free(prefix);
}

static tn_status_t fill_dir(void *ctx, const cli_rundir_t *d, tn_err_t *err) {
  cli_wl_plan_t *p = ctx;
  /* The step runs on one worker while the others verify and write the sets: they are
   * apart (the run and the verifier only read the sets in memory), and the run takes
   * about as long as the rest. */
  fill_ctx_t c = {.p = p, .d = d, .pc = {.p = p}};
  unsigned jobs = p->jobs ? p->jobs : 1;
  tn_status_t st = cli_parallel((size_t)p->nsets + 1, jobs, fill_job, &c, NULL, err);
  if (st == TN_OK && c.pc.err[CLI_WL_TENET].status != TN_OK)
    *err = c.pc.err[CLI_WL_TENET], st = err->status;
  if (st == TN_OK) st = first_failure(p, err);
  tn_sb_t yaml, sh;
  tn_sb_init(&yaml, err);
  tn_sb_init(&sh, err);
  char *sys = NULL, *yaml_abs = NULL;
  bool grouped = has_groups(p);
  if (st == TN_OK) st = per_node_yaml(p, d->final, &yaml, err);
  if (st == TN_OK) st = cli_put_text(d->tmp, "per_node.yaml", yaml.v.data, false, err);
  if (st == TN_OK) st = cli_path_join(d->final, "per_node.yaml", &yaml_abs, err);
  cli_astra_system_t sj = {.native_dims = p->t->ndims ? p->t->ndims : 1, .per_node = yaml_abs};
  if (st == TN_OK) st = cli_astra_system_json(&sj, &sys, err);
  if (st == TN_OK) st = cli_put_text(d->tmp, "system.json", sys, false, err);
  if (st == TN_OK) st = copy_workload(p, d->tmp, err);
  if (st == TN_OK && grouped) st = put_json(d->tmp, "comm_group.json", comm_groups(p), err);
  if (st == TN_OK && p->astra_ok) st = cli_astra_common_files(d->tmp, p->t, p->aware, err);
  if (st == TN_OK && p->astra_ok) st = run_sh(p, grouped, &sh);
  if (st == TN_OK && p->astra_ok) st = cli_put_text(d->tmp, "run.sh", sh.v.data, true, err);
  if (st == TN_OK) st = put_json(d->tmp, CLI_WL_MANIFEST, manifest(p), err);
  tn_vec_free(&yaml.v);
  tn_vec_free(&sh.v);
  free(sys);
  free(yaml_abs);
  return st;
}

tn_status_t cli_wl_write(cli_wl_plan_t *p, tn_err_t *err) {
  tn_sb_t probe;
  tn_err_t e = {0};
  tn_sb_init(&probe, &e);
  p->astra_ok = topo_astra_yaml(p->t, p->aware, &probe, &e) == TN_OK;
  if (!p->astra_ok) snprintf(p->astra_why, sizeof p->astra_why, "%s", e.msg);
  tn_vec_free(&probe.v);
  return cli_rundir_write(&p->d, fill_dir, p, err);
}

/* ---- reports ---------------------------------------------------------------------------- */

cJSON *cli_wl_json(const cli_wl_plan_t *p) {
  cJSON *o = manifest(p);
  if (o) cJSON_AddStringToObject(o, "dir", p->d.dir);
  return o;
}

void cli_wl_print_sets(const cli_wl_plan_t *p, FILE *f) {
  if (p->nsets == 0) return;
  static const char *const head[] = {"collective", "size", "method", "alone us", "set"};
  cli_table_t t;
  tn_err_t e = {0};
  if (cli_table_init(&t, head, "llrrl", 5, &e) != TN_OK) return;
  for (uint32_t i = 0; i < p->nsets; i++) {
    const cli_wl_set_t *s = &p->sets[i];
    char size[32], alone[32], set[128];
    snprintf(alone, sizeof alone, "%.3f", (double)s->time_ps / 1e6);
    snprintf(set, sizeof set, "sets/%s%s", s->name, s->cached ? " (cache)" : "");
    const char *row[] = {tn_coll_name(s->coll), tn_fmt_size(s->bytes, size, sizeof size), s->method,
                         alone, set};
    if (cli_table_add(&t, row, &e) != TN_OK) break;
  }
  cli_table_print(&t, f);
  cli_table_free(&t);
}

void cli_wl_print_fallbacks(const cli_wl_plan_t *p, FILE *f) {
  for (uint32_t k = 0; k < p->cs.n; k++)
    if (p->set_of[k] == NONE) {
      char tb[24];
      fprintf(f, "left to ASTRA-sim: node %" PRIu64 " (%s of %" PRIu64 " B, %u ranks): %s\n",
              p->cs.c[k].id, wl_comm_type_name(p->cs.c[k].comm_type, tb), p->cs.c[k].bytes,
              p->cs.c[k].nranks, p->why[k]);
    }
}

/* ---- tenet sim --workload ------------------------------------------------------------- */

static const char *const run_names[CLI_WL_RUNS] = {"tenet", "ring", "direct"};

static cJSON *sim_json(const cli_wl_plan_t *p, const char *dir) {
  cJSON *o = cJSON_CreateObject(), *colls = NULL;
  if (!o) return NULL;
  const sim_step_result_t *s = &p->step[CLI_WL_TENET];
  cJSON_AddStringToObject(o, "topology", p->t->name);
  cJSON_AddNumberToObject(o, "npus", p->t->npus);
  cJSON_AddStringToObject(o, "workload", p->prefix);
  cJSON_AddStringToObject(o, "dir", dir);
  cli_json_add_ns(o, "step_ns", s->step_ps);
  cli_json_add_ns(o, "exposed_comm_ns", s->exposed_ps);
  cli_json_add_ns(o, "compute_ns", s->compute_ps[s->last_rank]);
  cJSON_AddNumberToObject(o, "last_rank", s->last_rank);
  cli_json_add_u64(o, "messages", s->messages);
  for (int r = CLI_WL_RING; r < CLI_WL_RUNS; r++) {
    cJSON *x = cJSON_AddObjectToObject(o, run_names[r]);
    if (!x) continue;
    cli_json_add_ns(x, "step_ns", p->step[r].step_ps);
    cli_json_add_ns(x, "exposed_comm_ns", p->step[r].exposed_ps);
  }
  cJSON_AddNumberToObject(o, "speedup_vs_ring",
                          s->step_ps ? (double)p->step[CLI_WL_RING].step_ps / (double)s->step_ps
                                     : 0.0);
  if ((colls = cJSON_AddArrayToObject(o, "collectives")) != NULL)
    for (uint32_t k = 0; k < p->cs.n; k++) {
      const wl_coll_t *c = &p->cs.c[k];
      cJSON *x = cJSON_CreateObject();
      if (!x || !cJSON_AddItemToArray(colls, x)) break;
      char tb[24];
      cli_json_add_u64(x, "node", c->id);
      cJSON_AddStringToObject(x, "type", wl_comm_type_name(c->comm_type, tb));
      cli_json_add_u64(x, "size_bytes", c->bytes);
      cJSON_AddNumberToObject(x, "ranks", c->nranks);
      if (p->set_of[k] != NONE) {
        cJSON_AddStringToObject(x, "method", p->sets[p->set_of[k]].method);
        cJSON_AddStringToObject(x, "set", p->sets[p->set_of[k]].name);
      } else {
        cJSON_AddStringToObject(x, "fallback", p->why[k]);
      }
      cli_json_add_ns(x, "start_ns", s->coll_start_ps[k]);
      cli_json_add_ns(x, "end_ns", s->coll_end_ps[k]);
      cli_json_add_ns(x, "time_ns", s->coll_end_ps[k] - s->coll_start_ps[k]);
    }
  return o;
}

static void sim_print(const cli_wl_plan_t *p, const char *dir) {
  const sim_step_result_t *s = &p->step[CLI_WL_TENET];
  uint32_t left = 0;
  for (uint32_t k = 0; k < p->cs.n; k++)
    left += p->set_of[k] == NONE;
  printf("step of %s on %s (%u NPUs) with the sets of %s: %u collectives (%u sets, %u left "
         "to ASTRA-sim), %" PRIu64 " messages\n\n",
         p->prefix, p->t->name, p->t->npus, dir, p->cs.n, p->nsets, left, s->messages);
  static const char *const head[] = {"algorithms", "step us", "exposed comm us", "vs tenet"};
  cli_table_t t;
  tn_err_t e = {0};
  if (cli_table_init(&t, head, "lrrr", 4, &e) == TN_OK) {
    for (int r = 0; r < CLI_WL_RUNS; r++) {
      char step[32], exp[32], rel[32];
      snprintf(step, sizeof step, "%.3f", (double)p->step[r].step_ps / 1e6);
      snprintf(exp, sizeof exp, "%.3f", (double)p->step[r].exposed_ps / 1e6);
      snprintf(rel, sizeof rel, "%.3fx",
               s->step_ps ? (double)p->step[r].step_ps / (double)s->step_ps : 0.0);
      const char *row[] = {r == CLI_WL_TENET  ? "tenet (these sets)"
                           : r == CLI_WL_RING ? "ring (a2a: direct)"
                                              : "direct",
                           step, exp, rel};
      if (cli_table_add(&t, row, &e) != TN_OK) break;
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
  }
  printf("\nrank %u finishes last: compute %.3f us, exposed communication %.3f us\n\n",
         s->last_rank, (double)s->compute_ps[s->last_rank] / 1e6, (double)s->exposed_ps / 1e6);
  static const char *const ch[] = {"node",   "collective", "size",   "ranks",
                                   "method", "start us",   "end us", "time us"};
  if (cli_table_init(&t, ch, "rllrlrrr", 8, &e) != TN_OK) return;
  for (uint32_t k = 0; k < p->cs.n; k++) {
    const wl_coll_t *c = &p->cs.c[k];
    char id[32], size[32], ranks[16], st[32], en[32], tm[32], tb[24];
    snprintf(id, sizeof id, "%" PRIu64, c->id);
    snprintf(ranks, sizeof ranks, "%u", c->nranks);
    snprintf(st, sizeof st, "%.3f", (double)s->coll_start_ps[k] / 1e6);
    snprintf(en, sizeof en, "%.3f", (double)s->coll_end_ps[k] / 1e6);
    snprintf(tm, sizeof tm, "%.3f", (double)(s->coll_end_ps[k] - s->coll_start_ps[k]) / 1e6);
    const char *method = p->set_of[k] != NONE              ? p->sets[p->set_of[k]].method
                         : c->comm_type == WL_CT_BROADCAST ? "replay"
                                                           : "ring (ASTRA-sim's own)";
    const char *row[] = {id,
                         wl_comm_type_name(c->comm_type, tb),
                         tn_fmt_size(c->bytes, size, sizeof size),
                         ranks,
                         method,
                         st,
                         en,
                         tm};
    if (cli_table_add(&t, row, &e) != TN_OK) break;
  }
  cli_table_print(&t, stdout);
  cli_table_free(&t);
}

/* Whether the manifest gave any set's run alone (alone_records). */
static bool has_records(const cli_wl_plan_t *p) {
  for (uint32_t i = 0; i < p->nsets; i++)
    if (p->sets[i].alone.nranks != 0) return true;
  return false;
}

int cli_wl_sim(const char *topo, const char *prefix, const char *dir, bool json) {
  cli_wl_plan_t p = {.prefix = prefix, .topo_arg = topo};
  tn_err_t err = {0};
  int code = 0;
  tn_status_t st = cli_wl_load(&p, &err);
  if (st == TN_OK) st = cli_wl_read_dir(&p, dir, &err);
  if (st == TN_OK && (st = cli_wl_predict(&p, &err)) == TN_INVAL && has_records(&p))
    tn_err_prefix(&err, "%s/%s", dir, CLI_WL_MANIFEST); /* the step met a record it doubts */
  if (st != TN_OK) {
    code = cli_report("sim", &err);
  } else if (json) {
    code = cli_json_print("sim", sim_json(&p, dir));
  } else {
    sim_print(&p, dir);
  }
  cli_wl_plan_free(&p);
  return code;
}
