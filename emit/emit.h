/* emit — formats: Chakra ET write and read (protobuf-c, docs/chakra-format.md), JSON dump,
 * DOT of one rank, MSCCL-IR XML import and export (libxml2). Pipeline: algo → emit → cli. */
#ifndef TENET_EMIT_H
#define TENET_EMIT_H

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"
#include "workload/workload.h"

/* ---- Chakra ET ------------------------------------------------------------
 * What tenet writes (every attribute in the member docs/chakra-format.md names):
 *   GlobalMetadata  version "0.0.4"; tenet_npus, tenet_nodes (nodes in this file),
 *                   tenet_producer (int64 code: 1 greedy, 2 milp, 3 ring, 4 direct, 5 msccl,
 *                   6 chakra, 0 other; the exact name in the attribute's doc_string) and,
 *                   when the collective is known, tenet_coll (Chakra CollectiveCommType:
 *                   ALL_GATHER 2, REDUCE_SCATTER 7, ALL_REDUCE 0), tenet_chunks_per_npu,
 *                   tenet_size_bytes — all int64_val, the same in every file of a set;
 *                   tenet_set_id (int64_val holding emit_chakra_set_id's 64 bits).
 *   Node            id = index, name ("send r0->r1 tag 3 chunk 5"), type COMP_NODE /
 *                   COMM_SEND_NODE / COMM_RECV_NODE, data_deps (ctrl_deps empty),
 *                   duration_micros on COMP; comm_dst (int32) on SEND, comm_src (int32)
 *                   on RECV, comm_size (int64) and comm_tag (int32) on both; nothing
 *                   optional (no SEND comm_src, comm_type or is_cpu_op: no consumer of a
 *                   collective's files reads them); tenet_chunks (int64_list, when the
 *                   node carries chunks) and tenet_reduce (int32 1, on reduce RECVs only).
 * What the reader accepts: any producer's files. Unknown attributes are ignored; comm
 * attributes may use any integer member (a string, float, bool or list is an error);
 * ctrl_deps count as dependencies like data_deps (duplicates merged); node ids are any
 * uint64, mapped to indices in ascending id order. Only COMP, SEND and RECV nodes are
 * accepted: ASTRA-sim never finishes any other type in a collective (METADATA_NODE
 * included), so a set holding one would hang there. gzip files (magic 1f 8b 08) are
 * inflated first. tenet_* header attributes, when present, must agree across the set: files
 * of two sets mixed (tenet_set_id differing, or present in some files only) are refused,
 * naming the odd ranks; files without any tenet_set_id are read as before. */
#define EMIT_CHAKRA_VERSION "0.0.4"
#define EMIT_CHAKRA_MAX_FILE_BYTES (1u << 30) /* per file, also once gunzipped */
/* A gzip'd file inflates to at most EMIT_CHAKRA_GZIP_MAX_RATIO times its compressed size,
 * or EMIT_CHAKRA_GZIP_MIN_BYTES for a small file, and never past EMIT_CHAKRA_MAX_FILE_BYTES
 * (docs/chakra-format.md). Chakra files compress 5 to 10 times; a gzip bomb, 1000 times.
 * Each reading thread inflates one file at a time, so a set's inflated bytes in memory are
 * at most threads x 64 x its largest compressed file: a bound proportional to what is on
 * disk, the same for every thread count (the set reads or fails alike). */
#define EMIT_CHAKRA_GZIP_MAX_RATIO 64u
#define EMIT_CHAKRA_GZIP_MIN_BYTES (1u << 20)
#define EMIT_CHAKRA_MAX_NODES (1u << 24) /* per file */
#define EMIT_CHAKRA_MAX_CHUNKS_PER_NPU (1u << 20)
#define EMIT_CHAKRA_MAX_MSG_BYTES (1ull << 50)       /* comm_size */
#define EMIT_CHAKRA_MAX_DURATION_US 1000000000000ull /* duration_micros: 11.6 days */

