/* greedy/greedy_internal.h — private to greedy/: one planning pass at a fixed number of
 * chunks per NPU (plan.c), driven by greedy_run's search over that number (greedy.c). */
#ifndef TENET_GREEDY_INTERNAL_H
#define TENET_GREEDY_INTERNAL_H

#include "greedy/greedy.h"

/* Plans one All-Gather of size_bytes with k chunks per NPU on t (connected, npus >= 2,
 * size_bytes >= npus * k) into *out (initialised here; caller frees with schedule_free,
 * also on failure). routes is borrowed. TN_INFEASIBLE when some NPU can be reached only
 * through another NPU's route (pathological explicit routes). O(n^2 k (deg + log)). */
tn_status_t greedy_i_plan(const topo_t *t, topo_routes_t *routes, uint64_t size_bytes, uint32_t k,
                          uint64_t seed, schedule_t *out, tn_err_t *err);

/* Bytes greedy_i_plan plus the lowering of its result to an algo_t for coll are expected
 * to use at most, with k chunks per NPU (the figure greedy_run checks against its cap). */
uint64_t greedy_i_mem_estimate(const topo_t *t, uint32_t k, tn_coll_t coll);

#endif
