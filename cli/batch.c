/* cli/batch.c — the sweep behind `tenet batch`: plans (flags, manifest, batch.json),
 * per-case runs whose result.json (written last, atomically) marks them complete, resume,
 * shards, summaries in case order, and merging shard folders. */
#include "cli/batch.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BATCH_MAX_CASES 10000000u
#define BATCH_MAX_JSON (64u << 20)

static const char *const keep_names[] = {"results", "best", "all"};

tn_status_t cli_batch_keep_parse(const char *s, cli_batch_keep_t *keep, tn_err_t *err) {
  for (size_t i = 0; i < sizeof keep_names / sizeof keep_names[0]; i++) {
    if (strcmp(s, keep_names[i]) == 0) {
      *keep = (cli_batch_keep_t)i;
      return TN_OK;
    }
  }
  return tn_err_set(err, TN_INVAL, "--keep: '%s' is not results, best or all", s);
}

const char *cli_batch_keep_name(cli_batch_keep_t keep) {
  return (size_t)keep < sizeof keep_names / sizeof keep_names[0] ? keep_names[keep] : "?";
}

void cli_batch_plan_free(cli_batch_plan_t *p) {
  if (p == NULL) return;
  cli_list_free(p->topos, p->ntopos);
  cli_list_free(p->labels, p->ntopos);
  cli_list_free(p->algos, p->nalgos);
  free(p->colls);
  free(p->sizes);
  memset(p, 0, sizeof *p);
}

tn_status_t cli_batch_count(const cli_batch_plan_t *p, size_t *n, tn_err_t *err) {
  uint64_t v = 1;
  const size_t dims[] = {p->ntopos, p->ncolls, p->nsizes, p->nalgos};
  for (size_t i = 0; i < 4; i++) {
    if (dims[i] == 0) return tn_err_set(err, TN_INVAL, "the sweep is empty");
    if (!tn_mul_u64(v, dims[i], &v) || v > BATCH_MAX_CASES)
      return tn_err_set(err, TN_LIMIT, "the sweep has more than %u cases", BATCH_MAX_CASES);
  }
  *n = (size_t)v;
  return TN_OK;
}

cli_batch_case_t cli_batch_case(const cli_batch_plan_t *p, size_t i) {
  cli_batch_case_t c = {.index = i};
  c.algo = i % p->nalgos;
  i /= p->nalgos;
  c.size = i % p->nsizes;
  i /= p->nsizes;
  c.coll = i % p->ncolls;
  c.topo = i / p->ncolls;
  return c;
}

void cli_batch_case_dir(const cli_batch_plan_t *p, const cli_batch_case_t *c, char *buf,
                        size_t len) {
  char size[32];
  snprintf(buf, len, "cases/%s/%s/%s/%s", p->labels[c->topo], tn_coll_name(p->colls[c->coll]),
           tn_fmt_size(p->sizes[c->size], size, sizeof size), p->algos[c->algo]);
}

/* Appends the items of a comma list to a growing list (names checked for repeats). */
static tn_status_t append_items(char ***list, size_t *n, const char *s, const char *what,
                                tn_err_t *err) {
  char **items = NULL;
  size_t m = 0;
  tn_status_t st = cli_split_list(s, what, &items, &m, err);
  if (st != TN_OK) return st;
  for (size_t i = 0; st == TN_OK && i < m; i++)
    for (size_t j = 0; st == TN_OK && j < *n; j++)
      if (strcmp(items[i], (*list)[j]) == 0)
        st = tn_err_set(err, TN_INVAL, "%s: '%s' is listed twice", what, items[i]);
  if (st == TN_OK) st = tn_realloc(list, *n, *n + m, sizeof **list, err);
  if (st != TN_OK) {
    cli_list_free(items, m);
    return st;
  }
  memcpy(*list + *n, items, m * sizeof *items);
  *n += m;
  free(items);
  return TN_OK;
}

/* Labels from the topology arguments; checks they name something and are distinct. */
static tn_status_t finish_topos(cli_batch_plan_t *p, tn_err_t *err) {
  tn_status_t st = tn_calloc(p->ntopos ? p->ntopos : 1, sizeof *p->labels, &p->labels, err);
  for (size_t i = 0; st == TN_OK && i < p->ntopos; i++) {
    char label[128];
    cli_topo_label(p->topos[i], label, sizeof label);
    if (label[0] == '\0' || label[0] == '.')
      st = tn_err_set(err, TN_INVAL, "--topos: '%s' does not give a usable folder name",
                      p->topos[i]);
    for (size_t j = 0; st == TN_OK && j < i; j++)
      if (strcmp(p->labels[j], label) == 0)
        st = tn_err_set(err, TN_INVAL, "--topos: '%s' and '%s' would share the folder '%s'",
                        p->topos[j], p->topos[i], label);
    if (st == TN_OK) st = tn_strdup(label, &p->labels[i], err);
  }
  for (size_t i = 0; st == TN_OK && i < p->ntopos; i++) {
    st = cli_topo_spec_check(p->topos[i], err);
    /* Name the entry, unless the message already does (a missing file's does). */
    if (st != TN_OK && strstr(err->msg, p->topos[i]) != NULL)
      tn_err_prefix(err, "--topos");
    else if (st != TN_OK)
      tn_err_prefix(err, "--topos: '%s'", p->topos[i]);
  }
  return st;
}

/* batch.json keeps a size as a JSON number up to 2^53 (exact as a double, which is how
 * cJSON reads numbers back), and as a decimal string above. */
#define BATCH_MAX_SIZE ((uint64_t)1 << 53)

tn_status_t cli_batch_plan_from_lists(const char *topos, const char *colls, const char *sizes,
                                      const char *algos, uint64_t seed, cli_batch_plan_t *p,
                                      tn_err_t *err) {
  memset(p, 0, sizeof *p);
  p->seed = seed;
  tn_status_t st = append_items(&p->topos, &p->ntopos, topos, "--topos", err);
  if (st == TN_OK) st = cli_parse_colls(colls, &p->colls, &p->ncolls, err);
  if (st == TN_OK) st = cli_parse_sizes(sizes, &p->sizes, &p->nsizes, err);
  if (st == TN_OK) st = cli_parse_algos(algos, &p->algos, &p->nalgos, err);
  if (st == TN_OK) st = finish_topos(p, err);
  if (st != TN_OK) cli_batch_plan_free(p);
  return st;
}

/* ---- manifest ------------------------------------------------------------ */

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

/* Joins two comma lists (a may be NULL) into a new malloc'ed string. */
static tn_status_t join_list(char **acc, const char *more, tn_err_t *err) {
  size_t a = *acc ? strlen(*acc) : 0, b = strlen(more);
  char *s = NULL;
  tn_status_t st = tn_calloc(a + b + 2, 1, &s, err);
  if (st != TN_OK) return st;
  if (*acc) memcpy(s, *acc, a), s[a++] = ',';
  memcpy(s + a, more, b);
  free(*acc);
  *acc = s;
  return TN_OK;
}

/* Rewrites relative topology paths that exist under base (the manifest's folder). */
static tn_status_t rebase_topos(char **list, const char *base, tn_err_t *err) {
  char **items = NULL, *out = NULL;
  size_t n = 0;
  tn_status_t st = cli_split_list(*list, "topos", &items, &n, err);
  for (size_t i = 0; st == TN_OK && i < n; i++) {
    char path[4096];
    struct stat sb;
    const char *item = items[i];
    if (item[0] != '/' && strchr(item, '/') != NULL) {
      snprintf(path, sizeof path, "%s/%s", base, item);
      if (stat(path, &sb) == 0) item = path;
    }
    st = join_list(&out, item, err);
  }
  cli_list_free(items, n);
  if (st == TN_OK) {
    free(*list);
    *list = out;
  } else {
    free(out);
  }
  return st;
}

