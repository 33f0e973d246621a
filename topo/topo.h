/* topo — the fabric: NPUs, switches and directed links with bandwidth and latency.
 * First stage of the pipeline (topo → ten → greedy|milp → algo → emit|sim → cli).
 * Owns the JSON format (docs/architecture.md §4), the generators, ASTRA-sim YAML import,
 * deterministic routes (§3) and the analysis (igraph) including the lower bounds (§2). */
#ifndef TENET_TOPO_H
#define TENET_TOPO_H

#include "common/common.h"

/* Caps checked before anything is allocated (a file asking for more is refused). */
#define TOPO_MAX_NPUS 65536u
#define TOPO_MAX_SWITCHES 65536u
#define TOPO_MAX_LINKS 4194304u
#define TOPO_MAX_DIMS 8u
#define TOPO_MAX_BANDWIDTH_GBPS 1.0e6 /* 1 PB/s per link */
/* The floor of a link's bandwidth: 1 MB/s (a million bytes, 0.00093 GB/s) rounded up to
 * 0.001 GB/s. Slower links are refused at load, whatever the sizes sent over them: 1 GiB
 * takes 1000 s at the floor, and a figure like 1e-9 GB/s is a unit mistake. */
#define TOPO_MIN_BANDWIDTH_GBPS 1.0e-3
#define TOPO_MAX_LATENCY_NS 1.0e9 /* 1 s per link */
#define TOPO_NO_LINK UINT32_MAX

/* The one rule for a link's bandwidth in GB/s: a finite number in [TOPO_MIN_BANDWIDTH_GBPS,
 * TOPO_MAX_BANDWIDTH_GBPS]. true when gbps is one; else false with the reason written
 * into why (len bytes), to follow the item's name: "must be > 0 GB/s, not -1", "is below
 * the floor of 0.001 GB/s: 1e-09". */
bool topo_bandwidth_check(double gbps, char *why, size_t len);

/* The kind of one dimension of a generated fabric (ASTRA-sim's building blocks plus
 * the mesh line). A 2D mesh is [LINE, LINE], a torus [RING, RING], a binary hypercube
 * of 2^k NPUs is k × LINE(2), ASTRA-sim's [Ring, Switch] is [RING, SWITCH]. */
typedef enum {
  TOPO_DIM_RING = 0,   /* ring of size NPUs; bidirectional unless marked otherwise */
  TOPO_DIM_LINE = 1,   /* a mesh row: i <-> i+1, no wrap-around */
  TOPO_DIM_FC = 2,     /* fully connected */
  TOPO_DIM_SWITCH = 3, /* a star: one switch node per row of this dimension */
} topo_dim_kind_t;

/* A dimension kind's name in topology files and reports: "ring", "line", "fc", "switch". */
const char *topo_dim_kind_name(topo_dim_kind_t k);

typedef struct topo_dim {
  topo_dim_kind_t kind;
  uint32_t size;         /* NPUs along this dimension (>= 2, or 1 for a trivial dim) */
  double bandwidth_GBps; /* per direction, GB/s = 2^30 B/s */
  double latency_ns;
  bool unidirectional; /* RING only: links i -> i+1 only */
} topo_dim_t;

typedef struct topo_link {
  uint32_t src, dst;     /* node ids: NPUs 0..npus-1, switches npus..npus+switches-1 */
  double bandwidth_GBps; /* > 0, finite */
  uint64_t latency_ps;   /* the file's ns, times 1000 */
  uint32_t dim;          /* dimension of a generated fabric, 0 otherwise */
} topo_link_t;

/* A fabric. Fields are read-only to everyone but topo/; build one with topo_create
 * (explicit links) or topo_gen (shape). links are sorted by (src, dst); the CSR arrays
 * list, per node, the ids of its outgoing links (sorted by dst) and incoming links
 * (sorted by src). */
typedef struct topo {
  char *name;        /* never NULL */
  char *description; /* never NULL, may be "" */
  uint32_t npus, switches;
  uint32_t nlinks;
  topo_link_t *links;
  uint32_t *out_off, *out_link; /* out_off[nodes+1] */
  uint32_t *in_off, *in_link;   /* in_off[nodes+1] */
  /* Shape of a generated fabric (ndims > 0): routes are dimension ordered. An explicit
   * fabric has ndims == 0 and is routed by lowest-id shortest paths. */
  uint32_t ndims;
  topo_dim_t dims[TOPO_MAX_DIMS];
} topo_t;

static inline uint32_t topo_nodes(const topo_t *t) {
  return t->npus + t->switches;
}

