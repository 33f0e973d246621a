/* topo/transpose.c — the transposed fabric (every link reversed, same figures), on which a
 * Reduce-Scatter's All-Gather is planned before it is time-reversed (algo/lower.c). */
#include "topo/topo.h"

#include <stdlib.h>

bool topo_is_symmetric(const topo_t *t) {
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const topo_link_t *a = &t->links[l];
    uint32_t r = topo_find_link(t, a->dst, a->src);
    if (r == TOPO_NO_LINK) return false;
    const topo_link_t *b = &t->links[r];
    if (b->bandwidth_GBps != a->bandwidth_GBps || b->latency_ps != a->latency_ps) return false;
  }
  return true;
}

tn_status_t topo_transpose(const topo_t *t, topo_t **out, tn_err_t *err) {
  *out = NULL;
  topo_link_t *links = NULL;
  tn_status_t st = tn_calloc(t->nlinks ? t->nlinks : 1, sizeof *links, &links, err);
  if (st != TN_OK) return st;
  for (uint32_t l = 0; l < t->nlinks; l++) {
    links[l] = t->links[l];
    links[l].src = t->links[l].dst;
    links[l].dst = t->links[l].src;
  }
  st = topo_create(t->name, t->npus, t->switches, links, t->nlinks, out, err);
  free(links);
  return st;
}
