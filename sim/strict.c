/* sim/strict.c — makes a set's timing independent of the order a runtime picks among
 * events of one instant (docs/architecture.md §3, "Ties"). The simulator reports every
 * pair of messages that entered one link at the same instant (a tie: the run picked their
 * order). Each tie becomes a constraint on the original set, and the set is rebuilt from
 * the original with all constraints so far and simulated again, until no tie is left:
 *  - two SENDs of one NPU on its link: the second is issued after the first (`before`);
 *  - otherwise the second of the two in the run's order waits 1 ns more (`delay`), so the
 *    run's order stays: its SEND, when it is the NPU's own or its message met only free
 *    links on the way, else the SEND that sets its time (its cause: the first of the
 *    messages it queued behind, back to one that met only free links), which moves the
 *    whole queue.
 * A constrained SEND gets a gate: a COMP of 0 µs (1 ns, as in ASTRA-sim) that depends on
 * what the SEND depends on and on the issue of the SENDs it must follow, then one more
 * such COMP per nanosecond of delay; the SEND also depends on the last of them. A SEND it
 * must follow is issued at the end of its own gate chain when it has one, else the
 * instant its dependencies are done: the gate then waits for those, and the first of two
 * ordered SENDs keeps its time (on leaf-32, ungating the first of each pair took 15% of
 * the gates off the forest's sets). A SEND issued at the very start with a message of under
 * 1 ns gets a gate whatever its ties (start_gates: ASTRA-sim aborts on it). A runtime can then
 * issue the SEND only at the planned instant, whatever its order of events. The gates cost a
 * nanosecond where they wait at all (most sit behind a busy link). A caller that already knows the
 * first run (a plan's replay on the same engine, with the pairs it saw: sim_first_run_t) saves that
 * simulation; every later run is simulated. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define NONE UINT32_MAX
#define MAX_ROUNDS 24
/* The ns of delay one SEND may collect: MIN_DELAY_CAP, or twice the NPUs. Messages from
 * every NPU can reach one switch port at one instant, and a round parts such a pile as a
 * chain, 1 ns apart: with 64 the forest's All-Reduce on switch-128 (127 senders per port)
 * kept 251,286 ties after 24 runs (139 s); with 256 it was order-proof after one (8 s).
 * Most SENDs collect a nanosecond or none (about one COMP per message there). */
#define MIN_DELAY_CAP 64u
/* The first run orders the SENDs of one NPU that enter a link within this of each other
 * (later runs within PREDICT_WINDOW_PS): the gates of later rounds move SENDs by
 * nanoseconds, and would otherwise turn such near pairs into new ties round after round. */
#define NEAR_WINDOW_PS SIM_STRICT_FIRST_WINDOW_PS
/* Later runs report pairs that enter one link within this of each other, so that a round
 * sees which of them its own delays would bring together, and orders an NPU's own SENDs
 * this near too: a gate moves a SEND by a nanosecond onto its neighbours (on leaf-32 the
 * forest's All-Reduce of 16 MiB met such pairs in every one of 24 runs and kept 3 ties
 * when only the first run ordered them). */
#define PREDICT_WINDOW_PS 4000u
#define PREDICT_PASSES 8

/* A constraint: SEND `after` (global index in the original set) is issued after SEND
 * `first` of the same rank. */
typedef struct order {
  uint32_t first, after;
} order_t;

typedef struct state {
  const topo_t *t;
  const algo_t *orig;
  uint32_t *off;      /* npus + 1: global index of rank r's node 0 */
  uint32_t *delay;    /* per original node: extra ns (SENDs only) */
  uint8_t *gated;     /* per original node */
  uint32_t *bump;     /* per original node: ns added this round */
  tn_vec_t orders;    /* order_t, in the order found */
  tn_vec_t ties;      /* sim_tie_t of the last run */
  bool failed;        /* recording a tie ran out of memory */
  uint32_t max_delay; /* ns of delay one SEND may collect (MIN_DELAY_CAP) */
  /* sim_make_strict_planned: the plan's time, and the current run's window; the runs also
   * report inversions (any gap) and each link with one gets its source NPU's SENDs
   * chained: chained has a flag per link, routes gives a SEND's first link. */
  uint64_t plan_ps; /* 0: not planned */
  bool chaining;    /* this round chains the links of inversions: the run missed the plan */
  bool chained_any; /* some round did: an NPU's own SENDs are ordered by id from then on */
  uint64_t window;
  uint8_t *chained;
  topo_routes_t *routes;
} state_t;

