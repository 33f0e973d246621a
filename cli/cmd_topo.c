/* cli/cmd_topo.c — `tenet topo gen|info|list|draw`: generate fabric files, summarise a
 * fabric (igraph analysis), list the shipped fabrics and draw one with graphviz. The user's
 * entry to topo/, the first stage of the pipeline. */
#include "cli/cli.h"

#include "cli/gv_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BW_GBPS 50.0
#define DEFAULT_LAT_NS 500.0

static const char topo_help[] =
    "usage: tenet topo SUBCOMMAND ...\n\n"
    "  gen KIND DIMS -o FILE   write a generated fabric as a topology JSON file\n"
    "  info TOPO [--json]      summarise a fabric (connectivity, diameter, degrees, bandwidth)\n"
    "  list [--json]           the shipped fabrics with their descriptions\n"
    "  draw TOPO -o FILE       draw a fabric as SVG or PNG (graphviz)\n\n"
    "TOPO is a topology file (.json, or an ASTRA-sim network .yml/.yaml) or a shipped name\n"
    "such as mesh-8x8. 'tenet topo SUBCOMMAND --help' for details.\n";

static const char gen_help[] =
    "usage: tenet topo gen KIND DIMS [--bandwidth GBPS] [--latency NS] [--explicit]\n"
    "                      [--unidirectional] [--name NAME] [--description TEXT]\n"
    "                      [--astra-yaml] -o FILE\n\n"
    "Writes a generated fabric as a topology JSON file (docs/architecture.md §4), or with\n"
    "--astra-yaml as ASTRA-sim's analytical network YAML.\n"
    "  KIND   ring, fc (fully connected), switch (star), mesh, torus or hypercube\n"
    "  DIMS   8 for ring, fc and switch; 8x8 or 4x4x4 for mesh and torus; the NPU count\n"
    "         (a power of two) for hypercube\n"
    "  --bandwidth GBPS   every link's bandwidth per direction, GB/s = 2^30 B/s (default 50)\n"
    "  --latency NS       every link's latency in ns (default 500)\n"
    "  --explicit         write every link instead of the compact generator form\n"
    "  --unidirectional   ring only: links i -> i+1 only\n"
    "  --name NAME        the fabric's name (default KIND-DIMS)\n"
    "  --description TEXT what the fabric models (default: how it was generated)\n"
    "  --astra-yaml       write ASTRA-sim's network YAML instead (topology, npus_count,\n"
    "                     bandwidth, latency per dimension; ring, fc, switch and torus only:\n"
    "                     ASTRA-sim has no mesh line; its congestion-aware backend runs\n"
    "                     1-D fabrics only)\n"
    "  -o, --output FILE  the file to write (written completely or not at all)\n";

static const char info_help[] =
    "usage: tenet topo info TOPO [--json]\n\n"
    "Summarises a fabric: NPUs, switches, directed links, whether every NPU reaches every\n"
    "NPU, the diameter in hops over NPU pairs (hops through switches count), in/out degree\n"
    "and ingress/egress bandwidth (GB/s) over the NPUs, and the lower bounds of the three\n"
    "collectives (docs/bounds.md): the time no schedule of 1 GiB beats, the busbw ceiling\n"
    "it implies and why it holds.\n"
    "  --json   print one JSON object with the keys name, description, npus, switches,\n"
    "           links, connected, diameter (null when disconnected), min_in_degree,\n"
    "           max_in_degree, min_out_degree, max_out_degree, min_ingress_GBps,\n"
    "           max_ingress_GBps, min_egress_GBps, max_egress_GBps, latency_bound_ns,\n"
    "           bounds_tight and bounds: {allgather|reducescatter|allreduce:\n"
    "           {time_1GiB_ns, busbw_ceiling_GBps, ps_per_byte, why}} (null when\n"
    "           disconnected)\n";

static const char list_help[] =
    "usage: tenet topo list [--json]\n\n"
    "Lists the shipped fabrics (the names that -t accepts) with their NPU counts and\n"
    "descriptions. The folder is TENET_TOPOLOGIES when set.\n"
    "  --json   print {\"topologies\": [{\"name\", \"npus\", \"description\"}, ...]}\n";

