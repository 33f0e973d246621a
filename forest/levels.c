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
 * relay hangs off that member instead (entry()). */
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

/* Where root r's tree enters group h: the relay *via, sent to from *from (r, or a member
 * of r's group). Candidates in order: from r, then from the members of r's group after r
 * (cyclically); for each, the members of h from the one at from's position on, that from
 * reaches over a logical edge and that reach the rest of h so. The first whose route from
 * *from has the widest slowest link is kept (a rail at a quarter speed is passed over for a
 * neighbour's). False when none. */
static bool entry(const topo_t *t, const groups_t *g, const topo_logical_t *lg, uint32_t r,
                  uint32_t h, uint32_t *from, uint32_t *via) {
  uint32_t own = g->group[r], osize = g->first[own + 1] - g->first[own];
  uint32_t size = g->first[h + 1] - g->first[h];
  double best = 0;
  for (uint32_t a = 0; a < osize; a++) {
    /* the other members from an offset that differs with the two groups, so that the
     * roots one group's rail cannot serve enter h over different rails */
    uint32_t off = a == 0 ? 0 : 1 + (a - 1 + own + h) % (osize - 1);
    uint32_t f = g->member[g->first[own] + (g->pos[r] + off) % osize];
    for (uint32_t j = 0; j < size; j++) {
      uint32_t c = g->member[g->first[h] + (g->pos[f] + j) % size];
      if (!edge(lg, f, c)) continue;
      bool ok = true;
      for (uint32_t i = g->first[h]; i < g->first[h + 1] && ok; i++)
        ok = g->member[i] == c || edge(lg, c, g->member[i]);
      double bw = ok ? narrowest(t, lg, f, c) : 0;
      if (bw > best) best = bw, *from = f, *via = c;
    }
  }
  return best > 0;
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
  if (st == TN_OK) st = tn_calloc(n + 1, sizeof *out->tree_off, &out->tree_off, err);
  if (st == TN_OK) st = tn_calloc((size_t)n * n, sizeof *out->parent, &out->parent, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *out->weight, &out->weight, err);
  for (uint32_t r = 0; st == TN_OK && r < n; r++) {
    uint32_t *parent = &out->parent[(size_t)r * n], own = g.group[r];
    for (uint32_t h = 0; h < g.ng && st == TN_OK; h++) {
      uint32_t from = r, via = r;
      if (h != own && !entry(t, &g, &lg, r, h, &from, &via)) {
        st = tn_err_set(err, TN_INFEASIBLE,
                        "fabric '%s': NPU %u reaches no NPU of group %u that reaches the rest "
                        "of it over switches only",
                        t->name, r, h);
        break;
      }
      for (uint32_t i = g.first[h]; i < g.first[h + 1] && st == TN_OK; i++) {
        uint32_t v = g.member[i];
        parent[v] = v == r ? FOREST_NO_PARENT : v == via ? from : via;
        if (v != r && !edge(&lg, parent[v], v))
          st = tn_err_set(err, TN_INFEASIBLE,
                          "fabric '%s': NPU %u reaches NPU %u of its group only through "
                          "another NPU",
                          t->name, parent[v], v);
      }
    }
    out->tree_off[r] = r;
    out->weight[r] = 1.0;
  }
  if (st == TN_OK) {
    out->tree_off[n] = n;
    out->ntrees = n;
  }
  topo_logical_free(&lg);
  groups_free(&g);
  if (st != TN_OK) forest_i_pack_free(out);
  return st;
}
