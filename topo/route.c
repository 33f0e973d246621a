/* topo/route.c — deterministic shortest-path routes (docs/architecture.md §3): dimension
 * order on generated fabrics, lowest-id next hop on explicit ones. Routes are what the
 * simulator and the planners send multi-hop messages along. */
#include "topo/topo.h"

#include <stdlib.h>
#include <string.h>

#define SHAPE_MEMO_ENTRIES (1u << 22) /* 16 MB of next hops at most */

struct topo_routes {
  const topo_t *t;                  /* borrowed */
  uint32_t stride[TOPO_MAX_DIMS];   /* generated fabrics */
  uint32_t sw_first[TOPO_MAX_DIMS]; /* first switch id of each SWITCH dimension */
  /* Explicit fabrics: next[dst] is NULL until first asked, then per node the link id
   * of the next hop toward dst (TOPO_NO_LINK at dst or when unreachable). Generated
   * fabrics keep their dimension-ordered hops the same way (every hop of every message
   * asks), up to SHAPE_MEMO_ENTRIES; above that, or without the memory, they are worked
   * out at each call. */
  uint32_t **next;
  uint32_t *queue, *dist; /* BFS scratch, nodes long */
  bool nomem;             /* a column could not be allocated: a TOPO_NO_LINK may be a lie */
};

tn_status_t topo_routes_create(const topo_t *t, topo_routes_t **out, tn_err_t *err) {
  *out = NULL;
  topo_routes_t *r = NULL;
  tn_status_t st = tn_calloc(1, sizeof *r, &r, err);
  if (st != TN_OK) return st;
  r->t = t;
  if (t->ndims > 0) {
    uint32_t sw = t->npus;
    for (uint32_t d = 0; d < t->ndims; d++) {
      r->stride[d] = topo_dim_stride(t, d);
      r->sw_first[d] = sw;
      if (t->dims[d].kind == TOPO_DIM_SWITCH) sw += t->npus / t->dims[d].size;
    }
    if ((uint64_t)topo_nodes(t) * t->npus <= SHAPE_MEMO_ENTRIES &&
        tn_calloc(t->npus, sizeof *r->next, &r->next, NULL) != TN_OK)
      r->next = NULL; /* no memo: only slower */
  } else {
    uint32_t nodes = topo_nodes(t);
    if ((st = tn_calloc(t->npus, sizeof *r->next, &r->next, err)) != TN_OK ||
        (st = tn_calloc(nodes, sizeof *r->queue, &r->queue, err)) != TN_OK ||
        (st = tn_calloc(nodes, sizeof *r->dist, &r->dist, err)) != TN_OK) {
      topo_routes_free(r);
      return st;
    }
  }
  *out = r;
  return TN_OK;
}

void topo_routes_free(topo_routes_t *r) {
  if (r == NULL) return;
  if (r->next) {
    for (uint32_t i = 0; i < r->t->npus; i++)
      free(r->next[i]);
    free(r->next);
  }
  free(r->queue);
  free(r->dist);
  free(r);
}

/* Builds the next-hop column toward dst: BFS on reversed links gives hop distances to
 * dst; each node then takes, among its out-links that lead one hop closer, the one to the
 * lowest node id (out-links are sorted by dst, so the first such link). */
static uint32_t *build_column(topo_routes_t *r, uint32_t dst) {
  const topo_t *t = r->t;
  uint32_t nodes = topo_nodes(t);
  uint32_t *col = NULL;
  if (tn_calloc(nodes, sizeof *col, &col, NULL) != TN_OK) return NULL;
  for (uint32_t v = 0; v < nodes; v++)
    r->dist[v] = UINT32_MAX;
  uint32_t head = 0, tail = 0;
  r->dist[dst] = 0;
  r->queue[tail++] = dst;
  while (head < tail) {
    uint32_t v = r->queue[head++];
    for (uint32_t i = t->in_off[v]; i < t->in_off[v + 1]; i++) {
      uint32_t u = t->links[t->in_link[i]].src;
      /* Only NPUs and switches forward; every node may relay (store and forward). */
      if (r->dist[u] == UINT32_MAX) {
        r->dist[u] = r->dist[v] + 1;
        r->queue[tail++] = u;
      }
    }
  }
  for (uint32_t u = 0; u < nodes; u++) {
    col[u] = TOPO_NO_LINK;
    if (u == dst || r->dist[u] == UINT32_MAX) continue;
    for (uint32_t i = t->out_off[u]; i < t->out_off[u + 1]; i++) {
      uint32_t l = t->out_link[i];
      if (r->dist[t->links[l].dst] + 1 == r->dist[u]) {
        col[u] = l;
        break;
      }
    }
  }
  return col;
}

/* Dimension-ordered next hop on a generated fabric. */
static uint32_t shape_next(const topo_routes_t *r, uint32_t node, uint32_t dst) {
  const topo_t *t = r->t;
  if (node >= t->npus) {
    /* A switch of dimension d serving one row: go to the row's NPU that has dst's
     * coordinate d. */
    for (uint32_t d = t->ndims; d-- > 0;) {
      if (t->dims[d].kind != TOPO_DIM_SWITCH || node < r->sw_first[d]) continue;
      uint32_t row = node - r->sw_first[d], st = r->stride[d], s = t->dims[d].size;
      uint32_t base = row % st + (row / st) * st * s;
      uint32_t to = base + ((dst / st) % s) * st;
      return topo_find_link(t, node, to);
    }
    return TOPO_NO_LINK;
  }
  for (uint32_t d = 0; d < t->ndims; d++) {
    uint32_t st = r->stride[d], s = t->dims[d].size;
    uint32_t cn = (node / st) % s, cd = (dst / st) % s;
    if (cn == cd) continue;
    uint32_t base = node - cn * st, to = 0;
    switch (t->dims[d].kind) {
    case TOPO_DIM_RING: {
      uint32_t cw = (cd + s - cn) % s;
      bool forward = t->dims[d].unidirectional || cw <= s - cw;
      to = base + (forward ? (cn + 1) % s : (cn + s - 1) % s) * st;
      break;
    }
    case TOPO_DIM_LINE: to = base + (cd > cn ? cn + 1 : cn - 1) * st; break;
    case TOPO_DIM_FC: to = base + cd * st; break;
    case TOPO_DIM_SWITCH: {
      uint32_t row = node % st + (node / (st * s)) * st;
      return topo_find_link(t, node, r->sw_first[d] + row);
    }
    }
    return topo_find_link(t, node, to);
  }
  return TOPO_NO_LINK;
}