static const char draw_help[] =
    "usage: tenet topo draw TOPO -o FILE.svg|FILE.png [--layout auto|neato|dot]\n\n"
    "Draws a fabric with graphviz: NPUs as circles, switches as boxes, each link labelled\n"
    "with its bandwidth in GB/s; a pair of links with equal figures is drawn once without\n"
    "arrows. The format follows the file's extension. With dot, a fabric with switches is\n"
    "drawn in tiers: NPUs in the bottom row, each switch above the tier it connects down\n"
    "to (as many hops from the NPUs), and its links coloured by bandwidth, the colours\n"
    "named in the title, instead of labelled one by one (at most 6 bandwidths).\n"
    "  --layout auto|neato|dot   graphviz layout engine (default auto: dot in tiers for\n"
    "                       a fabric with switches, neato for a direct-connect one)\n"
    "  -o, --output FILE    the picture to write (written completely or not at all)\n\n"
    "A fabric too large to lay out in a few seconds is refused: neato takes up to 1024\n"
    "nodes (NPUs and switches) and 10240 directed links, dot up to 1024 nodes, 2048 links\n"
    "and 16 links per node.\n";

/* ---- gen ------------------------------------------------------------------ */

/* t as ASTRA-sim's network YAML at out (the congestion-aware form when t has one
 * dimension, else the unaware one). */
static tn_status_t write_astra_yaml(const topo_t *t, const char *out, tn_err_t *err) {
  tn_sb_t b;
  tn_sb_init(&b, err);
  tn_status_t st = topo_astra_yaml(t, t->ndims == 1, &b, err);
  tn_outfile_t o = {0};
  if (st == TN_OK && (st = tn_outfile_open(&o, out, err)) == TN_OK) {
    if (fwrite(b.v.data, 1, b.v.len, o.f) != b.v.len) {
      tn_outfile_abort(&o);
      st = tn_err_set(err, TN_IO, "%s: write failed", out);
    } else {
      st = tn_outfile_commit(&o, err);
    }
  }
  tn_vec_free(&b.v);
  return st;
}

static int topo_gen_cmd(int argc, char **argv) {
  const char *bw_s = NULL, *lat_s = NULL, *out = NULL, *name = NULL, *desc = NULL;
  bool help = false, explicit_links = false, unidir = false, astra = false;
  const cli_opt_t opts[] = {{"bandwidth", 0, &bw_s, NULL},
                            {"latency", 0, &lat_s, NULL},
                            {"output", 'o', &out, NULL},
                            {"out", 0, &out, NULL},
                            {"name", 0, &name, NULL},
                            {"description", 0, &desc, NULL},
                            {"explicit", 0, NULL, &explicit_links},
                            {"unidirectional", 0, NULL, &unidir},
                            {"astra-yaml", 0, NULL, &astra},
                            {"help", 'h', NULL, &help}};
  const char *pos[2];
  size_t npos = 0;
  tn_err_t err = {0};
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof *opts, pos, 2, &npos, &err) != TN_OK)
    return cli_usage("topo gen", "%s", err.msg);
  if (help) {
    fputs(gen_help, stdout);
    return 0;
  }
  if (npos < 2) return cli_usage("topo gen", "needs KIND and DIMS (e.g. 'mesh 8x8')");
  if (out == NULL) return cli_usage("topo gen", "needs -o FILE");
  double bw = DEFAULT_BW_GBPS, lat = DEFAULT_LAT_NS;
  char why[96];
  if (bw_s && tn_parse_double(bw_s, -HUGE_VAL, HUGE_VAL, "--bandwidth", &bw, &err) != TN_OK)
    return cli_usage("topo gen", "%s", err.msg);
  if (bw_s && !topo_bandwidth_check(bw, why, sizeof why))
    return cli_usage("topo gen", "--bandwidth %s", why);
  if (lat_s && tn_parse_double(lat_s, 0, TOPO_MAX_LATENCY_NS, "--latency", &lat, &err) != TN_OK)
    return cli_usage("topo gen", "%s", err.msg);
  if (unidir && strcmp(pos[0], "ring") != 0)
    return cli_usage("topo gen", "--unidirectional applies to a ring only, not a %s", pos[0]);
  topo_t *t = NULL, *u = NULL;
  tn_status_t st = topo_gen_kind(pos[0], pos[1], bw, lat, &t, &err);
  if (st == TN_OK && unidir) {
    topo_dim_t dims[TOPO_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    dims[0].unidirectional = true;
    if ((st = topo_gen(t->name, dims, t->ndims, &u, &err)) == TN_OK) {
      topo_free(t);
      t = u;
    }
  }
  if (st == TN_OK && name) st = topo_set_name(t, name, &err);
  char auto_desc[256];
  if (st == TN_OK && desc == NULL) {
    snprintf(auto_desc, sizeof auto_desc,
             "%s%s %s made by 'tenet topo gen' (%g GB/s and %g ns per link and direction)",
             unidir ? "unidirectional " : "", pos[0], pos[1], bw, lat);
    desc = auto_desc;
  }
  if (st == TN_OK) st = topo_set_description(t, desc, &err);
  if (st == TN_OK && astra && explicit_links)
    st = tn_err_set(&err, TN_INVAL, "--astra-yaml writes dimensions, not links: drop --explicit");
  if (st == TN_OK && astra)
    st = write_astra_yaml(t, out, &err);
  else if (st == TN_OK)
    st = topo_save(t, out, explicit_links, &err);
  if (st == TN_OK)
    printf("wrote %s: %u NPUs, %u switches, %u links\n", out, t->npus, t->switches, t->nlinks);
  topo_free(t);
  if (st != TN_OK) {
    /* A bad KIND or DIMS is a usage error (exit 1) like any other bad argument. */
    if (err.status == TN_LIMIT) err.status = TN_INVAL;
    return cli_report("topo gen", &err);
  }
  return 0;
}

