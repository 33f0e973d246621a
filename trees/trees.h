/* trees — All-Reduce over a fractional packing of spanning trees (in the spirit of Blink,
 * MLSys 2020): each tree reduces its share of the data up to its root and broadcasts it
 * back down, pipelined in chunks with per-node flow control. A producer beside greedy/:
 * topo → ten → trees → algo (the schedule is an explicit reduction schedule, ten/ten.h).
 *
 * Without in-network reduction every element of an All-Reduce must enter every NPU but one
 * twice over the fabric's links (once partially reduced, once complete), so on a fabric of
 * total link bandwidth B_sum it takes at least 2(n-1)S / B_sum; trees whose edges each carry
 * the data once up and once down reach it in steady state when their packing value (the
 * bandwidth the trees carry together) is B_sum / (2(n-1)), as on meshes, tori and
 * hypercubes. */
#ifndef TENET_TREES_H
#define TENET_TREES_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

/* The trees of a packing, each rooted at a centre (an NPU of least eccentricity). A tree
 * edge u-v stands for the links u->v and v->u, which it loads alike (the data goes up one
 * and down the other), so the capacity of an NPU pair is the smaller of its two links'
 * bandwidths; an NPU pair with a link one way only is not used. On a fabric with switches
 * the edges are the NPU pairs whose routes both ways cross switches only, and a tree edge
 * loads every link of both routes: the edges of one NPU through one switch share its links
 * there (Blink's trees through an NVSwitch), so a star of n NPUs packs n B / (2(n - 1)). */
typedef struct trees_packing {
  uint32_t npus, ntrees;
  uint32_t *root;         /* ntrees: the tree's root NPU */
  uint32_t *parent;       /* ntrees * npus: parent[i * npus + v], UINT32_MAX at the root */
  double *weight_GBps;    /* ntrees: bandwidth the tree carries, > 0 */
  double value_GBps;      /* sum of weight_GBps: every NPU pair within capacity */
  double fractional_GBps; /* value of the packing before it was cut to ntrees trees */
} trees_packing_t;

/* Packs spanning trees of the NPU graph of t (fractional packing by multiplicative
 * weights, Garg and Koenemann), then keeps the max_trees heaviest (0: TREES_MAX_TREES) and
 * weighs those again: exactly by linear program when the build has GLPK, else by
 * multiplicative weights. Through switches the linear program first weighs up to 1024 of
 * the heaviest and the kept ones are those it uses most (the multiplicative weights spread
 * over many star-like trees there). The oracle is the lightest layered tree (every NPU's parent is
 * nearer some root in hops, or as near with a lower id: on meshes, tori and hypercubes a
 * breadth-first tree, as shallow as its root allows, so the pipeline fills and drains
 * fast); where those pack below 0.97 of the partition bound, igraph's minimum spanning tree
 * over all spanning trees is tried too and kept if it packs 3% more. Deterministic: no
 * seed, ties go to the lowest edge, tree, root or NPU id. Fills *out
 * (caller frees with trees_packing_free; zeroed on failure). TN_INVAL for fewer than 2
 * NPUs, a fabric with switches that joins more than 512 NPU pairs through them (the
 * packing's cost grows with them), and when the NPU pairs do not connect every NPU;
 * TN_INTERNAL / TN_NOMEM from igraph. The value is within a few
 * percent of the optimum (Nash-Williams/Tutte: the least, over partitions of the NPUs into
 * k >= 2 parts, of the capacity between parts over k - 1). O(L log L / eps^2) oracle calls of
 * O(n L) each (layered) or O(L log L) (minimum spanning tree), L = NPU pairs; O(n L)
 * memory. mesh-16x8: 30 ms; mesh-32x32: 3 s. */
#define TREES_MAX_TREES 64u
tn_status_t trees_pack(const topo_t *t, uint32_t max_trees, trees_packing_t *out, tn_err_t *err);
void trees_packing_free(trees_packing_t *p);

