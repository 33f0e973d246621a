/* bench/bench_workload.c — whole training steps (issue 18): the time of `tenet workload`
 * (all synthesis, cold and from the cache) and of `tenet sim --workload` on a 64-rank step
 * of 100 collectives of mixed sizes, against the targets (5 s and 1 s), and the step
 * times the README quotes: example steps on mesh-8x8 and hierarchical-16x8 with tenet's
 * sets against Ring and Direct for every collective.
 * Usage: bench_workload [MAX_SIZE]   (the mixed step's largest collective, default 8MiB) */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/workload.h"
#include "emit/emit.h"

#define TARGET_WORKLOAD_S 5.0
#define TARGET_SIM_S 1.0

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Runs cmd with the NULL-terminated arguments in-process, its stdout to the file out;
 * returns its exit code. */
static int quiet(int (*cmd)(int, char **), const char *out, ...) {
  static char store[32][600];
  char *argv[33];
  int argc = 0;
  va_list ap;
  va_start(ap, out);
  for (const char *a; argc < 32 && (a = va_arg(ap, const char *)) != NULL; argc++) {
    snprintf(store[argc], sizeof store[argc], "%s", a);
    argv[argc] = store[argc];
  }
  va_end(ap);
  argv[argc] = NULL;
  fflush(stdout);
  int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  close(fd);
  int rc = cmd(argc, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  return rc;
}

static int sim_cmd(int argc, char **argv) {
  return argc < 6 ? 1 : cli_wl_sim(argv[2], argv[3], argv[5], true);
}

/* A number in the JSON object of file path: o[key], or o[outer][key] when outer is given
 * (-1 when absent). */
static double json_ns(const char *path, const char *outer, const char *key) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cJSON *o = cJSON_Parse(buf);
  const cJSON *in = outer ? cJSON_GetObjectItemCaseSensitive(o, outer) : o;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, key);
  double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
  cJSON_Delete(o);
  return x;
}

static int example(const char *kind, uint32_t npus, uint32_t layers, const char *size,
                   const char *us, const char *prefix) {
  char n[16], l[16];
  snprintf(n, sizeof n, "%u", npus);
  snprintf(l, sizeof l, "%u", layers);
  return quiet(cmd_workload, "/dev/null", "workload", "example", kind, "-n", n, "--layers", l, "-s",
               size, "--compute-us", us, "-o", prefix, NULL);
}

/* `tenet workload` on topo (timed), then `tenet sim --workload`: the three step times. */
static int step_row(const char *dir, const char *topo, const char *kind, const char *label) {
  char prefix[512], out[512], simjson[600];
  snprintf(prefix, sizeof prefix, "%s/%s", dir, kind);
  snprintf(out, sizeof out, "%s/%s-%s", dir, topo, kind);
  snprintf(simjson, sizeof simjson, "%s.json", out);
  double w0 = wall_s(), c0 = cpu_s();
  int rc = quiet(cmd_workload, "/dev/null", "workload", "-t", topo, prefix, "-o", out, NULL);
  double w = wall_s() - w0, c = cpu_s() - c0;
  if (rc == 0)
    rc = quiet(sim_cmd, simjson, "sim", "-t", topo, prefix, "--workload", out, "--json", NULL);
  if (rc != 0) {
    printf("%-18s %-10s failed (exit %d)\n", topo, label, rc);
    return 1;
  }
  double t = json_ns(simjson, NULL, "step_ns"), r = json_ns(simjson, "ring", "step_ns"),
         d = json_ns(simjson, "direct", "step_ns");
  printf("%-18s %-10s %12.3f %12.3f %12.3f %8.3fx %8.2f %8.2f\n", topo, label, t / 1e3, r / 1e3,
         d / 1e3, r / t, w, c);
  return 0;
}

int main(int argc, char **argv) {
  const char *max_size = argc > 1 ? argv[1] : "8MiB";
  tn_alloc_setup(); /* the commands run in-process: with the allocator a tenet process has */
  char dir[] = "/tmp/bench_workload.XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  tn_err_t err = {0};
  (void)err;
  int bad = 0;
  char prefix[512], out[512], cache[512];
  snprintf(prefix, sizeof prefix, "%s/mixed", dir);
  snprintf(out, sizeof out, "%s/mixed-out", dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  printf("# a 64-rank step of 100 collectives (All-Gather, Reduce-Scatter, All-Reduce,\n"
         "# All-to-All; sizes %s/128 .. %s), 100 us of compute before each, on mesh-8x8\n",
         max_size, max_size);
  bad |= example("mixed", 64, 100, max_size, "100", prefix);
  for (int pass = 0; pass < 2; pass++) {
    double w0 = wall_s(), c0 = cpu_s();
    int rc = quiet(cmd_workload, "/dev/null", "workload", "-t", "mesh-8x8", prefix, "-o", out,
                   "--cache", cache, "--json", NULL);
    double w = wall_s() - w0, c = cpu_s() - c0;
    printf("tenet workload (%s): %.2f s wall, %.2f s CPU (target %.0f s)%s\n",
           pass ? "every set from the cache" : "every set synthesized", w, c, TARGET_WORKLOAD_S,
           rc ? " FAILED" : "");
    bad |= rc != 0;
  }
  double w0 = wall_s(), c0 = cpu_s();
  char simjson[600];
  snprintf(simjson, sizeof simjson, "%s/sim.json", dir);
  int rc =
      quiet(sim_cmd, simjson, "sim", "-t", "mesh-8x8", prefix, "--workload", out, "--json", NULL);
  double w = wall_s() - w0, c = cpu_s() - c0;
  printf("tenet sim --workload (3 steps: tenet, Ring, Direct): %.2f s wall, %.2f s CPU "
         "(target %.0f s), %.0f messages in tenet's step%s\n",
         w, c, TARGET_SIM_S, json_ns(simjson, NULL, "messages"), rc ? " FAILED" : "");
  bad |= rc != 0;

  printf("\n# example steps: tenet's sets against Ring and Direct for every collective\n");
  printf("%-18s %-10s %12s %12s %12s %9s %8s %8s\n", "fabric", "step", "tenet us", "ring us",
         "direct us", "ring/tenet", "wall s", "CPU s");
  printf("(wall and CPU: tenet workload, every set synthesized)\n");
  static const struct {
    const char *topo, *kind, *size, *us;
    uint32_t npus, layers;
  } rows[] = {
      {"mesh-8x8", "dp", "64MiB", "1000", 64, 4},
      {"mesh-8x8", "tp", "16MiB", "200", 64, 4},
      {"hierarchical-16x8", "dp", "64MiB", "1000", 128, 4},
      {"hierarchical-16x8", "tp", "16MiB", "200", 128, 4},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char kp[600], label[64];
    snprintf(label, sizeof label, "%s-%u", rows[i].kind, rows[i].npus);
    snprintf(kp, sizeof kp, "%s/%s", dir, label);
    bad |= example(rows[i].kind, rows[i].npus, rows[i].layers, rows[i].size, rows[i].us, kp);
    snprintf(label, sizeof label, "%s %s", rows[i].kind, rows[i].size);
    char kind[32];
    snprintf(kind, sizeof kind, "%s-%u", rows[i].kind, rows[i].npus);
    bad |= step_row(dir, rows[i].topo, kind, label);
  }
  tn_remove_tree(dir);
  return bad ? 1 : 0;
}