/* Builds a fabric from explicit directed links (copied). Validates everything: counts
 * against the caps, endpoints in range, no self-loops, no duplicate (src,dst), bandwidth
 * > 0 and finite, latency finite; messages name links[i]. Caller frees with topo_free.
 * O(L log L). */
tn_status_t topo_create(const char *name, uint32_t npus, uint32_t switches,
                        const topo_link_t *links, uint32_t nlinks, topo_t **out, tn_err_t *err);

/* Replace t's name or description with a copy of text, which must be valid UTF-8, and for
 * a name without control characters (tn_text_ok: names reach JSON output and one-line
 * messages; a description may span lines): TN_INVAL naming the field and the offending
 * byte otherwise, t unchanged. topo_create's name passes the same check.
 * O(strlen(text)). */
tn_status_t topo_set_name(topo_t *t, const char *text, tn_err_t *err);
tn_status_t topo_set_description(topo_t *t, const char *text, tn_err_t *err);

/* Generates a fabric of ndims dimensions (dimension 0 fastest: NPU id =
 * sum coord[d] * stride[d]). Switches are numbered after the NPUs, dimension by
 * dimension. Caller frees. */
tn_status_t topo_gen(const char *name, const topo_dim_t *dims, uint32_t ndims, topo_t **out,
                     tn_err_t *err);

/* Generated fabrics (t->ndims > 0): the stride of dimension d in NPU ids (NPU id = sum
 * coord[d] * stride[d], dimension 0 fastest), and whether every link still has its
 * dimension's bandwidth and latency (false when overrides changed some, and for a fabric
 * given link by link): then the shape's symmetries hold (translations along rings, fully
 * connected and switch dimensions, reflections of lines). */
uint32_t topo_dim_stride(const topo_t *t, uint32_t d);
bool topo_dims_uniform(const topo_t *t);

/* Generates one of the CLI's kinds ("ring", "fc", "switch", "mesh", "torus",
 * "hypercube") from a DIMS string ("8", "8x8", "4x4x4"; a hypercube takes its NPU
 * count, a power of two), all links at bw GB/s and lat ns. */
tn_status_t topo_gen_kind(const char *kind, const char *dims, double bandwidth_GBps,
                          double latency_ns, topo_t **out, tn_err_t *err);

void topo_free(topo_t *t);

/* Deep copy. */
tn_status_t topo_clone(const topo_t *t, topo_t **out, tn_err_t *err);

/* A copy of t without its slow links, for planners that a slow link misleads (a greedy
 * link sends whatever its far end lacks, however late it arrives): *out NULL when t has
 * none, or when its NPUs would not all reach each other without them. A link u -> v is
 * slow when it runs below half the fastest of its siblings: into a switch v, the other
 * links into v from nodes of u's kind (NPU or switch); into an NPU v, the other links
 * from u into NPUs (rail-4x8-degraded: GPU 22's 12.5 GB/s rail link both ways, beside 50;
 * torus-8x8-degraded: 36 <-> 44). The copy keeps t's name, NPUs and switches, and is routed
 * as an explicit fabric (lowest-id shortest paths): sets planned on it name only NPU
 * pairs, and are valid, and timed, on t. O(L + N) besides the connectivity check. */
tn_status_t topo_without_slow_links(const topo_t *t, topo_t **out, tn_err_t *err);

/* True when every link src -> dst has a link dst -> src with the same bandwidth and
 * latency (then the transposed fabric is the fabric itself). O(L log degree). */
bool topo_is_symmetric(const topo_t *t);

/* The transposed fabric: every link reversed with its figures, same NPUs and switches,
 * explicit (no shape, so routed by lowest-id shortest paths). A Reduce-Scatter is an
 * All-Gather planned on it, run backwards (algo_from_schedule). Caller frees. O(L log L). */
tn_status_t topo_transpose(const topo_t *t, topo_t **out, tn_err_t *err);

/* True when a and b have the same npus, switches, links (with figures) and name. */
bool topo_equal(const topo_t *a, const topo_t *b);

/* Link id of the link src -> dst, or TOPO_NO_LINK. O(log degree). */
uint32_t topo_find_link(const topo_t *t, uint32_t src, uint32_t dst);

/* Changes the figures of the existing link src -> dst, keeping the shape (how a
 * heterogeneous fabric is made from a generated one). bandwidth_GBps > 0 and finite,
 * latency_ps at most TOPO_MAX_LATENCY_NS * 1000. TN_INVAL when there is no such link or
 * a figure is out of range. O(log degree). */
