/* algo — a collective algorithm as one DAG per NPU of SEND / RECV / COMP nodes: the
 * in-memory twin of a Chakra ET set (docs/chakra-format.md). Every producer builds one
 * (schedule lowering, Ring and Direct baselines, MSCCL import, the Chakra reader); every
 * consumer reads one (Chakra writer, simulator, verifier).
 *
 * Semantics (what the verifier checks, and what producers must record):
 *  - The collective cuts its size S into npus * chunks_per_npu chunks (ten_chunk_bytes);
 *    chunk c belongs to NPU c / chunks_per_npu. All-to-All cuts every NPU's whole send
 *    buffer instead (npus * S, tn_coll_space): chunks_per_npu is npus * m, and NPU r's
 *    chunk r * chunks_per_npu + d * m + j (j < m) is addressed to NPU d.
 *  - Each NPU has one buffer slot per chunk holding a set of contributions (NPU ids).
 *    Start: All-Gather and All-to-All — NPU r holds its own chunks complete (all
 *    contributions), nothing else; Reduce-Scatter and All-Reduce — NPU r holds {r} for
 *    every chunk.
 *  - A SEND carries the listed chunks with the values the sender's slots have once the
 *    send's dependencies are done. A copy RECV (reduce == false) overwrites the slots of
 *    its chunks on arrival. A reduce RECV (reduce == true) puts its chunks in scratch; a
 *    COMP listing chunks then adds, for each of them, the scratch values of its direct
 *    reduce-RECV dependencies to the slot (the sets must be disjoint: every contribution
 *    exactly once). A COMP listing no chunks is pure time.
 *  - End: All-Gather — every NPU holds every chunk complete; Reduce-Scatter — NPU r holds
 *    its own chunks complete; All-Reduce — every NPU holds every chunk complete;
 *    All-to-All — NPU d holds every chunk addressed to it.
 *  - A node whose nchunks is 0 carries no bookkeeping (foreign files); then only matching,
 *    acyclicity and deadlock freedom can be checked.
 * Node ids are indices 0..n-1 within a rank; dependencies refer to lower or higher ids of
 * the same rank. Nodes that become ready together are issued in ascending id order. */
#ifndef TENET_ALGO_H
#define TENET_ALGO_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

#define ALGO_MAX_TAG 499999999 /* ASTRA-sim's limit: 0 <= tag < 500,000,000 */

typedef enum { ALGO_SEND = 0, ALGO_RECV = 1, ALGO_COMP = 2 } algo_op_t;

typedef struct algo_node {
  algo_op_t op;
  bool reduce;                 /* RECV: lands in scratch for a later COMP reduction */
  int32_t peer;                /* SEND: destination rank; RECV: source rank; COMP: -1 */
  int32_t tag;                 /* SEND/RECV: 0..ALGO_MAX_TAG */
  uint64_t bytes;              /* SEND/RECV: message size, > 0 */
  uint64_t duration_us;        /* COMP: Chakra duration_micros (0 costs 1 ns in simulation) */
  uint32_t dep_off, ndeps;     /* into the rank's deps pool */
  uint32_t chunk_off, nchunks; /* into the rank's chunks pool; 0 = no bookkeeping */
} algo_node_t;

typedef struct algo_rank {
  tn_vec_t nodes;  /* algo_node_t; a node's id is its index */
  tn_vec_t deps;   /* uint32_t node ids */
  tn_vec_t chunks; /* uint32_t chunk ids */
} algo_rank_t;

typedef struct algo {
  char name[32];   /* producer: "greedy", "milp", "ring", "direct", "msccl", "chakra" */
  char fabric[64]; /* the fabric it was made for (synth), as its files record it; "" unknown */
  bool has_coll;   /* coll/chunks_per_npu/size_bytes are known */
  tn_coll_t coll;
  uint32_t npus;
  uint32_t chunks_per_npu;
  uint64_t size_bytes;  /* the collective's NCCL size */
  uint64_t space_bytes; /* what its chunks divide (tn_coll_space) */
  algo_rank_t *ranks;   /* npus entries */
} algo_t;

/* Creates an empty algorithm for npus ranks. name is copied (truncated to 31 chars).
 * Caller frees with algo_free. */