static tn_status_t unknown_key(const char *what, unsigned lineno, const char *key,
                               const char *const *keys, size_t nkeys, tn_err_t *err) {
  const char *best = tn_suggest(key, keys, nkeys, sizeof *keys);
  if (best)
    return tn_err_set(err, TN_PARSE, "%s:%u: unknown key '%s' (did you mean '%s'?)", what, lineno,
                      key, best);
  return tn_err_set(err, TN_PARSE,
                    "%s:%u: unknown key '%s' (use topos, colls, sizes, algos, seed, seeds)", what,
                    lineno, key);
}

/* A manifest's one-number line (seed, seeds): value in [lo, hi], given at most once (*line:
 * where it was, 0 before). */
static tn_status_t number_line(const char *what, unsigned lineno, const char *key, const char *s,
                               uint64_t lo, uint64_t hi, unsigned *line, uint64_t *out,
                               tn_err_t *err) {
  tn_err_t e = {0};
  if (*line != 0) return tn_err_set(err, TN_PARSE, "%s:%u: %s is given twice", what, lineno, key);
  *line = lineno;
  if (tn_parse_u64(s, lo, hi, key, out, &e) != TN_OK)
    return tn_err_set(err, TN_PARSE, "%s:%u: %s", what, lineno, e.msg);
  return TN_OK;
}

static tn_status_t manifest_parse_in(const char *text, const char *what, const char *base,
                                     cli_batch_plan_t *p, tn_err_t *err) {
  static const char *const keys[] = {"topos", "colls", "sizes", "algos", "seed", "seeds"};
  enum { NKEYS = 6 };
  memset(p, 0, sizeof *p);
  char *copy = NULL, *vals[NKEYS] = {NULL};
  unsigned seed_line = 0, seeds_line = 0;
  uint64_t seed = CLI_DEFAULT_SEED, seeds = 1;
  tn_status_t st = tn_strdup(text, &copy, err);
  char *line = copy;
  for (unsigned lineno = 1; st == TN_OK && line != NULL; lineno++) {
    char *next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = trim(line);
    line = next;
    if (*s == '\0') continue;
    /* KEY VALUE, KEY: VALUE or KEY = VALUE */
    char *key = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '=' && *s != ':')
      s++;
    bool sep_done = *s == '=' || *s == ':';
    if (*s) *s++ = '\0';
    s = trim(s);
    if (!sep_done && (*s == '=' || *s == ':')) s = trim(s + 1);
    size_t k = 0;
    while (k < NKEYS && strcmp(keys[k], key) != 0)
      k++;
    if (k == NKEYS) {
      st = unknown_key(what, lineno, key, keys, NKEYS, err);
    } else if (*s == '\0') {
      st = tn_err_set(err, TN_PARSE, "%s:%u: '%s' needs a value", what, lineno, key);
    } else if (k == 4) {
      st = number_line(what, lineno, key, s, 0, UINT64_MAX, &seed_line, &seed, err);
    } else if (k == 5) {
      st = number_line(what, lineno, key, s, 1, SYNTH_MAX_SEEDS, &seeds_line, &seeds, err);
    } else {
      st = join_list(&vals[k], s, err);
    }
  }
  for (size_t k = 0; st == TN_OK && k < 4; k++)
    if (vals[k] == NULL) st = tn_err_set(err, TN_PARSE, "%s: no '%s' line", what, keys[k]);
  if (st == TN_OK && base != NULL) st = rebase_topos(&vals[0], base, err);
  if (st == TN_OK) {
    tn_err_t e = {0};
    st = cli_batch_plan_from_lists(vals[0], vals[1], vals[2], vals[3], seed, p, &e);
    if (st != TN_OK) st = tn_err_set(err, TN_PARSE, "%s: %s", what, e.msg);
    p->seeds = (uint32_t)seeds;
  }
  for (size_t k = 0; k < NKEYS; k++)
    free(vals[k]);
  free(copy);
  return st;
}

tn_status_t cli_batch_manifest_parse(const char *text, const char *what, cli_batch_plan_t *p,
                                     tn_err_t *err) {
  return manifest_parse_in(text, what, NULL, p, err);
}

tn_status_t cli_batch_manifest_load(const char *path, cli_batch_plan_t *p, tn_err_t *err) {
  char *text = NULL;
  size_t len = 0;
  memset(p, 0, sizeof *p);
  tn_status_t st = tn_read_file(path, 1u << 20, &text, &len, err);
  if (st != TN_OK) return st;
  if (strlen(text) != len) {
    free(text);
    return tn_err_set(err, TN_PARSE, "%s: not a text file", path);
  }
  /* Relative topology paths with a folder are relative to the manifest's folder. */
  char base[4096];
  const char *slash = strrchr(path, '/');
  snprintf(base, sizeof base, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  st = manifest_parse_in(text, path, base, p, err);
  free(text);
  return st;
}
/* ---- batch.json ------------------------------------------------------------ */

static cJSON *string_array(char **items, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a != NULL && i < n; i++) {
    cJSON *s = cJSON_CreateString(items[i]);
    if (s == NULL || !cJSON_AddItemToArray(a, s)) {
      cJSON_Delete(s);
      cJSON_Delete(a);
      a = NULL;
    }
  }
  return a;
}

static cJSON *plan_to_cjson(const cli_batch_plan_t *p) {
  cJSON *o = cJSON_CreateObject(), *colls = cJSON_CreateArray(), *sizes = cJSON_CreateArray();
  cJSON *topos = string_array(p->topos, p->ntopos), *labels = string_array(p->labels, p->ntopos);
  cJSON *algos = string_array(p->algos, p->nalgos);
  bool ok = o && colls && sizes && topos && labels && algos;
  for (size_t i = 0; ok && i < p->ncolls; i++)
    ok = cJSON_AddItemToArray(colls, cJSON_CreateString(tn_coll_name(p->colls[i])));
  for (size_t i = 0; ok && i < p->nsizes; i++) {
    char dec[24];
    snprintf(dec, sizeof dec, "%llu", (unsigned long long)p->sizes[i]);
    ok = cJSON_AddItemToArray(sizes, p->sizes[i] <= BATCH_MAX_SIZE ? cli_json_u64(p->sizes[i])
                                                                   : cJSON_CreateString(dec));
  }
  if (ok) {
    ok = cJSON_AddNumberToObject(o, "version", 1) &&
         cJSON_AddItemToObject(o, "topologies", topos) &&
         (topos = NULL, cJSON_AddItemToObject(o, "labels", labels)) &&
         (labels = NULL, cJSON_AddItemToObject(o, "collectives", colls)) &&
         (colls = NULL, cJSON_AddItemToObject(o, "sizes", sizes)) &&
         (sizes = NULL, cJSON_AddItemToObject(o, "algorithms", algos)) &&
         (algos = NULL, cli_json_add_u64(o, "seed", p->seed) != NULL) &&
         /* written only when asked for, so a sweep of one seed reads as before */
         (p->seeds <= 1 || cJSON_AddNumberToObject(o, "seeds", p->seeds) != NULL) &&
         cJSON_AddStringToObject(o, "keep", cli_batch_keep_name(p->keep)) != NULL;
  }
  cJSON_Delete(topos);
  cJSON_Delete(labels);
  cJSON_Delete(colls);
  cJSON_Delete(sizes);
  cJSON_Delete(algos);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

tn_status_t cli_batch_plan_json(const cli_batch_plan_t *p, char **out, tn_err_t *err) {
  cJSON *o = plan_to_cjson(p);
  *out = o ? cli_json_text(o, true) : NULL;
  cJSON_Delete(o);
  return *out ? TN_OK : tn_err_set(err, TN_NOMEM, "out of memory writing the plan");
}

static tn_status_t get_strings(const cJSON *o, const char *key, const char *what, char ***items,
                               size_t *n, tn_err_t *err) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  *items = NULL;
  *n = 0;
  if (!cJSON_IsArray(a)) return tn_err_set(err, TN_PARSE, "%s: '%s' must be an array", what, key);
  size_t m = (size_t)cJSON_GetArraySize(a);
  tn_status_t st = tn_calloc(m ? m : 1, sizeof **items, items, err);
  size_t i = 0;
  const cJSON *e = NULL;
  cJSON_ArrayForEach(e, a) {
    if (st != TN_OK) break;
    if (!cJSON_IsString(e))
      st = tn_err_set(err, TN_PARSE, "%s: %s[%zu] must be a string", what, key, i);
    else
      st = tn_strdup(e->valuestring, &(*items)[i++], err);
  }
  *n = i;
  return st;
}

