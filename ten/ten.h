/* ten — the time-expanded network: the one timing model of docs/architecture.md §3 that the
 * synthesizers plan with and the simulator measures with, and the schedule_t the
 * synthesizers fill. Second stage of the pipeline (topo → ten → greedy|milp → algo …).
 *
 * The engine is an event queue over integer picoseconds plus one FIFO per directed link:
 * a message of m bytes injected at time t on a link that is free at f starts at max(t, f),
 * keeps the link busy m/B and reaches the far end latency + m/B after it started; it is
 * stored and forwarded at every hop along the topology's routes. Because planners and the
 * simulator drive this same engine, a plan's predicted time and the simulated time of the
 * emitted files agree by construction, not by coincidence. */
#ifndef TENET_TEN_H
#define TENET_TEN_H

#include "common/common.h"
#include "topo/topo.h"

/* ---- the engine -------------------------------------------------------- */

typedef struct ten_engine ten_engine_t;

typedef enum {
  TEN_EV_DELIVER = 0, /* a message reached its destination NPU */
  TEN_EV_TIMER = 1,   /* a timer set with ten_timer fired */
} ten_ev_kind_t;

typedef struct ten_event {
  ten_ev_kind_t kind;
  uint64_t time_ps;
  uint64_t cookie;   /* what the caller passed to ten_send / ten_timer */
  uint32_t src, dst; /* DELIVER: endpoints of the message */
  uint64_t bytes;    /* DELIVER */
} ten_event_t;

/* Optional observer of every link transmission (for traces and utilization). */
typedef void (*ten_xmit_fn)(void *ctx, uint32_t link, uint64_t start_ps, uint64_t end_ps,
                            uint64_t bytes, uint64_t cookie);

/* Optional observer of ties: message `second` entered link's FIFO gap_ps after `first`
 * (cookies), the message before it there; at gap 0 (a tie) the order between them is the
 * engine's choice, not the caller's. waited1/waited2: whether that message had queued
 * behind another on some link before (so that its arrival here is set by other messages,
 * not by when it was sent). cause1/cause2: the cookie of the message whose injection time
 * sets that message's time here: its own, unless it queued on the way; then the cause of
 * the message it queued behind (whose end freed the link), and so on back to a message
 * that met only free links. Injecting the cause later moves the message by as much (as
 * long as that move makes nothing else queue). */
typedef struct ten_tie {
  uint32_t link;
  uint64_t first, second;
  bool waited1, waited2;
  uint64_t cause1, cause2;
  uint64_t gap_ps;
} ten_tie_t;
typedef void (*ten_tie_fn)(void *ctx, const ten_tie_t *tie);

/* Creates an engine at time 0 on t, routing with routes (both borrowed, must outlive the
 * engine). */
tn_status_t ten_engine_create(const topo_t *t, topo_routes_t *routes, ten_engine_t **out,
                              tn_err_t *err);
void ten_engine_free(ten_engine_t *e);
void ten_engine_set_observer(ten_engine_t *e, ten_xmit_fn fn, void *ctx);
/* fn hears of every pair of consecutive entries into one link at most window_ps apart (0:
 * ties only). */
void ten_engine_set_tie_observer(ten_engine_t *e, ten_tie_fn fn, void *ctx, uint64_t window_ps);
/* Counts every link's busy time per message (its serialization) and every hop's flight
 * (serialization plus latency) in whole multiples of quantum_ps, rounded down, as
 * ASTRA-sim's analytical backend counts them in whole ns (quantum_ps 1000); 0, the
 * default, is exact. A busy time stays at least 1 ps. Set before the first send. */
void ten_engine_set_quantum(ten_engine_t *e, uint64_t quantum_ps);
/* Messages that arrive at an instant are forwarded in ascending rank[link of arrival]
 * (then link id) instead of link id: another order a runtime may pick among them. rank
 * (nlinks entries, each < 2^30) is borrowed; NULL restores link order. */
void ten_engine_set_hop_order(ten_engine_t *e, const uint32_t *rank);

/* Current time: the time of the last event returned by ten_next (0 at start). */
uint64_t ten_now(const ten_engine_t *e);

/* Injects a message of bytes (> 0) from NPU src to NPU dst at the current time; it is
 * delivered (TEN_EV_DELIVER with cookie) after crossing every hop of the route.
 * TN_INFEASIBLE when dst is unreachable, TN_INVAL for bad ids or src == dst. */
tn_status_t ten_send(ten_engine_t *e, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t cookie,
                     tn_err_t *err);

/* ten_send for a caller that knows the route from src to dst: its first hop is link first
 * (topo_route_next(routes, src, dst) == first) and it reaches dst. Skips the route lookup
 * and check (a planner's sends over its own links); otherwise the same as ten_send, with
 * the same events at the same times. */
tn_status_t ten_send_via(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t first,
                         uint64_t bytes, uint64_t cookie, tn_err_t *err);