/* Whether v is an inversion: two of one NPU's own SENDs entered one of its links against
 * their id order (the set's ids follow its plan's order, sim_make_strict_planned). */
static bool inversion(const state_t *s, const sim_tie_t *v) {
  uint32_t at = s->t->links[v->link].src;
  return at == v->first_rank && at == v->second_rank && v->first_id > v->second_id;
}

static void on_tie(void *ctx, const sim_tie_t *v) {
  state_t *s = ctx;
  tn_err_t e = {0};
  if (v->gap_ps > s->window && !(s->plan_ps && inversion(s, v))) return;
  if (!s->failed && tn_vec_push(&s->ties, v, &e) != TN_OK) s->failed = true;
}

static tn_status_t push_all(tn_vec_t *v, const uint32_t *x, uint32_t n, tn_err_t *err) {
  tn_status_t st = tn_vec_reserve(v, v->len + n, err);
  for (uint32_t i = 0; st == TN_OK && i < n; i++)
    st = tn_vec_push(v, &x[i], err);
  return st;
}

/* push_all of the ids v does not hold yet: a gate's list names each node once (the SENDs
 * it follows mostly wait for what its own SEND waits for). Lists are short. */
static tn_status_t push_new(tn_vec_t *v, const uint32_t *x, uint32_t n, tn_err_t *err) {
  tn_status_t st = tn_vec_reserve(v, v->len + n, err);
  for (uint32_t i = 0; st == TN_OK && i < n; i++) {
    const uint32_t *have = v->data;
    size_t j = 0;
    while (j < v->len && have[j] != x[i])
      j++;
    if (j == v->len) st = tn_vec_push(v, &x[i], err);
  }
  return st;
}

/* Parts the pair v (a tie, or a near pair that this round's delays would make one): see
 * the file's comment. */
static tn_status_t part(state_t *s, const sim_tie_t *v, bool *added, tn_err_t *err) {
  uint32_t *bump = s->bump;
  uint32_t at = s->t->links[v->link].src;
  uint32_t g1 = s->off[v->first_rank] + v->first_id, g2 = s->off[v->second_rank] + v->second_id;
  bool inj1 = at == v->first_rank, inj2 = at == v->second_rank;
  if (inj1 && inj2) {
    order_t o = {g1, g2};
    /* once links are chained by id, the plan's order (see keep_ids) */
    if (s->chained_any && g1 > g2) o = (order_t){g2, g1};
    tn_status_t st = tn_vec_push(&s->orders, &o, err);
    if (st != TN_OK) return st;
    s->gated[o.after] = 1; /* the second waits; the first keeps its time */
    *added = true;
    return TN_OK;
  }
  /* Each message moves with the SEND that sets its time: its own, when it is the NPU's or
   * met only free links, else its cause. The second keeps its place behind the first: the
   * run's order, which a paced plan chose (moving the first instead put it behind the
   * second: spine-4x8's forest All-Gather of 64 MiB lost 2.6% to its gates, now 1.6%). */
  uint32_t d = inj2 || !v->second_waited ? g2 : s->off[v->second_cause_rank] + v->second_cause_id;
  uint32_t other = inj1 || !v->first_waited ? g1 : s->off[v->first_cause_rank] + v->first_cause_id;
  if (d == other) return TN_OK; /* one SEND sets both: no nanosecond there parts them */
  uint32_t want = bump[other] + 1;
  if (bump[d] >= want) return TN_OK;
  if (s->delay[d] - bump[d] + want > s->max_delay) return TN_OK;
  s->delay[d] += want - bump[d];
  bump[d] = want;
  s->gated[d] = 1;
  *added = true;
  return TN_OK;
}

