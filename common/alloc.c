/* common/alloc.c — overflow-checked allocation, the growable array, and the allocator's
 * tuning for a tenet process. */
#define _DEFAULT_SOURCE /* madvise(MADV_HUGEPAGE) */
#include "common/common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TN_I_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TN_I_ASAN 1
#endif
#endif

/* Asks for transparent huge pages on the 2 MiB-aligned interior of [p, p + bytes). On the
 * machines tenet is measured on, a 4 KiB page fault costs several microseconds: a 64-NPU
 * `tenet sim` spent a quarter of its CPU time in them and a 128-NPU synthesis a fifth
 * (measured with and without, in turn: 2,280 -> 545-845 faults, 56-60 -> 34-38 ms for
 * switch-64's Direct All-to-All set; 50,000 -> 600-4,600 faults, 1.9-2.4 -> 1.35-1.85 s
 * for torus-16x8's All-Reduce of 1 GiB). Only for arrays of TN_ALLOC_OWN_MAP_BYTES or more:
 * their own mapping, or part of the reserved heap (advised already: no change); a part
 * of the heap beyond it is split off as a mapping of its own, which small arrays would
 * make many of. */
static void advise_huge(void *p, size_t bytes) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* advice: failure is harmless */
#else
  (void)p, (void)bytes;
#endif
}

/* Whether the heap may take its first TN_ALLOC_HUGE_HEAP_BYTES at once without taking
 * anything from the process: not under a limit on its address space or data segment (the
 * reservation would count against it, and a run that fitted the limit could fail), not
 * where the kernel commits memory strictly (vm.overcommit_memory 2: it would be charged
 * for all of it), and not under AddressSanitizer, whose allocator would poison it all. */
#ifdef __GLIBC__
static bool may_reserve(void) {
#ifdef TN_I_ASAN
  return false;
#else
  struct rlimit r;
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur != RLIM_INFINITY) return false;
  if (getrlimit(RLIMIT_DATA, &r) != 0 || r.rlim_cur != RLIM_INFINITY) return false;
  int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY);
  char mode = '0';
  if (fd >= 0) {
    if (read(fd, &mode, 1) != 1) mode = '2'; /* unreadable: do not assume */
    close(fd);
  }
  return mode != '2';
#endif
}
#endif

/* A huge page cannot straddle the heap's start, so the heap up to the first 2 MiB
 * boundary takes 4 KiB pages, and the allocations a run makes first were served there, a
 * page fault each (a 64-NPU `tenet sim` took a hundred of its 270 faults in that head).
 * Takes the heap's top up to just below the boundary with a block that is never touched
 * nor freed (address space only), so that the reservation, and what is served from it,
 * starts there. The block, or NULL when none was needed or the heap's top was not where
 * a fresh block would be served. */
#ifdef __GLIBC__
static void *align_heap(void) {
  const uintptr_t huge = (uintptr_t)2 << 20, slack = 4096;
  const size_t probe_bytes = 64 << 10; /* above the small bins: served from the top */
  char *probe = malloc(probe_bytes);
  if (probe == NULL) return NULL;
  uintptr_t at = (uintptr_t)probe, boundary = (at + slack + huge - 1) & ~(huge - 1);
  free(probe); /* it borders the top: merged back into it */
  size_t want = boundary - slack - at;
  if (want < probe_bytes) return NULL; /* close enough already */
  char *pad = malloc(want);
  if (pad != probe) { /* not served from the same place: leave the heap as it is */
    free(pad);
    return NULL;
  }
  return pad;
}
#endif

/* The simulator's runs allocate and free arrays of tens of MB over and over (the
 * order-proof rounds rebuild and simulate a set up to 24 times). glibc would hand each back
 * to the kernel and fault it in again zeroed, page by page: a third of `synth`'s system
 * time on a 128-NPU All-to-All. Freed arrays below TN_ALLOC_OWN_MAP_BYTES are kept for
 * reuse instead, and at most 256 MiB of free memory beyond the reserved heap stays mapped
 * at its top. One arena for all threads: with one per thread, what a second thread frees
 * stays in its own arena, so a 2-thread run peaked anywhere from 1.0x to 1.4x a 1-thread
 * one, varying run to run (hierarchical-16x8 All-to-All 64 MiB: 285-392 MB; with one
 * arena 270-277 MB, at the same user CPU time). Where may_reserve allows, the heap's
 * first TN_ALLOC_HUGE_HEAP_BYTES are taken from the kernel once (address space only:
 * nothing is touched), advised to use huge pages (advise_huge) and handed back to malloc,
 * which then serves from them. */
