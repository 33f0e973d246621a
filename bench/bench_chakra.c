/* bench/bench_chakra.c — speed of the Chakra ET writer and reader on a large set: a ring
 * All-Reduce shape (reduce-scatter with reduce RECVs and COMPs, then all-gather) on N ranks,
 * written to a scratch prefix and read back. Prints ms, nodes/s and MB/s, and the writer
 * against protobuf-c packing the same nodes (unpacked from our files) and writing the same
 * bytes: the speed the fast writer exists for. Not a test.
 * Usage: bench_chakra [RANKS (default 128)] [SCRATCH_DIR (default /tmp)] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "emit/emit.h"
#include "et_def.pb-c.h"

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

/* Every node of the set at prefix, unpacked by protobuf-c; *counts per rank. */
static ChakraProtoMsg__Node **unpack_set(const char *prefix, uint32_t n, uint32_t *counts,
                                         ChakraProtoMsg__GlobalMetadata **meta) {
  size_t cap = 1024, len = 0;
  ChakraProtoMsg__Node **v = malloc(cap * sizeof *v);
  for (uint32_t r = 0; v && r < n; r++) {
    char path[1200], *data = NULL;
    size_t size = 0, pos = 0;
    tn_err_t err = {0};
    snprintf(path, sizeof path, "%s.%u.et", prefix, r);
    if (tn_read_file(path, (size_t)1 << 31, &data, &size, &err) != TN_OK) die(&err);
    counts[r] = 0;
    for (size_t rec = 0; pos < size; rec++) {
      uint64_t l = 0;
      for (int shift = 0; pos < size; shift += 7) {
        uint8_t b = (uint8_t)data[pos++];
        l |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
      }
      const uint8_t *body = (const uint8_t *)data + pos;
      pos += l;
      if (rec == 0) {
        if (r == 0) *meta = chakra_proto_msg__global_metadata__unpack(NULL, l, body);
        continue;
      }
      if (len == cap) v = realloc(v, (cap *= 2) * sizeof *v);
      v[len++] = chakra_proto_msg__node__unpack(NULL, l, body);
      counts[r]++;
    }
    free(data);
  }
  return v;
}

static size_t put_len(uint8_t *p, size_t l) {
  size_t k = 0;
  for (; l >= 0x80; l >>= 7)
    p[k++] = (uint8_t)(l | 0x80);
  p[k++] = (uint8_t)l;
  return k;
}

/* Writes the same set with protobuf-c packing every record; CPU seconds. */
static double protobuf_c_write(const char *prefix, uint32_t n, ChakraProtoMsg__Node **v,
                               const uint32_t *counts, const ChakraProtoMsg__GlobalMetadata *m) {
  double c0 = cpu_seconds();
  size_t k = 0, cap = 1 << 20;
  uint8_t *buf = malloc(cap);
  for (uint32_t r = 0; buf && r < n; r++) {
    char path[1200];
    snprintf(path, sizeof path, "%s.pbc.%u.et", prefix, r);
    FILE *f = fopen(path, "wb");
    if (f == NULL) break;
    size_t ml = chakra_proto_msg__global_metadata__get_packed_size(m), at = 0;
    if (ml + 10 > cap) buf = realloc(buf, cap = ml + 10);
    at = put_len(buf, ml);
    chakra_proto_msg__global_metadata__pack(m, buf + at);
    fwrite(buf, 1, at + ml, f);
    for (uint32_t i = 0; i < counts[r]; i++, k++) {
      size_t l = chakra_proto_msg__node__get_packed_size(v[k]);
      if (l + 10 > cap) buf = realloc(buf, cap = l + 10);
      at = put_len(buf, l);
      chakra_proto_msg__node__pack(v[k], buf + at);
      fwrite(buf, 1, at + l, f);
    }
    fclose(f);
  }
  free(buf);
  return cpu_seconds() - c0;
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
  uint32_t *counts = calloc(n, sizeof *counts);
  ChakraProtoMsg__GlobalMetadata *meta = NULL;
  ChakraProtoMsg__Node **v = counts ? unpack_set(prefix, n, counts, &meta) : NULL;
  if (v && meta) {
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      double c = protobuf_c_write(prefix, n, v, counts, meta);
      if (c < best) best = c;
    }
    printf("protobuf-c packing the same nodes: %8.1f ms CPU; the fast writer is %.2fx faster\n",
           best * 1e3, best / cpu_w);
    for (uint64_t k = 0; k < nodes; k++)
      chakra_proto_msg__node__free_unpacked(v[k], NULL);
    chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
    for (uint32_t r = 0; r < n; r++) {
      char path[1200];
      snprintf(path, sizeof path, "%s.pbc.%u.et", prefix, r);
      remove(path);
    }
  }
  free(v);
  free(counts);
  algo_free(a);
  return 0;
}
