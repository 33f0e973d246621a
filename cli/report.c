/* cli/report.c — the ways results of (fabric, collective, size, algorithm) runs are
 * shown: table, JSON, CSV; speed-ups over Ring. Shared by compare, batch and demo; the
 * one-object --json printing at the end is shared by synth, import and sim. */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_results_set_speedups(cli_result_t *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rows[i].speedup_vs_ring = -1.0;
    if (!rows[i].ok || rows[i].time_ps == 0) continue;
    for (size_t j = 0; j < n; j++) {
      const cli_result_t *g = &rows[j];
      if (g->ok && strcmp(g->algorithm, "ring") == 0 && g->coll == rows[i].coll &&
          g->size_bytes == rows[i].size_bytes && strcmp(g->topology, rows[i].topology) == 0) {
        rows[i].speedup_vs_ring = (double)g->time_ps / (double)rows[i].time_ps;
        break;
      }
    }
  }
}

double cli_result_bound_busbw(const cli_result_t *r) {
  return tn_gbps(r->size_bytes, r->lower_bound_ps) * tn_coll_busbw_factor(r->coll, r->npus);
}

/* Rounds a figure to a fixed number of decimals so that JSON and CSV hold short,
 * stable numbers (times keep picosecond precision: 3 decimals of ns). */
static double round_to(double v, double scale) {
  return (double)llround(v * scale) / scale;
}

static cJSON *row_json(const cli_result_t *r) {
  cJSON *o = cJSON_CreateObject();
  if (o == NULL) return NULL;
  bool ok = cJSON_AddStringToObject(o, "topology", r->topology) &&
            cJSON_AddNumberToObject(o, "npus", r->npus) &&
            cJSON_AddStringToObject(o, "collective", tn_coll_name(r->coll)) &&
            cJSON_AddStringToObject(o, "algorithm", r->algorithm) &&
            cJSON_AddStringToObject(o, "method", r->method) &&
            cJSON_AddStringToObject(o, "variant", r->variant) &&
            cli_json_add_u64(o, "size_bytes", r->size_bytes) &&
            cli_json_add_ns(o, "time_ns", r->time_ps) &&
            cJSON_AddNumberToObject(o, "algbw_GBps", round_to(r->algbw_GBps, 1e6)) &&
            cJSON_AddNumberToObject(o, "busbw_GBps", round_to(r->busbw_GBps, 1e6)) &&
            cli_json_add_ns(o, "lower_bound_ns", r->lower_bound_ps) &&
            cJSON_AddNumberToObject(o, "ratio_to_bound", round_to(r->ratio_to_bound, 1e6));
  if (ok && r->seeds_tried > 1)
    ok = cli_json_add_u64(o, "seed", r->seed) &&
         cJSON_AddNumberToObject(o, "seeds_tried", r->seeds_tried);
  if (ok) {
    ok = r->speedup_vs_ring < 0
             ? cJSON_AddNullToObject(o, "speedup_vs_ring") != NULL
             : cJSON_AddNumberToObject(o, "speedup_vs_ring", round_to(r->speedup_vs_ring, 1e6)) !=
                   NULL;
  }
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

tn_status_t cli_results_json(const cli_result_t *rows, size_t n, char **out, tn_err_t *err) {
  *out = NULL;
  cJSON *root = cJSON_CreateObject();
  cJSON *arr = root ? cJSON_AddArrayToObject(root, "rows") : NULL;
  for (size_t i = 0; arr != NULL && i < n; i++) {
    cJSON *o = row_json(&rows[i]);
    if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
      cJSON_Delete(o);
      arr = NULL;
    }
  }
  if (arr != NULL) *out = cli_json_text(root, false);
  cJSON_Delete(root);
  return *out ? TN_OK : tn_err_set(err, TN_NOMEM, "out of memory building the JSON output");
}

void cli_csv_text(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
  }
  fputc('"', f);
}

tn_status_t cli_results_csv(const cli_result_t *rows, size_t n, const char *path, tn_err_t *err) {
  tn_outfile_t o;
  tn_status_t st = tn_outfile_open(&o, path, err);
  if (st != TN_OK) return st;
  fprintf(o.f, "topology,npus,collective,algorithm,size_bytes,time_ns,algbw_GBps,busbw_GBps,"
               "lower_bound_ns,ratio_to_bound,speedup_vs_ring,method,variant\n");
  for (size_t i = 0; i < n; i++) {
    const cli_result_t *r = &rows[i];
    char speed[32] = "";
    if (r->speedup_vs_ring >= 0) snprintf(speed, sizeof speed, "%.6f", r->speedup_vs_ring);
    cli_csv_text(o.f, r->topology);
    fprintf(o.f, ",%u,", r->npus);
    cli_csv_text(o.f, tn_coll_name(r->coll));
    fputc(',', o.f);
    cli_csv_text(o.f, r->algorithm);
    fprintf(o.f, ",%llu,%.3f,%.6f,%.6f,%.3f,%.6f,%s,", (unsigned long long)r->size_bytes,
            (double)r->time_ps / 1000.0, r->algbw_GBps, r->busbw_GBps,
            (double)r->lower_bound_ps / 1000.0, r->ratio_to_bound, speed);
    cli_csv_text(o.f, r->method);
    fputc(',', o.f);
    cli_csv_text(o.f, r->variant);
    fputc('\n', o.f);
  }
  return tn_outfile_commit(&o, err);
}

