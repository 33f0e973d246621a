/* sim/sim_internal.h — private to sim/: the timeline recorder behind `--trace`, fed by
 * sim.c while it runs and written as Chrome trace-event JSON once the run succeeded. */
#ifndef TENET_SIM_INTERNAL_H
#define TENET_SIM_INTERNAL_H

#include "sim/sim.h"

typedef struct sim_trace sim_trace_t;

/* An empty recorder for a run of a on t (both borrowed). Caller frees. */
tn_status_t sim_i_trace_create(const topo_t *t, const algo_t *a, sim_trace_t **out, tn_err_t *err);
void sim_i_trace_free(sim_trace_t *tr);

/* ten_xmit_fn observer: records one link transmission; cookie is the global index of the
 * SEND node. A failure to grow is kept and reported by sim_i_trace_write. */
void sim_i_trace_xmit(void *ctx, uint32_t link, uint64_t start_ps, uint64_t end_ps, uint64_t bytes,
                      uint64_t cookie);

/* Records the execution of node id of rank from start_ps (issue) to end_ps (done). */
void sim_i_trace_node(sim_trace_t *tr, uint32_t rank, uint32_t id, uint64_t start_ps,
                      uint64_t end_ps);

/* Writes the timeline to path (all or nothing): one track per link (process "links",
 * thread = link id) holding every transmission as an "X" event, and one process per NPU
 * whose node executions are async events (they overlap). rank_off (npus + 1 entries:
 * node id of rank r has global index rank_off[r] + id) decodes the cookies. */
tn_status_t sim_i_trace_write(const sim_trace_t *tr, const char *path, const uint32_t *rank_off,
                              tn_err_t *err);

/* sim_step with the shortcut of sim/step.c ("running a collective apart") on or off
 * (SIM_I_STEP_APART), with the memory of finished collectives given back for the next ones
 * or kept (SIM_I_STEP_KEEP: every collective in memory of its own), and what it did:
 * collectives run apart, those of them carried into the network later, the messages in
 * flight put back on their links then, spans taken in memory an earlier collective gave
 * back, and times the arrays grew.
 * The results are the same every way (tests/unit/test_step.c holds it to that). */
#define SIM_I_STEP_APART 1u
#define SIM_I_STEP_KEEP 2u
typedef struct sim_i_step_stats {
  uint32_t apart, carried;
  uint64_t placed;
  uint64_t sent;          /* messages sent into the network (the step's work) */
  uint32_t reused, grown; /* memory given back and taken again; arrays grown */
  uint32_t given, detailed; /* runs alone taken from opts->known; of them, simulated after all */
} sim_i_step_stats_t;
tn_status_t sim_i_step(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                       const algo_t *const *algos, const sim_step_opts_t *opts, unsigned flags,
                       sim_step_result_t *res, sim_i_step_stats_t *stats, tn_err_t *err);

#endif
