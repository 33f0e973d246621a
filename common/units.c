/* common/units.c — sizes, integers and bandwidth: parsing, printing and the one
 * bytes-over-a-link formula that the planner and the simulator share. */
#include "common/common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *suffix;
  uint64_t mult;
} unit_t;

static const unit_t units[] = {
    {"", 1},
    {"B", 1},
    {"KB", 1000ull},
    {"MB", 1000000ull},
    {"GB", 1000000000ull},
    {"TB", 1000000000000ull},
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
    {"K", 1ull << 10}, /* shorthand accepted on input only */
    {"M", 1ull << 20},
    {"G", 1ull << 30},
};

tn_status_t tn_parse_size(const char *s, uint64_t *bytes, tn_err_t *err) {
  if (s == NULL || *s == '\0') return tn_err_set(err, TN_INVAL, "empty size");
  const char *p = s;
  if (!isdigit((unsigned char)*p))
    return tn_err_set(err, TN_INVAL, "size '%s' must start with a digit", s);
  uint64_t v = 0;
  while (isdigit((unsigned char)*p)) {
    uint64_t d = (uint64_t)(*p - '0');
    if (!tn_mul_u64(v, 10, &v) || !tn_add_u64(v, d, &v))
      return tn_err_set(err, TN_INVAL, "size '%s' is too large", s);
    p++;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(p, units[i].suffix) == 0) {
      if (!tn_mul_u64(v, units[i].mult, bytes))
        return tn_err_set(err, TN_INVAL, "size '%s' is too large", s);
      return TN_OK;
    }
  }
  return tn_err_set(err, TN_INVAL,
                    "size '%s' has unknown unit '%s' (use B, KB, MB, GB, KiB, MiB or GiB)", s,
                    p);
}

tn_status_t tn_parse_size_list(const char *s, uint64_t **out, size_t *n, tn_err_t *err) {
  *out = NULL;
  *n = 0;
  if (s == NULL || *s == '\0') return tn_err_set(err, TN_INVAL, "empty size list");
  char *copy = NULL;
  tn_status_t st = tn_strdup(s, &copy, err);
  if (st != TN_OK) return st;
  tn_vec_t v;
  tn_vec_init(&v, sizeof(uint64_t));
  char *range = strstr(copy, "..");
  if (range != NULL) {
    *range = '\0';
    uint64_t lo = 0, hi = 0;
    if ((st = tn_parse_size(copy, &lo, err)) != TN_OK) goto fail;
    if ((st = tn_parse_size(range + 2, &hi, err)) != TN_OK) goto fail;
    if (lo == 0 || hi < lo) {
      st = tn_err_set(err, TN_INVAL, "size range '%s' must go from >0 up", s);
      goto fail;
    }
    /* The range doubles from lo: an end it cannot reach would be dropped silently. */
    uint64_t reach = lo;
    while (reach < hi && reach <= UINT64_MAX / 2)
      reach *= 2;
    if (reach != hi) {
      char a[32], b[32];
      st = tn_err_set(err, TN_INVAL,
                      "size range '%s' doubles from %s and never reaches %s (end it at %s, or "
                      "list the sizes)",
                      s, tn_fmt_size(lo, a, sizeof a), range + 2,
                      tn_fmt_size(reach / 2 >= lo ? reach / 2 : lo, b, sizeof b));
      goto fail;
    }
    for (uint64_t x = lo; x <= hi; x *= 2) {
      if ((st = tn_vec_push(&v, &x, err)) != TN_OK) goto fail;
      if (x > UINT64_MAX / 2) break;
    }
  } else {
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      uint64_t x = 0;
      if ((st = tn_parse_size(tok, &x, err)) != TN_OK) goto fail;
      if ((st = tn_vec_push(&v, &x, err)) != TN_OK) goto fail;
    }
    if (v.len == 0) {
      st = tn_err_set(err, TN_INVAL, "empty size list '%s'", s);
      goto fail;
    }
  }
  free(copy);
  *out = v.data;
  *n = v.len;
  return TN_OK;
fail:
  free(copy);
  tn_vec_free(&v);
  return st;
}

