/* common — status codes, the error struct, checked allocation, growable arrays,
 * size/time/bandwidth parsing and printing, and all-or-nothing file writes.
 * Bottom of the pipeline: includes libc only. Names use the project prefix tn_. */
#ifndef TENET_COMMON_H
#define TENET_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One status enum, generated with its strings from this X-macro (libuv's way). */
#define TN_STATUS_MAP(X)                                                                           \
  X(OK, "ok")                                                                                      \
  X(NOMEM, "out of memory")                                                                        \
  X(INVAL, "invalid argument")                                                                     \
  X(PARSE, "bad input")                                                                            \
  X(IO, "i/o error")                                                                               \
  X(INFEASIBLE, "cannot be done")                                                                  \
  X(LIMIT, "limit exceeded")                                                                       \
  X(SOLVER, "solver error")                                                                        \
  X(INTERNAL, "internal error")

typedef enum {
#define TN_STATUS_ENUM(name, str) TN_##name,
  TN_STATUS_MAP(TN_STATUS_ENUM)
#undef TN_STATUS_ENUM
} tn_status_t;

/* Human-readable name of a status ("out of memory"). Never NULL. */
const char *tn_status_str(tn_status_t st);

/* The CLI exit code for a status (docs/architecture.md §6): 0 ok, 1 bad input or usage,
 * 2 valid input that cannot be done, 3 internal. */
int tn_status_exit_code(tn_status_t st);

/* An error: the first one set wins, later ones are ignored. msg names the item
 * ("topo.json:14:9: links[3].bandwidth must be > 0"). Zero-initialise before use.
 * msg is always one line (control characters become blanks) of up to PATH_MAX bytes; a
 * longer text loses its middle, never its reason (tn_fit_line). */
#define TN_ERR_MSG_MAX 4096
typedef struct tn_err {
  tn_status_t status;
  char msg[TN_ERR_MSG_MAX];
} tn_err_t;

/* The one rule for fitting a message into cap bytes (cap > 0): src is copied into dst with
 * control characters turned into blanks and trailing blanks dropped; when src does not fit,
 * its middle is replaced by "..." (a third of the room kept from the start, where the item
 * is named, the rest from the end, where the reason is), never splitting a UTF-8
 * character. O(strlen(src)). */
void tn_fit_line(char *dst, size_t cap, const char *src);

/* Records an error in err (if err is non-NULL and still clear) and returns st.
 * Usage: return tn_err_set(err, TN_PARSE, "%s:%d: ...", file, line); */
tn_status_t tn_err_set(tn_err_t *err, tn_status_t st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Prepends "prefix: " to an error already set (no-op when clear). */
/* The one rule for located errors: "<where>: <message>", set like tn_err_set (the first
 * error wins). For the loaders' and readers' own wrappers, which compute where (a file
 * and line, a JSON path, a gpu/tb/step) and pass their format on. */
tn_status_t tn_err_set_at(tn_err_t *err, tn_status_t st, const char *where, const char *fmt,
                          va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 0)))
#endif
    ;