/* ---- info ----------------------------------------------------------------- */

/* The 1 GiB bounds of every collective, in ps (into gib_ps), when b is connected. */
static tn_status_t bounds_1gib(const topo_bounds_t *b, uint64_t gib_ps[TN_NCOLLS], tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (int c = 0; c < TN_NCOLLS && st == TN_OK; c++)
    st = b->connected ? topo_bound_ps(b, (tn_coll_t)c, 1ull << 30, &gib_ps[c], err) : TN_OK;
  return st;
}

/* The 1 GiB bound of coll in ns and the busbw it allows (nccl-tests' factor). */
static double bound_1gib_ns(const topo_bounds_t *b, const uint64_t *gib_ps, tn_coll_t c,
                            double *busbw) {
  uint64_t ps = gib_ps[c];
  *busbw = tn_gbps(1ull << 30, ps) * tn_coll_busbw_factor(c, b->npus);
  return (double)ps / 1e3;
}

static void print_bounds(const topo_bounds_t *b, const uint64_t *gib_ps) {
  printf("%-12s 1 GiB no faster than (busbw ceiling; docs/bounds.md)%s\n", "bounds",
         b->tight ? "" : ", per-NPU cuts only above the size cap: not tight");
  for (int c = 0; c < TN_NCOLLS; c++) {
    char tm[32], why[200];
    double busbw = 0.0, ns = bound_1gib_ns(b, gib_ps, (tn_coll_t)c, &busbw);
    cli_fmt_time_ns(ns, tm, sizeof tm);
    printf("  %-13s %10s  %8.2f GB/s  %s\n", tn_coll_name((tn_coll_t)c), tm, busbw,
           topo_bound_explain(b, (tn_coll_t)c, why, sizeof why));
  }
  char lat[32];
  cli_fmt_time_ns((double)b->latency_ps / 1e3, lat, sizeof lat);
  printf("  %-13s %10s  %s\n", "latency", lat,
         b->tight ? "the longest shortest-latency path between two NPUs"
                  : "hops from NPU 0 to the farthest NPU x the smallest link latency (above the "
                    "size cap: not tight)");
}

static void print_info(const topo_t *t, const topo_info_t *in, const topo_bounds_t *b,
                       const uint64_t *gib_ps) {
  printf("%-12s %s\n", "name", t->name);
  if (t->description[0]) printf("%-12s %s\n", "description", t->description);
  printf("%-12s ", "shape");
  if (t->ndims == 0) printf("explicit links (shortest-path routes, lowest id first)\n");
  for (uint32_t d = 0; d < t->ndims; d++) {
    const topo_dim_t *dm = &t->dims[d];
    printf("%s%s%s %u (%g GB/s, %g ns)", d ? " x " : "", dm->unidirectional ? "uni-" : "",
           topo_dim_kind_name(dm->kind), dm->size, dm->bandwidth_GBps, dm->latency_ns);
  }
  if (t->ndims) printf("\n");
  printf("%-12s %u\n", "NPUs", in->npus);
  printf("%-12s %u\n", "switches", in->switches);
  printf("%-12s %u directed\n", "links", in->links);
  printf("%-12s %s\n", "connected", in->connected ? "yes" : "no (some NPU cannot reach another)");
  if (in->connected)
    printf("%-12s %s%u hops over NPU pairs%s\n", "diameter",
           in->diameter_exact ? "" : ">= ", in->diameter,
           in->diameter_exact ? "" : " (two BFS sweeps: too big for all pairs)");
  else
    printf("%-12s - (disconnected)\n", "diameter");
  printf("%-12s %u .. %u (over NPUs)\n", "in-degree", in->min_in_degree, in->max_in_degree);
  printf("%-12s %u .. %u\n", "out-degree", in->min_out_degree, in->max_out_degree);
  printf("%-12s %g .. %g GB/s per NPU\n", "ingress", in->min_ingress_GBps, in->max_ingress_GBps);
  printf("%-12s %g .. %g GB/s per NPU\n", "egress", in->min_egress_GBps, in->max_egress_GBps);
  if (in->connected && t->npus > 1) print_bounds(b, gib_ps);
}

