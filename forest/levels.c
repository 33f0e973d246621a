/* forest/levels.c — two-level broadcast trees for fabrics whose NPUs hang off switches:
 * the root sends to every NPU of its own group and to one NPU (its relay) in every other
 * group, and each relay sends on to the rest of its group. A block crosses between two
 * groups once, and no tree is deeper than two NPU hops, where the packing's trees (pack.c)
 * may chain through many NPUs and pay a hop's latency at each: on fattree-64-2to1 (8
 * leaves of 8 NPUs, 2:1 uplinks) the packing's All-Gather of 1 MiB ran 4.15 times the
 * bound and Ring 3.79, these trees 1.10.
 *
 * Groups: every NPU joins the switch it has its fastest link to (among equals, the one
 * with the most NPUs linked to it, then the lowest id): the leaf of a fat-tree, the server
 * switch of a rail fabric. The trees' fan-out inside a group carries most of their bytes
 * (a root sends to every member of its group, a relay to every member of its own), so
 * the groups are where the fast links are. The relay in group h for a root at position i
 * of its own group is the member at position i of h (the same rail), or the next one along
 * whose route from the root crosses switches only; so each member relays for about as
 * many roots. Where no member of h is reached so, or only over a slower link than from
 * another member of the root's group (the root's rail link is down or degraded), the
 * relays hang off those members instead, the root's data split over a tree for each
 * (entry()): on rail-4x8-degraded at 1 MiB, one such tree put a second root's data on one
 * rail (All-Gather 1.354 of the bound); a tree per other rail, 1.141. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

/* Whether (u, v) is a logical edge: its route crosses switches only. */
static bool edge(const topo_logical_t *lg, uint32_t u, uint32_t v) {
  size_t p = (size_t)u * lg->n + v;
  return lg->lo[p] < lg->lo[p + 1];
}

/* The groups: group[v] for every NPU, members listed group by group (first[g] ..
 * first[g + 1]) in ascending id, pos[v] v's place in its group. False when some NPU
 * links to no switch. */
typedef struct groups {
  uint32_t ng;
  uint32_t *group, *pos, *first, *member;
} groups_t;

static void groups_free(groups_t *g) {
  free(g->group);
  free(g->pos);
  free(g->first);
  free(g->member);
}

static tn_status_t groups_make(const topo_t *t, groups_t *g, bool *ok, tn_err_t *err) {
  uint32_t n = t->npus, nodes = topo_nodes(t);
  uint32_t *npus_at = NULL, *gid = NULL;
  memset(g, 0, sizeof *g);
  *ok = true;
  tn_status_t st = tn_calloc(nodes, sizeof *npus_at, &npus_at, err);
  if (st == TN_OK) st = tn_calloc(nodes, sizeof *gid, &gid, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *g->group, &g->group, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *g->pos, &g->pos, err);
  if (st == TN_OK) st = tn_calloc(n + 1, sizeof *g->first, &g->first, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *g->member, &g->member, err);
  for (uint32_t l = 0; st == TN_OK && l < t->nlinks; l++)
    if (t->links[l].src < n && t->links[l].dst >= n) npus_at[t->links[l].dst]++;
  for (uint32_t v = 0; st == TN_OK && v < n && *ok; v++) {
    uint32_t best = UINT32_MAX;
    double bw = 0;
    for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
      const topo_link_t *l = &t->links[t->out_link[i]];
      uint32_t s = l->dst;
      if (s < n) continue;
      bool first = best == UINT32_MAX || l->bandwidth_GBps > bw ||
                   (l->bandwidth_GBps == bw &&
                    (npus_at[s] > npus_at[best] || (npus_at[s] == npus_at[best] && s < best)));
      if (first) best = s, bw = l->bandwidth_GBps;
    }
    if (best == UINT32_MAX) {
      *ok = false;
      break;
    }
    if (gid[best] == 0) gid[best] = ++g->ng; /* groups numbered by their first NPU */
    g->group[v] = gid[best] - 1;
  }
  if (st == TN_OK && *ok) { /* counting sort by group, ids ascending within */
    for (uint32_t v = 0; v < n; v++)
      g->first[g->group[v] + 1]++;
    for (uint32_t h = 0; h < g->ng; h++)
      g->first[h + 1] += g->first[h];
    memset(gid, 0, (size_t)nodes * sizeof *gid); /* now: members placed per group */
    for (uint32_t v = 0; v < n; v++) {
      uint32_t h = g->group[v];
      g->pos[v] = gid[h]++;
      g->member[g->first[h] + g->pos[v]] = v;
    }
  }
  free(npus_at);
  free(gid);
  return st;
}

/* The slowest link of the route of logical edge (u, v). */
static double narrowest(const topo_t *t, const topo_logical_t *lg, uint32_t u, uint32_t v) {
  size_t p = (size_t)u * lg->n + v;
  double bw = INFINITY;
  for (uint32_t i = lg->lo[p]; i < lg->lo[p + 1]; i++)
    if (t->links[lg->links[i]].bandwidth_GBps < bw) bw = t->links[lg->links[i]].bandwidth_GBps;
  return bw;
}

/* Where root r's trees enter group h: relays via[i], each sent to from from[i] (r, or a
 * member of r's group), *count of them (at most LEVELS_SPREAD). Candidates in order: from
 * r, then from the members of r's group after r (cyclically, from an offset that differs
 * with the two groups); for each, the first member of h from the one at from's position on
 * that from reaches over a logical edge and that reaches the rest of h so. Kept: those whose
 * route has the widest slowest link, and r's alone when it is one of them (a rail at a
 * quarter speed, or none, is passed over for the neighbours'; the roots' data then enters
 * over several, a tree for each). *count 0 when none. */