/* Puts back in flight a message from src to dst that an earlier run of the same traffic
 * (another engine on the same topology and routes) had on link `link` (a link of its
 * route) with its transmission starting at start_ps: it arrives at the link's far end
 * latency + bytes/B after start_ps and goes on from there as any message. The link must
 * be free by start_ps; messages placed on one link go in their order there. The
 * observers do not hear of it. The step simulator (sim/step.c) carries a collective it
 * ran apart into the shared network this way. TN_INVAL for bad ids or a busy link. */
tn_status_t ten_place(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t link, uint64_t bytes,
                      uint64_t cookie, uint64_t start_ps, tn_err_t *err);

/* Schedules a TEN_EV_TIMER at now + delay_ps. */
tn_status_t ten_timer(ten_engine_t *e, uint64_t delay_ps, uint64_t cookie, tn_err_t *err);

/* Pops the next caller-visible event, forwarding messages at intermediate hops on the
 * way. Returns false when nothing is pending. Events come out in (time, order) where the
 * order among equal times is independent of the order of ten_send calls made at
 * different instants: deliveries by (last link id, position in that link's FIFO), then
 * timers by creation order. O(log pending) per event. */
bool ten_next(ten_engine_t *e, ten_event_t *ev);

/* TN_OK, or the first failure (out of memory) met while forwarding inside ten_next. */
tn_status_t ten_engine_status(const ten_engine_t *e, tn_err_t *err);

/* Time of the next pending event, or UINT64_MAX. */
uint64_t ten_peek_time(const ten_engine_t *e);

/* The time link l becomes free (end of its last scheduled transmission). */
uint64_t ten_link_free_ps(const ten_engine_t *e, uint32_t link);

/* Per-link totals since creation. */
typedef struct ten_link_stats {
  uint64_t bytes;
  uint64_t busy_ps;
  uint64_t messages;
} ten_link_stats_t;
const ten_link_stats_t *ten_link_stats(const ten_engine_t *e, uint32_t link);

/* ---- the schedule ------------------------------------------------------ */

/* One transfer of a planned collective: a message from src to dst (NPUs) carrying a set of
 * chunks, issued at start_ps, delivered at end_ps. dep is the index of the earlier
 * transfer that brought the data to src (or one of the several for reductions, see
 * deps), or SCHED_NONE when src starts with it. */
#define SCHED_NONE UINT32_MAX

typedef struct sched_xfer {
  uint32_t src, dst;
  uint64_t bytes;
  uint64_t start_ps, end_ps;
  uint32_t chunk_off, nchunks; /* into schedule_t.chunks */
  uint32_t dep_off, ndeps;     /* into schedule_t.deps: transfers whose delivery at src
                                  must precede this one */
} sched_xfer_t;

/* What the receiver of a transfer does with it: overwrite its slots of the chunks (copy),
 * or add the data to them (reduce). All-Gather plans only copy. */
typedef enum { SCHED_COPY = 0, SCHED_REDUCE = 1 } sched_op_t;

/* A planned collective as timed transfers, in the order the planner issued them.
 * Filled by greedy/, milp/ and trees/, lowered to an algo_t by algo/. Chunk ids follow
 * algo/'s convention: chunk c of an n-NPU collective with k chunks per NPU belongs to NPU
 * c / k.
 *
 * Two kinds. An All-Gather plan (coll TN_ALLGATHER, copies only; greedy/, milp/): algo/
 * lowers it as is or derives Reduce-Scatter and All-Reduce from it by time reversal, so
 * every dependency must be the delivery that brought the data. An explicit reduction
 * schedule (coll TN_REDUCESCATTER or TN_ALLREDUCE; trees/): every transfer says whether
 * its receiver copies or reduces (schedule_op), every NPU starts with its own contribution
 * to every chunk, and algo/ lowers it only as is (forward). Its dependencies may be data
 * (the deliveries whose values the sender forwards) or timing only (flow control: the
 * sender waits for some delivery without using it); both are plain dependencies in the
 * lowered DAG. */
typedef struct schedule {
  tn_coll_t coll; /* TN_ALLGATHER for All-Gather plans; else an explicit reduction schedule */
  uint32_t npus;
  uint32_t chunks_per_npu;
  uint64_t size_bytes; /* the collective's NCCL size */
  tn_vec_t xfers;      /* sched_xfer_t */
  tn_vec_t chunks;     /* uint32_t chunk ids */
  tn_vec_t deps;       /* uint32_t transfer indices */
  uint64_t time_ps;    /* predicted completion (last delivery) */
  tn_vec_t ops;        /* uint8_t sched_op_t per transfer, or empty while every transfer
                          so far copies (All-Gather plans never pay for it) */
  tn_vec_t ties;       /* ten_tie_t a run on the engine saw (schedule_keep_ties; cookies:
                          transfer indices), or empty */
  bool ties_kept;      /* ties holds every pair of a whole run (none was lost) */
} schedule_t;

