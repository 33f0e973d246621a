/* topo/core.c — building, validating, copying and comparing a fabric; per-node
 * bandwidth sums and the bandwidth lower bound of docs/architecture.md §2. */
#include "topo/topo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool topo_bandwidth_check(double gbps, char *why, size_t len) {
  if (!isfinite(gbps))
    snprintf(why, len, "must be a finite number of GB/s, not %g", gbps);
  else if (!(gbps > 0.0))
    snprintf(why, len, "must be > 0 GB/s, not %g", gbps);
  else if (gbps < TOPO_MIN_BANDWIDTH_GBPS)
    snprintf(why, len, "is below the floor of %g GB/s: %g", TOPO_MIN_BANDWIDTH_GBPS, gbps);
  else if (gbps > TOPO_MAX_BANDWIDTH_GBPS)
    snprintf(why, len, "exceeds the cap of %g GB/s: %g", TOPO_MAX_BANDWIDTH_GBPS, gbps);
  else
    return true;
  return false;
}

static int link_cmp(const void *a, const void *b) {
  const topo_link_t *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
  return 0;
}

static tn_status_t validate_links(uint32_t npus, uint32_t switches, const topo_link_t *links,
                                  uint32_t nlinks, tn_err_t *err) {
  if (npus == 0) return tn_err_set(err, TN_PARSE, "npus must be at least 1");
  if (npus > TOPO_MAX_NPUS)
    return tn_err_set(err, TN_LIMIT, "npus = %u exceeds the limit of %u", npus,
                      TOPO_MAX_NPUS);
  if (switches > TOPO_MAX_SWITCHES)
    return tn_err_set(err, TN_LIMIT, "switches = %u exceeds the limit of %u", switches,
                      TOPO_MAX_SWITCHES);
  if (nlinks > TOPO_MAX_LINKS)
    return tn_err_set(err, TN_LIMIT, "%u links exceed the limit of %u", nlinks,
                      TOPO_MAX_LINKS);
  uint32_t nodes = npus + switches;
  for (uint32_t i = 0; i < nlinks; i++) {
    const topo_link_t *l = &links[i];
    if (l->src >= nodes || l->dst >= nodes)
      return tn_err_set(err, TN_PARSE, "links[%u]: endpoint %u -> %u is out of range (0..%u)",
                        i, l->src, l->dst, nodes - 1);
    if (l->src == l->dst)
      return tn_err_set(err, TN_PARSE, "links[%u]: self-loop on node %u", i, l->src);
    char why[96];
    if (!topo_bandwidth_check(l->bandwidth_GBps, why, sizeof why))
      return tn_err_set(err, TN_PARSE, "links[%u]: bandwidth %s", i, why);
    if ((double)l->latency_ps > TOPO_MAX_LATENCY_NS * 1000.0)
      return tn_err_set(err, TN_PARSE, "links[%u]: latency exceeds %g ns", i,
                        TOPO_MAX_LATENCY_NS);
  }
  return TN_OK;
}

/* Builds the CSR arrays: per node, outgoing link ids in dst order (links are sorted by
 * (src,dst) so that is index order) and incoming ones in src order. */
static tn_status_t build_csr(topo_t *t, tn_err_t *err) {
  uint32_t nodes = topo_nodes(t);
  tn_status_t st;
  if ((st = tn_calloc((size_t)nodes + 1, sizeof(uint32_t), &t->out_off, err)) != TN_OK ||
      (st = tn_calloc((size_t)nodes + 1, sizeof(uint32_t), &t->in_off, err)) != TN_OK ||
      (st = tn_calloc(t->nlinks, sizeof(uint32_t), &t->out_link, err)) != TN_OK ||
      (st = tn_calloc(t->nlinks, sizeof(uint32_t), &t->in_link, err)) != TN_OK)
    return st;
  for (uint32_t i = 0; i < t->nlinks; i++) {
    t->out_off[t->links[i].src + 1]++;
    t->in_off[t->links[i].dst + 1]++;
  }
  for (uint32_t v = 0; v < nodes; v++) {
    t->out_off[v + 1] += t->out_off[v];
    t->in_off[v + 1] += t->in_off[v];
  }
  uint32_t *fill = NULL;
  if ((st = tn_calloc(nodes, sizeof(uint32_t), &fill, err)) != TN_OK) return st;
  for (uint32_t i = 0; i < t->nlinks; i++) t->out_link[t->out_off[t->links[i].src] + fill[t->links[i].src]++] = i;
  memset(fill, 0, nodes * sizeof(uint32_t));
  for (uint32_t i = 0; i < t->nlinks; i++) t->in_link[t->in_off[t->links[i].dst] + fill[t->links[i].dst]++] = i;
  free(fill);
  return TN_OK;
}

