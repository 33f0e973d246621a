/* tests/fuzz/fuzz_manifest.c — libFuzzer target for the manifest `tenet sim --workload`
 * reads (DIR/workload.json, cli/workload.c) and the runs alone it hands the step. Once per
 * process it writes a scratch directory with `tenet workload` (a mixed 8-rank step of
 * overlapping collectives on ring-8, its sets renamed sets/set<i> so that a corpus holds
 * across builds) and keeps the manifest written there. Each input's first byte picks what
 * the rest is:
 *   even: the whole workload.json;
 *   odd:  lines, each set's "alone_ps" in turn in that manifest (which this very build
 *         wrote for this fabric and these sets, so the step takes them as given: the
 *         records' parser and what the step does with any numbers that pass it).
 * The step is then loaded, the directory read back and the step run three ways, as
 * `tenet sim --workload` does. Must never crash, hang or leak; every failure has a
 * message. The scratch directory is removed at exit. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/workload.h"
#include "emit/emit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPUS 8

static char dir[512], prefix[600], out[600], manifest[700];
static cJSON *base; /* the manifest as written, sets renamed */

static void cleanup(void) {
  if (dir[0]) tn_remove_tree(dir);
  cJSON_Delete(base);
}

static bool put(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return false;
  bool ok = fwrite(text, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* Renames set i's files sets/NAME.<r>.et to sets/set<i>.<r>.et and every mention of
 * "sets/NAME" in m to "sets/set<i>". */
static bool rename_sets(cJSON *m) {
  cJSON *sets = cJSON_GetObjectItemCaseSensitive(m, "sets"), *it;
  int i = 0;
  cJSON_ArrayForEach(it, sets) {
    cJSON *set = cJSON_GetObjectItemCaseSensitive(it, "set");
    if (!cJSON_IsString(set)) return false;
    char old[256], now[64], from[900], to[900];
    snprintf(old, sizeof old, "%s", set->valuestring);
    snprintf(now, sizeof now, "sets/set%d", i++);
    for (int r = 0; r < NPUS; r++) {
      snprintf(from, sizeof from, "%s/%s.%d.et", out, old, r);
      snprintf(to, sizeof to, "%s/%s.%d.et", out, now, r);
      if (rename(from, to) != 0) return false;
    }
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "collectives")) {
      cJSON *cs = cJSON_GetObjectItemCaseSensitive(c, "set");
      if (cJSON_IsString(cs) && strcmp(cs->valuestring, old) == 0)
        cJSON_ReplaceItemInObjectCaseSensitive(c, "set", cJSON_CreateString(now));
    }
    cJSON_ReplaceItemInObjectCaseSensitive(it, "set", cJSON_CreateString(now));
  }
  return i > 0;
}

static bool setup(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tenet_fuzz_manifest.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    dir[0] = '\0';
    return false;
  }
  atexit(cleanup);
  snprintf(prefix, sizeof prefix, "%s/w/mx", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(manifest, sizeof manifest, "%s/%s", out, CLI_WL_MANIFEST);
  /* tenet workload example mixed -n 8 --layers 12 -s 1MiB --compute-us 2 -o PREFIX, then
   * tenet workload -t ring-8 PREFIX -o OUT -j 1 */
  wl_example_opts_t o = {.npus = NPUS, .layers = 12, .bytes = 1u << 20, .compute_us = 2, .seed = 1};
  workload_t *w = NULL;
  cli_wl_plan_t p = {.prefix = prefix, .topo_arg = "ring-8", .jobs = 1, .aware = true};
  tn_err_t err = {0};
  bool made = wl_example(WL_EX_MIXED, &o, &w, &err) == TN_OK &&
              emit_chakra_write_wl(w, prefix, &err) == TN_OK &&
              cli_synth_opts(NULL, NULL, NULL, &p.so, &err) == TN_OK &&
              cli_rundir_plan(&p.d, out, "workload", CLI_WL_MANIFEST, &err) == TN_OK &&
              cli_wl_load(&p, &err) == TN_OK && cli_wl_make_sets(&p, &err) == TN_OK &&
              cli_wl_write(&p, &err) == TN_OK;
  wl_free(w);
  cli_wl_plan_free(&p);
  char *text = NULL;
  size_t len = 0;
  if (!made || tn_read_file(manifest, 1u << 24, &text, &len, &err) != TN_OK) return false;
  base = cJSON_ParseWithLength(text, len);
  free(text);
  return base != NULL && rename_sets(base);
}

/* The base manifest with set i's alone_ps the i-th line of data (cyclically). */
static char *spliced(const uint8_t *data, size_t size) {
  cJSON *m = cJSON_Duplicate(base, true);
  char *lines = malloc(size + 1);
  if (m == NULL || lines == NULL) {
    cJSON_Delete(m);
    free(lines);
    return NULL;
  }
  memcpy(lines, data, size);
  lines[size] = '\0'; /* (cut at a NUL the input holds) */
  size_t nl = 1;
  for (const char *q = lines; (q = strchr(q, '\n')) != NULL; q++)
    nl++;
  cJSON *it;
  size_t i = 0;
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(m, "sets")) {
    const char *line = lines;
    for (size_t skip = i++ % nl; skip > 0; skip--)
      line = strchr(line, '\n') + 1;
    const char *end = strchr(line, '\n');
    char *one = strndup(line, end ? (size_t)(end - line) : strlen(line));
    cJSON_DeleteItemFromObjectCaseSensitive(it, "alone_ps");
    if (one) cJSON_AddStringToObject(it, "alone_ps", one);
    free(one);
  }
  char *text = cJSON_PrintUnformatted(m);
  cJSON_Delete(m);
  free(lines);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int state; /* 0: not set up, 1: ready */
  if (state == 0) {
    if (!setup()) abort(); /* nothing would be fuzzed */
    state = 1;
  }
  char *text = NULL;
  size_t len = 0;
  if (size > 0 && (data[0] & 1)) {
    text = spliced(data + 1, size - 1);
    len = text ? strlen(text) : 0;
  } else if (size > 0) {
    text = malloc(size);
    if (text) memcpy(text, data + 1, len = size - 1);
  }
  if (text == NULL || !put(manifest, text, len)) {
    free(text);
    return 0;
  }
  free(text);
  cli_wl_plan_t p = {.prefix = prefix, .topo_arg = "ring-8", .jobs = 1};
  tn_err_t err = {0};
  tn_status_t st = cli_wl_load(&p, &err);
  if (st == TN_OK) st = cli_wl_read_dir(&p, out, &err);
  if (st == TN_OK) st = cli_wl_predict(&p, &err);
  if (st != TN_OK && err.msg[0] == '\0') abort(); /* every failure names what went wrong */
  cli_wl_plan_free(&p);
  return 0;
}
