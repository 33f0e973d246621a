/* greedy/greedy_internal.h — private to greedy/: one planning pass at a fixed number of
 * chunks per NPU (plan.c), driven by greedy_run's search over that number (greedy.c). */
#ifndef TENET_GREEDY_INTERNAL_H
#define TENET_GREEDY_INTERNAL_H

#include "greedy/greedy.h"

#include <stdatomic.h>

/* How a planning pass of the chunking search may end early, read at every instant (both
 * may be set by another thread): it gives up once its time passes *limit_ps (it could
 * not be kept: greedy.c keeps a finer chunking only when it beats the best by a margin),
 * or when *cancel is set (the search ended without needing it). */
typedef struct greedy_i_stop {
  _Atomic uint64_t *limit_ps;
  atomic_bool *cancel;
} greedy_i_stop_t;

/* Plans one All-Gather of size_bytes with k chunks per NPU on t (connected, npus >= 2,
 * size_bytes >= npus * k; o's seed, stagger_ps, roots and rarest as greedy_opts_t says, its
 * chunks_per_npu unused; roots checked by the caller) into *out (initialised here; caller frees
 * with schedule_free, also on failure). routes is borrowed and must not be shared with a concurrent
 * pass (it caches routes). stop may be NULL; when the pass gives up, *gave_up is set (may be NULL
 * when stop is) and *out is left empty. TN_INFEASIBLE when some NPU can be reached only
 * through another NPU's route (pathological explicit routes). O(n^2 k (deg + log)). */
tn_status_t greedy_i_plan(const topo_t *t, topo_routes_t *routes, uint64_t size_bytes, uint32_t k,
                          const greedy_opts_t *o, const greedy_i_stop_t *stop, bool *gave_up,
                          schedule_t *out, tn_err_t *err);

/* Bytes greedy_i_plan plus the lowering of its result to an algo_t for coll are expected
 * to use at most, with k chunks per NPU (the figure greedy_run checks against its cap). */

/* Static functions NAME_push and NAME_pop of a binary min-heap of T ordered by
 * LESS(const T *, const T *) (h[0] the least; *n entries, room kept by the caller): the
 * list schedules of alltoall.c and listed.c. */
#define GREEDY_I_HEAP_FNS(NAME, T, LESS)                                                           \
  static void NAME##_push(T *h, uint32_t *n, T v) {                                                \
    uint32_t i = (*n)++;                                                                           \
    while (i > 0 && LESS(&v, &h[(i - 1) / 2])) {                                                   \
      h[i] = h[(i - 1) / 2];                                                                       \
      i = (i - 1) / 2;                                                                             \
    }                                                                                              \
    h[i] = v;                                                                                      \
  }                                                                                                \
  static T NAME##_pop(T *h, uint32_t *n) {                                                         \
    T top = h[0], last = h[--*n];                                                                  \
    uint32_t m = *n, i = 0;                                                                        \
    for (;;) {                                                                                     \
      uint32_t c = 2 * i + 1;                                                                      \
      if (c >= m) break;                                                                           \
      if (c + 1 < m && LESS(&h[c + 1], &h[c])) c++;                                                \
      if (!LESS(&h[c], &last)) break;                                                              \
      h[i] = h[c];                                                                                 \
      i = c;                                                                                       \
    }                                                                                              \
    if (m > 0) h[i] = last;                                                                        \
    return top;                                                                                    \
  }

#endif