/* ASTRA-sim's analytical backend aborts (an EventQueue::proceed assertion) when a message
 * it serializes in 0 whole ns is issued at its start instant: ring-8 Ring All-Gather of
 * 128 B (16 B messages at 50 GB/s) and six of 60 `tenet astra` sets at 1 KiB did. So every
 * SEND with no dependency whose message takes under 1 ns on its NPU's fastest link gets a
 * gate, tie or not, and is issued at 1 ns. Returns whether any did. */
static tn_status_t start_gates(state_t *s, bool *any, tn_err_t *err) {
  const algo_t *a = s->orig;
  double *bw = NULL;
  *any = false;
  tn_status_t st = tn_calloc(a->npus + 1u, sizeof *bw, &bw, err);
  if (st != TN_OK) return st;
  for (uint32_t i = 0; i < s->t->nlinks; i++) {
    const topo_link_t *l = &s->t->links[i];
    if (l->src < a->npus && l->bandwidth_GBps > bw[l->src]) bw[l->src] = l->bandwidth_GBps;
  }
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; bw[r] > 0 && i < algo_rank_len(a, r); i++) {
      const algo_node_t *nd = algo_node(a, r, i);
      uint64_t ps = 0;
      if (nd->op != ALGO_SEND || nd->ndeps > 0) continue;
      if (tn_xfer_ps(nd->bytes, bw[r], &ps) && ps < 1000) s->gated[s->off[r] + i] = 1, *any = true;
    }
  free(bw);
  return TN_OK;
}

/* A near pair that this round's delays bring to one instant: each message moves by the
 * nanoseconds added to the SEND that sets its time (its cause), as long as the move makes
 * nothing else queue. Such a pair would be the next run's tie, and the one after would
 * find the ties its parting makes in turn (Direct All-to-All on mesh-16x8 took six runs
 * after the first, parting a few pairs each). Parting them now saves those runs; a guess
 * that proves wrong is still found, and parted, by the next run. */
static bool meets(const state_t *s, const sim_tie_t *v) {
  uint32_t c1 = s->off[v->first_cause_rank] + v->first_cause_id;
  uint32_t c2 = s->off[v->second_cause_rank] + v->second_cause_id;
  int64_t moved = ((int64_t)s->bump[c2] - (int64_t)s->bump[c1]) * 1000;
  return v->gap_ps > 0 && (int64_t)v->gap_ps + moved == 0;
}

/* The first round that chains links by id turns every order of two of an NPU's own SENDs
 * made so far into the ids' order (part keeps to it from then on): one kept the run's way
 * in a round that met the plan, against the ids on a link chained later, closed a cycle
 * (torus-3x5 All-Reduce, 92,160 B, 3 chunks). Before that the run's order stands: a set
 * that meets its plan is parted as a set without one (ordering its own ties by id there
 * tripled the rounds of torus-16x8's Reduce-Scatter of 1 GiB, for the same time). */
static void keep_ids(state_t *s) {
  for (size_t i = 0; i < s->orders.len; i++) {
    order_t *o = &TN_VEC_AT(&s->orders, order_t, i);
    if (o->first > o->after) {
      uint32_t g = o->first;
      o->first = o->after, o->after = g;
      s->gated[o->after] = 1;
    }
  }
}

/* Orders every SEND of rank r (link's source) whose route starts on link after the one
 * before it in id order (the plan's order on that link), once per link. */
static tn_status_t chain(state_t *s, uint32_t r, uint32_t link, bool *added, tn_err_t *err) {
  uint8_t *done = &s->chained[link];
  if (*done) return TN_OK;
  *done = 1;
  const algo_t *a = s->orig;
  uint32_t prev = NONE;
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
    const algo_node_t *n = algo_node(a, r, i);
    if (n->op != ALGO_SEND || topo_route_next(s->routes, r, (uint32_t)n->peer) != link) continue;
    uint32_t g = s->off[r] + i;
    if (prev != NONE) {
      order_t o = {prev, g};
      tn_status_t st = tn_vec_push(&s->orders, &o, err);
      if (st != TN_OK) return st;
      s->gated[g] = 1;
      *added = true;
    }
    prev = g;
  }
  return topo_routes_out_of_memory(s->routes) ? tn_err_set(err, TN_NOMEM, "out of memory") : TN_OK;
}