tn_status_t algo_create(const char *name, tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                        uint64_t size_bytes, algo_t **out, tn_err_t *err);
/* Declares a's collective (has_coll, coll, chunks_per_npu, size_bytes, space_bytes): the
 * one place that checks them. TN_INVAL when npus * size overflows (All-to-All) or an
 * All-to-All's chunks per NPU are not a multiple of npus; a is unchanged then. */
tn_status_t algo_set_collective(algo_t *a, tn_coll_t coll, uint32_t chunks_per_npu,
                                uint64_t size_bytes, tn_err_t *err);
/* The same for files whose collective is unknown (has_coll false). */
tn_status_t algo_create_unknown(const char *name, uint32_t npus, algo_t **out, tn_err_t *err);
/* An empty algorithm with a's header: producer name, ranks, collective, fabric. For passes
 * that rebuild a set node by node (sim_make_strict, algo_drop_gates). */
tn_status_t algo_create_like(const algo_t *a, algo_t **out, tn_err_t *err);
void algo_free(algo_t *a);

/* Appends a node to rank; deps (node ids of that rank, ndeps of them, taken from
 * node->ndeps) and chunks (node->nchunks) are copied; dep_off/chunk_off are ignored.
 * *id receives the new node's id (may be NULL). Amortised O(ndeps + nchunks). */
tn_status_t algo_add(algo_t *a, uint32_t rank, const algo_node_t *node, const uint32_t *deps,
                     const uint32_t *chunks, uint32_t *id, tn_err_t *err);

/* Makes room for rank to hold nodes nodes, deps dependency ids and chunks chunk ids in
 * all (exactly that capacity, no rounding up), so that algo_add does not reallocate
 * before then. A hint for producers that know their sizes; never shrinks. */
tn_status_t algo_reserve(algo_t *a, uint32_t rank, size_t nodes, size_t deps, size_t chunks,
                         tn_err_t *err);

/* Convenience wrappers around algo_add. */
tn_status_t algo_add_send(algo_t *a, uint32_t rank, uint32_t dst, int32_t tag, uint64_t bytes,
                          const uint32_t *deps, uint32_t ndeps, const uint32_t *chunks,
                          uint32_t nchunks, uint32_t *id, tn_err_t *err);
tn_status_t algo_add_recv(algo_t *a, uint32_t rank, uint32_t src, int32_t tag, uint64_t bytes,
                          bool reduce, const uint32_t *deps, uint32_t ndeps, const uint32_t *chunks,
                          uint32_t nchunks, uint32_t *id, tn_err_t *err);
tn_status_t algo_add_comp(algo_t *a, uint32_t rank, uint64_t duration_us, const uint32_t *deps,
                          uint32_t ndeps, const uint32_t *chunks, uint32_t nchunks, uint32_t *id,
                          tn_err_t *err);

static inline uint32_t algo_rank_len(const algo_t *a, uint32_t r) {
  return (uint32_t)a->ranks[r].nodes.len;
}
static inline const algo_node_t *algo_node(const algo_t *a, uint32_t r, uint32_t id) {
  return &TN_VEC_AT(&a->ranks[r].nodes, algo_node_t, id);
}
static inline const uint32_t *algo_node_deps(const algo_t *a, uint32_t r, const algo_node_t *n) {
  return TN_VEC_SLICE(&a->ranks[r].deps, uint32_t, n->dep_off);
}
static inline const uint32_t *algo_node_chunks(const algo_t *a, uint32_t r, const algo_node_t *n) {
  return TN_VEC_SLICE(&a->ranks[r].chunks, uint32_t, n->chunk_off);
}

/* Total nodes and messages (SENDs) over all ranks. */
uint64_t algo_node_count(const algo_t *a);
uint64_t algo_send_count(const algo_t *a);

/* True when both have the same header and the same nodes, deps and chunks. */
bool algo_equal(const algo_t *x, const algo_t *y);

/* Gives every rank with no node one COMP of duration 0 (docs/chakra-format.md: every file holds a
 * node). */
tn_status_t algo_fill_idle(algo_t *a, tn_err_t *err);