/* The top-level "seed" as an exact integer. cJSON keeps numbers as doubles (exact only
 * below 2^53), so the digits are read from the text after the member's name; the double
 * cJSON parsed must agree, which also shows that the digits are that member's (a name
 * inside a string has its quotes escaped and never matches). A string is the spelling of
 * batch.json files written before the seed became a number. */
static tn_status_t seed_from_json(const char *text, const cJSON *seed, const char *what,
                                  uint64_t *out, tn_err_t *err) {
  if (cJSON_IsString(seed)) return tn_parse_u64(seed->valuestring, 0, UINT64_MAX, "seed", out, err);
  if (!cJSON_IsNumber(seed)) return tn_err_set(err, TN_PARSE, "%s: 'seed' must be a number", what);
  for (const char *s = strstr(text, "\"seed\""); s != NULL; s = strstr(s + 1, "\"seed\"")) {
    const char *v = s + strlen("\"seed\"");
    v += strspn(v, " \t\r\n");
    if (*v != ':') continue;
    v += 1 + strspn(v + 1, " \t\r\n");
    char digits[24];
    size_t n = strspn(v, "0123456789");
    if (n == 0 || n >= sizeof digits || strchr(".eE", v[n]) != NULL) break;
    memcpy(digits, v, n);
    digits[n] = '\0';
    tn_err_t e = {0};
    if (tn_parse_u64(digits, 0, UINT64_MAX, "seed", out, &e) == TN_OK &&
        (double)*out == seed->valuedouble)
      return TN_OK;
    break;
  }
  return tn_err_set(err, TN_PARSE, "%s: 'seed' must be a whole number from 0 to %llu", what,
                    (unsigned long long)UINT64_MAX);
}

tn_status_t cli_batch_plan_parse_json(const char *text, const char *what, cli_batch_plan_t *p,
                                      tn_err_t *err) {
  memset(p, 0, sizeof *p);
  cJSON *o = cJSON_Parse(text);
  tn_status_t st = o ? TN_OK : tn_err_set(err, TN_PARSE, "%s: not valid JSON", what);
  if (st == TN_OK) st = get_strings(o, "topologies", what, &p->topos, &p->ntopos, err);
  size_t nlabels = 0;
  if (st == TN_OK) {
    st = get_strings(o, "labels", what, &p->labels, &nlabels, err);
    if (st != TN_OK || nlabels != p->ntopos) {
      /* The plan frees ntopos labels: these go now, by their own count. */
      cli_list_free(p->labels, nlabels);
      p->labels = NULL;
      if (st == TN_OK)
        st = tn_err_set(err, TN_PARSE, "%s: labels and topologies differ in length", what);
    }
  }
  if (st == TN_OK) st = get_strings(o, "algorithms", what, &p->algos, &p->nalgos, err);
  char **colls = NULL;
  size_t ncolls = 0;
  if (st == TN_OK) st = get_strings(o, "collectives", what, &colls, &ncolls, err);
  if (st == TN_OK) st = tn_calloc(ncolls ? ncolls : 1, sizeof *p->colls, &p->colls, err);
  for (size_t i = 0; st == TN_OK && i < ncolls; i++)
    if ((st = tn_coll_parse(colls[i], &p->colls[i], err)) == TN_OK) p->ncolls++;
  cli_list_free(colls, ncolls);
  const cJSON *sizes = o ? cJSON_GetObjectItemCaseSensitive(o, "sizes") : NULL;
  if (st == TN_OK && !cJSON_IsArray(sizes))
    st = tn_err_set(err, TN_PARSE, "%s: 'sizes' must be an array", what);
  if (st == TN_OK)
    st = tn_calloc((size_t)cJSON_GetArraySize(sizes) + 1, sizeof *p->sizes, &p->sizes, err);
  const cJSON *e = NULL;
  if (st == TN_OK) {
    cJSON_ArrayForEach(e, sizes) {
      uint64_t v = 0;
      tn_err_t ve = {0};
      bool ok = cJSON_IsString(e) ? tn_parse_u64(e->valuestring, BATCH_MAX_SIZE + 1, UINT64_MAX,
                                                 "size", &v, &ve) == TN_OK
                                  : cJSON_IsNumber(e) && e->valuedouble >= 1 &&
                                        e->valuedouble <= (double)BATCH_MAX_SIZE &&
                                        e->valuedouble == floor(e->valuedouble);
      if (!ok) {
        st = tn_err_set(err, TN_PARSE, "%s: sizes[%zu] is not a size", what, p->nsizes);
        break;
      }
      p->sizes[p->nsizes++] = cJSON_IsString(e) ? v : (uint64_t)e->valuedouble;
    }
  }
  const cJSON *seed = o ? cJSON_GetObjectItemCaseSensitive(o, "seed") : NULL;
  if (st == TN_OK) st = seed_from_json(text, seed, what, &p->seed, err);
  const cJSON *seeds = o ? cJSON_GetObjectItemCaseSensitive(o, "seeds") : NULL;
  p->seeds = 1;
  if (st == TN_OK && seeds != NULL) {
    if (!cJSON_IsNumber(seeds) || seeds->valuedouble < 2 || seeds->valuedouble > SYNTH_MAX_SEEDS ||
        seeds->valuedouble != floor(seeds->valuedouble))
      st = tn_err_set(err, TN_PARSE, "%s: 'seeds' must be a whole number from 2 to %u", what,
                      SYNTH_MAX_SEEDS);
    else
      p->seeds = (uint32_t)seeds->valuedouble;
  }
  /* A batch.json from before --keep kept every set. */
  const cJSON *keep = o ? cJSON_GetObjectItemCaseSensitive(o, "keep") : NULL;
  p->keep = CLI_BATCH_KEEP_ALL;
  if (st == TN_OK && keep != NULL && !cJSON_IsString(keep))
    st = tn_err_set(err, TN_PARSE, "%s: 'keep' must be a string", what);
  if (st == TN_OK && keep != NULL) {
    tn_err_t ke = {0};
    if (cli_batch_keep_parse(keep->valuestring, &p->keep, &ke) != TN_OK)
      st = tn_err_set(err, TN_PARSE, "%s: 'keep' is not results, best or all", what);
  }
  cJSON_Delete(o);
  if (st != TN_OK) cli_batch_plan_free(p);
  return st;
}

/* ---- one case ------------------------------------------------------------ */

