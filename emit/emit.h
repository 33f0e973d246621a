/* emit — formats: Chakra ET write and read (protobuf-c, ../shared/CHAKRA.md), JSON dump,
 * DOT of one rank, MSCCL-IR XML import and export (libxml2). Pipeline: algo → emit → cli. */
#ifndef TENET_EMIT_H
#define TENET_EMIT_H

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"

/* Writes <prefix>.<rank>.et for every rank (all or nothing: on failure no file of the set
 * is left behind). Our chunk bookkeeping goes in extra integer attributes. Deterministic:
 * same algo, same bytes. Creates the prefix's directory. */
tn_status_t emit_chakra_write(const algo_t *a, const char *prefix, tn_err_t *err);

/* Reads <prefix>.<rank>.et for ranks 0.. until the first missing file (npus == 0) or
 * exactly npus ranks (a missing one is an error). Accepts any producer's files (unknown
 * attributes ignored, gzip accepted), maps node ids to indices in ascending id order,
 * and rejects corrupt, truncated or incomplete sets naming file and node. Caller frees. */
tn_status_t emit_chakra_read(const char *prefix, uint32_t npus, algo_t **out, tn_err_t *err);

/* Decodes one file's bytes (what names it in messages) into rank r of a (used by the
 * reader and the fuzz target). */
tn_status_t emit_chakra_decode(const uint8_t *data, size_t len, const char *what, algo_t *a,
                               uint32_t rank, tn_err_t *err);

/* JSON dump of a set (one object: header and per-rank nodes) to f. */
tn_status_t emit_json_dump(const algo_t *a, FILE *f, tn_err_t *err);
/* DOT of one rank's DAG to f. */
tn_status_t emit_dot(const algo_t *a, uint32_t rank, FILE *f, tn_err_t *err);

/* MSCCL-IR: import an XML file for messages of size_bytes total (the collective's size);
 * export an algorithm as MSCCL-IR XML (all or nothing). */
tn_status_t emit_msccl_import(const char *path, uint64_t size_bytes, algo_t **out,
                              tn_err_t *err);
tn_status_t emit_msccl_import_mem(const char *xml, size_t len, const char *what,
                                  uint64_t size_bytes, algo_t **out, tn_err_t *err);
tn_status_t emit_msccl_export(const algo_t *a, const char *path, tn_err_t *err);

/* Import options. comp_us is the COMP duration (whole µs) given to every reduction
 * (re, and the reduce part of rrc, rrs, rrcs); 0 (the default, also when opts is NULL)
 * costs 1 ns in simulation. collectiveapi's converter charges 7 µs per reduction. */
typedef struct emit_msccl_opts {
  uint64_t comp_us;
} emit_msccl_opts_t;
/* emit_msccl_import / _mem with options (opts may be NULL). The semantics of the mapping
 * (chunk size, nodes per op, pairing, tags, nop folding) are documented at the top of
 * emit/msccl_import.c. Errors name file:line, gpu, tb and step. O(steps log steps). */
tn_status_t emit_msccl_import_opts(const char *path, uint64_t size_bytes,
                                   const emit_msccl_opts_t *opts, algo_t **out, tn_err_t *err);
tn_status_t emit_msccl_import_mem_opts(const char *xml, size_t len, const char *what,
                                       uint64_t size_bytes, const emit_msccl_opts_t *opts,
                                       algo_t **out, tn_err_t *err);
/* MSCCL-IR as a string (caller frees *xml; *len its length without the NUL). The file
 * form emit_msccl_export writes exactly these bytes. */
tn_status_t emit_msccl_export_mem(const algo_t *a, char **xml, size_t *len, tn_err_t *err);

#endif