const char *cli_fmt_time_ns(double ns, char *buf, size_t len) {
  if (ns < 1e3)
    snprintf(buf, len, "%.0f ns", ns);
  else if (ns < 1e6)
    snprintf(buf, len, "%.2f us", ns / 1e3);
  else if (ns < 1e9)
    snprintf(buf, len, "%.2f ms", ns / 1e6);
  else
    snprintf(buf, len, "%.3f s", ns / 1e9);
  return buf;
}

tn_status_t cli_results_table(const cli_result_t *rows, size_t n, FILE *f, tn_err_t *err) {
  static const char *const headers[] = {"size",       "algorithm", "time",  "algbw GB/s",
                                        "busbw GB/s", "bound",     "ratio", "vs ring"};
  cli_table_t t;
  tn_status_t st = cli_table_init(&t, headers, "llrrrrrr", 8, err);
  for (size_t i = 0; st == TN_OK && i < n; i++) {
    const cli_result_t *r = &rows[i];
    char size[32], time[32], alg[32], bus[32], bound[32], ratio[32], speed[32], name[96];
    /* A portfolio row says what it chose ("auto:greedy"), a baseline its configuration
     * ("ring (both directions, 8 chunks)"). */
    int at = r->method[0] && strcmp(r->method, r->algorithm) != 0
                 ? snprintf(name, sizeof name, "%s:%s", r->algorithm, r->method)
                 : snprintf(name, sizeof name, "%s", r->algorithm);
    if (r->variant[0] && at > 0 && (size_t)at < sizeof name)
      snprintf(name + at, sizeof name - (size_t)at, " (%s)", r->variant);
    tn_fmt_size(r->size_bytes, size, sizeof size);
    cli_fmt_time_ns((double)r->time_ps / 1000.0, time, sizeof time);
    snprintf(alg, sizeof alg, "%.2f", r->algbw_GBps);
    snprintf(bus, sizeof bus, "%.2f", r->busbw_GBps);
    cli_fmt_time_ns((double)r->lower_bound_ps / 1000.0, bound, sizeof bound);
    snprintf(ratio, sizeof ratio, "%.2f", r->ratio_to_bound);
    if (r->speedup_vs_ring >= 0)
      snprintf(speed, sizeof speed, "%.2fx", r->speedup_vs_ring);
    else
      snprintf(speed, sizeof speed, "-");
    const char *cells[] = {size, name, time, alg, bus, bound, ratio, speed};
    st = cli_table_add(&t, cells, err);
  }
  if (st == TN_OK) cli_table_print(&t, f);
  cli_table_free(&t);
  return st;
}

void cli_json_add_et_files(cJSON *o, const char *prefix, uint32_t npus) {
  cJSON *files = cJSON_AddArrayToObject(o, "files");
  size_t len = strlen(prefix) + 32;
  char *buf = files ? malloc(len) : NULL;
  for (uint32_t r = 0; buf && r < npus; r++) {
    snprintf(buf, len, "%s.%u.et", prefix, r);
    cJSON *name = cJSON_CreateString(buf);
    if (!cJSON_AddItemToArray(files, name)) {
      cJSON_Delete(name);
      break;
    }
  }
  free(buf);
}

char *cli_json_text(const cJSON *o, bool pretty) {
  char *raw = o ? (pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o)) : NULL;
  char *text = NULL;
  if (raw != NULL) tn_utf8_repair(raw, strlen(raw), &text, NULL, NULL);
  cJSON_free(raw);
  return text;
}

static cJSON *add_raw(cJSON *o, const char *key, cJSON *item) {
  if (item != NULL && o != NULL && cJSON_AddItemToObject(o, key, item)) return item;
  cJSON_Delete(item);
  return NULL;
}

cJSON *cli_json_u64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateRaw(buf);
}

cJSON *cli_json_add_u64(cJSON *o, const char *key, uint64_t v) {
  return add_raw(o, key, cli_json_u64(v));
}

cJSON *cli_json_ns(uint64_t ps) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", ps / TN_PS_PER_NS,
                   (unsigned)(ps % TN_PS_PER_NS));
  /* The shortest exact spelling: no trailing zeros, no lone point. */
  while (n > 0 && buf[n - 1] == '0')
    buf[--n] = '\0';
  if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
  return cJSON_CreateRaw(buf);
}

cJSON *cli_json_add_ns(cJSON *o, const char *key, uint64_t ps) {
  return add_raw(o, key, cli_json_ns(ps));
}

int cli_json_print(const char *cmd, cJSON *o) {
  char *text = cli_json_text(o, false);
  cJSON_Delete(o);
  if (text == NULL) {
    fprintf(stderr, "tenet %s: out of memory printing JSON\n", cmd);
    return 3;
  }
  printf("%s\n", text);
  free(text);
  return 0;
}
