/* bench/bench_scale.c — issue 17's scale target: `tenet synth -c allgather` on 4096-NPU
 * fabrics as a whole process (synthesis, order-proofing, verification and the 4096 Chakra
 * files), its wall time, CPU time and peak memory against 30 s and 2 GiB, with the method
 * auto chose and its time over the bound. Prints figures; not a test.
 *
 * Usage: bench_scale [-s SIZE] [-c COLL] [FABRIC ...]
 *   default: mesh-64x64 and torus-16x16x16, All-Gather of 1GiB. The files go to a
 *   temporary directory under $TMPDIR (default /tmp), removed at the end. */
#define _DEFAULT_SOURCE /* wait4 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_proc.h"
#include "common/common.h"

#define TARGET_S 30.0
#define TARGET_KIB (2.0 * 1024 * 1024)

/* The text after "key": in js up to the next comma or brace, into out. */
static void json_field(const char *js, const char *key, char *out, size_t len) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(js, pat);
  out[0] = '\0';
  if (!p) return;
  p += strlen(pat);
  if (*p == '"') p++; /* a string: its text */
  size_t n = strcspn(p, "\",}");
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

int main(int argc, char **argv) {
  const char *size = "1GiB", *coll = "allgather", *fabrics[32];
  int nf = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
      size = argv[++i];
    else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
      coll = argv[++i];
    else if (nf < 32)
      fabrics[nf++] = argv[i];
  }
  if (nf == 0) fabrics[nf++] = "mesh-64x64", fabrics[nf++] = "torus-16x16x16";
  char tenet[4096], dir[4096];
  tenet_path(argv[0], tenet, sizeof tenet);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/bench_scale.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("bench_scale: mkdtemp");
    return 1;
  }
  printf("# tenet synth -c %s -s %s as a whole process (targets: %.0f s, %.0f GiB peak)\n", coll,
         size, TARGET_S, TARGET_KIB / 1024 / 1024);
  printf("%-16s %-8s %10s %10s %10s %10s %s\n", "fabric", "method", "wall s", "CPU s", "peak MiB",
         "time/bound", "");
  int bad = 0;
  for (int f = 0; f < nf; f++) {
    char prefix[4200], json[4200];
    snprintf(prefix, sizeof prefix, "%s/x", dir);
    snprintf(json, sizeof json, "%s/out.json", dir);
    const char *av[] = {tenet, "synth", "-t", fabrics[f], "-c",     coll,
                        "-s",  size,    "-o", prefix,     "--json", NULL};
    struct rusage ru;
    double w0 = wall_now();
    pid_t pid = spawn_child(av, json);
    int status = 0;
    while (pid > 0 && wait4(pid, &status, 0, &ru) < 0)
      if (errno != EINTR) break;
    double wall = wall_now() - w0;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      printf("%-16s failed (status %d)\n", fabrics[f], status);
      bad = 1;
      continue;
    }
    double cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime), peak = (double)ru.ru_maxrss;
    static char js[1 << 16];
    FILE *in = fopen(json, "rb");
    size_t n = in ? fread(js, 1, sizeof js - 1, in) : 0;
    if (in) fclose(in);
    js[n] = '\0';
    char method[64], ratio[64];
    json_field(js, "algorithm", method, sizeof method);
    json_field(js, "ratio_to_bound", ratio, sizeof ratio);
    bool ok = wall <= TARGET_S && peak <= TARGET_KIB;
    printf("%-16s %-8s %10.2f %10.2f %10.1f %10.5s %s\n", fabrics[f], method, wall, cpu,
           peak / 1024, ratio, ok ? "" : "(over a target)");
    /* The next fabric's files replace these; remove them so the disk holds one set. */
    tn_remove_tree(dir);
    if (mkdir(dir, 0700) != 0) {
      perror("bench_scale: mkdir");
      return 1;
    }
  }
  tn_remove_tree(dir);
  return bad;
}