static void add_bounds_json(cJSON *o, const topo_bounds_t *b, const uint64_t *gib_ps,
                            bool connected) {
  if (!connected) {
    cJSON_AddNullToObject(o, "latency_bound_ns");
    cJSON_AddNullToObject(o, "bounds");
    return;
  }
  cli_json_add_ns(o, "latency_bound_ns", b->latency_ps);
  cJSON_AddBoolToObject(o, "bounds_tight", b->tight);
  cJSON *all = cJSON_AddObjectToObject(o, "bounds");
  for (int c = 0; all && c < TN_NCOLLS; c++) {
    cJSON *x = cJSON_AddObjectToObject(all, tn_coll_name((tn_coll_t)c));
    char why[200];
    double busbw = 0.0, ns = bound_1gib_ns(b, gib_ps, (tn_coll_t)c, &busbw);
    if (x == NULL) continue;
    cJSON_AddNumberToObject(x, "time_1GiB_ns", ns);
    cJSON_AddNumberToObject(x, "busbw_ceiling_GBps", busbw);
    cJSON_AddNumberToObject(x, "ps_per_byte", topo_bound_ps_per_byte(b, (tn_coll_t)c));
    cJSON_AddStringToObject(x, "why", topo_bound_explain(b, (tn_coll_t)c, why, sizeof why));
  }
}

static int print_info_json(const topo_t *t, const topo_info_t *in, const topo_bounds_t *b,
                           const uint64_t *gib_ps) {
  cJSON *o = cJSON_CreateObject();
  if (o == NULL) return 3;
  cJSON_AddStringToObject(o, "name", t->name);
  cJSON_AddStringToObject(o, "description", t->description);
  cJSON_AddNumberToObject(o, "npus", in->npus);
  cJSON_AddNumberToObject(o, "switches", in->switches);
  cJSON_AddNumberToObject(o, "links", in->links);
  cJSON_AddBoolToObject(o, "connected", in->connected);
  if (in->connected)
    cJSON_AddNumberToObject(o, "diameter", in->diameter);
  else
    cJSON_AddNullToObject(o, "diameter");
  cJSON_AddBoolToObject(o, "diameter_exact", in->connected && in->diameter_exact);
  cJSON_AddNumberToObject(o, "min_in_degree", in->min_in_degree);
  cJSON_AddNumberToObject(o, "max_in_degree", in->max_in_degree);
  cJSON_AddNumberToObject(o, "min_out_degree", in->min_out_degree);
  cJSON_AddNumberToObject(o, "max_out_degree", in->max_out_degree);
  cJSON_AddNumberToObject(o, "min_ingress_GBps", in->min_ingress_GBps);
  cJSON_AddNumberToObject(o, "max_ingress_GBps", in->max_ingress_GBps);
  cJSON_AddNumberToObject(o, "min_egress_GBps", in->min_egress_GBps);
  cJSON_AddNumberToObject(o, "max_egress_GBps", in->max_egress_GBps);
  add_bounds_json(o, b, gib_ps, in->connected && t->npus > 1);
  char *s = cli_json_text(o, true);
  cJSON_Delete(o);
  if (s == NULL) return 3;
  printf("%s\n", s);
  free(s);
  return 0;
}

static int topo_info_cmd(int argc, char **argv) {
  bool help = false, json = false;
  const cli_opt_t opts[] = {{"json", 0, NULL, &json}, {"help", 'h', NULL, &help}};
  const char *pos[1];
  size_t npos = 0;
  tn_err_t err = {0};
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, &npos, &err) != TN_OK)
    return cli_usage("topo info", "%s", err.msg);
  if (help) {
    fputs(info_help, stdout);
    return 0;
  }
  if (npos < 1) return cli_usage("topo info", "needs a TOPO (a file, a shipped name or KIND-DIMS)");
  topo_t *t = NULL;
  topo_info_t in;
  topo_bounds_t b;
  uint64_t gib_ps[TN_NCOLLS] = {0};
  if (cli_load_topo(pos[0], &t, &err) != TN_OK || topo_analyze(t, &in, &err) != TN_OK ||
      topo_bounds_compute(t, &b, &err) != TN_OK || bounds_1gib(&b, gib_ps, &err) != TN_OK) {
    topo_free(t);
    return cli_report("topo info", &err);
  }
  int rc = 0;
  if (json)
    rc = print_info_json(t, &in, &b, gib_ps);
  else
    print_info(t, &in, &b, gib_ps);
  topo_free(t);
  return rc;
}