/* A copy of a without its gates: COMPs of 0 µs that list no chunks (pure time, such as the
 * ones sim_make_strict adds to fix the order of same-instant events). A node that depended
 * on one depends on what the gate depended on instead (transitively), so every ordering
 * the gates implied beyond their nanosecond stays. For forms that order each sequence of
 * steps themselves (MSCCL-IR threadblocks). Caller frees *out. */
tn_status_t algo_drop_gates(const algo_t *a, algo_t **out, tn_err_t *err);
/* a (k ranks) placed on ranks members[0..k) (ascending, below npus) of an algorithm of npus
 * ranks: node for node, peers mapped, the other ranks empty, chunk lists dropped (their
 * numbering is a's) and the collective unknown. For a collective of a process group in a
 * step (sim_step). Caller frees *out. */
tn_status_t algo_embed(const algo_t *a, const uint32_t *members, uint32_t npus, algo_t **out,
                       tn_err_t *err);

/* ---- producers ----------------------------------------------------------- */

/* MSCCLang-style baselines (msccl-tools' examples). chunks_per_npu >= 1 splits each
 * chunk for pipelining (All-to-All: each source-destination block). Ring: logical ring
 * over rank order (no All-to-All: TN_INVAL); Direct: all pairs, peers rotated. */
tn_status_t algo_ring(tn_coll_t coll, uint32_t npus, uint64_t size_bytes, uint32_t chunks_per_npu,
                      algo_t **out, tn_err_t *err);
/* algo_ring, or with both the two counter-rotating rings of MSCCLang's bidirectional ring:
 * the odd pieces of every block go r -> r-1 (mirrored), the even ones r -> r+1, so both
 * directions of every ring link carry half. both needs chunks_per_npu >= 2 (TN_INVAL). */
tn_status_t algo_ring_both(tn_coll_t coll, uint32_t npus, uint64_t size_bytes,
                           uint32_t chunks_per_npu, bool both, algo_t **out, tn_err_t *err);
/* MSCCLang's Two-Step All-to-All for NPUs in groups (servers): member lists the NPUs
 * group by group (groups of npus / groups each). Step 1: every NPU sends each local peer,
 * in one message, the pieces it addresses to the NPUs with that peer's local index in every
 * group; step 2: once those are in, it sends its counterpart in every other group, in one
 * message, the pieces its whole group addresses to that counterpart. m pieces per block.
 * TN_INVAL unless there are 2 groups or more, of 2 NPUs or more, of equal size. */
tn_status_t algo_two_step(uint32_t npus, const uint32_t *member, uint32_t groups,
                          uint64_t size_bytes, uint32_t m, algo_t **out, tn_err_t *err);
tn_status_t algo_direct(tn_coll_t coll, uint32_t npus, uint64_t size_bytes, uint32_t chunks_per_npu,
                        algo_t **out, tn_err_t *err);

/* Peak memory of a synthesis with a baseline whose largest configuration tried is this one
 * (the whole `tenet synth -a ring|direct|twostep` process: building the configurations,
 * simulating them, order-proofing, verifying and writing the kept set), from the messages
 * the set holds and what such a process was measured to use per message (bench_mem; within
 * 20% at 64 to 1024 NPUs). synth/ refuses a baseline over the cap (tn_mem_cap) before
 * building it. Ring: n (n - 1) k messages (All-Reduce twice that); Direct: the same
 * (All-to-All: k pieces per block); Two-Step: its chunk lists, n * n * m ids per step.
 * Ring and Direct (its All-to-All too) at `threads` threads (tn_mem_threads; Two-Step is
 * the same at any count); synth/ adds what order-proofing records on the fabric's fast
 * links. */
#define ALGO_MEM_BASE ((uint64_t)10 << 20)
/* Ring's and Direct's base: the process itself (measured: 7.8 MiB for a run refused at once),
 * their figures per message on top (tn_mem_threads: more with a second thread). */
#define ALGO_MEM_PROCESS ((uint64_t)8 << 20)
uint64_t algo_ring_mem_estimate(tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                                unsigned threads);
uint64_t algo_direct_mem_estimate(tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                                  unsigned threads);
uint64_t algo_two_step_mem_estimate(uint32_t npus, uint32_t m);

