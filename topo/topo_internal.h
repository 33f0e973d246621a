/* topo/topo_internal.h — private to topo/: helpers shared by the loaders and the
 * generators. Nothing outside topo/ includes this file. */
#ifndef TENET_TOPO_INTERNAL_H
#define TENET_TOPO_INTERNAL_H

#include "topo/topo.h"

/* Counts what topo_gen would build for dims, without allocating: NPUs, switches and
 * directed links. Counts saturate at UINT64_MAX, so callers can compare them against
 * the caps before anything is allocated. Sizes of 0 count as 0 NPUs. */
void topo_i_gen_counts(const topo_dim_t *dims, uint32_t ndims, uint64_t *npus,
                       uint64_t *switches, uint64_t *links);

/* The one size rule of every generator path (topo_gen, KIND DIMS, KIND-DIMS names, the JSON
 * generator form), checked before anything is allocated: 1..TOPO_MAX_DIMS dimensions, each
 * of size >= 1 with a known kind and figures in range (TN_INVAL, TN_PARSE), and at most
 * TOPO_MAX_NPUS NPUs, TOPO_MAX_SWITCHES switches and TOPO_MAX_LINKS links (TN_LIMIT, "the
 * fabric would have N links, more than the cap of C (TOPO_MAX_LINKS)"). Messages carry no
 * location: callers prefix theirs. O(ndims). */
tn_status_t topo_i_gen_check(const topo_dim_t *dims, uint32_t ndims, tn_err_t *err);

/* TN_INVAL unless kind is a generator KIND (ring, fc, switch, mesh, torus, hypercube):
 * "unknown <word> 'x' (did you mean 'y'?)", or the list of kinds when none is close. */
tn_status_t topo_i_gen_kind_check(const char *kind, const char *word, tn_err_t *err);

/* The inverse of topo_i_kind_shape, for writing the JSON kind form: the KIND whose rule
 * rebuilds exactly these dims from their sizes (a hypercube from its NPU count), or NULL
 * when none does (mixed kinds, sizes of 1, a mesh of 4 dimensions...: the writer then
 * lists the dimensions). O(ndims). */
const char *topo_i_gen_kind_of(const topo_dim_t *dims, uint32_t ndims);


/* Maps an igraph error code to ours: TN_NOMEM or TN_INTERNAL naming what failed. */
tn_status_t topo_i_igraph_status(int igraph_error, const char *what, tn_err_t *err);

/* The one rule for a hypercube of npus NPUs: a power of two >= 2 with at most
 * TOPO_MAX_DIMS dimensions, as log2(npus) lines of 2 written to sizes (TOPO_MAX_DIMS
 * entries) and *n. TN_INVAL naming what is wrong (the message has no location: callers
 * prefix theirs). */
tn_status_t topo_i_cube_dims(uint32_t npus, uint32_t *sizes, uint32_t *n, tn_err_t *err);

/* The one KIND -> dimensions rule of the generators (CLI KIND DIMS, KIND-DIMS names, the
 * JSON kind form): kind names the dimension kind (*dk); a mesh or torus takes 2 or 3
 * sizes, the others one; every size is >= 2; a hypercube's one size (its NPU count) becomes
 * log2 of it lines of 2 (sizes has TOPO_MAX_DIMS entries; *n is updated). TN_INVAL naming
 * what is wrong, without a location. */
tn_status_t topo_i_kind_shape(const char *kind, uint32_t *sizes, uint32_t *n,
                              topo_dim_kind_t *dk, tn_err_t *err);

/* All-to-All's throughput limit (topo/mcf.c): the rate lambda (GB/s, at most cap_rate,
 * the best limit the caller knows from cuts) that no schedule beats with every NPU sending
 * to every other at once over the fixed routes: the maximum concurrent flow, or a dual
 * bound on it. *exact when a feasible flow reaches lambda (within 1e-7), which proves it
 * the exact limit. false when not computed: no GLPK in this build, more than MCF_MAX_NPUS
 * NPUs, or the LP failed. O(n^2 hops) for the routes, then at most work limits (~2.5 s). */
#define MCF_MAX_NPUS 256u
bool topo_i_mcf_rate(const topo_t *t, double cap_rate, double *lambda, bool *exact);

#endif