void tn_err_prefix(tn_err_t *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tn_err_clear(tn_err_t *err);

/* ---- checked allocation ------------------------------------------------ */
/* Every allocation goes through these: n*size is overflow-checked, a failure sets
 * TN_NOMEM in err. *out is NULL on failure. Memory is zeroed. Caller frees with free(). */
tn_status_t tn_calloc(size_t n, size_t size, void *out, tn_err_t *err);
/* tn_calloc without the zeroing, for arrays whose every element is written before it is
 * read: clearing memory that is overwritten anyway costs a pass over it (and, for memory
 * malloc reuses, touching every page twice). */
tn_status_t tn_malloc(size_t n, size_t size, void *out, tn_err_t *err);
/* Resizes *p to n elements of size bytes (new tail zeroed when old_n is given). */
tn_status_t tn_realloc(void *p, size_t old_n, size_t n, size_t size, tn_err_t *err);
/* Duplicates s (NULL stays NULL). */
tn_status_t tn_strdup(const char *s, char **out, tn_err_t *err);
/* Tunes the C library's allocator for a tenet process (glibc only; elsewhere a no-op):
 * freed arrays below TN_ALLOC_OWN_MAP_BYTES are kept for reuse, one arena serves every
 * thread, and the heap's first TN_ALLOC_HUGE_HEAP_BYTES (reserved here, virtual until
 * touched) and every array of at least TN_ALLOC_OWN_MAP_BYTES (its own mapping) are
 * advised to use transparent huge pages. Call once, before any thread starts (cli_main
 * does); library users that skip it get the C library's defaults. */
#define TN_ALLOC_OWN_MAP_BYTES ((size_t)32 << 20)
#define TN_ALLOC_HUGE_HEAP_BYTES ((size_t)1 << 30)
void tn_alloc_setup(void);

/* Growable array of fixed-size elements: tn_vec_push(&v, &elem, err). */
typedef struct tn_vec {
  void *data;
  size_t len, cap, elem_size;
} tn_vec_t;
void tn_vec_init(tn_vec_t *v, size_t elem_size);
void tn_vec_free(tn_vec_t *v);
tn_status_t tn_vec_push(tn_vec_t *v, const void *elem, tn_err_t *err);
tn_status_t tn_vec_reserve(tn_vec_t *v, size_t cap, tn_err_t *err);
/* Capacity of exactly cap (tn_vec_reserve rounds up to a power of two), for producers that
 * know their sizes. New room reads as zero; a first allocation comes from calloc, whose
 * fresh pages cost nothing until they are used. Never shrinks. */
tn_status_t tn_vec_reserve_exact(tn_vec_t *v, size_t cap, tn_err_t *err);
/* tn_vec_reserve_exact without zeroing the new room, for vectors whose elements are all
 * written (pushed or stored up to len) before they are read. */
tn_status_t tn_vec_reserve_exact_uninit(tn_vec_t *v, size_t cap, tn_err_t *err);
#define TN_VEC_AT(v, type, i) (((type *)(v)->data)[i])
/* &TN_VEC_AT(v, type, i) for a slice that may be empty: while the vector has no storage,
 * a pointer to tn_vec_nothing instead of NULL + i (which C leaves undefined even for i = 0,
 * and clang's UBSan reports); an empty slice is never read. */
extern const max_align_t tn_vec_nothing;
#define TN_VEC_SLICE(v, type, i)                                                                   \
  ((v)->data ? (const type *)(v)->data + (i) : (const type *)(const void *)&tn_vec_nothing)

/* Overflow-checked arithmetic on sizes: returns false on overflow. Inline: the simulator
 * checks every link's times and byte counts with them on each hop. */
static inline bool tn_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  *out = a * b;
  return true;
}
static inline bool tn_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (b > UINT64_MAX - a) return false;
  *out = a + b;
  return true;
}

/* ---- units --------------------------------------------------------------- */
/* Bandwidth unit of docs/architecture.md §2: 1 GB/s = 2^30 bytes per second. */
#define TN_GIB 1073741824.0
#define TN_PS_PER_NS 1000u

/* Parses a size: plain bytes or with suffix B, KB, MB, GB, TB (10^3) or KiB, MiB,
 * GiB, TiB (2^10); case of the unit letters is significant only for the i.
 * Rejects empty, negative, fractional-byte and overflowing values. */
tn_status_t tn_parse_size(const char *s, uint64_t *bytes, tn_err_t *err);
/* Parses a comma-separated size list or a power-of-two range "1KiB..1GiB".
 * *out is an array of *n sizes (caller frees). */
tn_status_t tn_parse_size_list(const char *s, uint64_t **out, size_t *n, tn_err_t *err);

/* ---- memory cap ----------------------------------------------------------- */
/* The one cap on a run's estimated peak memory (resident set of the whole process): every
 * producer and baseline estimates what a synthesis with it needs (its own planning, the
 * set it makes, the simulation that times and order-proofs it, verification and the
 * Chakra writer) and refuses a case above the cap before allocating. TENET_MEM_CAP when
 * set (a size, as -s takes it: 512MiB, 6GiB), else TN_MEM_CAP_DEFAULT. */
#define TN_MEM_CAP_DEFAULT ((uint64_t)6 << 30)
uint64_t tn_mem_cap(void);
/* TN_INVAL naming the value when TENET_MEM_CAP is set but not a size (which tn_mem_cap
 * would ignore): the CLI refuses it rather than run under another cap. */
tn_status_t tn_mem_env_check(tn_err_t *err);
/* TN_OK when need_bytes is within tn_mem_cap(); else TN_LIMIT with one line: "WHAT needs
 * about X GiB (or MiB) of memory, over the Y GiB cap (TENET_MEM_CAP)". */
