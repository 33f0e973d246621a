/* synth/synth_internal.h — private to synth/: the steps synth_run dispatches to. */
#ifndef TENET_SYNTH_INTERNAL_H
#define TENET_SYNTH_INTERNAL_H

#include "sim/sim.h"
#include "synth/synth.h"

/* One method (not AUTO): fills out->algo (and time_ps / milp_status where the method knows
 * them). The caller has checked the size and zeroed out. */
tn_status_t synth_i_one(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                        synth_method_t m, synth_result_t *out, tn_err_t *err);

/* synth_i_one for the portfolio, which wants nothing slower than limit_ps (0: no limit):
 * a method that finds out early that its set is slower (the baselines simulate their
 * configurations, and stop each past the limit) returns TN_OK with *pruned set and no
 * algorithm. Every other outcome is synth_i_one's. */
tn_status_t synth_i_one_within(const topo_t *t, tn_coll_t coll, uint64_t size,
                               const synth_opts_t *o, synth_method_t m, uint64_t limit_ps,
                               bool *pruned, synth_result_t *out, tn_err_t *err);

/* sim_run, but when opts->stop_after_ps is set and the busiest link alone passes it
 * (sim_link_bound_ps), the set is not simulated at all: r->stopped is set, with that
 * bound as r->time_ps, as if the run had stopped. */
tn_status_t synth_i_sim_within(const topo_t *t, const algo_t *a, const sim_opts_t *opts,
                               sim_result_t *r, tn_err_t *err);

/* A set within SYNTH_I_SETTLED_PERMILLE (per mille) of the lower bound (docs/bounds.md)
 * ends a search, since nothing else can be faster by more: the portfolio's (the other
 * candidates are not built) and the greedy's chunk search for its Reduce-Scatter and
 * All-Reduce (the other counts are not tried). On 128 NPUs the rest cost seconds
 * (torus-16x8, All-Reduce of 1 GiB: the greedy's set is at the bound, the trees' take 4 s
 * to build, the greedy's six other counts as long as the kept one). bound_ps 0: no bound
 * known, nothing is settled. */
#define SYNTH_I_SETTLED_PERMILLE 1u
/* Whether time_ps is within permille (per mille) of bound_ps (0: no bound known: never). */
static inline bool synth_i_near_bound(uint64_t time_ps, uint64_t bound_ps, uint32_t permille) {
  return bound_ps > 0 && time_ps <= bound_ps + bound_ps / 1000 * permille;
}
static inline bool synth_i_settled(uint64_t time_ps, uint64_t bound_ps) {
  return synth_i_near_bound(time_ps, bound_ps, SYNTH_I_SETTLED_PERMILLE);
}

/* The greedy and the MILP: plan All-Gather schedules and lower them to coll. */
tn_status_t synth_i_planned(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                            synth_method_t m, synth_result_t *out, tn_err_t *err);

/* Whether the MILP failed only because its model was too large for the chunk count
 * (r->milp_stop says so). */
bool synth_i_milp_too_large(const synth_result_t *r);

/* How many of the portfolio's candidates to build side by side (at most threads, and n):
 * the most whose largest estimates (need[0..n), bytes) sum within cap, at least 1. */
unsigned synth_i_side_by_side(const uint64_t *need, size_t n, unsigned threads, uint64_t cap);

/* What every returned set gets before it is made order-proof: a COMP on each idle rank
 * (algo_fill_idle) and the fabric's name. */
tn_status_t synth_i_prepare(const topo_t *t, algo_t *a, tn_err_t *err);

/* AUTO: every applicable method, simulated; the fastest is kept in out. When the kept set
 * is made order-proof here with o->on_set beside it, out->on_set_done says so. */
tn_status_t synth_i_portfolio(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                              synth_result_t *out, tn_err_t *err);

/* The pairs one simulation reports (sim_opts_t's on_tie) in order-proofing's first-run
 * window: a whole run of a set recorded so is the first run sim_make_strict_from takes. */
typedef struct synth_tie_rec {
  tn_vec_t ties; /* sim_tie_t */
  bool failed;   /* recording one ran out of memory */
} synth_tie_rec_t;

/* Empties rec and points so (otherwise as the caller set it) at it. */
void synth_i_tie_rec_start(synth_tie_rec_t *rec, sim_opts_t *so);
/* Moves rec's pairs into out as the first run of out->algo (a whole run at out->time_ps). */
void synth_i_tie_rec_take(synth_tie_rec_t *rec, synth_result_t *out);

/* An explicit schedule's replay (with its pairs, s->ties) lowered into out: out->algo,
 * out->time_ps and the first run order-proofing will take (first_ties, first_known). */
tn_status_t synth_i_lower_with_first_run(const schedule_t *s, tn_coll_t coll, const char *name,
                                         synth_result_t *out, tn_err_t *err);

/* sim_make_strict_and on r->algo (made for coll of size with o), taking r->first_ties
 * (with r->time_ps) for its first run when the plan's replay gave them; they are freed
 * (they name the set as it was).
 * The forest paces its sets so tightly that at fine chunkings nearly every message ties
 * with another and the gates' nanoseconds pile up along each link's stream (spine-4x8
 * All-Gather of 64 MiB in 128 chunks per NPU: 949.7 us as planned, 965.3 us order-proof;
 * in 64: 955.2 and 955.3 us). So a forest set of automatic chunking whose gates cost more
 * than FOREST_GATE_PERMILLE of its time is made again at half its chunks, and the faster
 * order-proof set kept (the first on equal times), at most FOREST_GATE_HALVINGS times and
 * only while both sets fit under the memory cap together (forest_mem_halving, one thread's
 * figure); fn's last call is on the set kept; r->halved_from names the first set so made. */
#define FOREST_GATE_PERMILLE 1u
#define FOREST_GATE_HALVINGS 2
tn_status_t synth_i_make_strict(const topo_t *t, tn_coll_t coll, uint64_t size,
                                const synth_opts_t *o, synth_result_t *r, sim_strict_fn fn,
                                void *ctx, sim_strict_report_t *rep, tn_err_t *err);

#endif
