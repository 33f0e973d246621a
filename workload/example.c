/* workload/example.c — example steps (dp, tp, pp, mixed) for the README, tests and
 * bench/ (workload.h says what each is). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

static const char *const kind_names[] = {"dp", "tp", "pp", "mixed"};

bool wl_example_parse(const char *s, wl_example_t *kind) {
  for (int k = 0; k < 4; k++)
    if (strcmp(s, kind_names[k]) == 0) {
      *kind = (wl_example_t)k;
      return true;
    }
  return false;
}

const char *wl_example_name(wl_example_t kind) {
  return (unsigned)kind < 4 ? kind_names[kind] : "?";
}

typedef struct builder {
  workload_t *w;
  uint32_t rank;
  uint64_t next_id;
  tn_err_t *err;
} builder_t;

/* Appends a node with the next id; *index receives its index. */
static tn_status_t put(builder_t *b, wl_node_t n, const char *name, const uint32_t *deps,
                       uint32_t ndeps, uint32_t *index) {
  n.id = b->next_id++;
  return wl_add(b->w, b->rank, &n, name, deps, ndeps, index, b->err);
}

static tn_status_t comp(builder_t *b, uint64_t us, const char *name, const uint32_t *deps,
                        uint32_t ndeps, uint32_t *index) {
  return put(b, (wl_node_t){.op = WL_COMP, .duration_us = us}, name, deps, ndeps, index);
}

static tn_status_t coll(builder_t *b, int64_t type, uint64_t bytes, const char *name,
                        const uint32_t *deps, uint32_t ndeps, uint32_t *index) {
  return put(b, (wl_node_t){.op = WL_COLL, .comm_type = type, .bytes = bytes}, name, deps, ndeps,
             index);
}

static tn_status_t rank_dp(builder_t *b, const wl_example_opts_t *o) {
  uint32_t prev = 0, *ars = NULL, x;
  tn_status_t st = tn_malloc(o->layers, sizeof *ars, &ars, b->err);
  char name[64];
  for (uint32_t l = 0; st == TN_OK && l < o->layers; l++) {
    snprintf(name, sizeof name, "backward layer %u", l);
    st = comp(b, o->compute_us, name, &prev, l ? 1 : 0, &x);
    prev = x;
    snprintf(name, sizeof name, "allreduce gradients layer %u", l);
    if (st == TN_OK) st = coll(b, WL_CT_ALL_REDUCE, o->bytes, name, &prev, 1, &ars[l]);
  }
  if (st == TN_OK)
    st = coll(b, WL_CT_ALL_GATHER, o->bytes, "allgather parameters", ars, o->layers, NULL);
  free(ars);
  return st;
}

static tn_status_t rank_tp(builder_t *b, const wl_example_opts_t *o) {
  uint32_t prev = 0, x = 0;
  tn_status_t st = TN_OK;
  char name[64];
  for (uint32_t l = 0; st == TN_OK && l < o->layers; l++) {
    snprintf(name, sizeof name, "allgather activations layer %u", l);
    st = coll(b, WL_CT_ALL_GATHER, o->bytes, name, &prev, l ? 1 : 0, &x);
    snprintf(name, sizeof name, "matmul layer %u", l);
    if (st == TN_OK) st = comp(b, o->compute_us, name, &x, 1, &x);
    snprintf(name, sizeof name, "reducescatter outputs layer %u", l);
    if (st == TN_OK) st = coll(b, WL_CT_REDUCE_SCATTER, o->bytes, name, &x, 1, &prev);
  }
  return st;
}