tn_status_t tn_mem_check(const char *what, uint64_t need_bytes, tn_err_t *err);
/* The one thread term of every estimate: a run's peak on `threads` threads, from its
 * one-thread peak base + work (base: the process and what does not grow with the set;
 * work: what does). With a second thread, work is held more than once for a while (the
 * verifier and the Chakra writer beside the order-proof set's last simulation, tries and
 * configurations planned side by side, the greedy's second search candidate): beside_pct
 * percent of work more, as measured at two threads by each producer (bench_mem). More
 * threads than two are counted as two (measured at four: see the README's memory
 * paragraph). Pure: the same figures for the same arguments. */
uint64_t tn_mem_threads(uint64_t base, uint64_t work, uint32_t beside_pct, unsigned threads);
/* Prints bytes compactly: "1MiB", "64KiB", "1000B". buf needs 32 bytes. */
const char *tn_fmt_size(uint64_t bytes, char *buf, size_t len);
/* Parses a non-negative integer in [min, max]; what names the flag in the message. */
tn_status_t tn_parse_u64(const char *s, uint64_t min, uint64_t max, const char *what, uint64_t *out,
                         tn_err_t *err);
tn_status_t tn_parse_double(const char *s, double min, double max, const char *what, double *out,
                            tn_err_t *err);

/* ---- time in picoseconds --------------------------------------------------- */
/* The longest time tenet computes with: 2^62 ps, 53.4 days. Every time in ps (a transfer,
 * an event, a bound) is checked against it, and one that would pass it is an error naming
 * the figure, never a capped or wrapped value. Four times it still fit in 64 bits, so a
 * sum of a few checked times cannot wrap before its own check. */
#define TN_TIME_MAX_PS (UINT64_C(1) << 62)
#if defined(__GNUC__)
#define TN_MUST_CHECK __attribute__((warn_unused_result))
#else
#define TN_MUST_CHECK
#endif
/* Time in ps to move bytes over a link of gbps GB/s (2^30 B/s), rounded to the nearest
 * picosecond, into *ps. The one definition used by ten/ and sim/. false (and *ps
 * untouched) when it passes TN_TIME_MAX_PS or gbps is not a positive number. */
bool tn_xfer_ps(uint64_t bytes, double gbps, uint64_t *ps) TN_MUST_CHECK;
/* *out = a + b; false when the sum passes TN_TIME_MAX_PS. */
static inline bool tn_time_add(uint64_t a, uint64_t b, uint64_t *out) TN_MUST_CHECK;
static inline bool tn_time_add(uint64_t a, uint64_t b, uint64_t *out) {
  uint64_t r = 0;
  if (!tn_add_u64(a, b, &r) || r > TN_TIME_MAX_PS) return false;
  *out = r;
  return true;
}
/* A time computed in floating point (a bound), rounded down into *out; false when it is
 * not a number or passes TN_TIME_MAX_PS. */
bool tn_time_from_double(double ps, uint64_t *out) TN_MUST_CHECK;
/* The one error for a time past TN_TIME_MAX_PS: TN_INVAL (bad input: a size too large or
 * a link too slow), "<what> passes 2^62 ps (53.4 days), the longest time tenet computes
 * with", what formatted from fmt. */