/* The set's identity written in every file's header (tenet_set_id): a 64-bit hash of the
 * rank count, the collective header and every rank's nodes (docs/chakra-format.md). Same
 * algo, same id, on any machine and thread count. O(nodes + deps + chunks). */
uint64_t emit_chakra_set_id(const algo_t *a);
/* emit_chakra_set_id of the set emit_chakra_read gives back from a's files: the reader
 * keeps a node's dependency listed twice once (a foreign file may; so could an older tenet's
 * order-proofing gates), so such a set's id differs from its files'. The same for a and for the set
 * read back, to tie what is known of a set (its time) to it across a round trip. 0 when out of
 * memory. */
uint64_t emit_chakra_read_id(const algo_t *a);

/* Writes <prefix>.<rank>.et for every rank as one unit: every file goes to a temporary
 * "<file>.tmp.<pid>" first, and only when all are written does each rank move into place
 * (its previous file moved aside to "<file>.old.<pid>" first, removed once all are in
 * place). On a failure before that, the temporaries are removed and the previous set is
 * untouched; when a rename fails midway, the previous files are put back and err says so,
 * or, when even that fails, which ranks hold the new set (the reader refuses such a mix by
 * its set id). While it runs, its names are registered with tn_cleanup_register, so that a
 * SIGINT, SIGTERM or SIGHUP (cli/ handles them) leaves no temporary. Temporaries and
 * backups of this prefix that killed runs left (their process no longer runs) are removed
 * first (tn_out_clean_stale). Rank files <prefix>.<npus>.et, … of an earlier, larger set
 * are removed, so the prefix names exactly this set. Deterministic: same algo, same bytes.
 * Creates the prefix's directory. Refuses (TN_INVAL, naming rank and node) a rank with no
 * node (see algo_fill_idle), a dependency out of range or on itself, a peer out of range or
 * equal to the rank, a tag outside 0..ALGO_MAX_TAG and a size outside
 * 1..EMIT_CHAKRA_MAX_MSG_BYTES — whatever the reader would reject. TN_IO on file errors.
 * O(nodes + deps + chunks). */
tn_status_t emit_chakra_write(const algo_t *a, const char *prefix, tn_err_t *err);

/* A caller's check of the set (e.g. algo_verify), for emit_chakra_write_checked. */
typedef tn_status_t (*emit_check_fn)(void *ctx, const algo_t *a, tn_err_t *err);

/* emit_chakra_write with check(check_ctx, a) run beside the encoding of the files, on a
 * worker of its own (it must only read a): the set moves into place only when the check
 * returns TN_OK; otherwise the temporaries go, the previous set stays as it was, and the
 * check's error is returned. When a rank's file is a device or FIFO (written straight in,
 * so it cannot be taken back) the check runs first and nothing is written unless it
 * passes. The files are those emit_chakra_write writes. */
tn_status_t emit_chakra_write_checked(const algo_t *a, const char *prefix, emit_check_fn check,
                                      void *check_ctx, tn_err_t *err);

/* Writes an ASTRA-sim workload: <prefix>.<rank>.et for ranks 0..npus-1, each a
 * GlobalMetadata and one COMM_COLL_NODE (comm_type of coll, comm_size size_bytes,
 * is_cpu_op false), which ASTRA-sim runs with its implementation of coll — a custom Chakra
 * set when the system JSON names one (then comm_size is not used). TN_IO on file errors. */
tn_status_t emit_chakra_write_workload(const char *prefix, uint32_t npus, tn_coll_t coll,
                                       uint64_t size_bytes, tn_err_t *err);

/* Reads <prefix>.<rank>.et for ranks 0.. until the first missing file (npus == 0) or
 * exactly npus ranks (a missing one is an error, and so is a file for rank npus). Accepts
 * any producer's files (see above), and rejects corrupt, truncated or incomplete sets with
 * TN_PARSE naming file and node (or record and byte offset): empty files, truncated or
 * overlong length prefixes, records past the end of file, undecodable records, duplicate
 * ids, dangling or self dependencies, unsupported node types, a missing required
 * attribute, non-integer comm attributes, comm_size <= 0, tags outside 0..ALGO_MAX_TAG,
 * peers negative, >= ranks or equal to the node's rank, chunk ids out of range, a node
 * count differing from tenet_nodes, headers disagreeing between files, files of different
 * sets (tenet_set_id: "p: ranks 5-7 belong to another set (id …) than ranks 0-4 (id …)"),
 * a counted set whose files say it has more ranks than exist. TN_IO for a missing
 * or unreadable file, TN_LIMIT past the caps above. *out is NULL on failure; caller frees
 * with algo_free. O(file bytes + nodes log nodes). */