tn_status_t topo_set_link(topo_t *t, uint32_t src, uint32_t dst, double bandwidth_GBps,
                          uint64_t latency_ps, tn_err_t *err);

/* ---- files --------------------------------------------------------------- */

/* Loads a topology JSON file (explicit or generator form, docs/architecture.md §4) or an
 * ASTRA-sim network YAML file (by extension .yml/.yaml). Errors name the file and the
 * place (line:column or JSON path); unknown keys are errors with a did-you-mean.
 * Caller frees. */
tn_status_t topo_load(const char *path, topo_t **out, tn_err_t *err);
/* Same, from memory; what names the source in messages. */
tn_status_t topo_load_json(const char *text, size_t len, const char *what, topo_t **out,
                           tn_err_t *err);
tn_status_t topo_load_yaml(const char *text, size_t len, const char *what, topo_t **out,
                           tn_err_t *err);
/* Saves as JSON: the generator form when the fabric has a shape and explicit is
 * false, else the explicit form. All-or-nothing write. */
tn_status_t topo_save(const topo_t *t, const char *path, bool explicit_links, tn_err_t *err);
/* The same JSON as a malloc'ed string (caller frees). */
tn_status_t topo_to_json(const topo_t *t, bool explicit_links, char **out, tn_err_t *err);

/* ---- routes (docs/architecture.md §3) ---------------------------------------- */

/* Deterministic shortest-path routes. Generated fabrics: dimension order, lowest
 * dimension first; within a ring the shorter direction, ties going to increasing ids;
 * a switch dimension goes NPU -> switch -> NPU. Explicit fabrics: among shortest paths
 * (in hops) the one whose next hop has the lowest node id at every step. Tables for
 * explicit fabrics are built per destination on first use. Not thread-safe: give each
 * thread its own. */
typedef struct topo_routes topo_routes_t;
tn_status_t topo_routes_create(const topo_t *t, topo_routes_t **out, tn_err_t *err);
void topo_routes_free(topo_routes_t *r);
/* Link id of the next hop from node toward NPU dst, TOPO_NO_LINK when node == dst or
 * dst is unreachable. Amortised O(1) for generated fabrics, O(V+E) on the first query
 * for a new dst on explicit fabrics. */
uint32_t topo_route_next(topo_routes_t *r, uint32_t node, uint32_t dst);
/* True once a route table could not be allocated: a TOPO_NO_LINK answer may then mean
 * "out of memory" rather than "unreachable" (callers report TN_NOMEM). */
bool topo_routes_out_of_memory(const topo_routes_t *r);
/* Hops from src to dst along the route (0 when equal, UINT32_MAX when unreachable). */
uint32_t topo_route_hops(topo_routes_t *r, uint32_t src, uint32_t dst);
/* The sum of the latencies of the route's links from src to dst (0 when equal, UINT64_MAX
 * when unreachable; links are at most 10^12 ps, so a route of fewer than 18 million links
 * cannot overflow). */
uint64_t topo_route_latency_ps(topo_routes_t *r, uint32_t src, uint32_t dst);

/* The logical NPU-to-NPU edges of t: (u, v) is one when the route from u to v crosses
 * switches only (on a direct-connect fabric: the links between NPUs), and its route's
 * links are links[lo[u * n + v]] .. links[lo[u * n + v + 1] - 1] (none: no edge).
 * What planners that relay through NPUs build their paths of (forest/, greedy/). */
typedef struct topo_logical {
  uint32_t n;
  uint32_t *lo;    /* n * n + 1 */
  uint32_t *links; /* route links, concatenated */
} topo_logical_t;
/* Fills *out (zeroed first). TN_NOMEM also when the route table runs out of memory. */
tn_status_t topo_logical_edges(const topo_t *t, topo_routes_t *routes, topo_logical_t *out,
                               tn_err_t *err);
void topo_logical_free(topo_logical_t *e);

/* ---- analysis (igraph) -------------------------------------------------- */

typedef struct topo_info {
  uint32_t npus, switches, links;
  bool connected;      /* every NPU reaches every NPU along directed links */
  uint32_t diameter;   /* hops, over NPU pairs; UINT32_MAX when not connected */
  bool diameter_exact; /* false: a lower bound (two BFS sweeps) on a big fabric without shape */
  uint32_t min_in_degree, max_in_degree;     /* over NPUs */
  uint32_t min_out_degree, max_out_degree;   /* over NPUs */
  double min_ingress_GBps, max_ingress_GBps; /* sum of incoming link bandwidths, NPUs */
  double min_egress_GBps, max_egress_GBps;
} topo_info_t;