void schedule_init(schedule_t *s, tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                   uint64_t size_bytes);
void schedule_free(schedule_t *s);
/* Appends a transfer with its chunk list and dependency list (copied). Returns its index
 * in *index (may be NULL). */
tn_status_t schedule_add(schedule_t *s, const sched_xfer_t *x, const uint32_t *chunks,
                         const uint32_t *deps, uint32_t *index, tn_err_t *err);
/* schedule_add for a transfer whose receiver does op with it. A SCHED_REDUCE makes the
 * schedule keep one op per transfer (the copies before it included). */
tn_status_t schedule_add_op(schedule_t *s, const sched_xfer_t *x, sched_op_t op,
                            const uint32_t *chunks, const uint32_t *deps, uint32_t *index,
                            tn_err_t *err);
/* What the receiver of transfer i does. */
static inline sched_op_t schedule_op(const schedule_t *s, uint32_t i) {
  return i < s->ops.len ? (sched_op_t)TN_VEC_AT(&s->ops, uint8_t, i) : SCHED_COPY;
}
static inline const sched_xfer_t *schedule_xfer(const schedule_t *s, uint32_t i) {
  return &TN_VEC_AT(&s->xfers, sched_xfer_t, i);
}
static inline uint32_t schedule_len(const schedule_t *s) {
  return (uint32_t)s->xfers.len;
}

/* What a reduction's COMP costs in the simulator (a Chakra COMP of 0 us takes 1 ns, as in
 * ASTRA-sim): planners of explicit reduction schedules time their reductions with it. */
#define SCHED_COMP_PS 1000u

/* Times an explicit reduction schedule on t as the simulator runs its lowering (algo/):
 * every transfer issued when its dependencies are met (the ready ones of an instant in
 * transfer order), a reducing transfer's COMP done SCHED_COMP_PS after its arrival,
 * serialised per receiver and chunk (the arrivals of an instant in transfer order). Fills
 * every start_ps and end_ps and time_ps (the last delivery or COMP). TN_INVAL for a
 * dependency out of range or a cycle. O(T log T). */
tn_status_t schedule_replay(const topo_t *t, schedule_t *s, tn_err_t *err);
/* Makes e (whose messages' cookies are s's transfer indices) keep in s->ties every pair of
 * consecutive entries into one link at most window_ps apart, from now on (s->ties emptied
 * first); s->ties_kept says the run lost none (out of memory loses the rest). A planner
 * sets it on the engine it plans on, before its first send. */
void schedule_keep_ties(schedule_t *s, ten_engine_t *e, uint64_t window_ps);

/* schedule_replay, keeping in s->ties every pair of consecutive entries into one link at
 * most window_ps apart (ten_engine_set_tie_observer), in the order the engine saw them:
 * what the simulator reports on the lowering, whose ranks list their SENDs of an instant
 * in the order the replay issues them (algo_from_schedule_ids maps the transfers). */
tn_status_t schedule_replay_ties(const topo_t *t, schedule_t *s, uint64_t window_ps, tn_err_t *err);

/* An explicit All-Reduce schedule from an explicit Reduce-Scatter rs and an All-Gather
 * plan ag with the same npus, chunks_per_npu and size: rs's transfers as they are, then
 * ag's, whose dependencies keep their meaning, and whose sends of a chunk by its owner
 * also wait for every reduction of it at the owner. Start times of ag's transfers are
 * shifted by rs->time_ps; schedule_replay gives the joined schedule its own. *out is
 * initialised here (empty on failure). TN_INVAL for mismatched inputs. */
tn_status_t schedule_join_allreduce(const schedule_t *rs, const schedule_t *ag, schedule_t *out,
                                    tn_err_t *err);

/* The explicit Reduce-Scatter that runs ag backwards: ag is an All-Gather plan whose every
 * transfer carries one chunk after at most the one dependency that brought it (a plan
 * replayed as planned: the forest's unpaced, the greedy's). Transfer x becomes a reduction
 * from x's receiver to its sender, after the reductions that came back over the transfers
 * forwarding x's chunk, in order of descending end. *rs is initialised here (empty on
 * failure); its times are ag's mirrored (schedule_replay gives its own). TN_INVAL for
 * another kind of plan. O(T log T). */
tn_status_t schedule_reverse(const schedule_t *ag, schedule_t *rs, tn_err_t *err);

/* Bytes of chunk c when size_bytes (the gathered output / per-NPU input) is cut into
 * npus * chunks_per_npu chunks as evenly as possible: the first (size % total) chunks get
 * one byte more. */
uint64_t ten_chunk_bytes(uint64_t size_bytes, uint32_t npus, uint32_t chunks_per_npu,
                         uint32_t chunk);

#endif