static cJSON *result_json(const cli_batch_plan_t *p, const cli_batch_case_t *c, const char *inputs,
                          const cli_result_t *r) {
  cJSON *o = cJSON_CreateObject();
  if (o == NULL) return NULL;
  bool ok =
      cli_json_add_u64(o, "case", c->index) && cJSON_AddStringToObject(o, "inputs", inputs) &&
      cJSON_AddStringToObject(o, "topology", p->labels[c->topo]) &&
      (r->npus ? cJSON_AddNumberToObject(o, "npus", r->npus) : cJSON_AddNullToObject(o, "npus")) &&
      cJSON_AddStringToObject(o, "collective", tn_coll_name(p->colls[c->coll])) &&
      cJSON_AddStringToObject(o, "algorithm", p->algos[c->algo]) &&
      cli_json_add_u64(o, "size_bytes", p->sizes[c->size]);
  if (ok && r->ok) {
    ok = cli_json_add_ns(o, "time_ns", r->time_ps) &&
         cJSON_AddNumberToObject(o, "algbw_GBps", (double)llround(r->algbw_GBps * 1e6) / 1e6) &&
         cJSON_AddNumberToObject(o, "busbw_GBps", (double)llround(r->busbw_GBps * 1e6) / 1e6) &&
         cli_json_add_ns(o, "lower_bound_ns", r->lower_bound_ps) &&
         cJSON_AddNumberToObject(o, "ratio_to_bound",
                                 (double)llround(r->ratio_to_bound * 1e6) / 1e6) &&
         cJSON_AddStringToObject(o, "status", "ok") && cJSON_AddNullToObject(o, "error");
    /* Best of N seeds: which one won, and how many the method tried (1 for a method that
     * takes no seed). */
    if (ok && p->seeds > 1)
      ok = cli_json_add_u64(o, "seed", r->seed) != NULL &&
           cJSON_AddNumberToObject(o, "seeds_tried", r->seeds_tried) != NULL;
  } else if (ok) {
    static const char *const nulls[] = {"time_ns", "algbw_GBps", "busbw_GBps", "lower_bound_ns",
                                        "ratio_to_bound"};
    for (size_t i = 0; ok && i < sizeof nulls / sizeof nulls[0]; i++)
      ok = cJSON_AddNullToObject(o, nulls[i]) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "status", r->not_applicable ? "n/a" : "error") &&
         cJSON_AddStringToObject(o, "error", r->error);
  }
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* Reads DIR/<case dir>/result.json; NULL when absent or not this case's valid result. */
static cJSON *read_result(const char *dir, const cli_batch_plan_t *p, const cli_batch_case_t *c) {
  char path[4096], cdir[1024];
  cli_batch_case_dir(p, c, cdir, sizeof cdir);
  snprintf(path, sizeof path, "%s/%s/result.json", dir, cdir);
  char *text = NULL;
  size_t len = 0;
  tn_err_t e = {0};
  if (tn_read_file(path, BATCH_MAX_JSON, &text, &len, &e) != TN_OK) return NULL;
  cJSON *o = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "case");
  const cJSON *topo = cJSON_GetObjectItemCaseSensitive(o, "topology");
  const cJSON *alg = cJSON_GetObjectItemCaseSensitive(o, "algorithm");
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
  bool ok = cJSON_IsNumber(idx) && idx->valuedouble == (double)c->index && cJSON_IsString(topo) &&
            strcmp(topo->valuestring, p->labels[c->topo]) == 0 && cJSON_IsString(alg) &&
            strcmp(alg->valuestring, p->algos[c->algo]) == 0 && cJSON_IsString(status);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* A result that is final: ok, or n/a (the algorithm does not make the collective). */
static bool result_ok(const cJSON *o) {
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
  return cJSON_IsString(status) &&
         (strcmp(status->valuestring, "ok") == 0 || strcmp(status->valuestring, "n/a") == 0);
}

/* Whether a result was made from the inputs whose key is given. */
static bool result_inputs_are(const cJSON *o, const char *inputs) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "inputs");
  return cJSON_IsString(v) && strcmp(v->valuestring, inputs) == 0;
}

/* Removes the Chakra set in a case folder (chakra.<rank>.et): a rerun may have fewer
 * ranks than the set it replaces. A folder that does not exist holds none. */
static tn_status_t remove_chakra(const char *dir, tn_err_t *err) {
  DIR *d = opendir(dir);
  if (d == NULL) return TN_OK;
  tn_status_t st = TN_OK;
  const struct dirent *e;
  while (st == TN_OK && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "chakra.", 7) != 0 || n < 10 || strcmp(e->d_name + n - 3, ".et") != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0 && errno != ENOENT)
      st = tn_err_set(err, TN_IO, "%s: cannot remove: %s", path, strerror(errno));
  }
  closedir(d);
  return st;
}

/* Runs one case into DIR/<case dir>/: the Chakra set, then result.json (last, atomic). */
static tn_status_t run_case(const cli_batch_plan_t *p, const cli_batch_case_t *c,
                            const char *inputs, const char *out_dir, cli_result_t *r,
                            tn_err_t *err) {
  char cdir[1024], prefix[4096], path[4096];
  cli_batch_case_dir(p, c, cdir, sizeof cdir);
  snprintf(prefix, sizeof prefix, "%s/%s", out_dir, cdir);
  tn_status_t st = remove_chakra(prefix, err);
  if (st != TN_OK) return st;
  snprintf(prefix, sizeof prefix, "%s/%s/chakra", out_dir, cdir);
  snprintf(path, sizeof path, "%s/%s/result.json", out_dir, cdir);
  topo_t *t = NULL;
  tn_err_t e = {0};
  memset(r, 0, sizeof *r);
  synth_method_t m = SYNTH_AUTO;
  const char *why = NULL;
  tn_err_t me = {0};
  if (synth_method_parse(p->algos[c->algo], "--algos", &m, &me) == TN_OK &&
      !synth_method_applies(m, p->colls[c->coll], &why)) {
    /* A pair of the cross product that means nothing (ring x alltoall): not a failure. */
    r->not_applicable = true;
    tn_fit_line(r->error, sizeof r->error, why);
  } else if (cli_load_topo_spec(p->topos[c->topo], &t, &e) == TN_OK) {
    cli_run_one(t, p->labels[c->topo], p->colls[c->coll], p->sizes[c->size], p->algos[c->algo],
                p->seed, p->seeds, p->time_limit_s,
                p->keep == CLI_BATCH_KEEP_RESULTS ? NULL : prefix, r, &e);
  } else {
    r->ok = false;
    r->status = e.status;
    tn_fit_line(r->error, sizeof r->error, e.msg);
  }
  topo_free(t);
  cJSON *o = result_json(p, c, inputs, r);
  char *text = o ? cli_json_text(o, false) : NULL;
  cJSON_Delete(o);
  st = text ? tn_mkdir_parents(path, err)
            : tn_err_set(err, TN_NOMEM, "out of memory writing %s", path);
  tn_outfile_t f;
  if (st == TN_OK && (st = tn_outfile_open(&f, path, err)) == TN_OK) {
    fprintf(f.f, "%s\n", text);
    st = tn_outfile_commit(&f, err);
  }
  free(text);
  return st;
}

/* --keep best: removes the Chakra sets of group g (one fabric, collective and size) but
 * the fastest ok case's (ties: the algorithm listed first). Every case of the group has
 * finished. */
static tn_status_t prune_group(const cli_batch_plan_t *p, const char *out_dir, size_t g,
                               tn_err_t *err) {
  size_t best = SIZE_MAX;
  double best_ns = INFINITY;
  for (size_t a = 0; a < p->nalgos; a++) {
    cli_batch_case_t c = cli_batch_case(p, g * p->nalgos + a);
    cJSON *res = read_result(out_dir, p, &c);
    const cJSON *t = res ? cJSON_GetObjectItemCaseSensitive(res, "time_ns") : NULL;
    if (res && result_ok(res) && cJSON_IsNumber(t) && t->valuedouble < best_ns)
      best = a, best_ns = t->valuedouble;
    cJSON_Delete(res);
  }
  tn_status_t st = TN_OK;
  for (size_t a = 0; st == TN_OK && a < p->nalgos; a++) {
    if (a == best) continue;
    cli_batch_case_t c = cli_batch_case(p, g * p->nalgos + a);
    char cdir[1024], dir[4096];
    cli_batch_case_dir(p, &c, cdir, sizeof cdir);
    snprintf(dir, sizeof dir, "%s/%s", out_dir, cdir);
    st = remove_chakra(dir, err);
  }
  return st;
}

