/* cli/run.c — one (fabric, collective, size, algorithm) run end to end: synthesize, write
 * the Chakra set when asked, simulate, and derive the reported figures. Shared by compare,
 * batch and demo. */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "sim/sim.h"

static void fill_metrics(cli_result_t *r, uint64_t time_ps) {
  r->time_ps = time_ps;
  r->algbw_GBps = tn_gbps(r->size_bytes, time_ps);
  r->busbw_GBps = r->algbw_GBps * tn_coll_busbw_factor(r->coll, r->npus);
  r->ratio_to_bound = r->lower_bound_ps > 0 ? (double)time_ps / (double)r->lower_bound_ps : 0.0;
  r->speedup_vs_ring = -1.0;
}

tn_status_t cli_synth_named(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, const char *algo,
                            uint64_t seed, uint32_t seeds, double time_limit_s, synth_result_t *out,
                            tn_err_t *err) {
  memset(out, 0, sizeof *out);
  synth_opts_t so = {
      .method = SYNTH_AUTO, .seed = seed, .seeds = seeds, .time_limit_s = time_limit_s};
  tn_status_t st = algo ? synth_method_parse(algo, "algorithm", &so.method, err) : TN_OK;
  return st == TN_OK ? synth_run(t, coll, size_bytes, &so, out, err) : st;
}

tn_status_t cli_run_one(const topo_t *t, const char *topo_name, tn_coll_t coll, uint64_t size_bytes,
                        const char *algo, uint64_t seed, uint32_t seeds, double time_limit_s,
                        const char *chakra_prefix, cli_result_t *r, tn_err_t *err) {
  memset(r, 0, sizeof *r);
  snprintf(r->topology, sizeof r->topology, "%s", topo_name);
  snprintf(r->algorithm, sizeof r->algorithm, "%s", algo);
  r->npus = t->npus;
  r->coll = coll;
  r->size_bytes = size_bytes;
  r->speedup_vs_ring = -1.0;
  tn_err_t e = {0};
  synth_result_t out = {0};
  sim_opts_t sopt = {0};
  sim_result_t res = {0};
  tn_status_t st = cli_synth_named(t, coll, size_bytes, algo, seed, seeds, time_limit_s, &out, &e);
  if (st == TN_OK && out.algo == NULL)
    st = tn_err_set(&e, TN_INTERNAL, "synthesis returned no algorithm");
  if (st == TN_OK) st = topo_lower_bound_ps(t, coll, size_bytes, &r->lower_bound_ps, &e);
  if (st == TN_OK && chakra_prefix != NULL) st = emit_chakra_write(out.algo, chakra_prefix, &e);
  if (st == TN_OK && out.time_ps != 0)
    res.time_ps = out.time_ps; /* already simulated by the portfolio, or exact */
  else if (st == TN_OK)
    st = sim_run(t, out.algo, &sopt, &res, &e);
  if (st == TN_OK) {
    r->ok = true;
    r->synth_ms = out.synth_ms;
    r->seed = out.seed;
    r->seeds_tried = out.seeds_tried;
    snprintf(r->method, sizeof r->method, "%s", synth_method_name(out.method));
    snprintf(r->variant, sizeof r->variant, "%s", out.variant);
    fill_metrics(r, res.time_ps);
  } else {
    r->status = st;
    tn_fit_line(r->error, sizeof r->error, e.msg[0] ? e.msg : tn_status_str(st));
    tn_err_set(err, st, "%s", r->error);
  }
  sim_result_free(&res);
  synth_result_free(&out);
  return st;
}

/* Splits "mesh3d-4x4x4" into kind "mesh" and dims "4x4x4"; false when arg does not start
 * with a known kind followed by '-'. */
static bool split_gen_spec(const char *arg, char *kind, size_t klen, const char **dims) {
  static const char *const kinds[] = {"ring",      "fc",     "switch", "mesh",    "torus",
                                      "hypercube", "mesh2d", "mesh3d", "torus2d", "torus3d"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    size_t n = strlen(kinds[i]);
    if (strncmp(arg, kinds[i], n) == 0 && arg[n] == '-' && arg[n + 1] != '\0') {
      /* mesh2d/mesh3d and torus2d/torus3d name the same generators as mesh and torus. */
      int keep = strncmp(kinds[i], "mesh", 4) == 0    ? 4
                 : strncmp(kinds[i], "torus", 5) == 0 ? 5
                                                      : (int)n;
      snprintf(kind, klen, "%.*s", keep, kinds[i]);
      *dims = arg + n + 1;
      return true;
    }
  }
  return false;
}