tn_status_t emit_chakra_read(const char *prefix, uint32_t npus, algo_t **out, tn_err_t *err);

/* Decodes one file's bytes (plain or gzip; what names it in messages) into rank `rank` of a,
 * which must still be empty (TN_INVAL otherwise). For rank 0 the file's tenet header sets
 * a's name and collective; for other ranks it must match a's. Borrows data. On failure the
 * rank may hold part of the file's nodes: free a. Used by the reader and the fuzz target. */
tn_status_t emit_chakra_decode(const uint8_t *data, size_t len, const char *what, algo_t *a,
                               uint32_t rank, tn_err_t *err);

/* ---- Chakra workloads (docs/workload.md) ------------------------------------
 * A workload is a training step as ASTRA-sim runs it: one file per rank, any node types
 * ASTRA-sim simulates without a memory model. Node types map to workload/'s ops:
 *   COMP_NODE        WL_COMP: duration_micros (absent: 0), is_cpu_op (bool or integer;
 *                    absent: false)
 *   COMM_COLL_NODE   WL_COLL: comm_type (required), comm_size (required, except for
 *                    BROADCAST), pg_name (string holding an integer, or an integer;
 *                    absent, "" and "0": every rank), duration_micros (BROADCAST replay)
 *   COMM_SEND_NODE   WL_SEND: comm_dst, comm_size required; comm_src (if present, the
 *                    file's rank); comm_tag (absent: 0)
 *   COMM_RECV_NODE   WL_RECV: comm_src, comm_size required; comm_dst (if present, the
 *                    file's rank); comm_tag (absent: 0)
 *   METADATA_NODE, INVALID_NODE   WL_NOP
 * MEM_LOAD_NODE, MEM_STORE_NODE and unknown types are refused (TN_PARSE naming file and
 * node: "w.3.et node 17: MEM_LOAD_NODE, which tenet does not simulate"). data_deps and
 * ctrl_deps are both dependencies. Node names are kept (cut to WL_MAX_NAME bytes). */

/* Reads <prefix>.<rank>.et for ranks 0.. until the first missing file (npus == 0) or
 * exactly npus ranks, into a workload (nodes in ascending id per rank). TN_PARSE naming
 * file and node (or record and byte offset) for: empty, truncated or undecodable files,
 * a missing or non-integer required attribute, a negative comm_size, a pg_name that is not
 * an integer, duplicate ids, dependencies on missing ids or on the node itself, refused
 * node types. TN_IO when rank 0 (or a counted rank) is missing or unreadable; TN_LIMIT
 * past EMIT_CHAKRA_MAX_FILE_BYTES, the gzip budget or WL_MAX_NODES. Files of two workloads
 * mixed (tenet_set_id, as emit_chakra_read) and a counted workload whose files say it has
 * more ranks are TN_PARSE. The graph checks (cycles, collectives across ranks, p2p
 * matching, peers in range) are wl_check's. O(bytes + n log n). */
tn_status_t emit_chakra_read_workload(const char *prefix, uint32_t npus, workload_t **out,
                                      tn_err_t *err);
/* Decodes one file's bytes (plain or gzip; what names it in messages) into rank `rank` of
 * w, which must be empty. Used by the reader and the fuzz target. On failure the rank may
 * hold part of the nodes: free w. */
tn_status_t emit_chakra_decode_workload(const uint8_t *data, size_t len, const char *what,
                                        workload_t *w, uint32_t rank, tn_err_t *err);
