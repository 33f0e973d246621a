/* dims — All-Gather dimension by dimension on a generated fabric (mesh, torus, hypercube,
 * ASTRA-sim's multi-dimensional [Ring, Switch, …] shapes): the hierarchical collectives
 * ASTRA-sim and NCCL run on such fabrics, with one part of the data per dimension so that
 * every dimension's links work at once. A producer beside greedy/: topo → ten → dims →
 * algo (an All-Gather schedule_t; Reduce-Scatter and All-Reduce are derived from it as
 * from the greedy's, see synth/).
 *
 * Why: on a fabric of thousands of NPUs the greedy routes every chunk on its own
 * (16.8 million transfers on 4096 NPUs) while gathering one dimension at a time moves
 * whole blocks: about npus * sum(L_d - 1) * D transfers for D dimensions of sizes L_d
 * (1.03 million on mesh-64x64). With one part per dimension, each part taking the
 * dimensions in its own rotated order, an NPU's links in every dimension carry data
 * throughout, and on a square mesh the time is within the latency of the pipeline of the
 * bound set by a corner NPU's two links. */
#ifndef TENET_DIMS_H
#define TENET_DIMS_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

/* Plans an All-Gather of size_bytes (the gathered output) on t into *out (initialised here;
 * caller frees with schedule_free; empty on failure).
 *
 * t must be generated (t->ndims > 0). Its dimensions of size 2 or more are E_0 .. E_{D-1};
 * every NPU's data is cut into D parts of one chunk, or of two where some dimension is a
 * two-way ring of an even size above 2 (see dims_chunks; a caller's chunks_per_npu, when
 * not 0, must be that count). Part j gathers along E_j, E_{j+1}, …, E_{j-1}
 * (indices mod D): in its phase s an NPU holds the part's chunks of every NPU that differs
 * from it only in the dimensions of the earlier phases (its block), and the NPUs of each
 * line of the phase's dimension exchange their blocks:
 *  - line (a mesh row): every block is passed hop by hop to both ends;
 *  - ring: halfway round in each direction (all the way round on a one-way ring; on an
 *    even ring the NPU opposite gets one half of the block from each side);
 *  - fully connected or switch: straight to every other NPU of the line, in rotated order.
 * Each block's first send waits for the deliveries that brought it (the part's earlier
 * phases at that NPU); each forward waits for the delivery it forwards. Timed by
 * schedule_replay_ties with tie_window_ps (UINT64_MAX: no pairs kept), so out->time_ps is
 * what the simulator measures on the lowering and out->ties the pairs it meets.
 *
 * Errors: TN_INVAL for an explicit fabric (no dimensions), fewer than 2 NPUs, another
 * chunks_per_npu, or a size below one byte per chunk. O(transfers · block size) time and
 * memory. */
tn_status_t dims_allgather(const topo_t *t, uint64_t size_bytes, uint32_t chunks_per_npu,
                           uint64_t tie_window_ps, schedule_t *out, tn_err_t *err);

/* The chunks per NPU dims_allgather plans on t: one per dimension of size 2 or more, two
 * where a dimension is an even two-way ring above 2 NPUs; 0 for an explicit fabric. */
uint32_t dims_chunks(const topo_t *t);

/* Bytes the whole `tenet synth -a dims` process needs for coll on t (0 when t has no
 * dimensions): per planned transfer and per chunk the transfers carry, counted before
 * planning, on `threads` threads (tn_mem_threads; synth/ checks the one-thread figure
 * against the memory cap). */
uint64_t dims_mem_estimate(const topo_t *t, tn_coll_t coll, unsigned threads);

#endif