/* Turns the last run's ties into constraints; *added says whether any was new (a tie of
 * two messages that both queued on the way, or of a SEND at max_delay, adds none). A
 * SEND delayed behind another one delayed this round waits one nanosecond more than that
 * one, so a chain of same-instant arrivals (first, second), (second, third), ... is
 * spread out in one round. An NPU's own SENDs that enter a link within the run's window
 * are ordered too. After the first run, near pairs that the round's delays would bring
 * together are parted too (meets). s->bump (per original node) is zero on entry. */
static tn_status_t add_constraints(state_t *s, bool first_run, bool *added, tn_err_t *err) {
  *added = false;
  for (size_t i = 0; i < s->ties.len; i++) {
    const sim_tie_t *v = &TN_VEC_AT(&s->ties, sim_tie_t, i);
    uint32_t at = s->t->links[v->link].src;
    bool own = at == v->first_rank && at == v->second_rank;
    if (s->chaining && inversion(s, v)) {
      tn_status_t st = chain(s, at, v->link, added, err);
      if (st != TN_OK) return st;
      continue;
    }
    if (v->gap_ps > s->window) continue; /* an inversion, once its link is chained */
    if (v->gap_ps > 0 && !own) continue; /* near pairs: an NPU's own SENDs, every run */
    tn_status_t st = part(s, v, added, err);
    if (st != TN_OK) return st;
  }
  for (int pass = 0; !first_run && pass < PREDICT_PASSES; pass++) {
    bool more = false;
    for (size_t i = 0; i < s->ties.len; i++) {
      const sim_tie_t *v = &TN_VEC_AT(&s->ties, sim_tie_t, i);
      uint32_t at = s->t->links[v->link].src;
      if ((at == v->first_rank && at == v->second_rank) || !meets(s, v)) continue;
      bool now = false;
      tn_status_t st = part(s, v, &now, err);
      if (st != TN_OK) return st;
      more = more || now;
      *added = *added || now;
    }
    if (!more) break;
  }
  return TN_OK;
}

/* The original set with every constraint so far: per rank, the original nodes (a gated
 * SEND also depending on the end of its gate chain), then each gated SEND's chain. Each
 * rank's pools are reserved at their exact sizes first, and the SENDs each gated SEND must
 * follow are listed in one array (by `after`, in the order the orders were found). */