/* Lowers an All-Gather schedule to an algo_t for coll: All-Gather directly (one SEND and
 * one RECV per transfer, deps = the transfer that brought the chunks), Reduce-Scatter as
 * the time-reversed schedule on the transposed links (COMP reductions), All-Reduce as
 * Reduce-Scatter then All-Gather. Node ids are assigned in (ready time, issue order) so
 * the simulator issues sends in the order the planner did. name is the producer.
 * TN_INVAL naming the transfer when the schedule is malformed (NPUs or chunks out of
 * range, bytes not those of its chunks, a dependency on a later transfer or on one that
 * does not deliver to the sender, no dependency but a chunk the sender does not own).
 * Big schedules are lowered on up to 4 threads (tn_thread_count); the result is the same.
 * O(T log T). */
tn_status_t algo_from_schedule(const schedule_t *s, tn_coll_t coll, const char *name, algo_t **out,
                               tn_err_t *err);
/* An explicit reduction schedule (s->coll TN_REDUCESCATTER or TN_ALLREDUCE, ten/ten.h) is
 * lowered as is and only to its own collective: each transfer one SEND and one RECV (a
 * reduce RECV plus a COMP adding it to the slots when it reduces, COMPs on one slot
 * serialised), a dependency on a reducing transfer meaning its COMP; node ids by (planned
 * time: a SEND's start, a COMP's arrival; COMPs first; transfer order). TN_INVAL for
 * another coll or a malformed schedule (as above, minus the ownership rule: every NPU
 * starts with a contribution to every chunk); whether it computes the collective is
 * algo_verify's to say. One thread, O(T log T). */

/* algo_from_schedule of an explicit schedule (s->coll not TN_ALLGATHER), or of an
 * All-Gather plan lowered to TN_ALLGATHER, and in send_id (schedule_len(s) entries) the id
 * of every transfer's SEND in its sender's rank: what names the transfers of s->ties in the
 * lowered set. TN_INVAL for an All-Gather plan lowered to anything else. */
tn_status_t algo_from_schedule_ids(const schedule_t *s, tn_coll_t coll, const char *name,
                                   algo_t **out, uint32_t *send_id, tn_err_t *err);

/* algo_from_schedule(s, TN_ALLGATHER) of an All-Gather plan whose links need not carry
 * chunks in the order they reached the sender (greedy_opts_t.rarest): SEND ids by planned
 * start instead of ready time, so that every link's SENDs are numbered in the plan's order
 * (what sim_make_strict_planned keeps). TN_INVAL for an explicit schedule. */
tn_status_t algo_from_schedule_started(const schedule_t *s, const char *name, algo_t **out,
                                       tn_err_t *err);

/* All-Reduce from two All-Gather schedules with the same npus, chunks_per_npu and size:
 * rs_ag is time-reversed into the Reduce-Scatter half and ag is the All-Gather half. A
 * reversed schedule runs on the transposed links, so on an asymmetric fabric plan rs_ag on
 * topo_transpose(t) and ag on t (on a symmetric one both may be the same schedule, which
 * is what algo_from_schedule(s, TN_ALLREDUCE) does). The owner's All-Gather sends of a
 * chunk wait for the Reduce-Scatter's last reductions of it. O(T log T) in transfers. */
tn_status_t algo_allreduce_from_schedules(const schedule_t *rs_ag, const schedule_t *ag,
                                          const char *name, algo_t **out, tn_err_t *err);

/* ---- the verifier ------------------------------------------------------ */

typedef struct algo_verify_report {
  bool semantics_checked; /* false when the files carry no chunk bookkeeping */
  uint64_t nodes, messages;
} algo_verify_report_t;

/* Symbolic execution of the whole set: every SEND has its RECV (same src, dst, tag,
 * size, FIFO per key), no cycle, no deadlock under eager sends, peers in range, and —
 * when bookkeeping is present — every rank ends holding what the collective promises.
 * If t is given, ranks must be NPUs of t. If expect is given (has_coll), the algorithm's
 * collective must match. TN_PARSE with the first violation ("rank 3 node 17: ...").
 * O(nodes + deps) plus the semantic state. */
tn_status_t algo_verify(const algo_t *a, const topo_t *t, algo_verify_report_t *report,
                        tn_err_t *err);

#endif