tn_status_t tn_time_overflow(tn_err_t *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* algbw in GB/s (2^30 B/s) of bytes in time_ps. */
double tn_gbps(uint64_t bytes, uint64_t time_ps);

/* ---- sorting and heaps ---------------------------------------------------- */
/* Fills order[0..n) with 0..n-1 sorted by keys[i] ascending, equal keys in index order (a
 * stable LSD radix sort, skipping digits every key shares). O(n) per varying byte. */
tn_status_t tn_radix_order(const uint64_t *keys, uint32_t n, uint32_t *order, tn_err_t *err);

/* A binary min-heap of uint32 items in caller storage h (room for every item), ordered by
 * less(ctx, a, b), which must be a strict order with no ties between distinct items (so the
 * pops do not depend on the layout). Static inline so that a constant less is inlined:
 * the simulator and the planners run these in their hot loops. */
typedef bool (*tn_heap_less_fn)(const void *ctx, uint32_t a, uint32_t b);
static inline void tn_heap_push(uint32_t *h, uint32_t *n, uint32_t v, tn_heap_less_fn less,
                                const void *ctx) {
  uint32_t i = (*n)++;
  while (i > 0 && less(ctx, v, h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = v;
}
/* Removes and returns the least item (the heap is not empty). */
static inline uint32_t tn_heap_pop(uint32_t *h, uint32_t *n, tn_heap_less_fn less,
                                   const void *ctx) {
  uint32_t top = h[0], last = h[--*n], m = *n, i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && less(ctx, h[c + 1], h[c])) c++;
    if (!less(ctx, h[c], last)) break;
    h[i] = h[c];
    i = c;
  }
  if (m > 0) h[i] = last;
  return top;
}

/* ---- string building ------------------------------------------------------ */
/* A growing NUL-terminated string; the first failure sticks in st (with err) and later
 * appends do nothing. v.data is the text (v.len bytes without the NUL); caller frees it
 * with tn_vec_free. */
typedef struct tn_sb {
  tn_vec_t v; /* char */
  tn_status_t st;
  tn_err_t *err;
} tn_sb_t;
void tn_sb_init(tn_sb_t *b, tn_err_t *err);
void tn_sb_printf(tn_sb_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- files --------------------------------------------------------------- */
/* The one rule for where an output named path goes (every -o, every file a command writes):
 *  - an empty path, one ending in '/' and one naming a directory are refused (TN_INVAL);
 *  - a symbolic link (a chain of them) is followed: the file it names is replaced, the
 *    link stays;
 *  - a target that exists and is not a regular file (a device such as /dev/full or
 *    /dev/stdout, a FIFO) is written straight into, with no temporary: *tmp is NULL;
 *  - otherwise the output is written whole to *tmp, "<target>.tmp.<pid>" next to the
 *    target, then tn_rename_into_place(*tmp, *target): the target is complete or as before.
 * tn_outfile does it all for one stream; the Chakra writer plans every rank file and
 * renames only once all are written; the plots let PLplot write the temporary.
 * *target and *tmp are caller-freed (both NULL on failure). */
tn_status_t tn_out_plan(const char *path, char **target, char **tmp, tn_err_t *err);
/* Renames tmp over path; on failure removes tmp and fails with TN_IO naming path. */
tn_status_t tn_rename_into_place(const char *tmp, const char *path, tn_err_t *err);
/* One output stream under tn_out_plan: open writes the temporary (or the device), commit
 * checks every write and renames into place (TN_IO naming path and the reason), abort
 * removes the temporary. Both end the stream; abort after either is harmless. Open first
 * removes the target's stale temporaries (tn_out_clean_stale) and registers its own for
 * a fatal signal (tn_cleanup_register) until the stream ends. */
typedef struct tn_outfile {
  FILE *f;
  char *path;                     /* as given, for messages */
  char *target;                   /* path with its links followed */
  char *tmp;                      /* NULL when written straight into target */
  struct tn_outfile_guard *guard; /* the temporary's registration (files.c) */
} tn_outfile_t;
tn_status_t tn_outfile_open(tn_outfile_t *o, const char *path, tn_err_t *err);
tn_status_t tn_outfile_commit(tn_outfile_t *o, tn_err_t *err);
void tn_outfile_abort(tn_outfile_t *o);
/* The one rule for a file read as input (a topology, a Chakra rank file, an MSCCL program,
 * a manifest): it must be a regular file (followed through links). A FIFO, a device, a
 * socket or a directory is refused with TN_INVAL and "<path>: a FIFO, not a regular file",
 * never opened in a way that blocks: a FIFO's open would wait for a writer forever.
 * tn_input_open opens path for reading under that rule (*f is NULL on failure, caller
 * fcloses); tn_input_open_fd likewise as a descriptor for read(2) (*fd is -1 on failure,
 * caller closes), with the file's size when opened; tn_input_check applies the rule to a
 * name without opening it (TN_IO when path does not exist or cannot be looked at). */
tn_status_t tn_input_open(const char *path, FILE **f, tn_err_t *err);
tn_status_t tn_input_open_fd(const char *path, int *fd, size_t *size, tn_err_t *err);
tn_status_t tn_input_check(const char *path, tn_err_t *err);
/* Reads a whole file into a NUL-terminated buffer (caller frees), capped at max bytes;
 * opened with tn_input_open. */
tn_status_t tn_read_file(const char *path, size_t max, char **data, size_t *len, tn_err_t *err);
/* Creates the parent directory of the output path (mkdir -p of every component but the
 * last); refuses, before creating anything, a path tn_out_plan refuses as a directory. */
tn_status_t tn_mkdir_parents(const char *path, tn_err_t *err);

/* ---- temporaries left by a signal or a killed run ------------------------------
 * A writer registers, before it creates them, the names a fatal signal must clean up:
 * n temporaries to unlink and, when backups is not NULL, n backups of the files being
 * replaced, each renamed back over targets[i] where it still exists (the file it replaced
 * returns). Entries may be NULL. The registration and its names must stay valid until
 * tn_cleanup_unregister. tn_cleanup_register returns a slot, or -1 when all are taken (the
 * write goes on; what a signal strands is then removed by tn_out_clean_stale later).
 * tn_cleanup_unregister never returns while a signal handler is cleaning up (the process
 * is ending). tn_cleanup_on_signal is async-signal-safe (unlink and rename of names
 * prepared beforehand): cli/'s handlers for SIGINT, SIGTERM and SIGHUP call it. */
typedef struct tn_cleanup {
  size_t n;
  char *const *tmps;
  char *const *backups;
  char *const *targets;
} tn_cleanup_t;
int tn_cleanup_register(const tn_cleanup_t *c);
/* Brackets the creation of a registered temporary (or a rename of registered names): the
 * handler waits until no thread is between the two, and begin returns false (nothing may
 * be created any more) once a handler has started; the process is then ending. Begin
 * blocks SIGINT, SIGTERM and SIGHUP on the calling thread and end unblocks them; call end
 * only after a begin that returned true, on the same thread, with no bracket inside
 * another. Keep the bracket to a syscall or two. */
bool tn_cleanup_begin(void);
void tn_cleanup_end(void);
void tn_cleanup_unregister(int slot);
void tn_cleanup_on_signal(void);
/* Removes, from path's folder, the temporaries "<stem>.tmp.<pid>" and backups
 * "<stem>.old.<pid>" that processes no longer running left (killed: SIGKILL, a crash, a
 * power cut), where stem is path's last component, followed by "." digits and `ranked`
 * when ranked is not NULL (".et": the rank files of a Chakra prefix). A temporary of a
 * running process (another writer) stays. *removed (may be NULL) counts the names removed.
 * TN_IO naming the file when one cannot be removed; a missing folder holds nothing.
 * O(entries in the folder). */
tn_status_t tn_out_clean_stale(const char *path, const char *ranked, size_t *removed,
                               tn_err_t *err);
/* The same for folders "<stem>.tmp.<pid>" a writer of whole folders (tenet astra) built
 * and a dead process left; each is removed with everything in it. */
tn_status_t tn_out_clean_stale_dirs(const char *path, size_t *removed, tn_err_t *err);
/* Removes path and, for a folder, everything under it (best effort, for cleanup; links
 * are removed, never followed). */
void tn_remove_tree(const char *path);

/* ---- determinism ------------------------------------------------------- */
/* SplitMix64: the project's only pseudo-random source, always seeded explicitly. */
typedef struct tn_rng {
  uint64_t state;
} tn_rng_t;
void tn_rng_seed(tn_rng_t *r, uint64_t seed);
uint64_t tn_rng_next(tn_rng_t *r);
/* Uniform in [0, n) (n > 0). */
uint64_t tn_rng_below(tn_rng_t *r, uint64_t n);

/* ---- collectives ------------------------------------------------------- */
/* The three collectives every module speaks of (docs/architecture.md §2 for sizes). */
typedef enum {
  TN_ALLGATHER = 0,
  TN_REDUCESCATTER = 1,
  TN_ALLREDUCE = 2,
  TN_ALLTOALL = 3
} tn_coll_t;
#define TN_NCOLLS 4
/* "allgather", "reducescatter", "allreduce", "alltoall". */
const char *tn_coll_name(tn_coll_t c);
/* Accepts the names above, with '-' or '_' between the words ("all-gather",
 * "reduce_scatter", "all_to_all", MSCCL's spelling), and "ag", "rs", "ar", "a2a". */
tn_status_t tn_coll_parse(const char *s, tn_coll_t *out, tn_err_t *err);
/* busbw factor (nccl-tests): (n-1)/n for All-Gather, Reduce-Scatter and All-to-All,
 * 2(n-1)/n for All-Reduce. */
double tn_coll_busbw_factor(tn_coll_t c, uint32_t npus);
/* The bytes a collective's chunks divide (ten_chunk_bytes): SIZE itself (the gathered
 * output, each NPU's input), except All-to-All, whose chunks are every NPU's whole send
 * buffer of SIZE bytes: npus * SIZE. false when that overflows. */
bool tn_coll_space(tn_coll_t c, uint32_t npus, uint64_t size, uint64_t *space);
/* The one rule of an All-to-All's size: npus blocks of SIZE/npus (one per rank, as NCCL's
 * alltoall sends), each cut into pieces equal pieces. TN_INVAL with the reason else. */
tn_status_t tn_alltoall_check(uint64_t size, uint32_t npus, uint32_t pieces, tn_err_t *err);

/* ---- hashing ------------------------------------------------------------ */
/* FNV-1a, 64 bits, over n bytes, continuing from h (start from TN_FNV1A64_INIT): a
 * fingerprint of inputs (tenet batch's resume key), not a defence against tampering.
 * Same bytes, same value on every machine. O(n). */
#define TN_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)
uint64_t tn_fnv1a64(const void *data, size_t n, uint64_t h);

/* ---- text -------------------------------------------------------------- */
/* Levenshtein distance between a and b (insertions, deletions, substitutions), for
 * did-you-mean hints; SIZE_MAX when either is longer than 64 characters.
 * O(len(a) * len(b)) time, no allocation. */
size_t tn_edit_distance(const char *a, const char *b);
/* The one "did you mean" rule: among n names, the nearest to word when it is a plausible
 * typo (at most 2 edits, or 1 for words of up to 3 letters), else NULL. Names are read as
 * the first member (a const char *) of n records stride bytes apart, so a plain array of
 * strings (stride sizeof(char *)) and a table of structs whose first member is the name
 * both work. Ties go to the first. */
const char *tn_suggest(const char *word, const void *names, size_t n, size_t stride);

/* Length (1..4) of the UTF-8 character at s[0..n), or 0 when s does not start a valid one
 * (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
size_t tn_utf8_char_len(const char *s, size_t n);
/* The one rule for text read from input that output echoes: valid UTF-8, and unless
 * allow_controls (a description may span lines) without control characters (U+0001..U+001F,
 * U+007F): a name is one line. On false, *bad (when non-NULL) is the offset of the first
 * offending byte. O(strlen(s)). */
bool tn_text_ok(const char *s, bool allow_controls, size_t *bad);
/* Copies s[0..n) into *out (NUL-terminated, caller frees; *out_len bytes when non-NULL)
 * with every byte that does not start a valid UTF-8 character replaced by U+FFFD: what
 * every JSON writer does to text it did not validate (paths, foreign messages). O(n). */
tn_status_t tn_utf8_repair(const char *s, size_t n, char **out, size_t *out_len, tn_err_t *err);

/* ---- parallel work ----------------------------------------------------- */
/* Worker threads for per-rank stages: TENET_THREADS when set (1..1024), else the online
 * CPUs, at most 8. */
unsigned tn_thread_count(void);
/* Caps tn_thread_count() on the calling thread at n (0: no cap) and returns the cap it
 * replaces. A run whose memory estimate fits under the cap with one thread but not with
 * its threads (tn_mem_threads) is made on one thread: with a cap of 1 no worker starts,
 * so everything the run calls sees it. Output does not depend on the thread count. */
unsigned tn_thread_limit(unsigned n);
/* TN_INVAL naming the value when TENET_THREADS is set but not a count in 1..1024 (which
 * tn_thread_count would ignore): the CLI refuses it rather than run at another count. */
tn_status_t tn_thread_env_check(tn_err_t *err);
/* Calls fn(ctx, i, worker) once for every i in [0, n), on up to `threads` workers (at most
 * 1024; worker ids 0..threads-1; worker 0 is the calling thread), which claim items in
 * ascending order. fn must write only item i's results or its worker's own scratch, so
 * what comes out does not depend on the scheduling. A thread that cannot be created is
 * simply not used. Returns the number of workers that ran. */
typedef void (*tn_parallel_fn)(void *ctx, size_t i, unsigned worker);
unsigned tn_parallel_for(size_t n, unsigned threads, tn_parallel_fn fn, void *ctx);

/* Monotonic wall clock in seconds (for reporting synthesis time only). */
double tn_wall_seconds(void);

#endif