/* Writes w as <prefix>.<rank>.et, each a GlobalMetadata (version EMIT_CHAKRA_VERSION;
 * tenet_npus, tenet_nodes and tenet_set_id, a hash of w) then its nodes with the attributes
 * above (names as given; pg_name as a string_val, as Chakra's PyTorch converter writes it;
 * comm_type = node type on SEND and RECV), all ranks as one unit as emit_chakra_write does.
 * What it writes emit_chakra_read_workload reads back equal; TN_INVAL (naming rank and
 * node) for what it would not: a rank with no node, a dependency out of range or on
 * itself, comm_size above INT64_MAX, a negative pg, a peer above INT32_MAX. TN_IO on file
 * errors. Deterministic. */
tn_status_t emit_chakra_write_wl(const workload_t *w, const char *prefix, tn_err_t *err);

/* JSON dump of a set to f: one object {"producer", "npus", "collective", "chunks_per_npu",
 * "size_bytes" (the last three null when unknown), "nodes", "messages", "ranks": [{"rank",
 * "nodes": [{"id", "type" ("SEND"/"RECV"/"COMP"), "peer", "tag", "bytes", "reduce" (RECV),
 * "duration_us" (COMP), "deps": [...], "chunks": [...]}]}]}, one node per line.
 * TN_IO when writing fails. O(nodes + deps + chunks). */
tn_status_t emit_json_dump(const algo_t *a, FILE *f, tn_err_t *err);
/* DOT (Graphviz) of one rank's DAG to f: a box per node labelled with id, type, peer, tag,
 * size and chunks (SEND blue, RECV green, COMP yellow), an edge per dependency. TN_INVAL
 * when rank is out of range, TN_IO when writing fails. */
tn_status_t emit_dot(const algo_t *a, uint32_t rank, FILE *f, tn_err_t *err);

/* MSCCL-IR: import an XML file for messages of size_bytes total (the collective's size);
 * export an algorithm as MSCCL-IR XML (all or nothing). */
tn_status_t emit_msccl_import(const char *path, uint64_t size_bytes, algo_t **out, tn_err_t *err);
tn_status_t emit_msccl_import_mem(const char *xml, size_t len, const char *what,
                                  uint64_t size_bytes, algo_t **out, tn_err_t *err);
tn_status_t emit_msccl_export(const algo_t *a, const char *path, tn_err_t *err);

/* Import options. comp_us is the COMP duration (whole µs) given to every reduction
 * (re, and the reduce part of rrc, rrs, rrcs); 0 (the default, also when opts is NULL)
 * costs 1 ns in simulation. collectiveapi's converter charges 7 µs per reduction. */
typedef struct emit_msccl_step_ref {
  int32_t tb, step; /* the XML step a node came from (-1, -1: an idle rank's filler) */
  long line;        /* its line in the file */
} emit_msccl_step_ref_t;
typedef struct emit_msccl_origin {
  uint32_t npus;
  emit_msccl_step_ref_t **at; /* at[r][i]: origin of node i of rank r */
} emit_msccl_origin_t;
typedef struct emit_msccl_opts {
  uint64_t comp_us;
  /* Optional out (NULL: not wanted): filled on success so that a later message about
   * "rank r node i" (the verifier's, the simulator's) can name the XML step. Free with
   * emit_msccl_origin_free. */
  emit_msccl_origin_t *origin;
} emit_msccl_opts_t;
void emit_msccl_origin_free(emit_msccl_origin_t *o);
/* emit_msccl_import / _mem with options (opts may be NULL). The semantics of the mapping
 * (chunk size, nodes per op, pairing, tags, nop folding) are documented at the top of
 * emit/msccl/import.c. Errors name file:line, gpu, tb and step. O(steps log steps). */
tn_status_t emit_msccl_import_opts(const char *path, uint64_t size_bytes,
                                   const emit_msccl_opts_t *opts, algo_t **out, tn_err_t *err);
tn_status_t emit_msccl_import_mem_opts(const char *xml, size_t len, const char *what,
                                       uint64_t size_bytes, const emit_msccl_opts_t *opts,
                                       algo_t **out, tn_err_t *err);