/* The one owner of the text rule for a fabric's strings: checked, copied, swapped in. */
static tn_status_t set_text(char **field, const char *what, bool one_line, const char *text,
                            tn_err_t *err) {
  size_t bad = 0;
  if (!tn_text_ok(text, !one_line, &bad))
    return tn_err_set(err, TN_INVAL, "%s must be UTF-8 text%s (byte 0x%02x at offset %zu)", what,
                      one_line ? " without control characters" : "",
                      (unsigned)(unsigned char)text[bad], bad);
  char *copy = NULL;
  tn_status_t st = tn_strdup(text, &copy, err);
  if (st != TN_OK) return st;
  free(*field);
  *field = copy;
  return TN_OK;
}

tn_status_t topo_set_name(topo_t *t, const char *text, tn_err_t *err) {
  return set_text(&t->name, "name", true, text, err);
}

tn_status_t topo_set_description(topo_t *t, const char *text, tn_err_t *err) {
  return set_text(&t->description, "description", false, text, err);
}

tn_status_t topo_create(const char *name, uint32_t npus, uint32_t switches,
                        const topo_link_t *links, uint32_t nlinks, topo_t **out,
                        tn_err_t *err) {
  *out = NULL;
  tn_status_t st = validate_links(npus, switches, links, nlinks, err);
  if (st != TN_OK) return st;
  topo_t *t = NULL;
  if ((st = tn_calloc(1, sizeof *t, &t, err)) != TN_OK) return st;
  t->npus = npus;
  t->switches = switches;
  t->nlinks = nlinks;
  if ((st = topo_set_name(t, name ? name : "unnamed", err)) != TN_OK) goto fail;
  if ((st = tn_strdup("", &t->description, err)) != TN_OK) goto fail;
  if ((st = tn_calloc(nlinks, sizeof *t->links, &t->links, err)) != TN_OK) goto fail;
  if (nlinks) memcpy(t->links, links, nlinks * sizeof *links);
  qsort(t->links, nlinks, sizeof *t->links, link_cmp);
  for (uint32_t i = 1; i < nlinks; i++) {
    if (t->links[i].src == t->links[i - 1].src && t->links[i].dst == t->links[i - 1].dst) {
      st = tn_err_set(err, TN_PARSE, "duplicate link %u -> %u", t->links[i].src,
                      t->links[i].dst);
      goto fail;
    }
  }
  if ((st = build_csr(t, err)) != TN_OK) goto fail;
  *out = t;
  return TN_OK;
fail:
  topo_free(t);
  return st;
}

void topo_free(topo_t *t) {
  if (t == NULL) return;
  free(t->name);
  free(t->description);
  free(t->links);
  free(t->out_off);
  free(t->out_link);
  free(t->in_off);
  free(t->in_link);
  free(t);
}

tn_status_t topo_clone(const topo_t *t, topo_t **out, tn_err_t *err) {
  tn_status_t st = topo_create(t->name, t->npus, t->switches, t->links, t->nlinks, out, err);
  if (st != TN_OK) return st;
  (*out)->ndims = t->ndims;
  memcpy((*out)->dims, t->dims, sizeof t->dims);
  if ((st = topo_set_description(*out, t->description, err)) != TN_OK) {
    topo_free(*out);
    *out = NULL;
  }
  return st;
}