static tn_status_t build(const state_t *s, algo_t **out, tn_err_t *err) {
  const algo_t *a = s->orig;
  algo_t *b = NULL;
  tn_vec_t deps;
  tn_vec_init(&deps, sizeof(uint32_t));
  uint32_t *end = NULL, *aoff = NULL, *alist = NULL, total = s->off[a->npus];
  size_t norders = s->orders.len;
  tn_status_t st = algo_create_like(a, &b, err);
  if (st == TN_OK) st = tn_malloc(total + 1u, sizeof *end, &end, err);
  if (st == TN_OK) st = tn_calloc(total + 2u, sizeof *aoff, &aoff, err);
  if (st == TN_OK) st = tn_malloc(norders + 1, sizeof *alist, &alist, err);
  if (st == TN_OK) {
    /* aoff[g + 1] counts, then aoff[g] is where g's list starts (filled with aoff[g + 1]
     * as the cursor, which ends at the next list's start). */
    const order_t *ord = s->orders.data;
    for (size_t i = 0; i < norders; i++)
      aoff[ord[i].after + 2]++;
    for (uint32_t g = 0; g <= total; g++)
      aoff[g + 1] += aoff[g];
    for (size_t i = 0; i < norders; i++)
      alist[aoff[ord[i].after + 1]++] = ord[i].first;
  }
  for (uint32_t r = 0; st == TN_OK && r < a->npus; r++) {
    uint32_t len = algo_rank_len(a, r), next = len;
    size_t ndeps = a->ranks[r].deps.len, nchain = 0;
    /* Ids of the chains' ends first: gate, then one COMP per ns of delay. */
    for (uint32_t i = 0; i < len; i++) {
      uint32_t g = s->off[r] + i;
      end[g] = NONE;
      if (!s->gated[g]) continue;
      next += 1 + s->delay[g];
      end[g] = next - 1;
      ndeps += 1 + algo_node(a, r, i)->ndeps + s->delay[g];
      for (uint32_t k = aoff[g]; k < aoff[g + 1]; k++)
        ndeps += s->gated[alist[k]] ? 1 : algo_node(a, r, alist[k] - s->off[r])->ndeps;
      nchain += 1 + s->delay[g];
    }
    st = algo_reserve(b, r, len + nchain, ndeps, a->ranks[r].chunks.len, err);
    for (uint32_t i = 0; st == TN_OK && i < len; i++) {
      const algo_node_t *n = algo_node(a, r, i);
      uint32_t g = s->off[r] + i;
      const uint32_t *nd = algo_node_deps(a, r, n);
      algo_node_t m = *n;
      if (end[g] != NONE) {
        deps.len = 0;
        st = push_all(&deps, nd, n->ndeps, err);
        if (st == TN_OK) st = tn_vec_push(&deps, &end[g], err);
        m.ndeps = (uint32_t)deps.len;
        nd = deps.data;
      }
      if (st == TN_OK) st = algo_add(b, r, &m, nd, algo_node_chunks(a, r, n), NULL, err);
    }
    for (uint32_t i = 0; st == TN_OK && i < len; i++) {
      uint32_t g = s->off[r] + i;
      if (!s->gated[g]) continue;
      const algo_node_t *n = algo_node(a, r, i);
      deps.len = 0;
      st = push_new(&deps, algo_node_deps(a, r, n), n->ndeps, err);
      for (uint32_t k = aoff[g]; st == TN_OK && k < aoff[g + 1]; k++) {
        uint32_t f = alist[k];
        if (s->gated[f]) {
          st = push_new(&deps, &end[f], 1, err);
        } else { /* issued when its dependencies are done: wait for those */
          const algo_node_t *fn = algo_node(a, r, f - s->off[r]);
          st = push_new(&deps, algo_node_deps(a, r, fn), fn->ndeps, err);
        }
      }
      uint32_t id = 0;
      if (st == TN_OK)
        st = algo_add_comp(b, r, 0, deps.data, (uint32_t)deps.len, NULL, 0, &id, err);
      for (uint32_t k = 0; st == TN_OK && k < s->delay[g]; k++)
        st = algo_add_comp(b, r, 0, &id, 1, NULL, 0, &id, err);
    }
  }
  free(alist);
  free(aoff);
  free(end);
  tn_vec_free(&deps);
  if (st != TN_OK) {
    algo_free(b);
    return st;
  }
  *out = b;
  return TN_OK;
}

static uint32_t count_gates(const state_t *s) {
  uint32_t n = 0;
  for (uint32_t g = 0; g < s->off[s->orig->npus]; g++)
    n += s->gated[g] ? 1 + s->delay[g] : 0;
  return n;
}

/* One simulation of a rebuilt set and, beside it, the caller's work on that set. */
typedef struct side {
  const topo_t *t;
  const algo_t *a;
  const sim_opts_t *so;
  sim_result_t *res;
  tn_status_t st, fst;
  tn_err_t e, fe;
  sim_strict_fn fn;
  void *ctx;
} side_t;

static void side_item(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  side_t *s = ctx;
  if (i == 0)
    s->st = sim_run(s->t, s->a, s->so, s->res, &s->e);
  else
    s->fst = s->fn(s->ctx, s->a, &s->fe);
}