const char *tn_fmt_size(uint64_t bytes, char *buf, size_t len) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  uint64_t v = bytes;
  while (u + 1 < sizeof names / sizeof names[0] && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, "%llu%s", (unsigned long long)v, names[u]);
  return buf;
}

tn_status_t tn_parse_u64(const char *s, uint64_t min, uint64_t max, const char *what,
                         uint64_t *out, tn_err_t *err) {
  if (s == NULL || !isdigit((unsigned char)*s))
    return tn_err_set(err, TN_INVAL, "%s: '%s' is not a non-negative integer", what,
                      s ? s : "");
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return tn_err_set(err, TN_INVAL, "%s: '%s' is not a non-negative integer", what, s);
  if (v < min || v > max)
    return tn_err_set(err, TN_INVAL, "%s: %s is out of range [%llu, %llu]", what, s,
                      (unsigned long long)min, (unsigned long long)max);
  *out = (uint64_t)v;
  return TN_OK;
}

tn_status_t tn_parse_double(const char *s, double min, double max, const char *what,
                            double *out, tn_err_t *err) {
  if (s == NULL || *s == '\0') return tn_err_set(err, TN_INVAL, "%s: empty value", what);
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v))
    return tn_err_set(err, TN_INVAL, "%s: '%s' is not a number", what, s);
  if (v < min || v > max)
    return tn_err_set(err, TN_INVAL, "%s: %s is out of range [%g, %g]", what, s, min, max);
  *out = v;
  return TN_OK;
}

bool tn_xfer_ps(uint64_t bytes, double gbps, uint64_t *ps) {
  /* bytes / (gbps * 2^30 B/s) seconds = bytes * 1e12 / (gbps * 2^30) ps. The comparison
   * comes before the conversion: a double past 2^63 has no llround. */
  if (!(gbps > 0.0)) return false;
  double x = (double)bytes * 1e12 / (gbps * TN_GIB);
  if (!(x <= (double)TN_TIME_MAX_PS)) return false;
  uint64_t r = (uint64_t)llround(x);
  if (r > TN_TIME_MAX_PS) return false;
  *ps = r;
  return true;
}

bool tn_time_from_double(double ps, uint64_t *out) {
  if (!(ps >= 0.0 && ps <= (double)TN_TIME_MAX_PS)) return false;
  uint64_t r = (uint64_t)floor(ps);
  if (r > TN_TIME_MAX_PS) return false;
  *out = r;
  return true;
}