/* ---- list ------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

tn_status_t cli_shipped_names(const char *dir, char ***out, size_t *n, tn_err_t *err) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (d == NULL) return tn_err_set(err, TN_IO, "%s: cannot open the topologies folder", dir);
  tn_vec_t v;
  tn_vec_init(&v, sizeof(char *));
  tn_status_t st = TN_OK;
  struct dirent *e;
  while (st == TN_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.') continue;
    char *name = NULL;
    if ((st = tn_strdup(e->d_name, &name, err)) != TN_OK) break;
    name[len - 5] = '\0';
    if ((st = tn_vec_push(&v, &name, err)) != TN_OK) free(name);
  }
  closedir(d);
  char **names = v.data;
  if (st != TN_OK) {
    for (size_t i = 0; i < v.len; i++)
      free(names[i]);
    tn_vec_free(&v);
    return st;
  }
  if (v.len) qsort(names, v.len, sizeof *names, cmp_str);
  *out = names;
  *n = v.len;
  return TN_OK;
}

static int topo_list_cmd(int argc, char **argv) {
  bool help = false, json = false;
  const cli_opt_t opts[] = {{"json", 0, NULL, &json}, {"help", 'h', NULL, &help}};
  const char *pos[1];
  size_t npos = 0;
  tn_err_t err = {0};
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &npos, &err) != TN_OK)
    return cli_usage("topo list", "%s", err.msg);
  if (help) {
    fputs(list_help, stdout);
    return 0;
  }
  const char *dir = cli_topology_dir();
  char **names = NULL;
  size_t n = 0;
  if (cli_shipped_names(dir, &names, &n, &err) != TN_OK) return cli_report("topo list", &err);
  /* Load every file first: a broken shipped file is an error, reported before output. */
  topo_t **ts = NULL;
  tn_status_t st = tn_calloc(n ? n : 1, sizeof *ts, &ts, &err);
  size_t width = 4;
  for (size_t i = 0; st == TN_OK && i < n; i++) {
    size_t len = strlen(dir) + strlen(names[i]) + 7;
    char *path = NULL;
    if ((st = tn_calloc(len, 1, &path, &err)) != TN_OK) break;
    snprintf(path, len, "%s/%s.json", dir, names[i]);
    st = topo_load(path, &ts[i], &err);
    free(path);
    if (strlen(names[i]) > width) width = strlen(names[i]);
  }
  int rc = 0;
  if (st != TN_OK) {
    rc = cli_report("topo list", &err);
  } else if (json) {
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "topologies");
    for (size_t i = 0; i < n && arr; i++) {
      cJSON *r = cJSON_CreateObject();
      cJSON_AddStringToObject(r, "name", names[i]);
      cJSON_AddNumberToObject(r, "npus", ts[i]->npus);
      cJSON_AddNumberToObject(r, "switches", ts[i]->switches);
      cJSON_AddStringToObject(r, "description", ts[i]->description);
      cJSON_AddItemToArray(arr, r);
    }
    char *s = cli_json_text(o, true);
    if (s)
      printf("%s\n", s);
    else
      rc = 3;
    free(s);
    cJSON_Delete(o);
  } else {
    printf("%-*s %5s  %s\n", (int)width, "name", "NPUs", "description");
    for (size_t i = 0; i < n; i++)
      printf("%-*s %5u  %s\n", (int)width, names[i], ts[i]->npus, ts[i]->description);
  }
  for (size_t i = 0; i < n; i++) {
    if (ts) topo_free(ts[i]);
    free(names[i]);
  }
  free(ts);
  free(names);
  return rc;
}

/* ---- draw ------------------------------------------------------------------- */

/* graphviz takes non-const strings: copy the attribute name and value. */
static void gv_set(void *obj, const char *key, const char *val) {
  char k[32], v[128], none[1] = "";
  snprintf(k, sizeof k, "%s", key);
  snprintf(v, sizeof v, "%s", val);
  agsafeset(obj, k, v, none);
}