/* sim_run of cur, with fn(ctx, cur) beside it when fn is given. */
static tn_status_t run_beside(const topo_t *t, const algo_t *cur, const sim_opts_t *so,
                              sim_result_t *res, sim_strict_fn fn, void *ctx, tn_err_t *err) {
  if (fn == NULL) return sim_run(t, cur, so, res, err);
  side_t s = {.t = t, .a = cur, .so = so, .res = res, .fn = fn, .ctx = ctx};
  unsigned threads = tn_thread_count();
  tn_parallel_for(2, threads < 2 ? threads : 2, side_item, &s);
  if (s.st != TN_OK) {
    *err = s.e;
    return s.st;
  }
  if (s.fst != TN_OK) *err = s.fe;
  return s.fst;
}

static tn_status_t make_strict(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                               uint64_t plan_ps, sim_strict_fn fn, void *ctx,
                               sim_strict_report_t *rep, tn_err_t *err);

tn_status_t sim_make_strict(const topo_t *t, algo_t **a, sim_strict_report_t *rep, tn_err_t *err) {
  return sim_make_strict_and(t, a, NULL, NULL, rep, err);
}

tn_status_t sim_make_strict_and(const topo_t *t, algo_t **a, sim_strict_fn fn, void *ctx,
                                sim_strict_report_t *rep, tn_err_t *err) {
  return sim_make_strict_from(t, a, NULL, fn, ctx, rep, err);
}

tn_status_t sim_make_strict_from(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                                 sim_strict_fn fn, void *ctx, sim_strict_report_t *rep,
                                 tn_err_t *err) {
  return make_strict(t, a, first, 0, fn, ctx, rep, err);
}

bool sim_strict_plan_missed(uint64_t run_ps, uint64_t plan_ps) {
  return plan_ps != 0 && run_ps > plan_ps && run_ps - plan_ps > plan_ps / 1000;
}

tn_status_t sim_make_strict_planned(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                                    uint64_t plan_ps, sim_strict_fn fn, void *ctx,
                                    sim_strict_report_t *rep, tn_err_t *err) {
  return make_strict(t, a, first, plan_ps, fn, ctx, rep, err);
}