/* The column of dimension-ordered next hops toward dst, every node's (NULL without the
 * memory). */
static uint32_t *shape_column(const topo_routes_t *r, uint32_t dst) {
  uint32_t nodes = topo_nodes(r->t), *col = NULL;
  if (tn_malloc(nodes, sizeof *col, &col, NULL) != TN_OK) return NULL;
  for (uint32_t u = 0; u < nodes; u++)
    col[u] = u == dst ? TOPO_NO_LINK : shape_next(r, u, dst);
  return col;
}

uint32_t topo_route_next(topo_routes_t *r, uint32_t node, uint32_t dst) {
  const topo_t *t = r->t;
  if (dst >= t->npus || node >= topo_nodes(t) || node == dst) return TOPO_NO_LINK;
  if (t->ndims > 0) {
    if (r->next == NULL) return shape_next(r, node, dst);
    if (r->next[dst] == NULL && (r->next[dst] = shape_column(r, dst)) == NULL)
      return shape_next(r, node, dst);
    return r->next[dst][node];
  }
  if (r->next[dst] == NULL) {
    r->next[dst] = build_column(r, dst);
    if (r->next[dst] == NULL) {
      r->nomem = true;
      return TOPO_NO_LINK;
    }
  }
  return r->next[dst][node];
}

bool topo_routes_out_of_memory(const topo_routes_t *r) {
  return r->nomem;
}

/* Walks the route from src to dst: its hops and the sum of its links' latencies; false
 * when dst is unreachable. */
static bool route_walk(topo_routes_t *r, uint32_t src, uint32_t dst, uint32_t *hops,
                       uint64_t *latency_ps) {
  uint32_t v = src, limit = topo_nodes(r->t);
  *hops = 0, *latency_ps = 0;
  while (v != dst) {
    uint32_t l = topo_route_next(r, v, dst);
    if (l == TOPO_NO_LINK || *hops > limit) return false;
    *latency_ps += r->t->links[l].latency_ps;
    v = r->t->links[l].dst;
    (*hops)++;
  }
  return true;
}

uint32_t topo_route_hops(topo_routes_t *r, uint32_t src, uint32_t dst) {
  uint32_t hops;
  uint64_t lat;
  return route_walk(r, src, dst, &hops, &lat) ? hops : UINT32_MAX;
}

uint64_t topo_route_latency_ps(topo_routes_t *r, uint32_t src, uint32_t dst) {
  uint32_t hops;
  uint64_t lat;
  return route_walk(r, src, dst, &hops, &lat) ? lat : UINT64_MAX;
}

/* Appends the route from u to v when it reaches v crossing switches only. */
static tn_status_t add_logical(const topo_t *t, topo_routes_t *routes, uint32_t u, uint32_t v,
                               tn_vec_t *links, tn_err_t *err) {
  size_t start = links->len;
  for (uint32_t node = u, hops = 0; node != v; hops++) {
    uint32_t l = topo_route_next(routes, node, v);
    if (l == TOPO_NO_LINK && topo_routes_out_of_memory(routes))
      return tn_err_set(err, TN_NOMEM, "out of memory for the route table of '%s'", t->name);
    if (l == TOPO_NO_LINK || hops > topo_nodes(t) || (node != u && node < t->npus)) {
      links->len = start; /* not a logical edge */
      return TN_OK;
    }
    tn_status_t st = tn_vec_push(links, &l, err);
    if (st != TN_OK) return st;
    node = t->links[l].dst;
  }
  return TN_OK;
}

tn_status_t topo_logical_edges(const topo_t *t, topo_routes_t *routes, topo_logical_t *out,
                               tn_err_t *err) {
  uint32_t n = t->npus;
  memset(out, 0, sizeof *out);
  out->n = n;
  tn_vec_t links;
  tn_vec_init(&links, sizeof(uint32_t));
  tn_status_t st = tn_calloc((size_t)n * n + 1, sizeof *out->lo, &out->lo, err);
  for (uint32_t u = 0; st == TN_OK && u < n; u++)
    for (uint32_t v = 0; st == TN_OK && v < n; v++) {
      out->lo[(size_t)u * n + v] = (uint32_t)links.len;
      if (u != v) st = add_logical(t, routes, u, v, &links, err);
    }
  if (st == TN_OK && links.len >= UINT32_MAX)
    st = tn_err_set(err, TN_LIMIT, "'%s': too many route links (%zu)", t->name, links.len);
  if (st != TN_OK) {
    tn_vec_free(&links);
    topo_logical_free(out);
    return st;
  }
  out->lo[(size_t)n * n] = (uint32_t)links.len;
  out->links = links.data;
  return TN_OK;
}

void topo_logical_free(topo_logical_t *e) {
  free(e->lo);
  free(e->links);
  e->lo = e->links = NULL;
}
