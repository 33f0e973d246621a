/* topo/astra.c — a fabric as ASTRA-sim's analytical network YAML: the building blocks
 * Ring, FullyConnected and Switch, one per dimension (npus_count, bandwidth in GB/s as
 * both read it, latency in ns per link). Only a generated fabric whose every link still has
 * its dimension's bandwidth and latency has that form. */
#include <math.h>
#include <string.h>

#include "topo/topo.h"

/* ASTRA-sim's name for a dimension kind, or NULL (a mesh line has none). */
static const char *astra_kind(const topo_dim_t *d) {
  switch (d->kind) {
  case TOPO_DIM_RING: return d->unidirectional ? NULL : "Ring";
  case TOPO_DIM_FC: return "FullyConnected";
  case TOPO_DIM_SWITCH: return "Switch";
  case TOPO_DIM_LINE: return NULL;
  }
  return NULL;
}

tn_status_t topo_astra_yaml(const topo_t *t, bool congestion_aware, tn_sb_t *out, tn_err_t *err) {
  if (t->ndims == 0)
    return tn_err_set(err, TN_INVAL,
                      "%s: ASTRA-sim's analytical backends build fabrics from Ring, "
                      "FullyConnected and Switch dimensions; a fabric given link by link has no "
                      "such form (use a generated one, e.g. ring-8, switch-16, fc-8)",
                      t->name);
  if (congestion_aware && t->ndims != 1)
    return tn_err_set(err, TN_INVAL,
                      "%s: ASTRA-sim's congestion-aware backend runs 1-D fabrics only (Ring, "
                      "FullyConnected, Switch), not %u dimensions; the congestion-unaware one "
                      "takes several but models no contention",
                      t->name, t->ndims);
  for (uint32_t d = 0; d < t->ndims; d++) {
    const topo_dim_t *dim = &t->dims[d];
    if (astra_kind(dim) == NULL)
      return tn_err_set(err, TN_INVAL,
                        "%s: dimension %u is a %s%s, which ASTRA-sim's analytical backends do "
                        "not have (Ring is bidirectional; FullyConnected and Switch)",
                        t->name, d, dim->unidirectional ? "unidirectional " : "",
                        topo_dim_kind_name(dim->kind));
  }
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const topo_link_t *k = &t->links[l];
    const topo_dim_t *dim = &t->dims[k->dim];
    if (k->bandwidth_GBps != dim->bandwidth_GBps ||
        k->latency_ps != (uint64_t)llround(dim->latency_ns * 1000.0))
      return tn_err_set(err, TN_INVAL,
                        "%s: link %u (%u -> %u) differs from its dimension's bandwidth and "
                        "latency; ASTRA-sim's YAML gives one pair per dimension",
                        t->name, l, k->src, k->dst);
  }
  tn_sb_printf(out, "# %s, written by tenet for ASTRA-sim's congestion-%s analytical backend\n",
               t->name, congestion_aware ? "aware" : "unaware");
  const char *keys[] = {"topology", "npus_count", "bandwidth", "latency"};
  for (int key = 0; key < 4; key++) {
    tn_sb_printf(out, "%s: [ ", keys[key]);
    for (uint32_t d = 0; d < t->ndims; d++) {
      const topo_dim_t *dim = &t->dims[d];
      const char *sep = d + 1 < t->ndims ? ", " : " ";
      if (key == 0) tn_sb_printf(out, "%s%s", astra_kind(dim), sep);
      if (key == 1) tn_sb_printf(out, "%u%s", dim->size, sep);
      if (key == 2) tn_sb_printf(out, "%.17g%s", dim->bandwidth_GBps, sep);
      if (key == 3) tn_sb_printf(out, "%.17g%s", dim->latency_ns, sep);
    }
    tn_sb_printf(out, "]%s\n", key == 2 ? "  # GB/s" : key == 3 ? "  # ns" : "");
  }
  return out->st;
}
