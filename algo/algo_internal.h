/* algo/algo_internal.h — private to algo/: helpers shared by the baseline producers. */
#ifndef TENET_ALGO_INTERNAL_H
#define TENET_ALGO_INTERNAL_H

#include "algo/algo.h"

/* Checks the arguments every baseline shares (collective, npus, chunks, size large enough
 * that every chunk has a byte, tags within ALGO_MAX_TAG for tags_per_pair tags per pair)
 * and creates the empty algorithm named name. TN_INVAL / TN_LIMIT naming the argument. */
tn_status_t algo_i_baseline_create(const char *name, tn_coll_t coll, uint32_t npus,
                                   uint64_t size_bytes, uint32_t chunks_per_npu,
                                   uint64_t tags_per_pair, algo_t **out, tn_err_t *err);

/* Bytes of chunk c of a. */
static inline uint64_t algo_i_chunk_bytes(const algo_t *a, uint32_t c) {
  return ten_chunk_bytes(a->space_bytes, a->npus, a->chunks_per_npu, c);
}

#endif
