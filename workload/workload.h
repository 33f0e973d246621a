/* workload — a training step as a Chakra workload describes it: per rank, a DAG of compute,
 * collectives and point-to-point messages (docs/workload.md). emit/ reads and writes it,
 * sim/ runs it with one algorithm per collective, cli/ synthesizes those algorithms.
 * Pipeline: common → workload → (emit, sim) → cli. */
#ifndef TENET_WORKLOAD_H
#define TENET_WORKLOAD_H

#include "common/common.h"

/* What a node does. WL_NOP stands for Chakra's METADATA_NODE and INVALID_NODE, which
 * ASTRA-sim finishes at once. */
typedef enum { WL_COMP = 0, WL_COLL = 1, WL_SEND = 2, WL_RECV = 3, WL_NOP = 4 } wl_op_t;

/* Chakra CollectiveCommType codes (et_def.proto). */
enum {
  WL_CT_ALL_REDUCE = 0,
  WL_CT_REDUCE = 1,
  WL_CT_ALL_GATHER = 2,
  WL_CT_GATHER = 3,
  WL_CT_SCATTER = 4,
  WL_CT_BROADCAST = 5,
  WL_CT_ALL_TO_ALL = 6,
  WL_CT_REDUCE_SCATTER = 7,
  WL_CT_REDUCE_SCATTER_BLOCK = 8,
  WL_CT_BARRIER = 9
};

#define WL_MAX_NODES (1u << 22)             /* per rank */
#define WL_MAX_BYTES (1ull << 50)           /* comm_size */
#define WL_MAX_DURATION_US 1000000000000ull /* duration_micros: 11.6 days */
#define WL_MAX_NAME 256                     /* bytes of a node's name kept (longer: cut) */

typedef struct wl_node {
  uint64_t id; /* the Chakra node id (unique within its rank) */
  wl_op_t op;
  bool cpu;             /* is_cpu_op: a COMP that runs on the CPU (its own resource) */
  uint64_t duration_us; /* COMP; a BROADCAST collective (ASTRA-sim replays it) */
  int64_t comm_type;    /* COLL: WL_CT_* */
  uint64_t bytes;       /* COLL, SEND, RECV: comm_size (> 0) */
  uint32_t peer;        /* SEND: comm_dst; RECV: comm_src */
  int32_t tag;          /* SEND, RECV: comm_tag (0 when absent) */
  int64_t pg;           /* COLL: process group (pg_name); 0 when absent, "" or "0": all ranks */
  uint32_t name_off, name_len; /* into the rank's names (no NUL); see wl_name */
  uint32_t dep_off, ndeps;     /* into the rank's deps: indices of nodes of this rank */
} wl_node_t;

typedef struct wl_rank {
  tn_vec_t nodes; /* wl_node_t, in ascending id (the order ASTRA-sim issues ready nodes) */
  tn_vec_t deps;  /* uint32_t node indices */
  tn_vec_t names; /* char: the nodes' names, back to back */
} wl_rank_t;

typedef struct workload {
  uint32_t npus;
  wl_rank_t *ranks;
} workload_t;

tn_status_t wl_create(uint32_t npus, workload_t **out, tn_err_t *err);
void wl_free(workload_t *w);
/* Appends a copy of node (its offsets and counts ignored) named name (NULL: none; cut to
 * WL_MAX_NAME bytes) with deps[0..ndeps) (indices of nodes of the rank, any order,
 * repeats merged) to rank; *index (may be NULL) receives its index. Ids must ascend within a rank
 * (TN_INVAL otherwise, as for a rank out of range or more than WL_MAX_NODES nodes). Dependencies
 * may point forward: wl_check finds cycles. */
tn_status_t wl_add(workload_t *w, uint32_t rank, const wl_node_t *node, const char *name,
                   const uint32_t *deps, uint32_t ndeps, uint32_t *index, tn_err_t *err);
static inline const wl_node_t *wl_node(const workload_t *w, uint32_t rank, uint32_t i) {
  return &TN_VEC_AT(&w->ranks[rank].nodes, const wl_node_t, i);
}
static inline uint32_t wl_count(const workload_t *w, uint32_t rank) {
  return (uint32_t)w->ranks[rank].nodes.len;
}
/* The node's name, NUL-terminated in buf ("" when it has none). */
const char *wl_name(const workload_t *w, uint32_t rank, const wl_node_t *n,
                    char buf[WL_MAX_NAME + 1]);