static tn_status_t rank_pp(builder_t *b, const wl_example_opts_t *o) {
  uint32_t r = b->rank, prev = 0, deps[2], nd, x;
  tn_status_t st = TN_OK;
  char name[64];
  for (uint32_t m = 0; st == TN_OK && m < o->layers; m++) {
    nd = 0;
    if (m) deps[nd++] = prev;
    if (r > 0) {
      snprintf(name, sizeof name, "recv micro-batch %u", m);
      st = put(b, (wl_node_t){.op = WL_RECV, .peer = r - 1, .tag = (int32_t)m, .bytes = o->bytes},
               name, NULL, 0, &x);
      deps[nd++] = x;
    }
    snprintf(name, sizeof name, "forward micro-batch %u", m);
    if (st == TN_OK) st = comp(b, o->compute_us, name, deps, nd, &prev);
    if (st == TN_OK && r + 1 < b->w->npus) {
      snprintf(name, sizeof name, "send micro-batch %u", m);
      st = put(b, (wl_node_t){.op = WL_SEND, .peer = r + 1, .tag = (int32_t)m, .bytes = o->bytes},
               name, &prev, 1, NULL);
    }
  }
  return st;
}

/* The mixed step's k-th collective: the same on every rank (drawn from the seed alone). */
static void mixed_coll(const wl_example_opts_t *o, tn_rng_t *rng, int64_t *type, uint64_t *bytes) {
  static const int64_t types[] = {WL_CT_ALL_REDUCE, WL_CT_ALL_GATHER, WL_CT_REDUCE_SCATTER,
                                  WL_CT_ALL_TO_ALL};
  *type = types[tn_rng_below(rng, 4)];
  uint64_t unit = (uint64_t)o->npus * 1024u, top = o->bytes / unit;
  if (top == 0) top = 1;
  uint64_t shift = tn_rng_below(rng, 8); /* bytes down to bytes / 128 */
  uint64_t units = top >> shift;
  *bytes = (units ? units : 1) * unit;
}

static tn_status_t rank_mixed(builder_t *b, const wl_example_opts_t *o) {
  tn_rng_t rng;
  tn_rng_seed(&rng, o->seed);
  uint32_t prev = 0, x;
  tn_status_t st = TN_OK;
  char name[64];
  for (uint32_t k = 0; st == TN_OK && k < o->layers; k++) {
    int64_t type;
    uint64_t bytes;
    mixed_coll(o, &rng, &type, &bytes);
    snprintf(name, sizeof name, "compute %u", k);
    st = comp(b, o->compute_us, name, &prev, k ? 1 : 0, &x);
    prev = x;
    char tb[24];
    snprintf(name, sizeof name, "%s %u", wl_comm_type_name(type, tb), k);
    if (st == TN_OK) st = coll(b, type, bytes, name, &prev, 1, NULL);
  }
  return st;
}

tn_status_t wl_example(wl_example_t kind, const wl_example_opts_t *o, workload_t **out,
                       tn_err_t *err) {
  *out = NULL;
  if (o->npus < 2) return tn_err_set(err, TN_INVAL, "an example step needs at least 2 ranks");
  if (o->layers == 0 || o->layers > 100000)
    return tn_err_set(err, TN_INVAL, "layers %u outside 1..100000", o->layers);
  if (o->bytes == 0 || o->bytes > WL_MAX_BYTES)
    return tn_err_set(err, TN_INVAL, "size %" PRIu64 " bytes outside 1..%" PRIu64, o->bytes,
                      (uint64_t)WL_MAX_BYTES);
  if (o->compute_us > WL_MAX_DURATION_US)
    return tn_err_set(err, TN_INVAL, "compute %" PRIu64 " us above %" PRIu64, o->compute_us,
                      (uint64_t)WL_MAX_DURATION_US);
  if ((unsigned)kind > WL_EX_MIXED) return tn_err_set(err, TN_INVAL, "unknown example kind");
  workload_t *w = NULL;
  tn_status_t st = wl_create(o->npus, &w, err);
  for (uint32_t r = 0; st == TN_OK && r < o->npus; r++) {
    builder_t b = {w, r, 0, err};
    st = kind == WL_EX_DP   ? rank_dp(&b, o)
         : kind == WL_EX_TP ? rank_tp(&b, o)
         : kind == WL_EX_PP ? rank_pp(&b, o)
                            : rank_mixed(&b, o);
  }
  if (st != TN_OK) {
    wl_free(w);
    return st;
  }
  *out = w;
  return TN_OK;
}