static Agnode_t *gv_node(Agraph_t *g, const topo_t *t, uint32_t id) {
  char name[32];
  snprintf(name, sizeof name, "n%u", id);
  Agnode_t *n = agnode(g, name, 1);
  if (n == NULL) return NULL;
  if (id < t->npus) {
    snprintf(name, sizeof name, "%u", id);
    gv_set(n, "shape", "circle");
  } else {
    snprintf(name, sizeof name, "S%u", id - t->npus);
    gv_set(n, "shape", "box");
    gv_set(n, "style", "filled");
    gv_set(n, "fillcolor", "lightgrey");
  }
  gv_set(n, "label", name);
  gv_set(n, "fontsize", "10");
  gv_set(n, "fixedsize", "true");
  gv_set(n, "width", id < t->npus ? "0.4" : "0.5");
  gv_set(n, "height", "0.4");
  return n;
}

/* Tiers of a switch fabric for dot: NPUs 0; switches by their hops from the nearest NPU,
 * and among switches as many hops away, those with faster links lower (a server's
 * NVSwitch below the rail and spine switches that join servers); tier[v] for every node,
 * *ntiers the count. */
static tn_status_t tiers_of(const topo_t *t, uint32_t *tier, uint32_t *ntiers, tn_err_t *err) {
  uint32_t n = topo_nodes(t), *queue = NULL, head = 0, tail = 0;
  tn_status_t st = tn_calloc(n + 1, sizeof *queue, &queue, err);
  if (st != TN_OK) return st;
  *ntiers = 1;
  for (uint32_t v = 0; v < n; v++) {
    tier[v] = v < t->npus ? 0 : UINT32_MAX;
    if (v < t->npus) queue[tail++] = v;
  }
  while (head < tail) {
    uint32_t v = queue[head++];
    for (uint32_t e = t->out_off[v]; e < t->out_off[v + 1]; e++) {
      uint32_t w = t->links[t->out_link[e]].dst;
      if (tier[w] != UINT32_MAX) continue;
      tier[w] = tier[v] + 1;
      if (tier[w] + 1 > *ntiers) *ntiers = tier[w] + 1;
      queue[tail++] = w;
    }
  }
  for (uint32_t v = 0; v < n; v++) /* a switch no NPU reaches: on top */
    if (tier[v] == UINT32_MAX) tier[v] = *ntiers;
  /* Split each hop count by the switches' fastest link: keys (hops, -bandwidth) ranked. */
  uint64_t *key = NULL;
  uint32_t *order = NULL;
  st = tn_calloc(n + 1, sizeof *key, &key, err);
  if (st == TN_OK) st = tn_calloc(n + 1, sizeof *order, &order, err);
  for (uint32_t v = 0; st == TN_OK && v < n; v++) {
    double best = 0;
    for (uint32_t e = t->out_off[v]; e < t->out_off[v + 1]; e++)
      if (t->links[t->out_link[e]].bandwidth_GBps > best)
        best = t->links[t->out_link[e]].bandwidth_GBps;
    /* bandwidth is at most 10^6 GB/s (topo_bandwidth_check): 2^40 steps of 0.001 */
    uint64_t slow = (1ull << 40) - (uint64_t)(best * 1000.0);
    key[v] = v < t->npus ? 0 : ((uint64_t)tier[v] << 41) | slow;
  }
  if (st == TN_OK) st = tn_radix_order(key, n, order, err);
  if (st == TN_OK) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (i > 0 && key[order[i]] != key[order[i - 1]]) k++;
      tier[order[i]] = k;
    }
    *ntiers = k + 1;
  }
  free(key);
  free(order);
  free(queue);
  return st;
}

/* Up to 6 distinct bandwidths, in ascending order, for colouring links; false when more. */
#define DRAW_NCOLORS 6
static bool bandwidth_classes(const topo_t *t, double *bw, uint32_t *nbw) {
  *nbw = 0;
  for (uint32_t i = 0; i < t->nlinks; i++) {
    double b = t->links[i].bandwidth_GBps;
    uint32_t k = 0;
    while (k < *nbw && bw[k] != b)
      k++;
    if (k < *nbw) continue;
    if (*nbw == DRAW_NCOLORS) return false;
    bw[(*nbw)++] = b;
  }
  for (uint32_t i = 1; i < *nbw; i++) /* insertion sort: ascending */
    for (uint32_t j = i; j > 0 && bw[j - 1] > bw[j]; j--) {
      double x = bw[j];
      bw[j] = bw[j - 1];
      bw[j - 1] = x;
    }
  return true;
}

static const char *const draw_colors[DRAW_NCOLORS] = {"blue",      "darkorange", "forestgreen",
                                                      "firebrick", "purple",     "black"};

/* Builds the graph: nodes in id order, then one edge per link, or per pair of links with
 * the same figures (drawn without arrows). tier (NULL: not tiered) puts the nodes of one
 * tier in one row, the higher tiers above; colors (NULL: labels) colours links by
 * bandwidth class. */