/* ---- summaries ----------------------------------------------------------- */

static const char *const summary_keys[] = {
    "case",           "topology", "npus",       "collective", "algorithm",
    "size_bytes",     "time_ns",  "algbw_GBps", "busbw_GBps", "lower_bound_ns",
    "ratio_to_bound", "status",   "error"};
#define NSUMMARY_KEYS (sizeof summary_keys / sizeof summary_keys[0])

/* A value of result.json for the summary. cJSON reads numbers as doubles, so the exact
 * integers are spelled again: the case and the size from the plan, the times from their
 * picoseconds (exact below 2^50 ps, 18 minutes). */
static cJSON *summary_value(const char *key, const cJSON *v, const cli_batch_plan_t *p,
                            const cli_batch_case_t *c) {
  if (v == NULL) return cJSON_CreateNull();
  if (!cJSON_IsNumber(v)) return cJSON_Duplicate(v, true);
  if (strcmp(key, "case") == 0) return cli_json_u64(c->index);
  if (strcmp(key, "size_bytes") == 0) return cli_json_u64(p->sizes[c->size]);
  double ps = v->valuedouble * 1000.0;
  if ((strcmp(key, "time_ns") == 0 || strcmp(key, "lower_bound_ns") == 0) && ps >= 0.0 &&
      ps < 0x1p50)
    return cli_json_ns((uint64_t)llround(ps));
  return cJSON_Duplicate(v, true);
}

/* A summary row: the result's keys in the fixed order (missing ones null). */
static cJSON *summary_row(const cJSON *res, const cli_batch_plan_t *p, const cli_batch_case_t *c) {
  cJSON *row = cJSON_CreateObject();
  for (size_t k = 0; row != NULL && k < NSUMMARY_KEYS; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, summary_keys[k]);
    cJSON *copy = summary_value(summary_keys[k], v, p, c);
    if (copy == NULL || !cJSON_AddItemToObject(row, summary_keys[k], copy)) {
      cJSON_Delete(copy);
      cJSON_Delete(row);
      row = NULL;
    }
  }
  return row;
}

static void csv_value(FILE *f, const cJSON *v) {
  if (v == NULL || cJSON_IsNull(v)) return;
  if (cJSON_IsString(v)) {
    cli_csv_text(f, v->valuestring);
    return;
  }
  char *num = cJSON_PrintUnformatted(v); /* the JSON spelling: identical in both files */
  if (num) fputs(num, f);
  free(num);
}

/* Streams rows into the two summary files. */
typedef struct summary_writer {
  tn_outfile_t json, csv;
  size_t rows;
  bool open_json, open_csv;
} summary_writer_t;

static tn_status_t summary_open(summary_writer_t *w, const char *dir, tn_err_t *err) {
  char path[4096];
  memset(w, 0, sizeof *w);
  snprintf(path, sizeof path, "%s/summary.json", dir);
  tn_status_t st = tn_outfile_open(&w->json, path, err);
  w->open_json = st == TN_OK;
  snprintf(path, sizeof path, "%s/summary.csv", dir);
  if (st == TN_OK) st = tn_outfile_open(&w->csv, path, err);
  w->open_csv = st == TN_OK && w->open_json;
  if (st != TN_OK) {
    if (w->open_json) tn_outfile_abort(&w->json);
    w->open_json = false;
    return st;
  }
  fputs("{\"rows\":[", w->json.f);
  for (size_t k = 0; k < NSUMMARY_KEYS; k++)
    fprintf(w->csv.f, "%s%s", k ? "," : "", summary_keys[k]);
  fputc('\n', w->csv.f);
  return TN_OK;
}

static tn_status_t summary_add(summary_writer_t *w, const cJSON *res, const cli_batch_plan_t *p,
                               const cli_batch_case_t *c, tn_err_t *err) {
  cJSON *row = summary_row(res, p, c);
  char *text = row ? cli_json_text(row, false) : NULL;
  if (text == NULL) {
    cJSON_Delete(row);
    return tn_err_set(err, TN_NOMEM, "out of memory writing the summary");
  }
  fprintf(w->json.f, "%s\n%s", w->rows ? "," : "", text);
  for (size_t k = 0; k < NSUMMARY_KEYS; k++) {
    if (k) fputc(',', w->csv.f);
    csv_value(w->csv.f, cJSON_GetObjectItemCaseSensitive(row, summary_keys[k]));
  }
  fputc('\n', w->csv.f);
  w->rows++;
  free(text);
  cJSON_Delete(row);
  return TN_OK;
}

static tn_status_t summary_close(summary_writer_t *w, tn_status_t st, tn_err_t *err) {
  if (!w->open_csv) return st;
  if (st != TN_OK) {
    tn_outfile_abort(&w->json);
    tn_outfile_abort(&w->csv);
    return st;
  }
  fputs("\n]}\n", w->json.f);
  st = tn_outfile_commit(&w->json, err);
  if (st == TN_OK) return tn_outfile_commit(&w->csv, err);
  tn_outfile_abort(&w->csv);
  return st;
}

/* Writes batch.json (the plan and the shard) into dir, or checks that the one there
 * describes the same sweep. */
static tn_status_t plan_file(const cli_batch_plan_t *p, const char *dir, const char *shard,
                             tn_err_t *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/batch.json", dir);
  char *text = NULL, *old = NULL;
  size_t len = 0;
  tn_err_t e = {0};
  cJSON *o = plan_to_cjson(p);
  tn_status_t st = o ? TN_OK : tn_err_set(err, TN_NOMEM, "out of memory writing the plan");
  if (st == TN_OK && tn_read_file(path, BATCH_MAX_JSON, &old, &len, &e) == TN_OK) {
    cli_batch_plan_t prev;
    char *a = NULL, *b = NULL;
    cli_batch_keep_t was = p->keep;
    if (cli_batch_plan_parse_json(old, path, &prev, &e) == TN_OK) {
      was = prev.keep;
      prev.keep = p->keep; /* compared apart, for a message that says what differs */
      cli_batch_plan_json(&prev, &a, &e);
      cli_batch_plan_json(p, &b, &e);
      cli_batch_plan_free(&prev);
    } else if (e.status == TN_PARSE) { /* not a sweep at all: say what is wrong with it */
      st = tn_err_set(err, TN_PARSE, "%s (a damaged batch.json? use another -o folder)",
                      e.msg);
    }
    if (st == TN_OK && a != NULL && b != NULL && strcmp(a, b) == 0 && was != p->keep)
      st = tn_err_set(err, TN_INVAL,
                      "%s was run with --keep %s; give the same --keep or another -o folder", dir,
                      cli_batch_keep_name(was));
    if (st == TN_OK && (a == NULL || b == NULL || strcmp(a, b) != 0))
      st =
          tn_err_set(err, TN_INVAL,
                     "%s holds a different sweep (see its batch.json); use another -o folder", dir);
    free(a);
    free(b);
  }
  if (st == TN_OK && shard) {
    if (!cJSON_AddStringToObject(o, "shard", shard))
      st = tn_err_set(err, TN_NOMEM, "out of memory writing the plan");
  }
  if (st == TN_OK) text = cli_json_text(o, true);
  tn_outfile_t f;
  if (st == TN_OK && text && (st = tn_mkdir_parents(path, err)) == TN_OK &&
      (st = tn_outfile_open(&f, path, err)) == TN_OK) {
    fprintf(f.f, "%s\n", text);
    st = tn_outfile_commit(&f, err);
  }
  free(text);
  free(old);
  cJSON_Delete(o);
  return st;
}

