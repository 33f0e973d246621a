/* milp/milp_internal.h — private to milp/: the discretised fabric (virtual links, step
 * offsets, earliest arrivals, lower bound), discrete plans, the starting heuristics and
 * the replay through ten's engine. GLPK appears only in milp/solve.c. */
#ifndef TENET_MILP_INTERNAL_H
#define TENET_MILP_INTERNAL_H

#include "milp/milp.h"

#define MILP_NONE UINT32_MAX

/* An NPU pair the model can send over in one transfer: a direct link, or a route whose
 * intermediate nodes are all switches. Hop h occupies physical link link[h] during steps
 * [t + off[h], t + off[h] + dur[h]) for a transfer starting at step t; the chunk is held
 * by dst from step t + arrive on. */
typedef struct milp_vlink {
  uint32_t src, dst;
  uint32_t nhops;
  uint32_t link[MILP_MAX_HOPS];
  uint32_t off[MILP_MAX_HOPS];
  uint32_t dur[MILP_MAX_HOPS];
  uint32_t arrive;
} milp_vlink_t;

/* The discretised fabric for one All-Gather. */
typedef struct milp_fab {
  const topo_t *t;
  uint32_t npus, k, nchunks;
  uint64_t size_bytes;
  uint64_t step_ps;
  uint32_t nvl;
  milp_vlink_t *vl;         /* sorted by (src, dst) */
  uint32_t *vl_index;       /* [src * npus + dst] -> vlink or MILP_NONE */
  uint32_t *in_off, *in_vl; /* CSR of incoming vlinks per NPU */
  uint32_t *dist;           /* [owner * npus + v]: earliest arrival step from owner */
  uint32_t lb_steps;        /* a proven lower bound on the makespan in steps */
  /* Translation symmetry (NULL when none was found): perm[r * npus + v] is the image of
   * NPU v under the automorphism taking NPU 0 to NPU r; lperm likewise for links. */
  uint32_t *perm, *lperm;
} milp_fab_t;

/* Image of chunk c (owned by NPU 0) and of vlink e under translation r. */
static inline uint32_t milp_i_sym_chunk(const milp_fab_t *f, uint32_t r, uint32_t c) {
  return r * f->k + c % f->k;
}
static inline uint32_t milp_i_sym_vlink(const milp_fab_t *f, uint32_t r, uint32_t e) {
  const uint32_t *p = &f->perm[(size_t)r * f->npus];
  return f->vl_index[(size_t)p[f->vl[e].src] * f->npus + p[f->vl[e].dst]];
}

static inline uint32_t milp_i_owner(const milp_fab_t *f, uint32_t c) {
  return c / f->k;
}
static inline uint32_t milp_i_earliest(const milp_fab_t *f, uint32_t c, uint32_t v) {
  return f->dist[(size_t)milp_i_owner(f, c) * f->npus + v];
}

tn_status_t milp_i_fab_build(const topo_t *t, uint64_t size_bytes, uint32_t k,
                             uint32_t steps_per_xfer, milp_fab_t *f, tn_err_t *err);
void milp_i_fab_free(milp_fab_t *f);

/* A discrete All-Gather plan: for every (chunk c, NPU v) the vlink and step of the one
 * transfer that brings c to v (MILP_NONE for v = owner). */
typedef struct milp_plan {
  uint32_t *vl;   /* [c * npus + v] */
  uint32_t *step; /* [c * npus + v] */
  uint32_t makespan;
} milp_plan_t;

tn_status_t milp_i_plan_init(const milp_fab_t *f, milp_plan_t *p, tn_err_t *err);
void milp_i_plan_free(milp_plan_t *p);
/* Arrival step of c at v under p (0 for the owner, MILP_NONE when unassigned). */
uint32_t milp_i_plan_arrival(const milp_fab_t *f, const milp_plan_t *p, uint32_t c, uint32_t v);
/* Checks p: complete, senders hold what they send, no link used twice in a step; sets
 * p->makespan. TN_INTERNAL naming the first violation. */
tn_status_t milp_i_plan_check(const milp_fab_t *f, milp_plan_t *p, tn_err_t *err);

/* List-scheduling heuristic in the discrete model (a TEN greedy). With sym (f->perm must
 * be set) it places NPU 0's chunks only and every placement together with all its
 * translates, so the plan is invariant under the symmetry. */
tn_status_t milp_i_heuristic(const milp_fab_t *f, bool sym, milp_plan_t *p, tn_err_t *err);
/* Re-times a caller's schedule in the discrete model, transfer by transfer in its
 * start order, each chunk at the earliest free step (repeat deliveries dropped).
 * *fits is false (and TN_OK returned) when a transfer is routed through another NPU,
 * which the model cannot express; TN_INVAL when it is not a complete, well-formed
 * All-Gather of this fabric. */
tn_status_t milp_i_retime(const milp_fab_t *f, const schedule_t *warm, milp_plan_t *p, bool *fits,
                          tn_err_t *err);

/* Replays p through ten's engine with the simulator's discipline (every transfer issued
 * as soon as its dependencies are delivered; transfers ready at one instant issued in
 * plan order) and fills out (initialised by the caller) in issue order. With gates it
 * also tries timing-only dependencies and keeps them (*gated) when that is faster. */
tn_status_t milp_i_replay(const milp_fab_t *f, const milp_plan_t *p, bool gates, schedule_t *out,
                          bool *gated, tn_err_t *err);

/* An amount of GLPK's work: simplex iterations and branch-and-bound nodes. */
typedef struct milp_budget {
  uint64_t iters;
  uint32_t nodes;
} milp_budget_t;

/* The GLPK part: builds and solves the model with start as starting solution and
 * horizon, stopping when the work in *limit is spent (or, as a safety net, at the
 * wall-clock deadline_s, tn_wall_seconds). With sym, only NPU 0's chunks are variables
 * and every placement stands for all its translates (start must then be symmetric).
 * On TN_OK: *found says whether GLPK has an integer solution, then in best (initialised
 * by the caller); *bound_steps is a proven lower bound on the makespan (at least
 * f->lb_steps); *used the work spent; res gets status, stop, size and
 * incumbent_is_start. A model above MILP_MAX_COLS is no error: *found is false and
 * res->stop MILP_STOP_SIZE. Frees this thread's GLPK environment before returning. */
tn_status_t milp_i_glpk(const milp_fab_t *f, bool sym, const milp_plan_t *start,
                        const milp_opts_t *o, const milp_budget_t *limit, double deadline_s,
                        milp_plan_t *best, bool *found, uint32_t *bound_steps, milp_budget_t *used,
                        uint64_t *held, milp_result_t *res, tn_err_t *err);

/* One model's memory (its nonzeros, rows and columns: MILP_MEM_PER_NZ, MILP_MEM_PER_ROWCOL;
 * with MILP_MEM_BNB_PCT of that for the branch-and-bound when the root LP's iteration limit,
 * iters or else the one scaled to the model, reaches half its rows) as milp_i_glpk would
 * build it from start; 0 when it passes MILP_MAX_COLS (never given to GLPK). milp_i_glpk
 * checks MILP_MEM_BASE + *held + this against the memory cap before GLPK sees the model
 * (TN_LIMIT, res->over_mem_cap) and keeps the larger in *held; GLPK's own count (glp_mem_usage) is
 * then held to it, less our triplets: past it the search stops (MILP_STOP_MEM), and without
 * a share for the branch-and-bound there is none after the root LP. */
tn_status_t milp_i_model_bytes(const milp_fab_t *f, bool sym, const milp_plan_t *start,
                               uint64_t iters, uint64_t *bytes, tn_err_t *err);

#endif