tn_status_t topo_without_slow_links(const topo_t *t, topo_t **out, tn_err_t *err) {
  *out = NULL;
  uint32_t n = t->npus + t->switches, keep = 0;
  double *into = NULL; /* per node v and kind k of the near end: fastest link into v */
  double *outof = NULL; /* per node u: fastest link from u into an NPU */
  topo_link_t *links = NULL;
  tn_status_t st = tn_calloc(2 * (size_t)n + 1, sizeof *into, &into, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 1, sizeof *outof, &outof, err);
  if (st == TN_OK) st = tn_malloc(t->nlinks + 1u, sizeof *links, &links, err);
  if (st != TN_OK) goto out;
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const topo_link_t *a = &t->links[l];
    double *f = a->dst < t->npus ? &outof[a->src] : &into[2 * (size_t)a->dst + (a->src < t->npus)];
    if (a->bandwidth_GBps > *f) *f = a->bandwidth_GBps;
  }
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const topo_link_t *a = &t->links[l];
    double best =
        a->dst < t->npus ? outof[a->src] : into[2 * (size_t)a->dst + (a->src < t->npus)];
    if (!(a->bandwidth_GBps < best / 2)) links[keep++] = *a;
  }
  if (keep == t->nlinks) goto out; /* none slow */
  topo_t *c = NULL;
  tn_err_t e = {0};
  if ((st = topo_create(t->name, t->npus, t->switches, links, keep, &c, err)) != TN_OK) goto out;
  if ((st = topo_set_description(c, t->description, err)) != TN_OK) {
    topo_free(c);
    goto out;
  }
  if (topo_check_connected(c, &e) != TN_OK) { /* the slow links are needed: none */
    topo_free(c);
    st = e.status == TN_NOMEM ? tn_err_set(err, TN_NOMEM, "%s", e.msg) : TN_OK;
    goto out;
  }
  *out = c;
out:
  free(into);
  free(outof);
  free(links);
  return st;
}

bool topo_equal(const topo_t *a, const topo_t *b) {
  if (a->npus != b->npus || a->switches != b->switches || a->nlinks != b->nlinks) return false;
  if (strcmp(a->name, b->name) != 0) return false;
  for (uint32_t i = 0; i < a->nlinks; i++) {
    const topo_link_t *x = &a->links[i], *y = &b->links[i];
    if (x->src != y->src || x->dst != y->dst || x->latency_ps != y->latency_ps ||
        x->bandwidth_GBps != y->bandwidth_GBps)
      return false;
  }
  return true;
}

uint32_t topo_find_link(const topo_t *t, uint32_t src, uint32_t dst) {
  if (src >= topo_nodes(t)) return TOPO_NO_LINK;
  uint32_t lo = t->out_off[src], hi = t->out_off[src + 1];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    uint32_t d = t->links[t->out_link[mid]].dst;
    if (d == dst) return t->out_link[mid];
    if (d < dst) lo = mid + 1;
    else hi = mid;
  }
  return TOPO_NO_LINK;
}

double topo_ingress_GBps(const topo_t *t, uint32_t node) {
  double s = 0.0;
  for (uint32_t i = t->in_off[node]; i < t->in_off[node + 1]; i++)
    s += t->links[t->in_link[i]].bandwidth_GBps;
  return s;
}

double topo_egress_GBps(const topo_t *t, uint32_t node) {
  double s = 0.0;
  for (uint32_t i = t->out_off[node]; i < t->out_off[node + 1]; i++)
    s += t->links[t->out_link[i]].bandwidth_GBps;
  return s;
}

tn_status_t topo_set_link(topo_t *t, uint32_t src, uint32_t dst, double bandwidth_GBps,
                          uint64_t latency_ps, tn_err_t *err) {
  uint32_t l = topo_find_link(t, src, dst);
  if (l == TOPO_NO_LINK)
    return tn_err_set(err, TN_INVAL, "no link %u -> %u in fabric '%s'", src, dst, t->name);
  char why[96];
  if (!topo_bandwidth_check(bandwidth_GBps, why, sizeof why))
    return tn_err_set(err, TN_INVAL, "link %u -> %u: bandwidth %s", src, dst, why);
  if ((double)latency_ps > TOPO_MAX_LATENCY_NS * 1000.0)
    return tn_err_set(err, TN_INVAL, "link %u -> %u: latency exceeds %g ns", src, dst,
                      TOPO_MAX_LATENCY_NS);
  t->links[l].bandwidth_GBps = bandwidth_GBps;
  t->links[l].latency_ps = latency_ps;
  return TN_OK;
}