/* Fills info (caller's storage). Degrees and bandwidths come from the CSR arrays;
 * connectivity and the diameter from igraph BFS from every NPU, O(npus * (V + E)) time,
 * O(64 * npus) extra memory — up to 2e8 of npus * (V + E); above, connectivity from
 * strongly connected components and the diameter from the shape of a generated fabric
 * (exact), else two BFS sweeps (a lower bound, diameter_exact false): O(V + E). Errors: TN_NOMEM,
 * TN_INTERNAL (an igraph failure). */
tn_status_t topo_analyze(const topo_t *t, topo_info_t *info, tn_err_t *err);

/* Debian's igraph is built without thread safety (its error "finally" stack is global):
 * every module that calls igraph (topo/, trees/, …) does so only between these two calls,
 * which also install igraph's quiet error handlers once (it then never prints or aborts,
 * and returns its error codes). One process-wide lock, owned here. */
void topo_igraph_lock(void);
void topo_igraph_unlock(void);

/* Fails with TN_INFEASIBLE ("fabric 'x' is disconnected: NPU a cannot reach NPU b")
 * when some NPU cannot reach another. */
tn_status_t topo_check_connected(const topo_t *t, tn_err_t *err);

/* ---- lower bounds (docs/bounds.md) -------------------------------------- */

/* How many affine terms one collective's bound keeps; the bound is their max. */
#define TOPO_BOUND_TERMS 8u
/* Above this many NPUs (or TOPO_BOUND_TIGHT_MAX_LINKS links) the max-flow cut search is
 * skipped: the bounds fall back to per-NPU cuts (still valid, not tight). */
#define TOPO_BOUND_TIGHT_MAX_NPUS 2048u
#define TOPO_BOUND_TIGHT_MAX_LINKS 65536u

/* No schedule of S bytes finishes before ps_per_byte * S + ps (integer ps, rounded down). */
typedef struct topo_bound_term {
  double ps_per_byte; /* >= 0 */
  double ps;          /* >= 0 */
} topo_bound_term_t;

/* Which argument gave a collective's bandwidth term (its largest ps_per_byte). */
typedef enum {
  TOPO_BOUND_NONE = 0,     /* fewer than 2 NPUs: everything is 0 */
  TOPO_BOUND_CUT = 1,      /* AG/RS: the cut set X (ForestColl's bound) */
  TOPO_BOUND_NPU = 2,      /* a single NPU's links (the fallback above the caps) */
  TOPO_BOUND_GOSSIP = 3,   /* AR: 2(k-1) crossings of a partition into k groups */
  TOPO_BOUND_BISECT = 4,   /* AR: one crossing each way of a 2-sided cut */
  TOPO_BOUND_EXCHANGE = 5, /* A2A: a(n-a)/n of S crossing a cut with a NPUs inside */
  TOPO_BOUND_VOLUME = 6,   /* A2A: every piece's hops over the total link bandwidth */
  TOPO_BOUND_FLOW = 7,     /* A2A: the maximum concurrent flow over the routes (GLPK) */
} topo_bound_kind_t;

typedef struct topo_coll_bound {
  topo_bound_term_t terms[TOPO_BOUND_TERMS];
  uint32_t nterms;
  /* The bandwidth term's witness, for explanations: */
  topo_bound_kind_t kind;
  uint32_t cut_npus;  /* CUT: NPUs inside X; GOSSIP: groups k; BISECT/NPU: NPUs inside */
  uint32_t cut_nodes; /* CUT/BISECT/NPU: nodes (switches included) inside X */
  double cut_GBps;    /* the capacity the argument divides by */
  double crossings;   /* bytes that must cross it per byte of S */
  char family[48];    /* GOSSIP: which partition ("singletons", "links > 50 GB/s", ...) */
  bool exact;         /* A2A: a flow over the routes meets the bandwidth term (FLOW: proved) */
} topo_coll_bound_t;

typedef struct topo_bounds {
  uint32_t npus;
  bool connected;      /* false: every bound is infinite (topo_bound_ps gives UINT64_MAX) */
  bool tight;          /* false above the caps: per-NPU fallback, not tight */
  uint64_t latency_ps; /* the longest shortest-latency path between two NPUs */
  topo_coll_bound_t coll[TN_NCOLLS]; /* indexed by tn_coll_t */
} topo_bounds_t;