/* ---- cost estimates and shards ------------------------------------------ */

tn_status_t cli_batch_fabrics(const cli_batch_plan_t *p, cli_batch_fabric_t **out, tn_err_t *err) {
  tn_status_t st = tn_calloc(p->ntopos ? p->ntopos : 1, sizeof **out, out, err);
  for (size_t i = 0; st == TN_OK && i < p->ntopos; i++) {
    topo_t *t = NULL;
    tn_err_t e = {0};
    cli_batch_fabric_t *f = &(*out)[i];
    f->digested = cli_topo_digest(p->topos[i], &f->digest, &e) == TN_OK;
    if (cli_load_topo_spec(p->topos[i], &t, &e) == TN_OK) {
      f->loaded = true;
      f->npus = t->npus;
      f->links = t->nlinks;
      f->bounds_us = topo_bounds_cost_us(t);
    } else if (e.status == TN_PARSE) {
      /* A malformed file is bad input, refused before any case as compare refuses it;
       * a fabric that reads but cannot be done fails its cases only. */
      *err = e;
      st = e.status;
    }
    topo_free(t);
  }
  if (st != TN_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

void cli_batch_case_inputs(const cli_batch_plan_t *p, const cli_batch_fabric_t *f,
                           const cli_batch_case_t *c, char buf[17]) {
  /* Every field is spelled and ends in a NUL, so that no two inputs run together. */
  char text[512];
  int n = snprintf(text, sizeof text,
                   "tenet batch case 1%c%016" PRIx64 "%c%s%c%" PRIu64 "%c%s%c%" PRIu64, 0,
                   f[c->topo].digest, 0, tn_coll_name(p->colls[c->coll]), 0, p->sizes[c->size], 0,
                   p->algos[c->algo], 0, p->seed);
  /* The seeds tried join the key only when more than one, so older results stay valid. */
  if (p->seeds > 1 && n > 0 && (size_t)n < sizeof text)
    n += snprintf(text + n, sizeof text - (size_t)n, "%c%u", 0, p->seeds);
  uint64_t h = tn_fnv1a64(text, n > 0 ? (size_t)n : 0, TN_FNV1A64_INIT);
  snprintf(buf, 17, "%016" PRIx64, h);
}

uint64_t cli_batch_case_cost_us(const cli_batch_plan_t *p, const cli_batch_fabric_t *f,
                                const cli_batch_case_t *c) {
  const cli_batch_fabric_t *fab = &f[c->topo];
  const char *algo = p->algos[c->algo];
  tn_coll_t coll = p->colls[c->coll];
  /* Cases that fail before any work (no fabric, no Ring All-to-All) cost their setup. */
  if (!fab->loaded || (coll == TN_ALLTOALL && strcmp(algo, "ring") == 0)) return 1000;
  /* Fitted on -j 1 runs of greedy, ring and direct over 16..256 NPU fabrics: every case
   * computes the bounds, then lowers, writes and simulates about n^2 messages (twice for
   * All-Reduce); the greedy computes the bounds once more and plans in about 2 n^2 us
   * (All-Reduce 12 n^2, All-to-All 60 n^2, growing only as n^1.5 above 64 NPUs). */
  double n = fab->npus, n2 = n * n, bounds = (double)fab->bounds_us;
  double messages = 3.0 * n2 * (coll == TN_ALLREDUCE ? 2.0 : 1.0);
  double greedy = coll == TN_ALLTOALL    ? 60.0 * n2 * fmin(1.0, sqrt(64.0 / fmax(n, 1.0)))
                  : coll == TN_ALLREDUCE ? 12.0 * n2
                                         : 2.0 * n2;
  double plan = 0.0;
  if (strcmp(algo, "greedy") == 0 || strcmp(algo, "trees") == 0 || strcmp(algo, "forest") == 0)
    plan = bounds + greedy;
  else if (strcmp(algo, "auto") == 0) /* every applicable method, each simulated */
    plan = bounds + 3.0 * greedy + 2.0 * messages;
  else if (strcmp(algo, "milp") == 0) /* the greedy's warm start, then GLPK */
    plan = bounds + 50.0 * greedy;
  /* Best of N seeds synthesizes N times (the methods that take a seed). */
  if (p->seeds > 1 &&
      (strcmp(algo, "greedy") == 0 || strcmp(algo, "auto") == 0 || strcmp(algo, "milp") == 0))
    plan *= p->seeds;
  double us = 2000.0 + bounds + messages + plan;
  return us < 1.8e19 ? (uint64_t)us + 1 : UINT64_MAX / 2;
}

/* The heap of shards orders by (estimated cost so far, shard number). */
static bool shard_less(const void *ctx, uint32_t a, uint32_t b) {
  const uint64_t *load = ctx;
  return load[a] < load[b] || (load[a] == load[b] && a < b);
}

tn_status_t cli_batch_deal(const cli_batch_plan_t *p, const cli_batch_fabric_t *f, size_t n,
                           uint32_t nshards, bool by_group, uint32_t *shard_of, tn_err_t *err) {
  size_t per = by_group ? p->nalgos : 1, units = n / per;
  uint64_t *keys = NULL, *load = NULL;
  uint32_t *order = NULL, *heap = NULL, nheap = 0;
  tn_status_t st = tn_calloc(units + 1, sizeof *keys, &keys, err);
  if (st == TN_OK) st = tn_calloc(units + 1, sizeof *order, &order, err);
  if (st == TN_OK) st = tn_calloc(nshards, sizeof *load, &load, err);
  if (st == TN_OK) st = tn_calloc(nshards, sizeof *heap, &heap, err);
  if (st != TN_OK) goto out;
  for (size_t u = 0; u < units; u++) {
    uint64_t cost = 0;
    for (size_t i = u * per; i < (u + 1) * per; i++) {
      cli_batch_case_t c = cli_batch_case(p, i);
      cost += cli_batch_case_cost_us(p, f, &c);
    }
    keys[u] = UINT64_MAX - cost; /* ascending keys: costliest first, ties by number */
  }
  if ((st = tn_radix_order(keys, (uint32_t)units, order, err)) != TN_OK) goto out;
  for (uint32_t s = 0; s < nshards; s++)
    tn_heap_push(heap, &nheap, s, shard_less, load);
  for (size_t k = 0; k < units; k++) {
    uint32_t s = tn_heap_pop(heap, &nheap, shard_less, load);
    load[s] += UINT64_MAX - keys[order[k]];
    for (size_t i = order[k] * per; i < (order[k] + 1) * per; i++)
      shard_of[i] = s;
    tn_heap_push(heap, &nheap, s, shard_less, load);
  }
out:
  free(keys);
  free(order);
  free(load);
  free(heap);
  return st;
}

/* This shard's cases, costliest first (the longest ones start first, so that -j N
 * threads finish together): index[] and their costs, *m of them. */
static tn_status_t shard_cases(const cli_batch_plan_t *p, const cli_batch_fabric_t *fab,
                               const cli_batch_opts_t *o, size_t n, size_t **index, uint64_t **cost,
                               size_t *m, tn_err_t *err) {
  uint32_t *shard_of = NULL, *order = NULL;
  uint64_t *keys = NULL;
  *index = NULL, *cost = NULL, *m = 0;
  tn_status_t st = tn_calloc(n, sizeof *shard_of, &shard_of, err);
  /* --keep best compares the algorithms of a group: one shard runs them all. */
  bool by_group = p->keep == CLI_BATCH_KEEP_BEST;
  if (st == TN_OK) st = cli_batch_deal(p, fab, n, o->nshards, by_group, shard_of, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *keys, &keys, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *order, &order, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof **index, index, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof **cost, cost, err);
  if (st != TN_OK) goto out;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (shard_of[i] != o->shard) continue;
    cli_batch_case_t c = cli_batch_case(p, i);
    (*index)[k] = i;
    (*cost)[k] = cli_batch_case_cost_us(p, fab, &c);
    keys[k] = UINT64_MAX - (*cost)[k];
    k++;
  }
  if ((st = tn_radix_order(keys, (uint32_t)k, order, err)) != TN_OK) goto out;
  for (size_t j = 0; j < k; j++) /* keys[] is free now: reuse it to permute */
    keys[j] = (*index)[order[j]];
  for (size_t j = 0; j < k; j++)
    (*index)[j] = (size_t)keys[j], keys[j] = (*cost)[order[j]];
  memcpy(*cost, keys, k * sizeof *keys);
  *m = k;
out:
  if (st != TN_OK) {
    free(*index), free(*cost);
    *index = NULL, *cost = NULL;
  }
  free(shard_of);
  free(order);
  free(keys);
  return st;
}

/* ---- running ------------------------------------------------------------- */

typedef struct batch_ctx {
  const cli_batch_plan_t *plan;
  const cli_batch_opts_t *opts;
  const cli_batch_fabric_t *fab;
  size_t *index;        /* the shard's case indices, costliest first */
  uint64_t *cost_us;    /* their estimated costs */
  uint32_t *group_left; /* --keep best: cases of each group not yet finished in this run */
  pthread_mutex_t mu;
  cli_progress_t progress;
  size_t ran, skipped, failed, not_applicable;
  volatile sig_atomic_t halt; /* an output error: stop everything */
  tn_err_t err;               /* the first such error */
} batch_ctx_t;

static void batch_job(void *arg, size_t k, unsigned worker) {
  (void)worker;
  batch_ctx_t *b = arg;
  const cli_batch_plan_t *p = b->plan;
  /* After SIGINT/SIGTERM the pool may still hand out indices: leave them untouched. */
  if (b->opts->stop != NULL && *b->opts->stop != 0) return;
  cli_batch_case_t c = cli_batch_case(p, b->index[k]);
  char inputs[17];
  cli_batch_case_inputs(p, b->fab, &c, inputs);
  cJSON *prev = read_result(b->opts->out_dir, p, &c);
  /* Done only when made from the same inputs: a changed fabric file reruns its cases. */
  bool skip =
      prev != NULL && result_ok(prev) && b->fab[c.topo].digested && result_inputs_are(prev, inputs);
  cJSON_Delete(prev);
  cli_result_t r;
  memset(&r, 0, sizeof r);
  tn_err_t e = {0};
  tn_status_t st = TN_OK;
  double t0 = tn_wall_seconds();
  if (!skip) {
    if (b->opts->test_delay_ms) {
      struct timespec ts = {(time_t)(b->opts->test_delay_ms / 1000),
                            (long)(b->opts->test_delay_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    st = run_case(p, &c, inputs, b->opts->out_dir, &r, &e);
  }
  char item[256], cdir[1024];
  cli_batch_case_dir(p, &c, cdir, sizeof cdir);
  snprintf(item, sizeof item, "%s", cdir + strlen("cases/"));
  pthread_mutex_lock(&b->mu);
  if (st != TN_OK) {
    tn_err_set(&b->err, st, "%s", e.msg);
    b->halt = 1;
  }
  if (skip)
    b->skipped++;
  else
    b->ran++;
  bool failed = !skip && !r.ok && !r.not_applicable;
  if (failed) b->failed++;
  if (!skip && r.not_applicable) b->not_applicable++;
  /* On a terminal a failure is printed above the bar; otherwise under its case line. */
  if (failed && b->opts->tty)
    fprintf(stderr, "\r\033[Ktenet batch: FAILED %s: %s\n", item, r.error);
  cli_progress_step_as(&b->progress, item, !failed, skip || r.not_applicable,
                       r.not_applicable ? "n/a" : NULL, tn_wall_seconds() - t0, b->cost_us[k]);
  /* Once every algorithm of the group has finished, keep only the fastest one's set. */
  size_t g = c.index / p->nalgos;
  if (st == TN_OK && b->group_left != NULL && --b->group_left[g] == 0) {
    tn_err_t pe = {0};
    if (prune_group(p, b->opts->out_dir, g, &pe) != TN_OK && !b->halt) {
      tn_err_set(&b->err, pe.status, "%s", pe.msg);
      b->halt = 1;
    }
  }
  if (failed && !b->opts->tty) fprintf(stderr, "tenet batch:   %s\n", r.error);
  pthread_mutex_unlock(&b->mu);
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

tn_status_t cli_batch_run(const cli_batch_plan_t *p, const cli_batch_opts_t *o,
                          cli_batch_stats_t *stats, tn_err_t *err) {
  memset(stats, 0, sizeof *stats);
  size_t n = 0;
  char shard[64];
  snprintf(shard, sizeof shard, "%u/%u", o->shard, o->nshards);
  cli_batch_fabric_t *fab = NULL;
  tn_status_t st = cli_batch_count(p, &n, err);
  if (st == TN_OK) st = cli_batch_fabrics(p, &fab, err);
  if (st == TN_OK) st = plan_file(p, o->out_dir, o->nshards > 1 ? shard : NULL, err);
  if (st != TN_OK) {
    free(fab);
    return st;
  }
  batch_ctx_t b = {.plan = p, .opts = o, .fab = fab};
  size_t m = 0;
  if ((st = shard_cases(p, fab, o, n, &b.index, &b.cost_us, &m, err)) != TN_OK) {
    free(fab);
    return st;
  }
  stats->cases = m;
  if (p->keep == CLI_BATCH_KEEP_BEST &&
      (st = tn_calloc(n / p->nalgos + 1, sizeof *b.group_left, &b.group_left, err)) == TN_OK) {
    for (size_t k = 0; k < m; k++)
      b.group_left[b.index[k] / p->nalgos]++;
  }
  if (st != TN_OK) {
    free(b.index), free(b.cost_us), free(fab);
    return st;
  }
  pthread_mutex_init(&b.mu, NULL);
  cli_progress_init(&b.progress, "batch", m, o->tty, true);
  /* The ETA weighs cases by their estimated cost: the greedy on 64 NPUs is not one
   * Ring case on 8. */
  uint64_t work = 0;
  for (size_t k = 0; k < m; k++)
    work += b.cost_us[k];
  cli_progress_set_work(&b.progress, work);
  st = cli_parallel(m, o->jobs ? o->jobs : cli_cores(), batch_job, &b, &b.halt, err);
  cli_progress_finish(&b.progress);
  pthread_mutex_destroy(&b.mu);
  stats->ran = b.ran;
  stats->skipped = b.skipped;
  stats->failed = b.failed;
  stats->not_applicable = b.not_applicable;
  if (st == TN_OK && b.err.status != TN_OK) st = tn_err_set(err, b.err.status, "%s", b.err.msg);
  stats->interrupted = st == TN_OK && b.ran + b.skipped < m;
  if (st == TN_OK && !stats->interrupted) {
    /* The summary comes from the files on disk (the truth a later merge reads too), in
     * case order. */
    qsort(b.index, m, sizeof *b.index, cmp_size);
    summary_writer_t w;
    st = summary_open(&w, o->out_dir, err);
    stats->failed = 0;
    for (size_t k = 0; st == TN_OK && k < m; k++) {
      cli_batch_case_t c = cli_batch_case(p, b.index[k]);
      cJSON *res = read_result(o->out_dir, p, &c);
      if (res == NULL) {
        char cdir[1024];
        cli_batch_case_dir(p, &c, cdir, sizeof cdir);
        st = tn_err_set(err, TN_IO, "%s/%s/result.json: missing or unreadable", o->out_dir, cdir);
      } else {
        stats->failed += !result_ok(res);
        st = summary_add(&w, res, p, &c, err);
      }
      cJSON_Delete(res);
    }
    st = summary_close(&w, st, err);
  }
  free(b.index);
  free(b.cost_us);
  free(b.group_left);
  free(fab);
  return st;
}

/* ---- merge ------------------------------------------------------------------ */

static tn_status_t load_plan(const char *dir, cli_batch_plan_t *p, tn_err_t *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/batch.json", dir);
  char *text = NULL;
  size_t len = 0;
  tn_status_t st = tn_read_file(path, BATCH_MAX_JSON, &text, &len, err);
  if (st == TN_OK) st = cli_batch_plan_parse_json(text, path, p, err);
  free(text);
  return st;
}

/* Refuses an output folder that is one of the inputs, however spelled (same file). */
static tn_status_t merge_out_check(const char *const *dirs, size_t ndirs, const char *out_dir,
                                   tn_err_t *err) {
  struct stat o, d;
  if (stat(out_dir, &o) != 0) return TN_OK; /* not there yet: not an input */
  for (size_t i = 0; i < ndirs; i++)
    if (stat(dirs[i], &d) == 0 && d.st_dev == o.st_dev && d.st_ino == o.st_ino)
      return tn_err_set(err, TN_INVAL,
                        "merge: -o %s is one of the folders to merge (%s); write the merge to "
                        "another folder",
                        out_dir, dirs[i]);
  return TN_OK;
}

/* The shard a folder's batch.json says it ran ("shard": "I/N"); false when it has none. */
static bool dir_shard(const char *dir, uint32_t *i, uint32_t *n) {
  char path[4096], *text = NULL;
  size_t len = 0;
  tn_err_t e = {0};
  snprintf(path, sizeof path, "%s/batch.json", dir);
  if (tn_read_file(path, BATCH_MAX_JSON, &text, &len, &e) != TN_OK) return false;
  cJSON *o = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "shard");
  bool ok = cJSON_IsString(s) && cli_parse_shard(s->valuestring, i, n, &e) == TN_OK;
  cJSON_Delete(o);
  return ok;
}

/* Every case has a result in one of the folders; otherwise TN_INFEASIBLE with one line
 * that counts the missing cases, names the shards of the sweep none of the folders ran,
 * and lists every missing case (runs of numbers as ranges "4-7"). */
static tn_status_t merge_complete(const cli_batch_plan_t *p, size_t n, const char *const *dirs,
                                  size_t ndirs, tn_err_t *err) {
  tn_sb_t cases, shards;
  tn_sb_init(&cases, err);
  tn_sb_init(&shards, err);
  size_t missing = 0, run_start = SIZE_MAX;
  for (size_t i = 0; i <= n; i++) {
    bool found = i == n; /* a sentinel that ends the last run */
    cli_batch_case_t c = cli_batch_case(p, i < n ? i : 0);
    for (size_t d = 0; !found && d < ndirs; d++) {
      cJSON *res = read_result(dirs[d], p, &c);
      found = res != NULL;
      cJSON_Delete(res);
    }
    if (!found) {
      missing++;
      if (run_start == SIZE_MAX) run_start = i;
    } else if (run_start != SIZE_MAX) {
      tn_sb_printf(&cases, cases.v.len ? ", %zu" : "%zu", run_start);
      if (i - 1 > run_start) tn_sb_printf(&cases, "-%zu", i - 1);
      run_start = SIZE_MAX;
    }
  }
  /* Shards: the count every folder that ran one agrees on, and those none ran. */
  uint32_t count = 0, nabsent = 0;
  bool agree = true;
  for (size_t d = 0; d < ndirs; d++) {
    uint32_t si = 0, sn = 0;
    if (dir_shard(dirs[d], &si, &sn)) agree = agree && (count == 0 || count == sn), count = sn;
  }
  for (uint32_t s = 0; agree && missing > 0 && s < count; s++) {
    bool present = false;
    for (size_t d = 0; !present && d < ndirs; d++) {
      uint32_t si = 0, sn = 0;
      present = dir_shard(dirs[d], &si, &sn) && si == s;
    }
    if (!present) tn_sb_printf(&shards, "%s%u/%u", nabsent++ ? ", " : "", s, count);
  }
  tn_status_t st = cases.st != TN_OK ? cases.st : shards.st;
  if (st == TN_OK && missing > 0) {
    st = tn_err_set(err, TN_INFEASIBLE,
                    "%zu of %zu cases have no result in any of the folders%s%s%s%s: cases %s",
                    missing, n,
                    nabsent == 0   ? ""
                    : nabsent == 1 ? " (shard "
                                   : " (shards ",
                    nabsent ? (const char *)shards.v.data : "",
                    nabsent == 0   ? ""
                    : nabsent == 1 ? " is"
                                   : " are",
                    nabsent ? " not among them)" : "", (const char *)cases.v.data);
  }
  tn_vec_free(&cases.v);
  tn_vec_free(&shards.v);
  return st;
}

tn_status_t cli_batch_merge(const char *const *dirs, size_t ndirs, const char *out_dir,
                            size_t *failed, tn_err_t *err) {
  *failed = 0;
  cli_batch_plan_t plan, other;
  char *a = NULL, *b = NULL;
  size_t n = 0;
  memset(&plan, 0, sizeof plan);
  tn_status_t st =
      ndirs ? load_plan(dirs[0], &plan, err) : tn_err_set(err, TN_INVAL, "no folder to merge");
  if (st == TN_OK) st = merge_out_check(dirs, ndirs, out_dir, err);
  if (st == TN_OK) st = cli_batch_plan_json(&plan, &a, err);
  for (size_t d = 1; st == TN_OK && d < ndirs; d++) {
    if ((st = load_plan(dirs[d], &other, err)) != TN_OK) break;
    st = cli_batch_plan_json(&other, &b, err);
    cli_batch_plan_free(&other);
    if (st == TN_OK && strcmp(a, b) != 0)
      st = tn_err_set(err, TN_INVAL, "%s and %s hold different sweeps (compare their batch.json)",
                      dirs[0], dirs[d]);
    free(b);
    b = NULL;
  }
  if (st == TN_OK) st = cli_batch_count(&plan, &n, err);
  /* Check completeness first so that nothing is written for an incomplete merge. */
  if (st == TN_OK) st = merge_complete(&plan, n, dirs, ndirs, err);
  if (st == TN_OK) st = plan_file(&plan, out_dir, NULL, err);
  summary_writer_t w;
  if (st == TN_OK && (st = summary_open(&w, out_dir, err)) == TN_OK) {
    for (size_t i = 0; st == TN_OK && i < n; i++) {
      cli_batch_case_t c = cli_batch_case(&plan, i);
      /* Prefer an ok result; otherwise the first folder's failure. */
      cJSON *pick = NULL;
      for (size_t d = 0; d < ndirs && !(pick && result_ok(pick)); d++) {
        cJSON *res = read_result(dirs[d], &plan, &c);
        if (res && (pick == NULL || result_ok(res))) {
          cJSON_Delete(pick);
          pick = res;
        } else {
          cJSON_Delete(res);
        }
      }
      if (pick == NULL) {
        st = tn_err_set(err, TN_IO, "case %zu: result vanished while merging", i);
      } else {
        *failed += !result_ok(pick);
        st = summary_add(&w, pick, &plan, &c, err);
      }
      cJSON_Delete(pick);
    }
    st = summary_close(&w, st, err);
  }
  free(a);
  cli_batch_plan_free(&plan);
  return st;
}
