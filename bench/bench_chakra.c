/* bench/bench_chakra.c — speed of the Chakra ET writer and reader on a large set: a ring
 * All-Reduce shape (reduce-scatter with reduce RECVs and COMPs, then all-gather) on N ranks,
 * written to a scratch prefix and read back. Prints ms, nodes/s and MB/s. Not a test.
 * Usage: bench_chakra [RANKS (default 128)] [SCRATCH_DIR (default /tmp)] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "emit/emit.h"

static void die(const tn_err_t *err) {
  fprintf(stderr, "bench_chakra: %s\n", err->msg);
  exit(1);
}

/* One rank of a ring All-Reduce: n-1 steps of send, reduce RECV, COMP, then n-1 steps of
 * send and copy RECV, each step depending on the previous one. */
static void ring_rank(algo_t *a, uint32_t r, tn_err_t *err) {
  uint32_t n = a->npus, last = 0, id, rv;
  uint64_t chunk = a->size_bytes / n;
  for (uint32_t s = 0; s + 1 < n; s++) {
    uint32_t out = (r + 2 * n - s - 1) % n, in = (r + 2 * n - s - 2) % n;
    if (algo_add_send(a, r, (r + 1) % n, (int32_t)s, chunk, &last, s > 0, &out, 1, NULL, err) ||
        algo_add_recv(a, r, (r + n - 1) % n, (int32_t)s, chunk, true, NULL, 0, &in, 1, &rv, err) ||
        algo_add_comp(a, r, 0, &rv, 1, &in, 1, &id, err))
      die(err);
    last = id;
  }
  for (uint32_t s = 0; s + 1 < n; s++) {
    uint32_t out = (r + n - s) % n, in = (r + 2 * n - 1 - s) % n;
    int32_t tag = (int32_t)(n - 1 + s);
    if (algo_add_send(a, r, (r + 1) % n, tag, chunk, &last, 1, &out, 1, NULL, err) ||
        algo_add_recv(a, r, (r + n - 1) % n, tag, chunk, false, NULL, 0, &in, 1, &id, err))
      die(err);
    last = id;
  }
}

/* CPU seconds of this process: steadier than wall time on a shared machine. */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* System (kernel) CPU seconds so far: the file system's share of a write or read. */
static double sys_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t set_bytes(const char *prefix, uint32_t n) {
  uint64_t total = 0;
  char path[1200];
  for (uint32_t r = 0; r < n; r++) {
    struct stat sb;
    snprintf(path, sizeof path, "%s.%u.et", prefix, r);
    if (stat(path, &sb) == 0) total += (uint64_t)sb.st_size;
  }
  return total;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 128;
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  if (n < 2 || n > 4096) {
    fprintf(stderr, "bench_chakra: RANKS must be 2..4096\n");
    return 1;
  }
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/bench_chakra/ar", dir);
  tn_err_t err = {0};
  algo_t *a = NULL, *b = NULL;
  if (algo_create("ring", TN_ALLREDUCE, n, 1, (uint64_t)n << 20, &a, &err) != TN_OK) die(&err);
  for (uint32_t r = 0; r < n; r++)
    ring_rank(a, r, &err);
  uint64_t nodes = algo_node_count(a);
  double best_w = 1e30, best_r = 1e30, cpu_w = 1e30, cpu_r = 1e30, sys_w = 0, sys_r = 0;
  for (int rep = 0; rep < 5; rep++) {
    double c0 = cpu_seconds(), s0 = sys_seconds(), t0 = tn_wall_seconds();
    if (emit_chakra_write(a, prefix, &err) != TN_OK) die(&err);
    double c1 = cpu_seconds(), s1 = sys_seconds(), t1 = tn_wall_seconds();
    if (emit_chakra_read(prefix, 0, &b, &err) != TN_OK) die(&err);
    double c2 = cpu_seconds(), s2 = sys_seconds(), t2 = tn_wall_seconds();
    if (c1 - c0 < cpu_w) cpu_w = c1 - c0, sys_w = s1 - s0;
    if (c2 - c1 < cpu_r) cpu_r = c2 - c1, sys_r = s2 - s1;
    if (!algo_equal(a, b)) {
      fprintf(stderr, "bench_chakra: the set did not read back equal\n");
      return 1;
    }
    algo_free(b);
    if (t1 - t0 < best_w) best_w = t1 - t0;
    if (t2 - t1 < best_r) best_r = t2 - t1;
  }
  uint64_t bytes = set_bytes(prefix, n);
  printf("chakra set: %u ranks, %llu nodes, %llu messages, %.2f MB on disk\n", n,
         (unsigned long long)nodes, (unsigned long long)algo_send_count(a), (double)bytes / 1e6);
  printf("write: %8.1f ms wall, %8.1f ms CPU  %6.2f M nodes/s  %7.1f MB/s (CPU, best of 5)\n",
         best_w * 1e3, cpu_w * 1e3, (double)nodes / cpu_w / 1e6, (double)bytes / cpu_w / 1e6);
  printf("       of which ~%.1f ms in the kernel (file creation, rename, writes)\n", sys_w * 1e3);
  printf("read:  %8.1f ms wall, %8.1f ms CPU  %6.2f M nodes/s  %7.1f MB/s (CPU, best of 5)\n",
         best_r * 1e3, cpu_r * 1e3, (double)nodes / cpu_r / 1e6, (double)bytes / cpu_r / 1e6);
  printf("       of which ~%.1f ms in the kernel (open, map)\n", sys_r * 1e3);
  printf("read/write CPU time ratio: %.2f\n", cpu_r / cpu_w);
  algo_free(a);
  return 0;
}