/* Computes the lower bounds of the three collectives on t once (docs/bounds.md has the
 * proofs): All-Gather (S/n) * max over node sets X holding an NPU and missing one of
 * |X & NPUs| / B_out(X), found exactly by Dinkelbach iteration over max-flows (igraph),
 * one sink NPU after another; Reduce-Scatter the same on the transposed fabric;
 * All-Reduce the best of a documented family of partitions (2(k-1) S / capacity leaving
 * the groups) and of 2-sided cuts, the narrowest found exactly by 2(n-1) max-flows; each
 * with latency terms (the longest shortest-latency path, the first hop after the last byte
 * leaves an NPU). out is the caller's storage. Errors: TN_NOMEM, TN_INTERNAL (an igraph
 * failure). Time O(n * F) per direction and for the 2-sided cut, F one max-flow on V + 1
 * nodes and L + n links (push-relabel, O(V^2 sqrt(E)) worst case, near linear on
 * fabrics), plus O(n L log V) for latencies; above TOPO_BOUND_TIGHT_MAX_NPUS
 * NPUs or TOPO_BOUND_TIGHT_MAX_LINKS links only O(n L log V) (out->tight false).
 * Thread-safe (igraph calls are serialised). */
tn_status_t topo_bounds_compute(const topo_t *t, topo_bounds_t *out, tn_err_t *err);

/* The bound in ps for a collective of size_bytes (NCCL's meaning of the size, see
 * docs/bounds.md): the max of coll's terms, rounded down, into *ps; UINT64_MAX when b is
 * not connected (no schedule exists). The simulator rounds each message's link time to
 * the nearest ps, so a simulated time may undercut this by at most half a ps per message.
 * TN_INVAL (tn_time_overflow, naming the size) when the bound passes TN_TIME_MAX_PS: then
 * every schedule does too. O(1). */
tn_status_t topo_bound_ps(const topo_bounds_t *b, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                          tn_err_t *err);

/* The bandwidth term alone: ps per byte of S (the large-size limit of the bound). */
double topo_bound_ps_per_byte(const topo_bounds_t *b, tn_coll_t coll);

/* One line saying why coll's bandwidth term holds ("120 NPUs' blocks must leave a set of
 * 143 nodes through 200 GB/s"), written into buf (always terminated); returns buf. */
const char *topo_bound_explain(const topo_bounds_t *b, tn_coll_t coll, char *buf, size_t len);

/* An estimate of topo_bounds_compute's run time on t in microseconds of one core, from
 * t's sizes alone (no computation), for callers that deal work out ahead of time (tenet
 * batch's shards): the same fabric gives the same number everywhere. Within a factor of
 * about 3 on the shipped fabrics. O(1). */
uint64_t topo_bounds_cost_us(const topo_t *t);

/* topo_bounds_compute then topo_bound_ps, for a caller with a single size. When the
 * computation fails (out of memory) it gives the per-NPU bound, still valid. Errors as
 * topo_bound_ps's. */
tn_status_t topo_lower_bound_ps(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                                tn_err_t *err);

/* The per-NPU bound alone (docs/bounds.md §1: the bytes an NPU must take in or send out
 * over its own links, without the cut search or the latency terms): never above
 * topo_lower_bound_ps, for callers that only ask whether a time is near the bound (a time
 * within x of it is within x of the tight one). 0 below 2 NPUs; errors as topo_bound_ps's.
 * O(n + L). */
tn_status_t topo_npu_bound_ps(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                              tn_err_t *err);

/* Refuses, as topo_bound_ps does, a size whose per-NPU bound (docs/bounds.md §1, the
 * bytes an NPU must take in or send out over its own links) already passes TN_TIME_MAX_PS:
 * a check in O(n + L), for callers that plan before they need the tight bound. */
tn_status_t topo_size_check(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, tn_err_t *err);

/* Sum of incoming / outgoing link bandwidth of a node, GB/s. */
double topo_ingress_GBps(const topo_t *t, uint32_t node);
double topo_egress_GBps(const topo_t *t, uint32_t node);

/* Resolves a TOPO argument: an existing file path, else a shipped name looked up as
 * <dir>/<name>.json. *path is malloc'ed (caller frees). */
tn_status_t topo_resolve(const char *arg, const char *shipped_dir, char **path, tn_err_t *err);

/* Appends t as ASTRA-sim's analytical network YAML (topology, npus_count, bandwidth in
 * GB/s, latency in ns: one entry per dimension) to out. TN_INVAL with the reason for a
 * fabric without that form: given link by link, a mesh line or unidirectional ring, links
 * that differ from their dimension, or (congestion_aware) more than one dimension, which
 * that backend does not run. */
tn_status_t topo_astra_yaml(const topo_t *t, bool congestion_aware, tn_sb_t *out, tn_err_t *err);

#endif