void tn_alloc_setup(void) {
#ifdef __GLIBC__
  bool reserve = may_reserve();
  mallopt(M_MMAP_THRESHOLD, (int)TN_ALLOC_OWN_MAP_BYTES);
  mallopt(M_TRIM_THRESHOLD, (int)((reserve ? TN_ALLOC_HUGE_HEAP_BYTES : 0) + ((size_t)256 << 20)));
  mallopt(M_ARENA_MAX, 1);
  if (!reserve) return;
  mallopt(M_MMAP_MAX, 0); /* the reservation from the heap, not a mapping of its own */
  void *pad = align_heap();
  void *p = malloc(TN_ALLOC_HUGE_HEAP_BYTES);
  mallopt(M_MMAP_MAX, 65536); /* glibc's default */
  if (p) {
    advise_huge(p, TN_ALLOC_HUGE_HEAP_BYTES);
    free(p);
  } else {
    free(pad);
  }
#endif
}

const max_align_t tn_vec_nothing;

/* tn_calloc and tn_malloc: n*size checked, a zero-size request still gets a unique
 * pointer. */
static tn_status_t alloc(size_t n, size_t size, bool zeroed, void *out, tn_err_t *err) {
  void **p = out;
  *p = NULL;
  if (size != 0 && n > SIZE_MAX / size)
    return tn_err_set(err, TN_NOMEM, "allocation of %zu x %zu bytes overflows", n, size);
  if (n == 0 || size == 0) n = 1, size = 1;
  *p = zeroed ? calloc(n, size) : malloc(n * size);
  if (*p == NULL)
    return tn_err_set(err, TN_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  if (n * size >= TN_ALLOC_OWN_MAP_BYTES) advise_huge(*p, n * size);
  return TN_OK;
}

tn_status_t tn_calloc(size_t n, size_t size, void *out, tn_err_t *err) {
  return alloc(n, size, true, out, err);
}

tn_status_t tn_malloc(size_t n, size_t size, void *out, tn_err_t *err) {
  return alloc(n, size, false, out, err);
}

tn_status_t tn_realloc(void *pp, size_t old_n, size_t n, size_t size, tn_err_t *err) {
  void **p = pp;
  if (size != 0 && n > SIZE_MAX / size)
    return tn_err_set(err, TN_NOMEM, "allocation of %zu x %zu bytes overflows", n, size);
  size_t bytes = n * size;
  void *q = realloc(*p, bytes ? bytes : 1);
  if (q == NULL) return tn_err_set(err, TN_NOMEM, "out of memory growing to %zu bytes", bytes);
  if (bytes >= TN_ALLOC_OWN_MAP_BYTES) advise_huge(q, bytes); /* before the tail is touched */
  if (n > old_n) memset((char *)q + old_n * size, 0, (n - old_n) * size);
  *p = q;
  return TN_OK;
}

tn_status_t tn_strdup(const char *s, char **out, tn_err_t *err) {
  *out = NULL;
  if (s == NULL) return TN_OK;
  size_t n = strlen(s) + 1;
  tn_status_t st = tn_calloc(n, 1, out, err);
  if (st == TN_OK) memcpy(*out, s, n);
  return st;
}

void tn_vec_init(tn_vec_t *v, size_t elem_size) {
  v->data = NULL;
  v->len = v->cap = 0;
  v->elem_size = elem_size;
}

void tn_vec_free(tn_vec_t *v) {
  if (v == NULL) return;
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

tn_status_t tn_vec_reserve(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  size_t ncap = v->cap ? v->cap : 16;
  while (ncap < cap) {
    if (ncap > SIZE_MAX / 2) return tn_err_set(err, TN_NOMEM, "array too large");
    ncap *= 2;
  }
  tn_status_t st = tn_realloc(&v->data, v->cap, ncap, v->elem_size, err);
  if (st == TN_OK) v->cap = ncap;
  return st;
}

tn_status_t tn_vec_reserve_exact(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  tn_status_t st = v->data == NULL ? tn_calloc(cap, v->elem_size, &v->data, err)
                                   : tn_realloc(&v->data, v->cap, cap, v->elem_size, err);
  if (st == TN_OK) v->cap = cap;
  return st;
}

tn_status_t tn_vec_reserve_exact_uninit(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  /* tn_realloc zeroes only what lies beyond old_n: passing cap leaves the room as is */
  tn_status_t st = v->data == NULL ? tn_malloc(cap, v->elem_size, &v->data, err)
                                   : tn_realloc(&v->data, cap, cap, v->elem_size, err);
  if (st == TN_OK) v->cap = cap;
  return st;
}

tn_status_t tn_vec_push(tn_vec_t *v, const void *elem, tn_err_t *err) {
  if (v->len == v->cap) {
    tn_status_t st = tn_vec_reserve(v, v->len + 1, err);
    if (st != TN_OK) return st;
  }
  memcpy((char *)v->data + v->len * v->elem_size, elem, v->elem_size);
  v->len++;
  return TN_OK;
}