#define LEVELS_SPREAD 8u
static void entry(const topo_t *t, const groups_t *g, const topo_logical_t *lg, uint32_t r,
                  uint32_t h, uint32_t *from, uint32_t *via, uint32_t *count) {
  uint32_t own = g->group[r], osize = g->first[own + 1] - g->first[own];
  uint32_t size = g->first[h + 1] - g->first[h];
  double best = 0;
  *count = 0;
  for (uint32_t a = 0; a < osize; a++) {
    uint32_t off = a == 0 ? 0 : 1 + (a - 1 + own + h) % (osize - 1);
    uint32_t f = g->member[g->first[own] + (g->pos[r] + off) % osize];
    for (uint32_t j = 0; j < size; j++) {
      uint32_t c = g->member[g->first[h] + (g->pos[f] + j) % size];
      if (!edge(lg, f, c)) continue;
      bool ok = true;
      for (uint32_t i = g->first[h]; i < g->first[h + 1] && ok; i++)
        ok = g->member[i] == c || edge(lg, c, g->member[i]);
      if (!ok) continue;
      double bw = narrowest(t, lg, f, c);
      if (bw > best) best = bw, *count = 0;
      if (bw == best && *count < LEVELS_SPREAD && !(*count == 1 && from[0] == r))
        from[*count] = f, via[*count] = c, ++*count;
      break; /* one relay per sender */
    }
  }
}

bool forest_levels_apply(const topo_t *t) {
  groups_t g;
  bool ok = false;
  tn_err_t err = {0};
  bool apply = groups_make(t, &g, &ok, &err) == TN_OK && ok && g.ng >= 2;
  groups_free(&g);
  return apply;
}

tn_status_t forest_i_pack_levels(const topo_t *t, topo_routes_t *routes, forest_pack_t *out,
                                 tn_err_t *err) {
  uint32_t n = t->npus;
  memset(out, 0, sizeof *out);
  out->n = n;
  groups_t g;
  topo_logical_t lg = {0};
  bool ok = false;
  tn_status_t st = groups_make(t, &g, &ok, err);
  if (st == TN_OK && !ok)
    st = tn_err_set(err, TN_INFEASIBLE, "fabric '%s': an NPU links to no switch", t->name);
  if (st == TN_OK && g.ng < 2)
    st = tn_err_set(err, TN_INFEASIBLE, "fabric '%s': its NPUs form one group", t->name);
  if (st == TN_OK) st = topo_logical_edges(t, routes, &lg, err);
  /* per root: its trees (the most entries any group needs), then each tree's parents */
  uint32_t *from = NULL, *via = NULL, *cnt = NULL, total = 0;
  tn_vec_t parents, weights;
  tn_vec_init(&parents, sizeof(uint32_t));
  tn_vec_init(&weights, sizeof(double));
  if (st == TN_OK) st = tn_calloc((size_t)g.ng * LEVELS_SPREAD, sizeof *from, &from, err);
  if (st == TN_OK) st = tn_calloc((size_t)g.ng * LEVELS_SPREAD, sizeof *via, &via, err);
  if (st == TN_OK) st = tn_calloc(g.ng, sizeof *cnt, &cnt, err);
  if (st == TN_OK) st = tn_calloc(n + 1, sizeof *out->tree_off, &out->tree_off, err);
  for (uint32_t r = 0; st == TN_OK && r < n; r++) {
    uint32_t own = g.group[r], trees = 1;
    for (uint32_t h = 0; h < g.ng && st == TN_OK; h++) {
      cnt[h] = 1, from[h * LEVELS_SPREAD] = via[h * LEVELS_SPREAD] = r;
      if (h != own)
        entry(t, &g, &lg, r, h, &from[h * LEVELS_SPREAD], &via[h * LEVELS_SPREAD], &cnt[h]);
      if (cnt[h] == 0)
        st = tn_err_set(err, TN_INFEASIBLE,
                        "fabric '%s': NPU %u reaches no NPU of group %u that reaches the rest "
                        "of it over switches only",
                        t->name, r, h);
      else if (cnt[h] > trees)
        trees = cnt[h];
    }
    out->tree_off[r] = total;
    for (uint32_t j = 0; j < trees && st == TN_OK; j++, total++) {
      double w = 1.0 / trees;
      st = tn_vec_reserve(&parents, parents.len + n, err);
      if (st == TN_OK) st = tn_vec_push(&weights, &w, err);
      uint32_t *parent = (uint32_t *)parents.data + parents.len;
      for (uint32_t h = 0; h < g.ng && st == TN_OK; h++) {
        uint32_t e = h * LEVELS_SPREAD + j % cnt[h], f = from[e], v = via[e];
        for (uint32_t i = g.first[h]; i < g.first[h + 1] && st == TN_OK; i++) {
          uint32_t x = g.member[i];
          parent[x] = x == r ? FOREST_NO_PARENT : x == v ? f : v;
          if (x != r && !edge(&lg, parent[x], x))
            st = tn_err_set(err, TN_INFEASIBLE,
                            "fabric '%s': NPU %u reaches NPU %u of its group only through "
                            "another NPU",
                            t->name, parent[x], x);
        }
      }
      parents.len += n;
    }
  }
  if (st == TN_OK) {
    out->tree_off[n] = total;
    out->ntrees = total;
    out->parent = parents.data, out->weight = weights.data; /* ownership moves to out */
  } else {
    tn_vec_free(&parents);
    tn_vec_free(&weights);
  }
  free(from);
  free(via);
  free(cnt);
  topo_logical_free(&lg);
  groups_free(&g);
  if (st != TN_OK) forest_i_pack_free(out);
  return st;
}