static inline const uint32_t *wl_deps(const workload_t *w, uint32_t rank, const wl_node_t *n) {
  const uint32_t *d = w->ranks[rank].deps.data; /* NULL while the rank has no dependency */
  return d ? d + n->dep_off : d;
}

/* The Chakra type's name ("ALL_REDUCE", …, "code 42" for an unknown one; buf holds it). */
const char *wl_comm_type_name(int64_t comm_type, char buf[24]);
/* The collectives tenet synthesizes: ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL. */
bool wl_comm_type_coll(int64_t comm_type, tn_coll_t *coll);

/* One collective of the step: the COLL nodes that share a node id across ranks. */
typedef struct wl_coll {
  uint64_t id;        /* their node id */
  int64_t comm_type;  /* WL_CT_* */
  bool synthesizable; /* a type tenet makes (coll is set) */
  tn_coll_t coll;
  uint64_t bytes;
  int64_t pg;      /* 0: every rank */
  uint32_t nranks; /* ranks that hold it, ascending in ranks[] */
  uint32_t *ranks;
  uint32_t *index; /* index[k]: the node's index in rank ranks[k] */
} wl_coll_t;

typedef struct wl_colls {
  wl_coll_t *c; /* in ascending id (of each one's lowest rank's node) */
  uint32_t n;
  uint32_t *of;       /* of[rank_off[r] + i]: collective of node i of rank r, or UINT32_MAX */
  uint32_t *rank_off; /* npus + 1 entries */
} wl_colls_t;

/* Checks w as ASTRA-sim would run it and groups its collectives. TN_PARSE naming rank and
 * node id for: a rank with no node; a dependency cycle ("rank 2: dependency cycle through
 * nodes 7, 9, 12"); a SEND or RECV peer outside 0..npus-1 or equal to its rank; comm_size 0;
 * a collective type ASTRA-sim does not run (REDUCE, GATHER, SCATTER, REDUCE_SCATTER_BLOCK,
 * BARRIER, unknown codes); one node id that is a collective on one rank and something else
 * on another, or whose type, size or process group differ between ranks; a collective of
 * the default group (pg 0) missing on some ranks (ASTRA-sim would wait for them forever).
 * Collectives of another group are held by the ranks of that group. O(nodes + deps). */
tn_status_t wl_check(const workload_t *w, wl_colls_t *out, tn_err_t *err);
void wl_colls_free(wl_colls_t *c);

/* ---- example workloads (docs/workload.md) ------------------------------------------
 * Steps of the shapes the field measures, for the README, tests and bench/:
 *   dp     data parallel: per layer l a COMP "backward l" (after the previous one) and an
 *          ALL_REDUCE of its gradients (after it), so each All-Reduce overlaps the next
 *          layer's backward; then an ALL_GATHER after every All-Reduce.
 *   tp     tensor parallel: per layer ALL_GATHER, COMP, REDUCE_SCATTER, one chain.
 *   pp     pipeline: layers micro-batches; rank r RECVs each from r-1 (tag m), computes
 *          and SENDs it to r+1.
 *   mixed  layers collectives of every synthesizable type and sizes from bytes/128 to
 *          bytes (multiples of npus KiB), each after a COMP of a compute chain (seeded). */
typedef enum { WL_EX_DP = 0, WL_EX_TP = 1, WL_EX_PP = 2, WL_EX_MIXED = 3 } wl_example_t;
typedef struct wl_example_opts {
  uint32_t npus;       /* ranks, >= 2 */
  uint32_t layers;     /* dp, tp: layers; pp: micro-batches; mixed: collectives */
  uint64_t bytes;      /* each collective's size (mixed: the largest); pp: each message */
  uint64_t compute_us; /* each COMP */
  uint64_t seed;       /* mixed */
} wl_example_opts_t;
/* "dp", "tp", "pp", "mixed". */
bool wl_example_parse(const char *s, wl_example_t *kind);
const char *wl_example_name(wl_example_t kind);
/* TN_INVAL for npus < 2, layers 0 or above 100000, bytes 0 or above WL_MAX_BYTES. */
tn_status_t wl_example(wl_example_t kind, const wl_example_opts_t *o, workload_t **out,
                       tn_err_t *err);

#endif
