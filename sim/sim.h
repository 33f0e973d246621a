/* sim — the event-driven analytical network simulator: runs an algo_t on a topo_t with
 * the congestion-aware model of docs/architecture.md §3 (it drives ten/'s engine, the same one
 * the planners use) and reports the collective time. Pipeline: algo → sim → cli. */
#ifndef TENET_SIM_H
#define TENET_SIM_H

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"

typedef struct sim_opts {
  const char *trace_path; /* Chrome trace-event JSON timeline, or NULL */
} sim_opts_t;

typedef struct sim_link_use {
  uint32_t link;
  uint64_t bytes, busy_ps, messages;
} sim_link_use_t;

typedef struct sim_result {
  uint64_t time_ps;         /* finish of the last NPU */
  uint64_t *npu_finish_ps;  /* npus entries (caller frees via sim_result_free) */
  uint32_t npus;
  sim_link_use_t *links;    /* every link, sorted by busy time descending then id */
  uint32_t nlinks;
  uint64_t messages, events;
} sim_result_t;

/* Simulates a on t. An unmatched SEND/RECV, a dependency cycle, a deadlock or a peer
 * outside the topology ends the run with TN_PARSE naming rank, node and reason. A
 * disconnected fabric gives TN_INFEASIBLE. O((nodes + messages*hops) log pending). */
tn_status_t sim_run(const topo_t *t, const algo_t *a, const sim_opts_t *opts, sim_result_t *res,
                    tn_err_t *err);
void sim_result_free(sim_result_t *r);

#endif