void cli_topo_label(const char *arg, char *label, size_t len) {
  const char *base = strrchr(arg, '/');
  base = base ? base + 1 : arg;
  size_t n = strlen(base);
  static const char *const exts[] = {".json", ".yml", ".yaml"};
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    size_t e = strlen(exts[i]);
    if (n > e && strcmp(base + n - e, exts[i]) == 0) {
      n -= e;
      break;
    }
  }
  /* Labels go into JSON and are read back to match results to cases: make them valid
   * UTF-8 here (U+FFFD for a stray byte), and cut them at a character boundary. */
  char *text = NULL;
  if (len == 0) return;
  if (tn_utf8_repair(base, n, &text, &n, NULL) != TN_OK) {
    snprintf(label, len, "%.*s", (int)n, base);
    return;
  }
  if (n >= len) {
    n = len - 1;
    while (n > 0 && ((unsigned char)text[n] & 0xC0u) == 0x80u)
      n--;
  }
  memcpy(label, text, n);
  label[n] = '\0';
  free(text);
}

/* Where TOPO comes from: a file (*path, caller frees) or, when no file or shipped name
 * matches, a generator spec (kind, *dims; *path NULL). */
static tn_status_t topo_source(const char *arg, char **path, char kind[16], const char **dims,
                               tn_err_t *err) {
  tn_err_t e = {0};
  tn_status_t st = topo_resolve(arg, cli_topology_dir(), path, &e);
  if (st == TN_OK) return TN_OK;
  if (strchr(arg, '/') == NULL && split_gen_spec(arg, kind, 16, dims)) return TN_OK;
  return tn_err_set(err, st, "%s", e.msg);
}

tn_status_t cli_load_topo_spec(const char *arg, topo_t **out, tn_err_t *err) {
  *out = NULL;
  char *path = NULL, kind[16];
  const char *dims = NULL;
  tn_status_t st = topo_source(arg, &path, kind, &dims, err);
  if (st != TN_OK) return st;
  if (path == NULL)
    return topo_gen_kind(kind, dims, CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS, out, err);
  st = topo_load(path, out, err);
  free(path);
  return st;
}

tn_status_t cli_topo_digest(const char *arg, uint64_t *digest, tn_err_t *err) {
  char *path = NULL, kind[16];
  const char *dims = NULL;
  *digest = TN_FNV1A64_INIT;
  tn_status_t st = topo_source(arg, &path, kind, &dims, err);
  if (st != TN_OK) return st;
  if (path == NULL) {
    /* A generated fabric is its kind, dimensions and the figures it is generated at. */
    char spec[256];
    int n = snprintf(spec, sizeof spec, "generated %s-%s %.17g GB/s %.17g ns", kind, dims,
                     CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS);
    *digest = tn_fnv1a64(spec, n > 0 ? (size_t)n : 0, *digest);
    return TN_OK;
  }
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    st = tn_err_set(err, TN_IO, "%s: %s", path, strerror(errno));
    free(path);
    return st;
  }
  unsigned char buf[1 << 16];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0)
    *digest = tn_fnv1a64(buf, got, *digest);
  if (ferror(f)) st = tn_err_set(err, TN_IO, "%s: read error", path);
  fclose(f);
  free(path);
  return st;
}

tn_status_t cli_topo_spec_check(const char *arg, tn_err_t *err) {
  char *path = NULL, kind[16];
  const char *dims = NULL;
  tn_status_t st = topo_source(arg, &path, kind, &dims, err);
  if (st != TN_OK || path != NULL) {
    free(path);
    return st;
  }
  topo_t *t = NULL; /* a spec is checked by generating it */
  st = topo_gen_kind(kind, dims, CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS, &t, err);
  topo_free(t);
  return st;
}