static Agraph_t *build_gv(const topo_t *t, const uint32_t *tier, uint32_t ntiers, const double *bw,
                          uint32_t nbw) {
  char gname[] = "fabric";
  Agraph_t *g = agopen(gname, Agdirected, NULL);
  if (g == NULL) return NULL;
  char title[400];
  snprintf(title, sizeof title, "%s (link labels: GB/s)", t->name);
  if (bw) {
    int len = snprintf(title, sizeof title, "%s, links in GB/s:", t->name);
    for (uint32_t k = 0; k < nbw && len > 0 && (size_t)len < sizeof title; k++)
      len += snprintf(title + len, sizeof title - (size_t)len, "%s %g %s", k ? "," : "", bw[k],
                      draw_colors[k]);
  }
  gv_set(g, "overlap", "false");
  gv_set(g, "fontsize", "10");
  gv_set(g, "label", title);
  if (tier) { /* tier 0 (the NPUs) at the bottom, rows packed */
    gv_set(g, "rankdir", "BT");
    gv_set(g, "nodesep", "0.08");
    gv_set(g, "ranksep", "1.2");
  }
  for (uint32_t v = 0; v < topo_nodes(t); v++)
    if (gv_node(g, t, v) == NULL) goto fail;
  /* One row per tier; a chain of invisible anchors, one per row, keeps the rows apart
   * (links alone would pull every switch next to the NPUs it reaches). */
  Agnode_t *prev = NULL;
  for (uint32_t k = 0; tier && k < ntiers; k++) {
    char sname[32];
    snprintf(sname, sizeof sname, "tier%u", k);
    Agraph_t *sg = agsubg(g, sname, 1);
    Agnode_t *anchor = sg ? agnode(sg, sname, 1) : NULL;
    if (anchor == NULL) goto fail;
    gv_set(sg, "rank", "same");
    gv_set(anchor, "style", "invis");
    gv_set(anchor, "width", "0.01");
    gv_set(anchor, "label", "");
    if (prev && agedge(g, prev, anchor, NULL, 1) == NULL) goto fail;
    if (prev) gv_set(agedge(g, prev, anchor, NULL, 0), "style", "invis");
    prev = anchor;
    for (uint32_t v = 0; v < topo_nodes(t); v++)
      if (tier[v] == k && agsubnode(sg, gv_node(g, t, v), 1) == NULL) goto fail;
  }
  for (uint32_t i = 0; i < t->nlinks; i++) {
    const topo_link_t *l = &t->links[i];
    uint32_t r = topo_find_link(t, l->dst, l->src);
    bool pair = r != TOPO_NO_LINK && t->links[r].bandwidth_GBps == l->bandwidth_GBps &&
                t->links[r].latency_ps == l->latency_ps;
    if (pair && l->src > l->dst) continue;
    /* Tiered, a pair runs from the lower tier up, so that dot ranks it upwards. */
    bool up = tier && pair && tier[l->src] > tier[l->dst];
    Agnode_t *a = gv_node(g, t, up ? l->dst : l->src), *b = gv_node(g, t, up ? l->src : l->dst);
    Agedge_t *e = a && b ? agedge(g, a, b, NULL, 1) : NULL;
    if (e == NULL) goto fail;
    if (bw) {
      uint32_t k = 0;
      while (k + 1 < nbw && bw[k] != l->bandwidth_GBps)
        k++;
      gv_set(e, "color", draw_colors[k]);
    } else {
      char label[32];
      snprintf(label, sizeof label, "%g", l->bandwidth_GBps);
      gv_set(e, "label", label);
      gv_set(e, "fontsize", "8");
    }
    if (tier && tier[l->src] == tier[l->dst]) gv_set(e, "constraint", "false");
    if (pair) gv_set(e, "dir", "none");
  }
  return g;
fail:
  agclose(g);
  return NULL;
}

/* TN_INVAL (a usage error: exit 1) when t is larger than lim allows, giving its figures and
 * the limits, and naming neato when neato would take it. */
static tn_status_t draw_size_check(const topo_t *t, const cli_gv_limit_t *lim, tn_err_t *err) {
  if (cli_i_gv_fits(lim, topo_nodes(t), t->nlinks)) return TN_OK;
  char per_node[48] = "";
  if (lim->max_links_per_node)
    snprintf(per_node, sizeof per_node, " and %u links per node", lim->max_links_per_node);
  const cli_gv_limit_t *nl = cli_i_gv_limit("neato");
  bool neato = lim != nl && cli_i_gv_fits(nl, topo_nodes(t), t->nlinks);
  return tn_err_set(err, TN_INVAL,
                    "%s: %u nodes and %u links are too many to lay out with %s in a few "
                    "seconds (it takes at most %u nodes, %u links%s)%s",
                    t->name, topo_nodes(t), t->nlinks, lim->layout, lim->max_nodes, lim->max_links,
                    per_node, neato ? "; --layout neato takes it" : "");
}