tn_status_t tn_time_overflow(tn_err_t *err, const char *fmt, ...) {
  char what[TN_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return tn_err_set(err, TN_INVAL,
                    "%s passes 2^62 ps (53.4 days), the longest time tenet computes with", what);
}

double tn_gbps(uint64_t bytes, uint64_t time_ps) {
  if (time_ps == 0) return 0.0;
  return (double)bytes / ((double)time_ps * 1e-12) / TN_GIB;
}

const char *tn_coll_name(tn_coll_t c) {
  switch (c) {
  case TN_ALLGATHER: return "allgather";
  case TN_REDUCESCATTER: return "reducescatter";
  case TN_ALLREDUCE: return "allreduce";
  case TN_ALLTOALL: return "alltoall";
  }
  return "unknown";
}

tn_status_t tn_coll_parse(const char *s, tn_coll_t *out, tn_err_t *err) {
  static const struct {
    const char *name;
    tn_coll_t c;
  } names[] = {{"allgather", TN_ALLGATHER},   {"ag", TN_ALLGATHER},
               {"reducescatter", TN_REDUCESCATTER}, {"rs", TN_REDUCESCATTER},
               {"allreduce", TN_ALLREDUCE},   {"ar", TN_ALLREDUCE},
               {"alltoall", TN_ALLTOALL},     {"a2a", TN_ALLTOALL}};
  /* The name without its separators: all-gather, all_gather, reduce_scatter, all-to-all. */
  char plain[32];
  size_t len = 0;
  for (size_t i = 0; s != NULL && s[i] != '\0' && len + 1 < sizeof plain; i++)
    if (s[i] != '-' && s[i] != '_') plain[len++] = s[i];
  plain[len] = '\0';
  for (size_t i = 0; s != NULL && strlen(s) < sizeof plain && i < sizeof names / sizeof names[0];
       i++) {
    if (strcmp(plain, names[i].name) == 0) {
      *out = names[i].c;
      return TN_OK;
    }
  }
  return tn_err_set(err, TN_INVAL,
                    "unknown collective '%s' (use allgather, reducescatter, allreduce or "
                    "alltoall)",
                    s ? s : "");
}

tn_status_t tn_alltoall_check(uint64_t size, uint32_t npus, uint32_t pieces, tn_err_t *err) {
  if (npus == 0 || pieces == 0) return TN_OK;
  if (size % npus != 0)
    return tn_err_set(err, TN_INVAL,
                      "All-to-All of %llu B on %u ranks: the size must be a multiple of %u (an "
                      "equal block for every rank)",
                      (unsigned long long)size, npus, npus);
  if (size / npus % pieces != 0)
    return tn_err_set(err, TN_INVAL,
                      "All-to-All of %llu B on %u ranks: a block of %llu B does not cut into %u "
                      "equal pieces",
                      (unsigned long long)size, npus, (unsigned long long)(size / npus), pieces);
  return TN_OK;
}

bool tn_coll_space(tn_coll_t c, uint32_t npus, uint64_t size, uint64_t *space) {
  if (c != TN_ALLTOALL) {
    *space = size;
    return true;
  }
  return tn_mul_u64(size, npus, space);
}

double tn_coll_busbw_factor(tn_coll_t c, uint32_t npus) {
  if (npus == 0) return 0.0;
  double f = (double)(npus - 1) / (double)npus;
  return c == TN_ALLREDUCE ? 2.0 * f : f;
}

/* TENET_MEM_CAP as a size; false when it is set but not one (or is 0). */
static bool env_mem_cap(uint64_t *cap, tn_err_t *err) {
  const char *env = getenv("TENET_MEM_CAP");
  if (env == NULL || *env == '\0') return true;
  uint64_t v = 0;
  tn_err_t e = {0};
  if (tn_parse_size(env, &v, &e) != TN_OK || v == 0) {
    if (err)
      tn_err_set(err, TN_INVAL, "TENET_MEM_CAP='%.40s' is not a memory size (e.g. 6GiB)", env);
    return false;
  }
  *cap = v;
  return true;
}

uint64_t tn_mem_cap(void) {
  uint64_t cap = TN_MEM_CAP_DEFAULT;
  return env_mem_cap(&cap, NULL) ? cap : TN_MEM_CAP_DEFAULT;
}

tn_status_t tn_mem_env_check(tn_err_t *err) {
  uint64_t cap = 0;
  return env_mem_cap(&cap, err) ? TN_OK : TN_INVAL;
}

/* bytes in GiB with two decimals, or in MiB with one below 1 GiB. */
static const char *mem_fmt(uint64_t bytes, char *buf, size_t len) {
  if (bytes >= ((uint64_t)1 << 30))
    snprintf(buf, len, "%.2f GiB", (double)bytes / TN_GIB);
  else
    snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
  return buf;
}

uint64_t tn_mem_threads(uint64_t base, uint64_t work, uint32_t beside_pct, unsigned threads) {
  if (threads >= 2 && beside_pct != 0 && work / 100 > UINT64_MAX / 2 / beside_pct)
    return UINT64_MAX;
  uint64_t more = threads >= 2 ? work / 100 * beside_pct + work % 100 * beside_pct / 100 : 0;
  uint64_t sum = base + work, all = sum + more;
  return sum < base || all < sum ? UINT64_MAX : all;
}

tn_status_t tn_mem_check(const char *what, uint64_t need_bytes, tn_err_t *err) {
  uint64_t cap = tn_mem_cap();
  if (need_bytes <= cap) return TN_OK;
  char need_s[32], cap_s[32];
  return tn_err_set(err, TN_LIMIT, "%s needs about %s of memory, over the %s cap (TENET_MEM_CAP)",
                    what, mem_fmt(need_bytes, need_s, sizeof need_s),
                    mem_fmt(cap, cap_s, sizeof cap_s));
}
