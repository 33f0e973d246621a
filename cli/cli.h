/* cli — the `tenet` command: argument parsing, subcommands, tables, plots. The only
 * module that prints or exits. Private to cli/ (no other module includes it). */
#ifndef TENET_CLI_H
#define TENET_CLI_H

#include <signal.h>
#include <stdio.h>

#include "algo/algo.h"
#include "common/common.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "topo/topo.h"

/* Entry point: returns the process exit code (docs/architecture.md §6). */
int cli_main(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand's name. Each returns an exit code. */
int cmd_topo(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_et(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_astra(int argc, char **argv);
/* What `tenet astra -t <t> -c coll -s size -o dir` writes (auto, congestion-aware backend),
 * for callers with a fabric in hand (the demo); *predicted_ps is tenet's time. */
tn_status_t cli_astra_write(const topo_t *t, tn_coll_t coll, uint64_t size, const char *dir,
                            uint64_t *predicted_ps, tn_err_t *err);

/* `tenet workload`: synthesizes every collective of a Chakra workload for a fabric and
 * writes a directory ASTRA-sim runs the step from (cli/cmd_workload.c). */
int cmd_workload(int argc, char **argv);

/* ---- ASTRA-sim run directories (cli/rundir.c) ------------------------------ */
typedef struct cli_rundir {
  char *dir;    /* DIR, without trailing slashes */
  char *final;  /* DIR's absolute path (set by cli_rundir_write before fill runs) */
  char *tmp;    /* DIR.tmp.<pid>, where it is built */
  bool replace; /* DIR holds an earlier run's directory, replaced whole */
} cli_rundir_t;
/* Checks -o DIR: new, an empty directory, or (marker non-NULL) a directory holding the
 * file marker, which an earlier run of the command wrote and which is replaced whole.
 * Creates nothing. Free with cli_rundir_free. */
tn_status_t cli_rundir_plan(cli_rundir_t *d, const char *dir, const char *cmd, const char *marker,
                            tn_err_t *err);
typedef tn_status_t (*cli_rundir_fill_fn)(void *ctx, const cli_rundir_t *d, tn_err_t *err);
/* Creates DIR's parents, removes what killed runs left, then with SIGINT, SIGTERM and
 * SIGHUP held: creates d->tmp, lets fill write into it, and renames it to DIR (an earlier
 * one moved aside, then removed). On failure nothing is left. */
tn_status_t cli_rundir_write(cli_rundir_t *d, cli_rundir_fill_fn fill, void *ctx, tn_err_t *err);
void cli_rundir_free(cli_rundir_t *d);
/* "a/b" (caller frees). */
tn_status_t cli_path_join(const char *a, const char *b, char **out, tn_err_t *err);
/* Writes text to dir/name (all or nothing; mode 0755 when exec). */
tn_status_t cli_put_text(const char *dir, const char *name, const char *text, bool exec,
                         tn_err_t *err);
/* The system JSON key naming a custom implementation of coll. */
const char *cli_astra_custom_key(tn_coll_t coll);
typedef struct cli_astra_system {
  uint32_t native_dims;   /* > 0: ASTRA-sim's own implementations (ring; All-to-All direct)
                             for every collective, one per network dimension */
  const char *custom_set; /* or NULL: the custom implementation of custom_coll */
  tn_coll_t custom_coll;
  const char *per_node; /* or NULL: the per-node-custom-implementation YAML */
} cli_astra_system_t;
/* system.json's text (caller frees): FIFO scheduling, one dataset split, and s. */
tn_status_t cli_astra_system_json(const cli_astra_system_t *s, char **out, tn_err_t *err);
/* run.sh: runs ASTRA-sim ($ASTRA_SIM, else the backend's binary on PATH) on the
 * directory's workload/<workload>, system.json, remote_memory.json, network.yml (and
 * comm_group.json), prints its output, then "ASTRA-sim: <label>N ns; tenet predicted P
 * ns" with N the largest 'sys[i] finished, N cycles'. */
typedef struct cli_astra_run {
  const char *what;      /* the comment: "tenet astra: greedy allgather of 1048576 B on ring-8" */
  bool aware;            /* the congestion-aware backend (else unaware) */
  const char *workload;  /* the workload's name under workload/ */
  bool comm_group;       /* pass comm_group.json */
  const char *label;     /* "" or "step " */
  const char *predicted; /* tenet's figure in ns, as text */
} cli_astra_run_t;
tn_status_t cli_astra_run_sh(const cli_astra_run_t *r, tn_sb_t *b);
/* remote_memory.json (no memory expansion) and network.yml (topo_astra_yaml) in dir. */
tn_status_t cli_astra_common_files(const char *dir, const topo_t *t, bool aware, tn_err_t *err);

/* ---- option parsing ----------------------------------------------------- */
/* One option: --long (and -s when short_name != 0). A value option stores its argument
 * in *value; a flag sets *flag. Accepts "--long VALUE", "--long=VALUE" and "-s VALUE". */
typedef struct cli_opt {
  const char *long_name;
  char short_name;
  const char **value; /* non-NULL: takes a value */
  bool *flag;         /* non-NULL: a flag */
} cli_opt_t;

/* Parses argv[1..] (argv[0] is the command's name) into opts and positional arguments
 * (up to max_pos, stored in pos). Unknown options and missing values are TN_INVAL errors
 * naming the option, with a did-you-mean when one is close. */
tn_status_t cli_parse(int argc, char **argv, const cli_opt_t *opts, size_t nopts, const char **pos,
                      size_t max_pos, size_t *npos, tn_err_t *err);

/* Prints "tenet CMD: message" for err on stderr and returns its exit code. */
int cli_report(const char *cmd, const tn_err_t *err);
/* Prints a usage error "tenet CMD: ..." (+ "see 'tenet CMD --help'") and returns 1. */
int cli_usage(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Directory of the shipped topologies (TENET_TOPOLOGY_DIR, overridable with the
 * TENET_TOPOLOGIES environment variable). */
const char *cli_topology_dir(void);
/* The shipped names in dir (its *.json files without .json), sorted. Caller frees each and
 * the array. TN_IO when dir cannot be opened. */
tn_status_t cli_shipped_names(const char *dir, char ***out, size_t *n, tn_err_t *err);
/* Resolves and loads a TOPO argument (a file or a shipped name). Caller frees. */
tn_status_t cli_load_topo(const char *arg, topo_t **out, tn_err_t *err);
/* Reads the Chakra set at prefix for the fabric t: emit_chakra_read, and a set whose rank
 * count is not t's NPU count is refused naming both counts. */
tn_status_t cli_read_set(const char *prefix, const topo_t *t, algo_t **out, tn_err_t *err);
/* Removes PREFIX.0.et .. PREFIX.<n-1>.et (missing ones are no error): a set, or its first
 * n ranks, that a command wrote or linked and must take back; n 0 touches nothing. */
void cli_unlink_ranks(const char *prefix, uint32_t n);
/* Verifies a synthesized set against t: a failure is tenet's bug (TN_INTERNAL, naming
 * what algo_verify found). rep (may be NULL) gets the verifier's report. */
tn_status_t cli_verify_made(const topo_t *t, const algo_t *a, algo_verify_report_t *rep,
                            tn_err_t *err);
/* Verifies a synthesized set against t (a failure is tenet's bug: TN_INTERNAL) and writes
 * it at prefix, the verifier beside the encoding: the files move into place only if it
 * passes (emit_chakra_write_checked). rep (may be NULL) gets the verifier's report. What
 * `tenet synth` does with its set. */
tn_status_t cli_verify_write(const topo_t *t, const algo_t *a, const char *prefix,
                             algo_verify_report_t *rep, tn_err_t *err);

/* ---- synthesis (synth/: one call for every method) ------------------------ */
/* The greedy's tie-breaking seed when --seed is not given: one value for synth, compare,
 * batch and demo, so that their figures for the same case agree. */
#define CLI_DEFAULT_SEED 1

/* synth_run with the method named by algo ("auto", "greedy", …; NULL means auto), parsed
 * with synth_method_parse; time_limit_s is the MILP's safety net (0: its default). */
/* The options synth and astra share, from their flag values (each may be NULL): -a ALGO
 * (default auto), --seed N (default CLI_DEFAULT_SEED), --chunks K (1..1024). */
tn_status_t cli_synth_opts(const char *algo, const char *seed, const char *chunks, synth_opts_t *so,
                           tn_err_t *err);
/* synth_run of the method named algo (NULL: auto) with seed, best of seeds (0 or 1: seed
 * alone; see synth_opts_t) and the MILP's time_limit_s (0: its default). */
tn_status_t cli_synth_named(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, const char *algo,
                            uint64_t seed, uint32_t seeds, double time_limit_s, synth_result_t *out,
                            tn_err_t *err);

/* ---- aligned tables (cli/table.c) --------------------------------------- */
#define CLI_TABLE_MAX_COLS 32
typedef struct cli_table {
  size_t ncols, nrows;
  const char *const *headers; /* borrowed, ncols entries */
  const char *align;          /* borrowed: one 'l' or 'r' per column */
  tn_vec_t cells;             /* char *, owned, row-major */
} cli_table_t;
/* Starts an empty table (TN_INVAL when align does not have ncols letters or ncols is 0 or
 * above CLI_TABLE_MAX_COLS). Free with cli_table_free even on failure. */
tn_status_t cli_table_init(cli_table_t *t, const char *const *headers, const char *align,
                           size_t ncols, tn_err_t *err);
/* Appends a row of ncols cells (copied; NULL prints as ""). */
tn_status_t cli_table_add(cli_table_t *t, const char *const *cells, tn_err_t *err);
const char *cli_table_cell(const cli_table_t *t, size_t row, size_t col);
/* Width of a column: the longest of its header and cells. O(rows). */
size_t cli_table_width(const cli_table_t *t, size_t col);
/* Header, a rule of dashes, then the rows; columns separated by two blanks. */
void cli_table_print(const cli_table_t *t, FILE *f);
void cli_table_free(cli_table_t *t);

/* ---- argument lists (cli/lists.c) ----------------------------------------- */
/* Splits "a,b,c" (blanks around items ignored) into malloc'ed strings; empty items and
 * repeats are TN_INVAL naming `what` (the flag). Free with cli_list_free. */
tn_status_t cli_split_list(const char *s, const char *what, char ***items, size_t *n,
                           tn_err_t *err);
void cli_list_free(char **items, size_t n);
/* --algos: a list of greedy, ring, direct, milp. */
tn_status_t cli_parse_algos(const char *s, char ***items, size_t *n, tn_err_t *err);
/* --colls: a list of collective names (tn_coll_parse); *colls is malloc'ed. */
tn_status_t cli_parse_colls(const char *s, tn_coll_t **colls, size_t *n, tn_err_t *err);
/* --sizes: tn_parse_size_list plus: sizes > 0, no repeats. *sizes is malloc'ed. */
tn_status_t cli_parse_sizes(const char *s, uint64_t **sizes, size_t *n, tn_err_t *err);
/* --shard I/N with 0 <= I < N. */
tn_status_t cli_parse_shard(const char *s, uint32_t *index, uint32_t *count, tn_err_t *err);

/* ---- topology arguments (cli/run.c) ----------------------------------- */
/* Figures of fabrics generated from a KIND-DIMS argument (the paper's setup). */
#define CLI_GEN_BANDWIDTH_GBPS 50.0
#define CLI_GEN_LATENCY_NS 500.0
/* Loads TOPO: a file, a shipped name, or — when neither exists — a generator spec
 * KIND-DIMS ("ring-8", "fc-8", "mesh-8x8", "mesh3d-4x4x4", "torus-4x4", "hypercube-16";
 * mesh2d/mesh3d/torus2d/torus3d are aliases of mesh/torus) at CLI_GEN_BANDWIDTH_GBPS and
 * CLI_GEN_LATENCY_NS. Caller frees. */
tn_status_t cli_load_topo_spec(const char *arg, topo_t **out, tn_err_t *err);
/* A fingerprint of what TOPO loads (tn_fnv1a64): the bytes of its file (or shipped
 * file), or for a generator spec its kind, dimensions and CLI_GEN_* figures. Changes when
 * the fabric does. TN_IO when the file cannot be read. O(file size). */
tn_status_t cli_topo_digest(const char *arg, uint64_t *digest, tn_err_t *err);
/* Checks that TOPO names a file, a shipped name or a valid generator spec (without
 * parsing the file). */
tn_status_t cli_topo_spec_check(const char *arg, tn_err_t *err);
/* The name results show for TOPO: its file name without folder and .json/.yml/.yaml. */
void cli_topo_label(const char *arg, char *label, size_t len);

/* ---- results of (fabric, collective, size, algorithm) runs (cli/report.c) ----- */
typedef struct cli_result {
  char topology[128];
  uint32_t npus;
  tn_coll_t coll;
  char algorithm[16]; /* as asked for ("auto", "greedy", …) */
  char method[16];    /* what made the algorithm (auto's choice) */
  char variant[48];   /* a baseline's configuration ("both directions, 8 chunks"), or "" */
  uint64_t size_bytes;
  bool ok;             /* false: error holds the one-line reason */
  bool not_applicable; /* the algorithm does not make the collective (error says so) */
  tn_status_t status;  /* why it failed (TN_OK when ok) */
  char error[512];
  uint64_t time_ps;        /* simulated collective time */
  uint64_t lower_bound_ps; /* topo_lower_bound_ps */
  double algbw_GBps, busbw_GBps, ratio_to_bound;
  double speedup_vs_ring; /* Ring's time / this time; < 0 when unknown */
  double synth_ms;
  uint64_t seed;        /* the seed of the kept set */
  uint32_t seeds_tried; /* > 1: best of that many seeds (JSON rows then name seed) */
} cli_result_t;

/* One run: cli_synth_named, then (when chakra_prefix is non-NULL) emit_chakra_write, then
 * sim_run, and fills r (metrics from the simulated time; speedup unknown). On failure r->ok
 * is false, r->error holds the message and the status is returned. t is borrowed and only
 * read; the call is re-entrant (each thread passes its own topology). */
tn_status_t cli_run_one(const topo_t *t, const char *topo_name, tn_coll_t coll, uint64_t size_bytes,
                        const char *algo, uint64_t seed, uint32_t seeds, double time_limit_s,
                        const char *chakra_prefix, cli_result_t *r, tn_err_t *err);
/* Sets speedup_vs_ring of every ok row from the ok "ring" row of the same topology,
 * collective and size. O(n^2). */
void cli_results_set_speedups(cli_result_t *rows, size_t n);
/* busbw the lower bound allows for a row (S / bound x busbw factor), GB/s. */
double cli_result_bound_busbw(const cli_result_t *r);
/* {"rows":[...]} with keys topology, npus, collective, algorithm, size_bytes, time_ns,
 * algbw_GBps, busbw_GBps, lower_bound_ns, ratio_to_bound, speedup_vs_ring (null when
 * unknown). *out is malloc'ed (caller frees). */
tn_status_t cli_results_json(const cli_result_t *rows, size_t n, char **out, tn_err_t *err);
/* The same columns as CSV with a header line, written all-or-nothing to path. */
tn_status_t cli_results_csv(const cli_result_t *rows, size_t n, const char *path, tn_err_t *err);
/* Writes s as one CSV text field: the one quoting rule of every CSV tenet writes (compare,
 * demo, batch). Text is always quoted, a '"' inside is doubled (RFC 4180) and a line break
 * becomes a blank, so that every row is one line; numbers are written bare by the caller. */
void cli_csv_text(FILE *f, const char *s);
/* The human table (size, algorithm, time, algbw, busbw, bound, ratio, vs ring) to f. */
tn_status_t cli_results_table(const cli_result_t *rows, size_t n, FILE *f, tn_err_t *err);
/* Formats ns compactly ("812 ns", "12.35 us", "3.10 ms", "1.204 s"). */
const char *cli_fmt_time_ns(double ns, char *buf, size_t len);
/* The one-object --json output of synth, import and sim (cli/report.c). o is a cJSON
 * object; cli.h does not include cJSON, hence the struct tag. */
struct cJSON;
/* Adds "files": ["<prefix>.0.et", …, "<prefix>.<npus-1>.et"] to o: the Chakra ET set
 * emit_chakra_write wrote. Out of memory leaves the array short; cli_json_print then
 * usually fails too. */
void cli_json_add_et_files(struct cJSON *o, const char *prefix, uint32_t npus);
/* Prints o (may be NULL) as one unformatted line on stdout and deletes it. Returns the
 * exit code: 0, or 3 after "tenet CMD: out of memory printing JSON" on stderr. */
int cli_json_print(const char *cmd, struct cJSON *o);
/* The one way cli/ turns JSON into text: cJSON's printer (pretty: indented), then every
 * byte that does not start valid UTF-8 (a path, a foreign message) becomes U+FFFD, so
 * that stdout and every .json file hold valid UTF-8. Caller frees with free(); NULL when
 * out of memory. O(size of the text). */
char *cli_json_text(const struct cJSON *o, bool pretty);
/* Exact integers: cJSON keeps numbers as doubles and prints 15 digits (2^53 comes out as
 * 9.00719925474099e+15), so counts of bytes, messages and events are raw decimal text.
 * cli_json_u64 makes an item (NULL when out of memory); cli_json_add_u64 adds it to o as
 * key and returns it (NULL on failure, like cJSON_AddNumberToObject). */
struct cJSON *cli_json_u64(uint64_t v);
struct cJSON *cli_json_add_u64(struct cJSON *o, const char *key, uint64_t v);
/* A time of ps picoseconds as exact ns ("7824", "7824.5", "7824.125"). */
struct cJSON *cli_json_ns(uint64_t ps);
struct cJSON *cli_json_add_ns(struct cJSON *o, const char *key, uint64_t ps);

/* ---- the comparison behind compare and demo (cli/cmd_compare.c) --------- */
typedef struct cli_compare_spec {
  const topo_t *topo; /* borrowed; each worker runs on its own copy */
  const char *label;  /* topology name shown in results */
  tn_coll_t coll;
  const uint64_t *sizes;
  size_t nsizes;
  const char *const *algos;
  size_t nalgos;
  uint64_t seed;
  uint32_t seeds;         /* best of seeds (0 or 1: seed alone) */
  double time_limit_s;    /* the MILP's wall-clock safety net (0: its default) */
  unsigned jobs;          /* 0 = all cores */
  bool progress;          /* bar on stderr when it is a terminal */
  bool stop_on_error;     /* first failure (in row order) fails the call */
  const char *chakra_dir; /* non-NULL: write the sets of size chakra_size to */
  uint64_t chakra_size;   /* <dir>/<label>/<coll>-<size>/<algo>.<rank>.et */
} cli_compare_spec_t;
/* Runs every (size, algorithm) pair — rows in size-major order, algorithms as listed —
 * and sets the speed-ups over Ring. *rows is malloc'ed (caller frees). With
 * stop_on_error the first failed row gives TN_INFEASIBLE naming the run. */
tn_status_t cli_compare_run(const cli_compare_spec_t *spec, cli_result_t **rows, size_t *nrows,
                            tn_err_t *err);

/* ---- running many independent jobs on threads (cli/pool.c) --------------- */
typedef void (*cli_job_fn)(void *ctx, size_t index, unsigned worker);
/* Calls fn(ctx, i, worker) for i = 0..n-1 on up to `jobs` threads (tn_parallel_for; worker
 * in 0..jobs-1), handing out indices in increasing order; once *stop (may be NULL) is
 * nonzero no further index runs. Returns when every started job has finished. fn must be
 * thread-safe across distinct indices. Always TN_OK: a thread that cannot be started is
 * not used (the caller's thread runs the jobs). */
tn_status_t cli_parallel(size_t n, unsigned jobs, cli_job_fn fn, void *ctx,
                         volatile sig_atomic_t *stop, tn_err_t *err);
/* Online processors (>= 1). */
unsigned cli_cores(void);
/* Parses a --jobs value: 1..1024. */
tn_status_t cli_parse_jobs(const char *s, unsigned *jobs, tn_err_t *err);

/* ---- progress on stderr (cli/progress.c) -------------------------------- */
typedef struct cli_progress {
  const char *cmd;
  size_t total, done, failed, skipped;
  /* The ETA weighs items by their expected work (1 each unless cli_progress_set_work):
   * remaining work times the seconds per unit of work run so far. */
  uint64_t work_total, work_done, work_ran;
  double start_s;
  bool tty;   /* redraw a bar in place */
  bool lines; /* when not a terminal: one line per item (else silent) */
  bool drawn;
} cli_progress_t;
void cli_progress_init(cli_progress_t *p, const char *cmd, size_t total, bool tty, bool lines);
/* Gives the items' expected work in total (any unit: tenet batch's estimated us), for
 * items then counted with cli_progress_step_work. */
void cli_progress_set_work(cli_progress_t *p, uint64_t work_total);
/* Counts one finished item (skipped: complete before this run) and shows it. Not
 * thread-safe: callers serialize. cli_progress_step counts it as 1 unit of work. */
void cli_progress_step(cli_progress_t *p, const char *item, bool ok, bool skipped, double seconds);
void cli_progress_step_work(cli_progress_t *p, const char *item, bool ok, bool skipped,
                            double seconds, uint64_t work);
/* cli_progress_step_work whose line says label (e.g. "n/a") instead of ok / done-before /
 * FAILED. */
void cli_progress_step_as(cli_progress_t *p, const char *item, bool ok, bool skipped,
                          const char *label, double seconds, uint64_t work);
/* Erases the bar (terminal). */
void cli_progress_finish(cli_progress_t *p);
/* "[#####...] 12/40, 1 failed  ETA 0:42" as of now_s (tn_wall_seconds). The ETA is the
 * work left times the time per unit of work run (not skipped) so far, so a few long
 * items left after many short ones are not taken for a few short ones. */
void cli_progress_bar(const cli_progress_t *p, double now_s, char *buf, size_t len);
/* "m:ss" or "h:mm:ss". */
const char *cli_fmt_duration(double seconds, char *buf, size_t len);

/* ---- pictures (cli/plot.c, cli/heatmap.c; PLplot with its cairo driver) ----
 * PLplot keeps global state: call these from one thread at a time. Files are written
 * to a temporary name and renamed (all or nothing); PLplot prints nothing. */
/* The PLplot device for path: "pngcairo" for .png, "svgcairo" for .svg, else TN_INVAL. */
tn_status_t cli_plot_device(const char *path, const char **device, tn_err_t *err);
/* The busbw axis of cli_plot_busbw: log when the values span more than 10x (auto), or
 * always linear, or always log. */
typedef enum { CLI_PLOT_Y_AUTO = 0, CLI_PLOT_Y_LINEAR, CLI_PLOT_Y_LOG } cli_plot_y_t;
/* The marker (a PLplot Hershey glyph, "#(840)") and dash pattern (PLplot line style 1..8)
 * of the k-th algorithm of a busbw plot: all 8 differ in both. */
void cli_plot_series_style(size_t k, const char **marker, int *dash);
/* busbw (GB/s) against size (log2 axis): one line per algorithm over the ok rows (in
 * their order), each with its own marker and dash pattern so that overlapping lines stay
 * apart, and the lower bound's busbw as a dashed line; title on top. At most 8 algorithms
 * (TN_INVAL past them). */
tn_status_t cli_plot_busbw(const cli_result_t *rows, size_t n, const char *title, const char *path,
                           cli_plot_y_t yscale, tn_err_t *err);
/* Per-link utilization (busy time / collective time) as a bar chart of the busiest
 * links (at most 48, labelled src>dst), from a finished simulation of t. */
tn_status_t cli_heatmap_write(const topo_t *t, const sim_result_t *r, const char *title,
                              const char *path, tn_err_t *err);
/* Synthesizes algo for (coll, size_bytes) on t, simulates it and draws its heatmap to
 * path (what demo shows for greedy and Ring). */
tn_status_t cli_heatmap_run(const topo_t *t, const char *label, tn_coll_t coll, uint64_t size_bytes,
                            const char *algo, uint64_t seed, const char *path, tn_err_t *err);

#endif