static int topo_draw_cmd(int argc, char **argv) {
  const char *out = NULL, *layout = "auto";
  bool help = false;
  const cli_opt_t opts[] = {{"output", 'o', &out, NULL},
                            {"out", 0, &out, NULL},
                            {"layout", 0, &layout, NULL},
                            {"help", 'h', NULL, &help}};
  const char *pos[1];
  size_t npos = 0;
  tn_err_t err = {0};
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, &npos, &err) != TN_OK)
    return cli_usage("topo draw", "%s", err.msg);
  if (help) {
    fputs(draw_help, stdout);
    return 0;
  }
  if (npos < 1) return cli_usage("topo draw", "needs a TOPO (a file, a shipped name or KIND-DIMS)");
  if (out == NULL) return cli_usage("topo draw", "needs -o FILE.svg or -o FILE.png");
  if (cli_i_gv_format(out) == NULL)
    return cli_usage("topo draw", "%s: the picture must end in .svg or .png", out);
  bool auto_layout = strcmp(layout, "auto") == 0;
  if (!auto_layout && cli_i_gv_limit(layout) == NULL)
    return cli_usage("topo draw", "--layout must be auto, neato or dot, not '%s'", layout);
  topo_t *t = NULL;
  if (cli_load_topo(pos[0], &t, &err) != TN_OK) {
    topo_free(t);
    return cli_report("topo draw", &err);
  }
  /* auto: tiers for a fabric with switches when dot takes it, else neato. */
  if (auto_layout)
    layout = t->switches > 0 && cli_i_gv_fits(cli_i_gv_limit("dot"), topo_nodes(t), t->nlinks)
                 ? "dot"
                 : "neato";
  const cli_gv_limit_t *lim = cli_i_gv_limit(layout);
  uint32_t *tier = NULL, ntiers = 0, nbw = 0;
  double bw[DRAW_NCOLORS];
  bool tiered = t->switches > 0 && strcmp(layout, "dot") == 0;
  if (draw_size_check(t, lim, &err) != TN_OK ||
      (tiered && tn_calloc(topo_nodes(t) + 1, sizeof *tier, &tier, &err) != TN_OK) ||
      (tiered && tiers_of(t, tier, &ntiers, &err) != TN_OK) || cli_i_gv_open(&err) != TN_OK) {
    free(tier);
    topo_free(t);
    return cli_report("topo draw", &err);
  }
  bool colored = tiered && bandwidth_classes(t, bw, &nbw);
  cli_i_gv_catch_errors();
  GVC_t *gvc = gvContext();
  Agraph_t *g = gvc ? build_gv(t, tier, ntiers, colored ? bw : NULL, nbw) : NULL;
  int rc = 0;
  if (g == NULL)
    tn_err_set(&err, TN_INTERNAL, "graphviz could not build the graph of %s%s%s", t->name,
               cli_i_gv_last_error()[0] ? ": " : "", cli_i_gv_last_error());
  else if (cli_i_gv_render(gvc, g, layout, t->name, out, &err) == TN_OK)
    printf("wrote %s: %u NPUs, %u switches, %u links\n", out, t->npus, t->switches, t->nlinks);
  if (g) agclose(g);
  if (gvc) gvFreeContext(gvc);
  free(tier);
  topo_free(t);
  if (err.status != TN_OK) rc = cli_report("topo draw", &err);
  return rc;
}

/* ---- dispatch --------------------------------------------------------------- */

int cmd_topo(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } subs[] = {{"gen", topo_gen_cmd},
              {"info", topo_info_cmd},
              {"list", topo_list_cmd},
              {"draw", topo_draw_cmd}};
  if (argc < 2) return cli_usage("topo", "needs a subcommand: gen, info, list or draw");
  const char *sub = argv[1];
  if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
    fputs(topo_help, stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
    if (strcmp(sub, subs[i].name) == 0) return subs[i].run(argc - 1, argv + 1);
  const char *best = tn_suggest(sub, subs, sizeof subs / sizeof *subs, sizeof *subs);
  if (best) return cli_usage("topo", "unknown subcommand '%s' (did you mean '%s'?)", sub, best);
  return cli_usage("topo", "unknown subcommand '%s' (use gen, info, list or draw)", sub);
}