typedef struct trees_opts {
  uint32_t chunks_per_npu; /* 0 = automatic by size (see trees_allreduce) */
  uint32_t max_trees;      /* 0 = TREES_MAX_TREES */
  double window_per_hop;   /* flow-control scale, 0 = TREES_WINDOW_PER_HOP (through
                              switches TREES_SWITCHED_WINDOW_PER_HOP) */
  /* Keep in out->ties the pairs the plan's replay saw within this window
   * (schedule_replay_ties), for the simulator's order-proofing; false: none kept. */
  bool keep_ties;
  uint64_t tie_window_ps;
} trees_opts_t;

#define TREES_WINDOW_PER_HOP 0.6
/* Through switches a tree edge's link into or out of the switch is shared by all the tree
 * edges of its NPU there (star-like trees), and the windows must cover that queueing: at
 * 1 GiB, 5, 7 and 10 gave rail-4x8 with a dead and a degraded NIC 5.776 / 5.750 / 5.779
 * ms, leaf-32 5.800 / 5.769 / 5.758, spine-4x8 30.69 / 30.52 / 30.71 (0.6: 1.7 times the
 * bound on the first two). */
#define TREES_SWITCHED_WINDOW_PER_HOP 7.0

/* Plans an All-Reduce of size_bytes on t over trees_pack(t, opts->max_trees).
 *
 * Data: the n * chunks_per_npu chunks are dealt to the trees in proportion to their
 * weights (consecutive ids per tree); a tree sends its chunks in messages of 1, 1, 2, 2, 4,
 * 4, ... chunks growing from both ends up to the steady size (small first messages fill the
 * pipeline fast, small last ones drain it fast). Automatic chunking aims at about 128
 * steady messages per tree of at least 8 KiB, at most 2^20 transfers in all, 4 chunks a
 * steady message.
 * Moves: message q of a tree goes up it (every NPU sends its children's sums plus its own
 * contribution to its parent: SCHED_REDUCE) and back down from the root (SCHED_COPY).
 * Flow control, as timing-only dependencies: an NPU at depth d of a tree sends message q up
 * only after the message that ended W chunks before q came back down to it, W the tree's
 * rate times the round trip of d hops (latency plus window_per_hop * 7 steady messages of
 * the tree's share of queueing per hop), so a tree keeps to its weight without flooding the
 * links with reduce traffic ahead of the broadcasts that finish chunks; and across trees
 * an NPU has at most 4 times the sum of its trees' windows up, so a lagging tree makes the
 * others hold back and the trees finish together.
 *
 * Fills *out, an explicit TN_ALLREDUCE schedule for algo_from_schedule(out, TN_ALLREDUCE),
 * with the times of ten/'s engine running it as the simulator runs its lowering (COMP nodes
 * costing 1 ns): out->time_ps is what sim/ measures. Caller frees with schedule_free
 * (initialised here, empty on failure). Errors: those of trees_pack; TN_INVAL for a size
 * below one byte per chunk. O(T log T) in the transfers T = 2 (n - 1) * messages, plus the
 * packing; about 0.5 us per transfer. */
tn_status_t trees_allreduce(const topo_t *t, uint64_t size_bytes, const trees_opts_t *opts,
                            schedule_t *out, tn_err_t *err);

/* What trees_allreduce(t, size, opts) will plan on a fabric of n NPUs, before packing: its
 * transfers (the automatic chunking and message sizes, counting the packing's cap of trees),
 * and the peak memory of a synthesis with it (the whole `tenet synth -a trees` process:
 * planning, lowering, order-proofing, simulating, verifying and writing), from what such a
 * process was measured to use per transfer (bench_mem; within 20% at 64 to 4096 NPUs at
 * 1 GiB), on `threads` threads (tn_mem_threads). trees_allreduce refuses a case whose
 * one-thread figure is over the cap (tn_mem_cap; TN_LIMIT with the figure) before packing. */
#define TREES_MEM_BASE ((uint64_t)7 << 20)
uint64_t trees_transfers_estimate(uint32_t n, uint64_t size, const trees_opts_t *opts);
uint64_t trees_mem_estimate(uint32_t n, uint64_t size, const trees_opts_t *opts, unsigned threads);

#endif
