/* tests/fuzz/replay_main.c — runs a libFuzzer target without libFuzzer: every file of a
 * corpus folder, then a fixed number of seeded mutations of them (byte flips, truncations,
 * insertions), so ctest exercises each parser's fuzz target under gcc and the sanitizers. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, uint8_t **buf, size_t *len) {
  char *data = NULL;
  tn_err_t err = {0};
  if (tn_read_file(path, 1u << 24, &data, len, &err) != TN_OK) return -1;
  *buf = (uint8_t *)data;
  LLVMFuzzerTestOneInput(*buf, *len);
  return 0;
}

static void mutate_and_run(const uint8_t *seed, size_t len, tn_rng_t *rng) {
  size_t cap = len + 64;
  uint8_t *m = malloc(cap);
  if (m == NULL) return;
  memcpy(m, seed, len);
  size_t n = len;
  int ops = 1 + (int)tn_rng_below(rng, 4);
  for (int k = 0; k < ops; k++) {
    switch (tn_rng_below(rng, 4)) {
    case 0: if (n) m[tn_rng_below(rng, n)] ^= (uint8_t)(1u << tn_rng_below(rng, 8)); break;
    case 1: if (n) n = tn_rng_below(rng, n + 1); break;
    case 2: if (n < cap) m[n++] = (uint8_t)tn_rng_next(rng); break;
    default: if (n) m[tn_rng_below(rng, n)] = (uint8_t)tn_rng_next(rng); break;
    }
  }
  LLVMFuzzerTestOneInput(m, n);
  free(m);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
    return 1;
  }
  long mutations = argc > 2 ? atol(argv[2]) : 1000;
  DIR *d = opendir(argv[1]);
  if (d == NULL) {
    fprintf(stderr, "%s: no corpus folder\n", argv[1]);
    return 1;
  }
  char **names = NULL;
  size_t count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (count + 1) * sizeof *names);
    size_t l = strlen(argv[1]) + strlen(e->d_name) + 2;
    names[count] = malloc(l);
    snprintf(names[count], l, "%s/%s", argv[1], e->d_name);
    count++;
  }
  closedir(d);
  /* Sorted so the mutations (and thus the run) are the same everywhere. */
  for (size_t i = 1; i < count; i++)
    for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
    }
  tn_rng_t rng;
  tn_rng_seed(&rng, 12345);
  size_t runs = 0;
  for (size_t i = 0; i < count; i++) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (run_file(names[i], &buf, &len) == 0) {
      runs++;
      for (long k = 0; k < mutations / (long)(count ? count : 1); k++, runs++)
        mutate_and_run(buf, len, &rng);
    }
    free(buf);
    free(names[i]);
  }
  free(names);
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  printf("%zu inputs from %zu corpus files: no crash\n", runs, count);
  return count ? 0 : 1;
}
