/* greedy — the TEN greedy synthesizer (in the spirit of TACOS, MICRO 2024): expand the
 * fabric in time and, at every event, match free links to chunks their far end still
 * lacks. Produces an All-Gather schedule_t; algo/ lowers it (and derives Reduce-Scatter
 * and All-Reduce). Pipeline: topo → ten → greedy → algo. */
#ifndef TENET_GREEDY_H
#define TENET_GREEDY_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

typedef struct greedy_opts {
  uint64_t seed;           /* tie-breaking seed; same seed, same schedule */
  uint32_t chunks_per_npu; /* 0 = choose automatically for the size */
} greedy_opts_t;

/* Plans an All-Gather of size_bytes (gathered output) on t and fills *out (initialised
 * here; caller frees with schedule_free). Refuses a disconnected fabric (TN_INFEASIBLE)
 * and one too large for the memory cap (TN_LIMIT, with the figure). out->time_ps is the
 * predicted time, equal to what the simulator measures on the lowered algorithm. */
tn_status_t greedy_run(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                       schedule_t *out, tn_err_t *err);

#endif
