/* emit/msccl/msccl_internal.h — private to emit/msccl/: what the two
 * MSCCL-IR writers share (emit/msccl/export.c: exact, one threadblock per node;
 * emit/msccl/pack.c: runtime-fit, nodes packed into few threadblocks). */
#ifndef TENET_EMIT_MSCCL_INTERNAL_H
#define TENET_EMIT_MSCCL_INTERNAL_H

#include "emit/emit.h"

/* Per node of a rank: the exact writer's message channel, the partner (rank, node) of a
 * SEND or RECV, and a reduce RECV's scratch offset. */
typedef struct emit_i_msccl_xnode {
  uint32_t chan;
  uint32_t prank, pnode;
  uint32_t scratch;
} emit_i_msccl_xnode_t;

/* Pairs every SEND with its RECV (FIFO per (src, dst, tag, bytes)) into x[r][i] (prank,
 * pnode; chan = the message's number within its (src, dst) pair in sender id order).
 * TN_PARSE naming rank and node for an unmatched one, TN_INVAL for a bad peer. */
tn_status_t emit_i_msccl_pair_messages(const algo_t *a, emit_i_msccl_xnode_t **x, tn_err_t *err);

/* The chunks of node i of rank r as one ascending range (*first its start); TN_INVAL for a
 * node without bookkeeping, TN_INFEASIBLE for a scattered list. */
tn_status_t emit_i_msccl_contiguous(const algo_t *a, uint32_t r, uint32_t i, uint32_t *first,
                                    tn_err_t *err);

/* The buffer holding chunk c in slot c: "o" for All-Gather, "i" otherwise. */
const char *emit_i_msccl_slot_buf(const algo_t *a);

/* A rank with nothing to do (no node, or the lone 0 µs filler COMP of an idle rank). */
bool emit_i_msccl_idle_rank(const algo_t *a, uint32_t r);

/* All-to-All, out of place: where chunk c sits at rank r when it is r's own piece (send
 * buffer "i", slot d m + j for its piece j to d) or addressed to r (receive buffer "o", slot
 * s m + j for source s's piece j); false for a piece r relays (it lands in scratch). */
bool emit_i_msccl_a2a_place(const algo_t *a, uint32_t r, uint32_t c, const char **buf,
                            int64_t *off);
/* The RECV of rank r that brought relayed chunk c to node i (i itself when a RECV, else
 * i's dependency on a RECV starting at c, else on one carrying c): its scratch holds c at
 * position *idx of that message. TN_INFEASIBLE naming rank and node when there is none. */
tn_status_t emit_i_msccl_a2a_relay_recv(const algo_t *a, uint32_t r, uint32_t i, uint32_t c,
                                        uint32_t *recv, uint32_t *idx, tn_err_t *err);
/* Appends rank r's tb tb: one cpy of the piece r addresses to itself, i to o. */
void emit_i_msccl_a2a_self_copy(tn_sb_t *b, const algo_t *a, uint32_t r, uint32_t tb);

/* ---- All-to-All gathered messages (emit/msccl/stage.c) ----
 * A SEND or RECV whose chunks are not one ascending range (Two-Step's gathered messages), or
 * whose pieces do not sit in one place at the sender or the receiver, moves through a
 * scratch range of its own with cpy steps (see stage.c). x[r][i] must
 * hold every node's partner and the scratch offset of every node that has one (relay and
 * reduce RECVs, and the gathered nodes that gather_scratch gives chunks). */
bool emit_i_msccl_a2a_gathered(const algo_t *a, uint32_t r, uint32_t i);
/* Scratch chunks gathered node i of r stages through: 0 when it moves straight from (SEND)
 * or into (RECV) one range, else its chunk count. */
uint32_t emit_i_msccl_a2a_gather_scratch(const algo_t *a, uint32_t r, uint32_t i);
/* Steps of gathered node i of r without its nops: the s or r and its cpys. */
uint32_t emit_i_msccl_a2a_gather_ops(const algo_t *a, uint32_t r, uint32_t i);
/* Appends those steps from step number s: the first carries depid/deps, the last hasdep;
 * tag >= 0 adds tenet's tag attribute to the s or r. TN_INFEASIBLE naming rank and node
 * for a piece it cannot locate or a SEND whose RECV carries other chunks. */
tn_status_t emit_i_msccl_a2a_gather_write(tn_sb_t *b, const algo_t *a,
                                          const emit_i_msccl_xnode_t *const *x, uint32_t r,
                                          uint32_t i, uint32_t s, int64_t depid, int64_t deps,
                                          bool hasdep, int32_t tag, tn_err_t *err);

/* The collective's name in MSCCL-IR's coll attribute. */
const char *emit_i_msccl_coll_name(const algo_t *a);

/* Appends the comment and <algo ...> line of a's MSCCL-IR (how: "" or " (runtime-fit)",
 * nch channels). The producer's name is written with anything but letters, digits, '_'
 * and '.' replaced by '_', so a name read from foreign files cannot break the XML. */
void emit_i_msccl_header(tn_sb_t *b, const algo_t *a, const char *how, uint32_t nch);
/* Appends rank r's <gpu ...> line (scratch: its s_chunks). */
void emit_i_msccl_gpu_open(tn_sb_t *b, const algo_t *a, uint32_t r, uint32_t scratch);

/* The runtime-fit writer (emit/msccl/pack.c): emit_msccl_export_mem_opts with exact false
 * (zero limits: the EMIT_MSCCL_MAX_* defaults). */
tn_status_t emit_i_msccl_pack(const algo_t *a, const emit_msccl_export_opts_t *opts, char **xml,
                              size_t *len, emit_msccl_export_stats_t *stats, tn_err_t *err);

#endif