/* MSCCL-IR as a string (caller frees *xml; *len its length without the NUL). The file
 * form emit_msccl_export writes exactly these bytes. */
tn_status_t emit_msccl_export_mem(const algo_t *a, char **xml, size_t *len, tn_err_t *err);

/* ---- MSCCL-IR export modes -------------------------------------------------
 * Exact (emit_msccl_export, _mem): one threadblock per node, so that the import gives back
 * an algo_equal DAG. Runtime-fit (opts->exact false): nodes packed into threadblocks that
 * a real MSCCL runtime loads, one send peer and one receive peer per threadblock, fused
 * rcs / rrc / rrcs steps, cross-threadblock dependencies through depid/deps/hasdep and nop
 * steps, channels bounded; the import still verifies and simulates (tb serialisation may
 * change the time). All-to-All is out of place in both (send buffer i, receive buffer o,
 * relays in scratch, one more tb per GPU for the cpy of the piece it keeps). The rules and the
 * deadlock-freedom argument are at the top of emit/msccl/pack.c. Limits (zero fields take these
 * defaults) follow the MSCCL executor of NCCL and RCCL (Azure/msccl-executor-nccl, ROCm/rccl
 * src/include/msccl/msccl_struct.h and msccl_parser.cc). */
#define EMIT_MSCCL_MAX_CHANNELS 32        /* MAXCHANNELS */
#define EMIT_MSCCL_MAX_TBS 108            /* per GPU: co-resident blocks (A100 SMs) */
#define EMIT_MSCCL_MAX_TBS_PER_CHANNEL 32 /* sending (and receiving) tbs per channel */
#define EMIT_MSCCL_MAX_STEPS 64           /* per tb, nops included (s < MSCCL_MAX_NUM_STEPS) */
#define EMIT_MSCCL_MAX_CNT 71             /* chunks per step (cnt < MSCCL_MAX_COUNT) */
typedef struct emit_msccl_limits {
  uint32_t channels, tbs, tbs_per_channel, steps, cnt;
} emit_msccl_limits_t;
typedef struct emit_msccl_export_opts {
  bool exact;                 /* one tb per node (exact round trip) instead of runtime-fit */
  bool no_fuse;               /* runtime-fit without rcs / rrc / rrcs */
  emit_msccl_limits_t limits; /* runtime-fit only; 0 fields: the defaults above */
  uint32_t channels;          /* runtime-fit: 0 the fewest that fit, else exactly this many */
} emit_msccl_export_opts_t;
typedef struct emit_msccl_export_stats {
  uint32_t channels;           /* nchannels written */
  uint32_t tbs_min, tbs_max;   /* threadblocks per GPU (GPUs with work) */
  uint32_t steps_max;          /* steps of the longest tb, nops included */
  uint64_t steps, nops, fused; /* all steps, nop steps, fused (rcs/rrc/rrcs) steps */
} emit_msccl_export_stats_t;
/* Export in either mode (opts NULL: exact); stats (may be NULL) filled on success.
 * Runtime-fit errors: TN_LIMIT naming the limit when no channel count 1..limits.channels
 * fits; TN_INFEASIBLE naming rank and node when the DAG would deadlock once sends wait for
 * their receivers (a runtime's connection buffers are finite); otherwise as exact.
 * Deterministic. Runtime-fit checks each channel count's threadblocks, channels and steps
 * per threadblock first, in O(N + deps) without ordering anything, and runs the O(N log N)
 * witness only for counts that pass (and never for a fused form whose steps wait on each
 * other in a cycle), so that deciding takes well under a second at 128 NPUs (bench_msccl
 * export). */
tn_status_t emit_msccl_export_opts(const algo_t *a, const emit_msccl_export_opts_t *opts,
                                   const char *path, emit_msccl_export_stats_t *stats,
                                   tn_err_t *err);
tn_status_t emit_msccl_export_mem_opts(const algo_t *a, const emit_msccl_export_opts_t *opts,
                                       char **xml, size_t *len, emit_msccl_export_stats_t *stats,
                                       tn_err_t *err);

#endif