static tn_status_t make_strict(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                               uint64_t plan_ps, sim_strict_fn fn, void *ctx,
                               sim_strict_report_t *rep, tn_err_t *err) {
  memset(rep, 0, sizeof *rep);
  uint32_t cap = (*a)->npus > MIN_DELAY_CAP / 2 ? 2 * (*a)->npus : MIN_DELAY_CAP;
  state_t s = {.t = t, .orig = *a, .max_delay = cap, .plan_ps = plan_ps};
  tn_vec_init(&s.orders, sizeof(order_t));
  tn_vec_init(&s.ties, sizeof(sim_tie_t));
  uint64_t total = algo_node_count(*a);
  tn_status_t st = total >= NONE ? tn_err_set(err, TN_LIMIT, "%llu nodes are too many",
                                              (unsigned long long)total)
                                 : TN_OK;
  if (st == TN_OK) st = tn_calloc((*a)->npus + 1u, sizeof *s.off, &s.off, err);
  if (st == TN_OK) st = tn_calloc(total + 1, sizeof *s.delay, &s.delay, err);
  if (st == TN_OK) st = tn_calloc(total + 1, 1, &s.gated, err);
  if (st == TN_OK) st = tn_calloc(total + 1, sizeof *s.bump, &s.bump, err);
  if (st == TN_OK && plan_ps) st = tn_calloc((size_t)t->nlinks + 1u, 1, &s.chained, err);
  if (st == TN_OK && plan_ps) st = topo_routes_create(t, &s.routes, err);
  for (uint32_t r = 0; st == TN_OK && r < (*a)->npus; r++)
    s.off[r + 1] = s.off[r] + algo_rank_len(*a, r);
  algo_t *cur = *a;     /* the set simulated last: the original, then a build */
  bool started = false; /* start gates: the first run is of a build, not of the given set */
  if (st == TN_OK) st = start_gates(&s, &started, err);
  if (st == TN_OK && started && (st = build(&s, &cur, err)) == TN_OK) first = NULL;
  while (st == TN_OK) {
    s.ties.len = 0;
    s.failed = false;
    s.window = rep->rounds == 0 ? NEAR_WINDOW_PS : PREDICT_WINDOW_PS;
    /* every pair while the plan's order needs keeping */
    bool all = s.chaining;
    sim_opts_t so = {.on_tie = on_tie, .tie_ctx = &s, .tie_window_ps = all ? UINT64_MAX : s.window};
    sim_result_t res = {0};
    if (first != NULL && cur == *a) { /* the original's run is known */
      res.time_ps = first->time_ps;
      st = tn_vec_reserve(&s.ties, first->nties, err);
      for (size_t i = 0; st == TN_OK && i < first->nties; i++)
        st = tn_vec_push(&s.ties, &first->ties[i], err);
    } else {
      /* The original set was handed to no one: only rebuilt sets get fn beside their run. */
      st = run_beside(t, cur, &so, &res, cur != *a ? fn : NULL, ctx, err);
    }
    rep->time_ps = res.time_ps;
    bool was_all = all;
    s.chaining = sim_strict_plan_missed(res.time_ps, plan_ps);
    if (s.chaining && !s.chained_any) keep_ids(&s), s.chained_any = true;
    if (rep->rounds == 0) rep->first_ps = res.time_ps;
    sim_result_free(&res);
    if (st == TN_OK && s.failed) st = tn_err_set(err, TN_NOMEM, "out of memory recording ties");
    if (st != TN_OK) break;
    /* A run that missed the plan without reporting every pair: the same set once more, so
     * that its inversions are heard (the first run of a set that meets its plan reports
     * only the usual window, which keeps big sets' runs lean; a first run handed over is
     * one of those). */
    if (s.chaining && !was_all) {
      first = NULL;
      continue;
    }
    uint32_t exact = 0, inverted = 0;
    for (size_t i = 0; i < s.ties.len; i++) {
      const sim_tie_t *v = &TN_VEC_AT(&s.ties, sim_tie_t, i);
      exact += v->gap_ps == 0;
      inverted += s.chaining && inversion(&s, v) && !s.chained[v->link];
    }
    rep->ties_left = exact;
    if ((exact == 0 && inverted == 0) || rep->rounds == MAX_ROUNDS) break;
    bool added = false;
    memset(s.bump, 0, (size_t)s.off[s.orig->npus] * sizeof *s.bump);
    if ((st = add_constraints(&s, rep->rounds == 0, &added, err)) != TN_OK || !added) break;
    rep->rounds++;
    algo_t *next = NULL;
    if ((st = build(&s, &next, err)) != TN_OK) break;
    if (cur != *a) algo_free(cur);
    cur = next;
  }
  rep->staggers = count_gates(&s); /* reads s.orig: before it is freed */
  if (st == TN_OK && fn != NULL && cur == *a) st = fn(ctx, cur, err); /* no gate was needed */
  if (st == TN_OK && cur != *a) {
    algo_free(*a);
    *a = cur;
  } else if (cur != *a) {
    algo_free(cur);
  }
  free(s.off);
  free(s.delay);
  free(s.gated);
  free(s.bump);
  free(s.chained);
  topo_routes_free(s.routes);
  tn_vec_free(&s.orders);
  tn_vec_free(&s.ties);
  return st;
}

tn_status_t sim_order_spread(const topo_t *t, const algo_t *a, uint32_t seeds, sim_spread_t *out,
                             tn_err_t *err) {
  memset(out, 0, sizeof *out);
  out->min_ps = UINT64_MAX;
  for (uint32_t i = 0; i < 2 + seeds; i++) {
    sim_opts_t so = {.ties = i == 0   ? SIM_TIES_ID
                             : i == 1 ? SIM_TIES_REVERSE
                                      : SIM_TIES_RANDOM,
                     .seed = i >= 2 ? i - 1 : 0};
    sim_result_t r = {0};
    tn_status_t st = sim_run(t, a, &so, &r, err);
    if (st != TN_OK) return st;
    if (i == 0) out->id_ps = r.time_ps;
    if (r.time_ps < out->min_ps) out->min_ps = r.time_ps;
    if (r.time_ps > out->max_ps) out->max_ps = r.time_ps;
    out->orders++;
    sim_result_free(&r);
  }
  return TN_OK;
}
