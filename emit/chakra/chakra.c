/* emit/chakra/chakra.c — Chakra ET files (docs/chakra-format.md) to and from algo_t, with
 * protobuf-c over emit/chakra/et_def.proto. The writer turns each rank's DAG into
 * <prefix>.<rank>.et for ASTRA-sim; the reader turns any producer's set back into an algo_t for
 * tenet sim and tenet verify. Pipeline: algo → emit → files (and files → emit → algo).
 *
 * Speed: the writer encodes each Node record itself (put_node: the bytes protobuf-c's pack
 * gives, checked in test_emit) and packs only the GlobalMetadata with protobuf-c; the
 * reader unpacks each Node with protobuf-c into an arena reset per node, each distinct
 * attribute once per read (chakra_internal.h; cache emptied at 4096 entries); the ranks'
 * files are written and read on tn_thread_count() threads; locations in messages are
 * formatted only when an error is reported.
 *
 * tenet's own attributes (integer members only, ignored by every other reader):
 *   GlobalMetadata  tenet_npus            int64_val  ranks in the set
 *                   tenet_nodes           int64_val  nodes in this file (catches truncation
 *                                                    at a record boundary)
 *                   tenet_producer        int64_val  1 greedy, 2 milp, 3 ring, 4 direct,
 *                                                    5 msccl, 6 chakra, 0 other; its
 *                                                    doc_string holds the exact name
 *                   tenet_coll            int64_val  Chakra CollectiveCommType: ALL_GATHER 2,
 *                                                    REDUCE_SCATTER 7, ALL_REDUCE 0,
 *                                                    ALL_TO_ALL 6
 *                   tenet_chunks_per_npu  int64_val  } written with tenet_coll, only when
 *                   tenet_size_bytes      int64_val  } the collective is known (has_coll)
 *                   tenet_fabric          int64_val  0; its doc_string names the fabric the
 *                                                    set was made for (synth), when known
 *                   tenet_set_id          int64_val  the set's identity (emit_chakra_set_id,
 *                                                    its 64 bits as an int64): the same in
 *                                                    every file of one set, so that the reader
 *                                                    refuses files of two sets mixed
 *   Node            tenet_chunks          int64_list chunk ids the node carries or reduces
 *                   tenet_reduce          int32_val  1 on a RECV that lands in scratch for a
 *                                                    later COMP reduction (absent = copy) */
#define ZLIB_CONST
#include "emit/emit.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "emit/chakra/chakra_internal.h"

typedef ChakraProtoMsg__AttributeProto attr_t;
typedef ChakraProtoMsg__Node pbnode_t;

/* The node attributes the writer writes and the reader looks for, spelled once. */
#define STR_COMM_SRC "comm_src"
#define STR_COMM_DST "comm_dst"
#define STR_COMM_SIZE "comm_size"
#define STR_COMM_TAG "comm_tag"
#define STR_TENET_CHUNKS "tenet_chunks"
#define STR_TENET_REDUCE "tenet_reduce"

/* protobuf-c's name fields are char *: keep the names in writable arrays, so no cast
 * drops a const qualifier. protobuf-c never writes through them. */
static char k_npus[] = "tenet_npus", k_nodes[] = "tenet_nodes", k_producer[] = "tenet_producer",
            k_coll[] = "tenet_coll", k_cpn[] = "tenet_chunks_per_npu",
            k_size[] = "tenet_size_bytes", k_fabric[] = "tenet_fabric", k_set[] = "tenet_set_id",
            k_version[] = EMIT_CHAKRA_VERSION;

static const char *const producer_names[] = {"",       "greedy", "milp",  "ring",
                                             "direct", "msccl",  "chakra"};
#define NPRODUCERS (sizeof producer_names / sizeof producer_names[0])

int64_t emit_i_coll_code(tn_coll_t c) {
  switch (c) {
  case TN_ALLGATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
  case TN_REDUCESCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
  case TN_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
  case TN_ALLTOALL: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
  }
  return -1;
}

static bool coll_from_code(int64_t code, tn_coll_t *c) {
  if (code == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER)
    *c = TN_ALLGATHER;
  else if (code == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER)
    *c = TN_REDUCESCATTER;
  else if (code == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE)
    *c = TN_ALLREDUCE;
  else if (code == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL)
    *c = TN_ALLTOALL;
  else
    return false;
  return true;
}

char *emit_i_rank_path(const char *prefix, uint32_t rank, const char *suffix, tn_err_t *err) {
  size_t n = strlen(prefix) + strlen(suffix) + 32;
  char *p = NULL;
  if (tn_calloc(n, 1, &p, err) != TN_OK) return NULL;
  snprintf(p, n, "%s.%" PRIu32 ".et%s", prefix, rank, suffix);
  return p;
}

/* ======================================================================== writer */

/* Writes v as a base-128 varint at p; returns the end (at most 10 bytes). */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80)
    v >>= 7, n++;
  return n;
}

/* Appends varint32 length + the packed message. */
tn_status_t emit_i_put_record(tn_vec_t *b, const ProtobufCMessage *m, tn_err_t *err) {
  size_t n = protobuf_c_message_get_packed_size(m);
  if (n > UINT32_MAX) return tn_err_set(err, TN_LIMIT, "a record of %zu bytes is too large", n);
  tn_status_t st = tn_vec_reserve(b, b->len + 5 + n, err);
  if (st != TN_OK) return st;
  uint8_t *at = (uint8_t *)b->data + b->len, *p = put_varint(at, n);
  b->len += (size_t)(p - at) + protobuf_c_message_pack(m, p);
  return TN_OK;
}

attr_t *emit_i_attr_i64(attr_t *at, char *name, int64_t v) {
  chakra_proto_msg__attribute_proto__init(at);
  at->name = name;
  at->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  at->int64_val = v;
  return at;
}

/* Appends rank's GlobalMetadata record to buf (uint8_t: the file's bytes). */
static tn_status_t put_metadata(tn_vec_t *buf, const algo_t *a, uint32_t rank, uint64_t set_id,
                                tn_err_t *err) {
  attr_t at[8], *ap[8];
  size_t n = 0;
  char producer[sizeof a->name], fabric[sizeof a->fabric];
  snprintf(fabric, sizeof fabric, "%s", a->fabric);
  snprintf(producer, sizeof producer, "%s", a->name);
  int64_t code = 0;
  for (size_t i = 1; i < NPRODUCERS; i++)
    if (strcmp(a->name, producer_names[i]) == 0) code = (int64_t)i;
  ap[n] = emit_i_attr_i64(&at[n], k_npus, a->npus), n++;
  ap[n] = emit_i_attr_i64(&at[n], k_nodes, (int64_t)algo_rank_len(a, rank)), n++;
  ap[n] = emit_i_attr_i64(&at[n], k_producer, code);
  ap[n]->doc_string = producer, n++;
  if (fabric[0]) { /* the name in doc_string, as for the producer: readers see an integer */
    ap[n] = emit_i_attr_i64(&at[n], k_fabric, 0);
    ap[n]->doc_string = fabric, n++;
  }
  if (a->has_coll) {
    ap[n] = emit_i_attr_i64(&at[n], k_coll, emit_i_coll_code(a->coll)), n++;
    ap[n] = emit_i_attr_i64(&at[n], k_cpn, a->chunks_per_npu), n++;
    ap[n] = emit_i_attr_i64(&at[n], k_size, (int64_t)a->size_bytes), n++;
  }
  int64_t id_bits; /* the id's 64 bits as an int64 (the reader copies them back) */
  memcpy(&id_bits, &set_id, sizeof id_bits);
  ap[n] = emit_i_attr_i64(&at[n], k_set, id_bits), n++;
  ChakraProtoMsg__GlobalMetadata md;
  chakra_proto_msg__global_metadata__init(&md);
  md.version = k_version;
  md.n_attr = n;
  md.attr = ap;
  return emit_i_put_record(buf, &md.base, err);
}

/* ------------------------------------------------------------ set identity
 * A set's id is a 64-bit hash of everything its files encode: the rank count, the header
 * (producer, collective, chunks per NPU, size) and every rank's nodes in order (type,
 * peer, tag, size, duration, reduce flag, dependencies, chunks). Each rank is hashed on its
 * own (in parallel) and the ranks' hashes are folded in rank order, so the id does not
 * depend on the thread count, and the values go in as integers, never as memory, so it
 * does not depend on the machine either. Two sets that differ anywhere get different ids
 * (but for a 2^-64 chance); the same algorithm always gets the same one. */

/* Whether dependency k of node i (deps d) was listed before k: the reader keeps the first
 * (seen: per node of the rank, the last node that listed it + 1; NULL: search). */
static bool dep_again(const uint32_t *d, uint32_t k, uint32_t i, uint32_t *seen) {
  if (seen == NULL) {
    for (uint32_t j = 0; j < k; j++)
      if (d[j] == d[k]) return true;
    return false;
  }
  if (seen[d[k]] == i + 1) return true;
  seen[d[k]] = i + 1;
  return false;
}

/* A rank's hash; as_read: of the rank as emit_chakra_read gives it back from the files
 * (a dependency listed twice is read once). */
static uint64_t rank_hash_of(const algo_t *a, uint32_t r, bool as_read) {
  uint32_t n = algo_rank_len(a, r), *seen = NULL;
  if (as_read && tn_calloc((size_t)n + 1, sizeof *seen, &seen, NULL) != TN_OK)
    seen = NULL; /* no memory: each dependency searched among the node's earlier ones */
  uint64_t h = emit_i_hash_mix(emit_i_hash_mix(0x243f6a8885a308d3ull, r), n);
  for (uint32_t i = 0; i < n; i++) {
    const algo_node_t *x = algo_node(a, r, i);
    const uint32_t *d = algo_node_deps(a, r, x), *c = algo_node_chunks(a, r, x);
    uint32_t ndeps = x->ndeps;
    for (uint32_t k = 0; as_read && k < x->ndeps; k++)
      ndeps -= dep_again(d, k, i, seen);
    h = emit_i_hash_mix(h, (uint64_t)x->op | (uint64_t)x->reduce << 8 |
                               (uint64_t)(uint32_t)x->peer << 32);
    h = emit_i_hash_mix(h, (uint64_t)(uint32_t)x->tag | (uint64_t)ndeps << 32);
    h = emit_i_hash_mix(emit_i_hash_mix(emit_i_hash_mix(h, x->bytes), x->duration_us), x->nchunks);
    for (uint32_t k = 0; as_read && seen && k < x->ndeps; k++)
      seen[d[k]] = 0; /* the marks again, to skip the same ones below */
    for (uint32_t k = 0; k < x->ndeps; k++)
      if (!as_read || !dep_again(d, k, i, seen)) h = emit_i_hash_mix(h, d[k]);
    for (uint32_t k = 0; k < x->nchunks; k++)
      h = emit_i_hash_mix(h, c[k]);
  }
  free(seen);
  return emit_i_hash_final(h);
}

static uint64_t rank_hash(const algo_t *a, uint32_t r) {
  return rank_hash_of(a, r, false);
}

typedef struct hash_job {
  const algo_t *a;
  uint64_t *hashes; /* per rank */
} hash_job_t;

static void hash_rank(void *ctx, size_t item, unsigned worker) {
  (void)worker;
  hash_job_t *j = ctx;
  j->hashes[item] = rank_hash(j->a, (uint32_t)item);
}

/* The id from the ranks' hashes (hashes may be NULL: each is computed here). */
static uint64_t set_id_from(const algo_t *a, const uint64_t *hashes) {
  uint64_t h = emit_i_hash_mix(0x13198a2e03707344ull, a->npus);
  for (const char *s = a->name; *s; s++)
    h = emit_i_hash_mix(h, (uint8_t)*s);
  h = emit_i_hash_mix(h, a->has_coll);
  if (a->has_coll)
    h = emit_i_hash_mix(
        emit_i_hash_mix(emit_i_hash_mix(h, (uint64_t)emit_i_coll_code(a->coll)), a->chunks_per_npu),
        a->size_bytes);
  for (uint32_t r = 0; r < a->npus; r++)
    h = emit_i_hash_mix(h, hashes ? hashes[r] : rank_hash(a, r));
  return emit_i_hash_final(h);
}

uint64_t emit_chakra_set_id(const algo_t *a) {
  return set_id_from(a, NULL);
}

uint64_t emit_chakra_read_id(const algo_t *a) {
  uint64_t *hashes = NULL;
  if (tn_malloc((size_t)a->npus + 1, sizeof *hashes, &hashes, NULL) != TN_OK) return 0;
  for (uint32_t r = 0; r < a->npus; r++)
    hashes[r] = rank_hash_of(a, r, true);
  uint64_t id = set_id_from(a, hashes);
  free(hashes);
  return id;
}

/* Appends v in decimal at p; returns the new end. Names are formatted by hand, two digits
 * at a time: snprintf per node was a tenth of the writer's time. */
static char *put_dec(char *p, uint32_t v) {
  static const char pairs[] = "0001020304050607080910111213141516171819"
                              "2021222324252627282930313233343536373839"
                              "4041424344454647484950515253545556575859"
                              "6061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  unsigned digits = 1;
  for (uint64_t big = 10; v >= big; big *= 10)
    digits++;
  char *end = p + digits;
  for (p = end; v >= 100; v /= 100)
    p -= 2, memcpy(p, pairs + 2 * (v % 100), 2);
  if (v >= 10)
    memcpy(p - 2, pairs + 2 * v, 2);
  else
    p[-1] = (char)('0' + v);
  return end;
}

static inline char *put_str(char *p, const char *s) {
  size_t n = strlen(s); /* folded for literals */
  memcpy(p, s, n);
  return p + n;
}

/* " chunk 5", " chunks 4..7" (consecutive) or " 3 chunks"; nothing when there is none. */
static char *chunk_words(char *p, const uint32_t *c, uint32_t n) {
  bool run = n > 1;
  for (uint32_t i = 1; i < n && run; i++)
    run = c[i] == c[i - 1] + 1;
  if (n == 1) return put_dec(put_str(p, " chunk "), c[0]);
  if (run) return put_dec(put_str(put_dec(put_str(p, " chunks "), c[0]), ".."), c[n - 1]);
  if (n > 1) return put_str(put_dec(put_str(p, " "), n), " chunks");
  return p;
}

/* "send r0->r1 tag 3 chunk 5", "recv r1<-r0 tag 3 chunks 4..7 reduce", "comp r2 idle".
 * Returns the length, under 100 (put_node reserved room for it; no NUL is written). Peers
 * and tags are non-negative here (check_node ran first). */
static size_t node_name(const algo_t *a, uint32_t r, const algo_node_t *x, char *buf) {
  char *p = buf;
  const uint32_t *ch = algo_node_chunks(a, r, x);
  if (x->op == ALGO_COMP) {
    p = put_dec(put_str(p, "comp r"), r);
    p = put_str(p, x->nchunks ? " reduce" : " idle");
    p = chunk_words(p, ch, x->nchunks);
  } else {
    bool send = x->op == ALGO_SEND;
    p = put_dec(put_str(p, send ? "send r" : "recv r"), r);
    p = put_dec(put_str(p, send ? "->r" : "<-r"), (uint32_t)x->peer);
    p = put_dec(put_str(p, " tag "), (uint32_t)x->tag);
    p = chunk_words(p, ch, x->nchunks);
    if (!send && x->reduce) p = put_str(p, " reduce");
  }
  return (size_t)(p - buf);
}

/* The writer refuses what the reader would reject, so every set it writes reads back. */
static tn_status_t check_node(const algo_t *a, uint32_t r, uint32_t i, tn_err_t *err) {
  const algo_node_t *x = algo_node(a, r, i);
  const uint32_t *d = algo_node_deps(a, r, x);
  for (uint32_t k = 0; k < x->ndeps; k++)
    if (d[k] >= algo_rank_len(a, r) || d[k] == i)
      return tn_err_set(err, TN_INVAL, "rank %" PRIu32 " node %" PRIu32 ": bad dependency %" PRIu32,
                        r, i, d[k]);
  if (x->op == ALGO_COMP) return TN_OK;
  if (x->peer < 0 || (uint32_t)x->peer >= a->npus || (uint32_t)x->peer == r)
    return tn_err_set(err, TN_INVAL, "rank %" PRIu32 " node %" PRIu32 ": bad peer %" PRId32, r, i,
                      x->peer);
  if (x->tag < 0 || x->tag > ALGO_MAX_TAG)
    return tn_err_set(err, TN_INVAL,
                      "rank %" PRIu32 " node %" PRIu32 ": tag %" PRId32 " outside 0..%d", r, i,
                      x->tag, ALGO_MAX_TAG);
  if (x->bytes == 0 || x->bytes > EMIT_CHAKRA_MAX_MSG_BYTES)
    return tn_err_set(err, TN_INVAL,
                      "rank %" PRIu32 " node %" PRIu32 ": size %" PRIu64 " outside 1..%" PRIu64, r,
                      i, x->bytes, (uint64_t)EMIT_CHAKRA_MAX_MSG_BYTES);
  return TN_OK;
}

/* ------------------------------------------------------------ node records
 * The writer encodes each Node record itself, straight into the file buffer: the bytes
 * protobuf_c_message_pack gives for the same ChakraProtoMsg__Node, field order included
 * (test_emit unpacks every record with protobuf-c, packs it again and compares the bytes;
 * its round trips check the values). Packing each node through protobuf-c cost ~1,200
 * instructions, most of them in its descriptor walk; the fields here are a handful of
 * varints and strings. The GlobalMetadata record is still
 * packed by protobuf-c (once per file). */

/* Keys (field number << 3 | wire type: 0 varint, 2 length-delimited) of the Node fields
 * the writer sets, and of the AttributeProto fields it uses. */
enum {
  NODE_ID = 1 << 3 | 0,
  NODE_NAME = 2 << 3 | 2,
  NODE_TYPE = 3 << 3 | 0,
  NODE_DATA_DEPS = 5 << 3 | 2, /* proto3 repeated scalars are packed */
  NODE_DURATION = 7 << 3 | 0,
  NODE_ATTR = 10 << 3 | 2,
  ATTR_NAME = 1 << 3 | 2,
  ATTR_INT32 = 7 << 3 | 0,
  ATTR_INT64 = 9 << 3 | 0,
  ATTR_INT64_LIST = 10 << 3 | 2,
  LIST_VALUES = 1 << 3 | 2,
};

/* A node's bytes beyond 5 per dependency and 5 per chunk id are fewer than this: id 11,
 * name 2 + 160, type 2, the deps' key and length 6, duration 11, five attributes under 30
 * each, the chunk list's framing 30, the record length 5. */
#define NODE_FIXED_MAX 512u

/* An attribute name as (chars, length), for the literals below. */
#define ANAME(s) s, sizeof s - 1

/* AttributeProto {name, one varint member (key)} as a Node field. Values here are never
 * negative (check_node), so an int32 takes at most 5 bytes, as protobuf-c writes it. */
static uint8_t *put_attr_int(uint8_t *p, const char *name, size_t nl, uint32_t key, uint64_t v) {
  *p++ = NODE_ATTR;
  *p++ = (uint8_t)(2 + nl + varint_size(key) + varint_size(v)); /* under 128 */
  *p++ = ATTR_NAME;
  *p++ = (uint8_t)nl;
  memcpy(p, name, nl);
  p = put_varint(p + nl, key);
  return put_varint(p, v);
}

/* AttributeProto {name, int64_list {packed values}} as a Node field. */
static uint8_t *put_attr_list(uint8_t *p, const char *name, size_t nl, const uint32_t *v,
                              uint32_t n) {
  size_t payload = 0;
  for (uint32_t k = 0; k < n; k++)
    payload += varint_size(v[k]);
  size_t list = 1 + varint_size(payload) + payload;
  *p++ = NODE_ATTR;
  p = put_varint(p, 2 + nl + 1 + varint_size(list) + list);
  *p++ = ATTR_NAME;
  *p++ = (uint8_t)nl;
  memcpy(p, name, nl);
  p += nl;
  *p++ = ATTR_INT64_LIST;
  p = put_varint(p, list);
  *p++ = LIST_VALUES;
  p = put_varint(p, payload);
  for (uint32_t k = 0; k < n; k++)
    p = put_varint(p, v[k]);
  return p;
}

/* Appends node i of rank r as a record: its length, then the Node. The attributes: the peer
 * (comm_dst on a SEND, comm_src on a RECV), comm_size, comm_tag, tenet_chunks, tenet_reduce.
 * Nothing optional is written: a SEND's comm_src (its own rank), comm_type and is_cpu_op
 * are read by no consumer of a collective's files (ASTRA-sim's custom-collective runner
 * reads a SEND's comm_dst, comm_size and comm_tag, a RECV's comm_src, comm_size and
 * comm_tag), and each costs every reader a decoded attribute per node. */
static tn_status_t put_node(tn_vec_t *buf, const algo_t *a, uint32_t r, uint32_t i, tn_err_t *err) {
  const algo_node_t *x = algo_node(a, r, i);
  tn_status_t st = check_node(a, r, i, err);
  if (st == TN_OK)
    st = tn_vec_reserve(
        buf, buf->len + NODE_FIXED_MAX + 5u * (size_t)x->ndeps + 5u * (size_t)x->nchunks, err);
  if (st != TN_OK) return st;
  /* The Node goes 5 bytes in (room for any length) and moves down once its length is known. */
  uint8_t *rec = (uint8_t *)buf->data + buf->len, *body = rec + 5, *p = body;
  if (i) *p++ = NODE_ID, p = put_varint(p, i);
  size_t nl = node_name(a, r, x, (char *)p + 2);
  assert(nl > 0 && nl < 128);
  *p++ = NODE_NAME;
  *p++ = (uint8_t)nl;
  p += nl;
  bool send = x->op == ALGO_SEND;
  uint8_t type = x->op == ALGO_COMP ? CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE
                 : send             ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                    : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
  *p++ = NODE_TYPE;
  *p++ = type;
  const uint32_t *d = algo_node_deps(a, r, x);
  if (x->ndeps) {
    size_t payload = 0;
    for (uint32_t k = 0; k < x->ndeps; k++)
      payload += varint_size(d[k]);
    *p++ = NODE_DATA_DEPS;
    p = put_varint(p, payload);
    for (uint32_t k = 0; k < x->ndeps; k++)
      p = put_varint(p, d[k]);
  }
  if (x->op == ALGO_COMP) {
    if (x->duration_us) *p++ = NODE_DURATION, p = put_varint(p, x->duration_us);
  } else {
    uint32_t peer = (uint32_t)x->peer;
    p = send ? put_attr_int(p, ANAME(STR_COMM_DST), ATTR_INT32, peer)
             : put_attr_int(p, ANAME(STR_COMM_SRC), ATTR_INT32, peer);
    p = put_attr_int(p, ANAME(STR_COMM_SIZE), ATTR_INT64, x->bytes);
    p = put_attr_int(p, ANAME(STR_COMM_TAG), ATTR_INT32, (uint32_t)x->tag);
  }
  if (x->nchunks)
    p = put_attr_list(p, ANAME(STR_TENET_CHUNKS), algo_node_chunks(a, r, x), x->nchunks);
  if (x->op == ALGO_RECV && x->reduce) p = put_attr_int(p, ANAME(STR_TENET_REDUCE), ATTR_INT32, 1);
  size_t len = (size_t)(p - body);
  uint8_t *at = put_varint(rec, len);
  if (at != body) memmove(at, body, len);
  buf->len += (size_t)(at - rec) + len;
  return TN_OK;
}

/* Writes b to path (plain write(2): the bytes are already in one buffer); a failure
 * removes path when remove_on_failure (a temporary; never a device written straight in). */
static tn_status_t write_file(const char *path, const tn_vec_t *b, bool remove_on_failure,
                              tn_err_t *err) {
  /* A temporary is created inside tn_cleanup_begin/end: a signal handler cleaning up waits
   * for it, and none is created once one has started. */
  if (remove_on_failure && !tn_cleanup_begin())
    return tn_err_set(err, TN_IO, "%s: not written: the process is ending on a signal", path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (remove_on_failure) tn_cleanup_end();
  if (fd < 0) return tn_err_set(err, TN_IO, "%s: cannot write: %s", path, strerror(errno));
  const uint8_t *p = b->data;
  size_t left = b->len;
  while (left > 0) {
    ssize_t put = write(fd, p, left);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    p += put;
    left -= (size_t)put;
  }
  int saved = left ? (errno ? errno : EIO) : 0;
  if (close(fd) != 0 && saved == 0) saved = errno;
  if (saved != 0) {
    tn_err_set(err, TN_IO, "%s: write failed: %s", path, strerror(saved));
    if (remove_on_failure) remove(path);
    return TN_IO;
  }
  return TN_OK;
}

/* The first failure (lowest rank) among the ranks a parallel stage ran: each worker keeps
 * the lowest it met, and a rank above the lowest failure known so far is skipped, so the
 * error reported is the one a rank-by-rank loop would report. */
typedef struct first_fail {
  atomic_uint_fast32_t rank; /* lowest failed rank so far, UINT32_MAX when none */
} first_fail_t;

typedef struct worker_fail {
  uint32_t rank;
  tn_err_t err;
} worker_fail_t;

static bool skip_rank(first_fail_t *f, uint32_t r) {
  return r > atomic_load_explicit(&f->rank, memory_order_relaxed);
}

static void note_fail(first_fail_t *f, worker_fail_t *w, uint32_t r, const tn_err_t *err) {
  if (r < w->rank) {
    w->rank = r;
    w->err = *err;
  }
  uint_fast32_t cur = atomic_load(&f->rank);
  while (r < cur && !atomic_compare_exchange_weak(&f->rank, &cur, r)) {
  }
}

/* The lowest-rank failure of all workers, copied into err; TN_OK when none. */
static tn_status_t first_failure(const worker_fail_t *w, unsigned n, tn_err_t *err) {
  const worker_fail_t *best = NULL;
  for (unsigned i = 0; i < n; i++)
    if (w[i].rank != UINT32_MAX && (best == NULL || w[i].rank < best->rank)) best = &w[i];
  if (best == NULL) return TN_OK;
  if (err && err->status == TN_OK) *err = best->err;
  return best->err.status;
}

typedef struct write_job {
  uint32_t npus;
  emit_i_encode_fn encode; /* fills a buffer with one rank's file */
  void *ctx;               /* encode's */
  uint64_t set_id;         /* named when a failed roll back leaves a mixed set */
  tn_vec_t *bufs;          /* uint8_t, one per worker: the file being encoded */
  worker_fail_t *fails;    /* one per worker */
  char **targets;          /* per rank: its file, links followed (tn_out_plan) */
  char **tmps;             /* per rank: its temporary, NULL when written straight in */
  char **backups;          /* per rank with a temporary: where its previous file waits */
  uint8_t *written;        /* per rank: its temporary (or target) has been written */
  uint8_t *backed;         /* per rank: its previous file was moved to its backup */
  first_fail_t first;
  emit_i_check_fn check; /* run as item 0 beside the ranks (items 1..npus), or NULL */
  void *check_ctx;
  tn_err_t check_err;       /* its outcome */
  atomic_bool check_failed; /* then the ranks still to encode need not be */
} write_job_t;

/* One rank: encode its file into the worker's buffer and write it where tn_out_plan said
 * (its temporary, or straight into a device or FIFO). */
static void write_rank(void *ctx, size_t item, unsigned worker) {
  write_job_t *j = ctx;
  if (j->check != NULL && item-- == 0) { /* the check: the ranks are items 1..npus */
    if (j->check(j->check_ctx, &j->check_err) != TN_OK) atomic_store(&j->check_failed, true);
    return;
  }
  uint32_t r = (uint32_t)item;
  if (skip_rank(&j->first, r) || atomic_load_explicit(&j->check_failed, memory_order_relaxed))
    return;
  tn_vec_t *buf = &j->bufs[worker];
  tn_err_t err = {0};
  buf->len = 0;
  tn_status_t st = j->encode(j->ctx, r, buf, &err);
  if (st == TN_OK) {
    bool direct = j->tmps[r] == NULL;
    if ((st = write_file(direct ? j->targets[r] : j->tmps[r], buf, !direct, &err)) == TN_OK)
      j->written[r] = 1;
  }
  if (st != TN_OK) note_fail(&j->first, &j->fails[worker], r, &err);
}

/* Plans every rank's output (tn_out_plan) and names its backup "<target>.old.<pid>", all
 * before any file is created, so that a signal handler can be given the names. */
static tn_status_t plan_ranks(write_job_t *j, const char *prefix, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; r < j->npus && st == TN_OK; r++) {
    char *path = emit_i_rank_path(prefix, r, "", err);
    if (path == NULL) return TN_NOMEM;
    st = tn_out_plan(path, &j->targets[r], &j->tmps[r], err);
    free(path);
    if (st != TN_OK || j->tmps[r] == NULL) continue;
    size_t n = strlen(j->targets[r]) + 32;
    if ((st = tn_calloc(n, 1, &j->backups[r], err)) == TN_OK)
      snprintf(j->backups[r], n, "%s.old.%ld", j->targets[r], (long)getpid());
  }
  return st;
}

/* Appends "0-4, 7" (the ranks r < n with mark[r] == want, as ranges) to buf; "…" ends a
 * list that does not fit. Returns how many ranks matched. */
static uint32_t put_ranks(char *buf, size_t len, const uint8_t *mark, uint32_t n, uint8_t want) {
  size_t at = strlen(buf);
  uint32_t count = 0;
  bool first = true, cut = false;
  for (uint32_t r = 0; r < n; r++) {
    if (mark[r] != want) continue;
    uint32_t e = r;
    while (e + 1 < n && mark[e + 1] == want)
      e++;
    count += e - r + 1;
    if (!cut) {
      char one[48];
      if (e == r)
        snprintf(one, sizeof one, "%s%" PRIu32, first ? "" : ", ", r);
      else
        snprintf(one, sizeof one, "%s%" PRIu32 "-%" PRIu32, first ? "" : ", ", r, e);
      if (at + strlen(one) + 8 < len) {
        memcpy(buf + at, one, strlen(one) + 1);
        at += strlen(one);
      } else {
        snprintf(buf + at, len - at, ", ...");
        cut = true;
      }
    }
    first = false;
    r = e;
  }
  return count;
}

/* "rank 5" or "ranks 0-4, 7" into buf (len bytes) for the marked ranks. */
static void name_ranks(char *buf, size_t len, const uint8_t *mark, uint32_t n, uint8_t want) {
  char list[256] = "";
  uint32_t count = put_ranks(list, sizeof list, mark, n, want);
  snprintf(buf, len, "%s %s", count == 1 ? "rank" : "ranks", list);
}

/* A rename failed at rank `at`: puts back every previous file moved aside (and removes a
 * new file where there was none), removes the temporaries, and adds to err what is left:
 * the previous set whole, or the ranks of the new set that could not be taken back. */
static void roll_back(write_job_t *j, uint32_t at, tn_err_t *err) {
  uint32_t n = j->npus, left_new = 0;
  uint8_t *is_new = j->written; /* reused: 1 = rank r now holds the new set's file */
  for (uint32_t r = 0; r < n; r++) {
    is_new[r] = 0;
    if (j->tmps[r] == NULL) continue;
    if (r < at) is_new[r] = 1; /* renamed into place */
    if (j->backed[r] && rename(j->backups[r], j->targets[r]) == 0)
      is_new[r] = 0;
    else if (r < at && !j->backed[r] && unlink(j->targets[r]) == 0)
      is_new[r] = 0;
    if (r >= at) unlink(j->tmps[r]);
    left_new += is_new[r];
  }
  if (err == NULL || err->status == TN_OK) return;
  char msg[TN_ERR_MSG_MAX], ranks[320];
  if (left_new == 0) {
    snprintf(msg, sizeof msg, "%s; the previous files are left as they were", err->msg);
  } else {
    name_ranks(ranks, sizeof ranks, is_new, n, 1);
    snprintf(msg, sizeof msg,
             "%s; %s of the new set could not be taken back and the others are the previous "
             "files: a mixed set, which readers refuse (set id %016" PRIx64 ")",
             err->msg, ranks, j->set_id);
  }
  tn_fit_line(err->msg, sizeof err->msg, msg);
}

/* Moves each rank's temporary into place. The previous file is first moved aside to its
 * backup (not removed: a failure puts it back) and not renamed over: ext4 flushes a file
 * renamed over another one to disk (auto_da_alloc), which made rewriting a set several
 * times slower. A directory in the way is neither moved nor removed: the rename fails. */
static tn_status_t rename_ranks(write_job_t *j, tn_err_t *err) {
  uint32_t r = 0;
  tn_status_t st = TN_OK;
  for (; r < j->npus && st == TN_OK; r++) {
    if (j->tmps[r] == NULL) continue; /* written straight in */
    /* Both renames of a rank inside tn_cleanup_begin/end: a signal handler putting the
     * backups back waits for them, so it never runs between the two. */
    if (!tn_cleanup_begin()) {
      st = tn_err_set(err, TN_IO, "%s: not renamed: the process is ending on a signal",
                      j->targets[r]);
      break;
    }
    struct stat sb;
    if (lstat(j->targets[r], &sb) == 0 && S_ISREG(sb.st_mode)) {
      if (rename(j->targets[r], j->backups[r]) != 0)
        st = tn_err_set(err, TN_IO, "%s: cannot move the previous file aside: %s", j->targets[r],
                        strerror(errno));
      else
        j->backed[r] = 1;
    }
    if (st == TN_OK && rename(j->tmps[r], j->targets[r]) != 0)
      st = tn_err_set(err, TN_IO, "%s: cannot rename into place: %s", j->targets[r],
                      strerror(errno));
    tn_cleanup_end();
    if (st != TN_OK) break;
  }
  if (st != TN_OK) roll_back(j, r, err);
  return st;
}

/* Removes the temporaries written (a device written straight into stays). */
static void undo(const write_job_t *j) {
  for (uint32_t r = 0; r < j->npus; r++)
    if (j->tmps[r] != NULL && j->written[r]) remove(j->tmps[r]);
}

static void free_job(write_job_t *j) {
  for (uint32_t r = 0; j->targets && r < j->npus; r++) {
    free(j->targets[r]);
    free(j->tmps[r]);
    free(j->backups[r]);
  }
  free(j->bufs);
  free(j->fails);
  free(j->targets);
  free(j->tmps);
  free(j->backups);
  free(j->written);
  free(j->backed);
}

/* The set's id, each rank hashed on one of `workers` threads. */
static tn_status_t compute_set_id(const algo_t *a, unsigned workers, uint64_t *id, tn_err_t *err) {
  uint64_t *hashes = NULL;
  tn_status_t st = tn_calloc(a->npus, sizeof *hashes, &hashes, err);
  if (st != TN_OK) return st;
  hash_job_t hj = {a, hashes};
  tn_parallel_for(a->npus, workers, hash_rank, &hj);
  *id = set_id_from(a, hashes);
  free(hashes);
  return TN_OK;
}

/* An algorithm set's file for one rank: its header, then its nodes. */
typedef struct algo_enc {
  const algo_t *a;
  uint64_t set_id; /* emit_chakra_set_id, in every file's header */
} algo_enc_t;

static tn_status_t encode_algo_rank(void *ctx, uint32_t r, tn_vec_t *buf, tn_err_t *err) {
  const algo_enc_t *e = ctx;
  tn_status_t st = put_metadata(buf, e->a, r, e->set_id, err);
  for (uint32_t i = 0; st == TN_OK && i < algo_rank_len(e->a, r); i++)
    st = put_node(buf, e->a, r, i, err);
  return st;
}

typedef struct check_wrap {
  emit_check_fn fn;
  void *ctx;
  const algo_t *a;
} check_wrap_t;

static tn_status_t run_check(void *ctx, tn_err_t *err) {
  const check_wrap_t *w = ctx;
  return w->fn(w->ctx, w->a, err);
}

tn_status_t emit_chakra_write(const algo_t *a, const char *prefix, tn_err_t *err) {
  return emit_chakra_write_checked(a, prefix, NULL, NULL, err);
}

tn_status_t emit_chakra_write_checked(const algo_t *a, const char *prefix, emit_check_fn check,
                                      void *check_ctx, tn_err_t *err) {
  for (uint32_t r = 0; r < a->npus; r++)
    if (algo_rank_len(a, r) == 0)
      return tn_err_set(err, TN_INVAL,
                        "rank %" PRIu32 " has no nodes (every Chakra file needs one: "
                        "algo_fill_idle)",
                        r);
  unsigned workers = tn_thread_count();
  if (workers > a->npus) workers = a->npus;
  algo_enc_t e = {a, 0};
  tn_status_t st = compute_set_id(a, workers, &e.set_id, err);
  if (st != TN_OK) return st;
  check_wrap_t w = {check, check_ctx, a};
  return emit_i_write_set_checked(prefix, a->npus, e.set_id, encode_algo_rank, &e,
                                  check != NULL ? run_check : NULL, &w, err);
}

tn_status_t emit_i_write_set(const char *prefix, uint32_t npus, uint64_t set_id,
                             emit_i_encode_fn encode, void *ctx, tn_err_t *err) {
  return emit_i_write_set_checked(prefix, npus, set_id, encode, ctx, NULL, NULL, err);
}

tn_status_t emit_i_write_set_checked(const char *prefix, uint32_t npus, uint64_t set_id,
                                     emit_i_encode_fn encode, void *ctx, emit_i_check_fn check,
                                     void *check_ctx, tn_err_t *err) {
  /* tn_mkdir_parents also refuses a prefix that names a folder ("out/", "/"), which would
   * write hidden files ".0.et" inside it. Temporaries of earlier runs that were killed
   * (SIGKILL leaves them) go first, so that they never pile up. */
  tn_status_t st = tn_mkdir_parents(prefix, err);
  if (st == TN_OK) st = tn_out_clean_stale(prefix, ".et", NULL, err);
  if (st != TN_OK) return st;
  unsigned workers = tn_thread_count();
  if (workers > npus) workers = npus;
  write_job_t j = {.npus = npus, .encode = encode, .ctx = ctx, .set_id = set_id};
  atomic_init(&j.first.rank, UINT32_MAX);
  atomic_init(&j.check_failed, false);
  int slot = -1;
  /* The check takes a worker of its own beside the encoders. */
  unsigned slots = check != NULL ? workers + 1 : workers;
  if ((st = tn_calloc(slots, sizeof *j.bufs, &j.bufs, err)) != TN_OK ||
      (st = tn_calloc(slots, sizeof *j.fails, &j.fails, err)) != TN_OK ||
      (st = tn_calloc(npus, sizeof *j.targets, &j.targets, err)) != TN_OK ||
      (st = tn_calloc(npus, sizeof *j.tmps, &j.tmps, err)) != TN_OK ||
      (st = tn_calloc(npus, sizeof *j.backups, &j.backups, err)) != TN_OK ||
      (st = tn_calloc(npus, 1, &j.written, err)) != TN_OK ||
      (st = tn_calloc(npus, 1, &j.backed, err)) != TN_OK ||
      (st = plan_ranks(&j, prefix, err)) != TN_OK) {
    free_job(&j);
    return st;
  }
  /* A rank written straight into a device or FIFO cannot be taken back: then the check
   * runs first, and nothing is written unless it passes. Else it runs beside the ranks. */
  bool direct = false;
  for (uint32_t r = 0; r < npus && !direct; r++)
    direct = j.tmps[r] == NULL;
  if (check != NULL && direct) {
    if ((st = check(check_ctx, err)) != TN_OK) {
      free_job(&j);
      return st;
    }
  } else if (check != NULL) {
    j.check = check;
    j.check_ctx = check_ctx;
    workers = slots;
  }
  /* From here until every rank is in place, a SIGINT, SIGTERM or SIGHUP removes the
   * temporaries and puts back the previous files moved aside (cli/ installs the handler). */
  const tn_cleanup_t doomed = {npus, j.tmps, j.backups, j.targets};
  slot = tn_cleanup_register(&doomed);
  for (unsigned k = 0; k < workers; k++) {
    tn_vec_init(&j.bufs[k], 1);
    j.fails[k].rank = UINT32_MAX;
  }
  tn_parallel_for(j.check != NULL ? (size_t)npus + 1 : npus, workers, write_rank, &j);
  for (unsigned k = 0; k < workers; k++)
    tn_vec_free(&j.bufs[k]);
  if (atomic_load(&j.check_failed)) { /* the check's reason before any rank's */
    undo(&j);
    st = tn_err_set(err, j.check_err.status, "%s", j.check_err.msg);
    goto done;
  }
  if ((st = first_failure(j.fails, workers, err)) != TN_OK) {
    undo(&j);
    goto done;
  }
  /* Only now, with every temporary complete, do the ranks move into place. */
  if ((st = rename_ranks(&j, err)) != TN_OK) goto done;
  /* The new set is whole: a signal from here on must no longer put the previous files
   * back, and the backups go (one a signal strands is removed as stale later). */
  tn_cleanup_unregister(slot), slot = -1;
  for (uint32_t r = 0; r < npus; r++)
    if (j.backed[r]) unlink(j.backups[r]);
  /* The set at prefix is replaced whole: rank files left over from a larger earlier set
   * would otherwise be read as part of this one (the reader would refuse them: they carry
   * another set id). */
  for (uint32_t r = npus; r < TOPO_MAX_NPUS; r++) {
    char *path = emit_i_rank_path(prefix, r, "", err);
    if (path == NULL) break;
    int gone = remove(path);
    free(path);
    if (gone != 0) break;
  }
  st = TN_OK;
done:
  tn_cleanup_unregister(slot);
  free_job(&j);
  return st;
}

/* ======================================================================== reader */

/* Finds a Node's id (field 1) by walking the wire format without decoding; the full
 * decode later confirms it. This lets the reader order the nodes by id while holding
 * only one decoded node at a time. False when the bytes are not well-formed. */
static bool scan_id(const uint8_t *p, size_t n, uint64_t *id) {
  size_t i = 0;
  *id = 0;
  while (i < n) {
    uint64_t key, v;
    if (!emit_i_get_varint(p, n, &i, &key) || (key >> 3) == 0) return false;
    switch (key & 7) {
    case 0:
      if (!emit_i_get_varint(p, n, &i, &v)) return false;
      if ((key >> 3) == 1) *id = v;
      break;
    case 1:
      if (n - i < 8) return false;
      i += 8;
      break;
    case 2:
      if (!emit_i_get_varint(p, n, &i, &v) || v > n - i) return false;
      i += (size_t)v;
      break;
    case 5:
      if (n - i < 4) return false;
      i += 4;
      break;
    default: return false;
    }
  }
  return true;
}

/* The most bytes a gzip'd file of len bytes may inflate to (emit.h). */
static size_t gunzip_limit(size_t len) {
  size_t limit = EMIT_CHAKRA_MAX_FILE_BYTES;
  if (len < limit / EMIT_CHAKRA_GZIP_MAX_RATIO) limit = len * EMIT_CHAKRA_GZIP_MAX_RATIO;
  return limit < EMIT_CHAKRA_GZIP_MIN_BYTES ? EMIT_CHAKRA_GZIP_MIN_BYTES : limit;
}

static tn_status_t gunzip_refuse(const char *what, size_t len, size_t limit, tn_err_t *err) {
  if (limit == EMIT_CHAKRA_MAX_FILE_BYTES)
    return tn_err_set(err, TN_LIMIT, "%s: inflates past the %u-byte limit", what,
                      EMIT_CHAKRA_MAX_FILE_BYTES);
  return tn_err_set(err, TN_LIMIT,
                    "%s: gzip inflates past %zu bytes, the limit for %zu compressed bytes "
                    "(%u times, at least %u; docs/chakra-format.md)",
                    what, limit, len, EMIT_CHAKRA_GZIP_MAX_RATIO, EMIT_CHAKRA_GZIP_MIN_BYTES);
}

/* Inflates a gzip file (one or more members) into *out (caller frees), refusing to go past
 * gunzip_limit(len): the output buffer never grows beyond the limit and one byte. */
static tn_status_t gunzip(const uint8_t *in, size_t len, const char *what, uint8_t **out,
                          size_t *out_len, tn_err_t *err) {
  *out = NULL;
  *out_len = 0;
  if (len > UINT32_MAX) return tn_err_set(err, TN_LIMIT, "%s: gzip file too large", what);
  size_t limit = gunzip_limit(len);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return tn_err_set(err, TN_NOMEM, "%s: cannot start gzip decoder", what);
  tn_vec_t b;
  tn_vec_init(&b, 1);
  tn_status_t st = TN_OK;
  z.next_in = in;
  z.avail_in = (uInt)len;
  for (;;) {
    if (b.len == b.cap) {
      if (b.cap > limit) {
        st = gunzip_refuse(what, len, limit, err);
        break;
      }
      size_t want = b.cap ? b.cap * 2 : (len < 16384 ? 65536 : len * 4);
      if (want > limit + 1) want = limit + 1;
      if ((st = tn_vec_reserve_exact_uninit(&b, want, err)) != TN_OK) break;
    }
    size_t room = b.cap - b.len;
    z.next_out = (uint8_t *)b.data + b.len;
    z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
    uInt before = z.avail_out;
    int rc = inflate(&z, Z_NO_FLUSH);
    b.len += before - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
        inflateReset(&z);
        continue;
      }
      st = tn_err_set(err, TN_PARSE, "%s: trailing bytes after the gzip stream", what);
      break;
    }
    if (rc == Z_OK && z.avail_out == 0) continue;
    if ((rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_in == 0) {
      st = tn_err_set(err, TN_PARSE, "%s: truncated gzip stream", what);
      break;
    }
    if (rc != Z_OK) {
      st = tn_err_set(err, TN_PARSE, "%s: corrupt gzip stream (%s)", what,
                      z.msg ? z.msg : "inflate failed");
      break;
    }
  }
  inflateEnd(&z);
  if (st == TN_OK && b.len > limit) st = gunzip_refuse(what, len, limit, err);
  if (st != TN_OK) {
    tn_vec_free(&b);
    return st;
  }
  *out = b.data;
  *out_len = b.len;
  return TN_OK;
}

/* One record's place in the file: its frame, and for nodes the id found by scan_id. */
typedef emit_i_frame_t frame_t;

/* Names record seq in messages: "GlobalMetadata record" or "node record 5". */
static void record_name(size_t seq, char *rec, size_t len) {
  if (seq == 0)
    snprintf(rec, len, "GlobalMetadata record");
  else
    snprintf(rec, len, "node record %zu", seq);
}

static tn_status_t next_frame(const uint8_t *p, size_t n, size_t *pos, const char *what, size_t seq,
                              frame_t *f, tn_err_t *err) {
  size_t at = *pos;
  uint64_t len;
  bool ok = emit_i_get_varint(p, n, pos, &len);
  if (ok && len <= n - *pos) { /* len <= UINT32_MAX too: n is at most 1 GiB */
    f->off = *pos;
    f->len = (size_t)len;
    f->seq = seq;
    *pos += (size_t)len;
    return TN_OK;
  }
  char rec[48];
  record_name(seq, rec, sizeof rec);
  if (!ok)
    return tn_err_set(err, TN_PARSE, "%s: byte %zu: %s: %s length prefix", what, at, rec,
                      n - at < 10 ? "truncated" : "overlong");
  if (len > UINT32_MAX)
    return tn_err_set(err, TN_PARSE, "%s: byte %zu: %s: length %" PRIu64 " is not a varint32", what,
                      at, rec, len);
  return tn_err_set(err, TN_PARSE,
                    "%s: byte %zu: %s: length %" PRIu64
                    " runs past the end of the file (%zu bytes)",
                    what, at, rec, len, n);
}

/* Where a message points: "<file>: GlobalMetadata" or "<file>: node <id>". Formatted
 * only when an error is reported. */
typedef emit_i_loc_t loc_t;

tn_status_t emit_i_loc_err(const loc_t *l, tn_err_t *err, tn_status_t st, const char *fmt, ...) {
  char where[600];
  if (l->header)
    snprintf(where, sizeof where, "%s: GlobalMetadata", l->what);
  else
    snprintf(where, sizeof where, "%s: node %" PRIu64, l->what, l->id);
  va_list ap;
  va_start(ap, fmt);
  tn_status_t rc = tn_err_set_at(err, st, where, fmt, ap);
  va_end(ap);
  return rc;
}

/* Integer value of an attribute held in any integer member (docs/chakra-format.md: ASTRA-sim reads
 * them all); unsigned values beyond INT64_MAX clamp to it (out of range for every use).
 * False for strings, floats, bools, lists and an unset value. */
bool emit_i_attr_int(const attr_t *at, int64_t *v) {
  switch (at->value_case) {
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *v = at->int32_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *v = at->int64_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *v = at->uint32_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *v = at->sint32_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *v = at->sint64_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *v = at->fixed32_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *v = at->sfixed32_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *v = at->sfixed64_val; return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
    *v = at->uint64_val > INT64_MAX ? INT64_MAX : (int64_t)at->uint64_val;
    return true;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
    *v = at->fixed64_val > INT64_MAX ? INT64_MAX : (int64_t)at->fixed64_val;
    return true;
  default: return false;
  }
}

/* "string_val", "float_val", … for messages; "no value" when unset. */
const char *emit_i_member_name(const attr_t *at) {
  const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
      &chakra_proto_msg__attribute_proto__descriptor, (unsigned)at->value_case);
  return fd ? fd->name : "no value";
}

/* Reads an integer attribute into *v within [lo, hi]; `where` names file and node. */
tn_status_t emit_i_int_attr(const attr_t *at, int64_t lo, int64_t hi, const loc_t *where,
                            int64_t *v, tn_err_t *err) {
  if (at->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET)
    return emit_i_loc_err(where, err, TN_PARSE,
                          "%s has no value (a oneof member must be set, even "
                          "to 0)",
                          at->name);
  if (!emit_i_attr_int(at, v))
    return emit_i_loc_err(where, err, TN_PARSE,
                          "%s must hold an integer (int32_val or int64_val), "
                          "not %s",
                          at->name, emit_i_member_name(at));
  if (*v < lo || *v > hi)
    return emit_i_loc_err(where, err, TN_PARSE, "%s = %" PRId64 " is outside %" PRId64 "..%" PRId64,
                          at->name, *v, lo, hi);
  return TN_OK;
}

typedef emit_i_header_t header_t;

static tn_status_t read_header(const uint8_t *p, const frame_t *f, const char *what, header_t *h,
                               tn_err_t *err) {
  memset(h, 0, sizeof *h);
  ChakraProtoMsg__GlobalMetadata *md =
      chakra_proto_msg__global_metadata__unpack(NULL, f->len, p + f->off);
  if (md == NULL)
    return tn_err_set(err, TN_PARSE,
                      "%s: byte %zu: the first record does not decode as a "
                      "Chakra GlobalMetadata",
                      what, f->off);
  const loc_t loc = {what, true, 0}, *where = &loc;
  tn_status_t st = TN_OK;
  for (size_t i = 0; i < md->n_attr && st == TN_OK; i++) {
    const attr_t *at = md->attr[i];
    struct {
      const char *name;
      bool *has;
      int64_t *v, lo, hi;
    } keys[] = {
        {k_npus, &h->has_npus, &h->npus, 1, TOPO_MAX_NPUS},
        {k_nodes, &h->has_nodes, &h->nodes, 1, EMIT_CHAKRA_MAX_NODES},
        {k_coll, &h->has_coll, &h->coll, 0, 9},
        {k_cpn, &h->has_cpn, &h->cpn, 1, EMIT_CHAKRA_MAX_CHUNKS_PER_NPU},
        {k_size, &h->has_size, &h->size, 0, INT64_MAX},
        {k_producer, &h->has_producer, &h->producer, 0, INT64_MAX},
        {k_set, &h->has_set, &h->set, INT64_MIN, INT64_MAX},
        {k_fabric, &h->has_fabric, &h->fabric, 0, 0},
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      if (strcmp(at->name, keys[k].name) != 0) continue;
      if (*keys[k].has)
        st = emit_i_loc_err(where, err, TN_PARSE, "%s appears twice", at->name);
      else
        st = emit_i_int_attr(at, keys[k].lo, keys[k].hi, where, keys[k].v, err);
      *keys[k].has = true;
      if (st == TN_OK && (keys[k].v == &h->producer || keys[k].v == &h->fabric)) {
        /* Keep a printable copy of the producer's or the fabric's name. */
        bool prod = keys[k].v == &h->producer;
        char *dst = prod ? h->producer_name : h->fabric_name;
        size_t cap = prod ? sizeof h->producer_name : sizeof h->fabric_name, j = 0;
        for (const char *s = at->doc_string; s && *s && j + 1 < cap; s++)
          if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') dst[j++] = *s;
        dst[j] = '\0';
      }
    }
  }
  chakra_proto_msg__global_metadata__free_unpacked(md, NULL);
  if (st != TN_OK) return st;
  tn_coll_t c;
  if (h->has_coll && !coll_from_code(h->coll, &c))
    return emit_i_loc_err(where, err, TN_PARSE,
                          "tenet_coll = %" PRId64 " is not All-Gather (2), "
                          "Reduce-Scatter (7), All-Reduce (0) or All-to-All (6)",
                          h->coll);
  if (h->has_coll && (!h->has_cpn || !h->has_size))
    return emit_i_loc_err(where, err, TN_PARSE,
                          "tenet_coll needs tenet_chunks_per_npu and "
                          "tenet_size_bytes");
  return TN_OK;
}

/* Checks the header against the set (npus) and rank 0's header, or records rank 0's. */
static tn_status_t apply_header(const header_t *h, const char *what, algo_t *a, uint32_t rank,
                                tn_err_t *err) {
  if (h->has_npus && (uint64_t)h->npus != a->npus)
    return tn_err_set(err, TN_PARSE,
                      "%s: written for a set of %" PRId64 " ranks, but the set "
                      "has %" PRIu32,
                      what, h->npus, a->npus);
  tn_coll_t c = TN_ALLGATHER;
  if (h->has_coll) coll_from_code(h->coll, &c);
  if (h->has_coll && (uint64_t)a->npus * (uint64_t)h->cpn > UINT32_MAX)
    return tn_err_set(err, TN_PARSE, "%s: %" PRId64 " chunks per NPU are too many", what, h->cpn);
  if (rank == 0) {
    if (h->has_producer) {
      const char *nm = h->producer_name[0] ? h->producer_name
                       : (uint64_t)h->producer < NPRODUCERS && h->producer > 0
                           ? producer_names[h->producer]
                           : "chakra";
      snprintf(a->name, sizeof a->name, "%s", nm);
    }
    snprintf(a->fabric, sizeof a->fabric, "%s", h->has_fabric ? h->fabric_name : "");
    a->has_coll = false;
    if (h->has_coll) {
      tn_err_t e2 = {0};
      if (algo_set_collective(a, c, (uint32_t)h->cpn, (uint64_t)h->size, &e2) != TN_OK)
        return tn_err_set(err, TN_PARSE, "%s: its collective header: %s", what, e2.msg);
    }
    return TN_OK;
  }
  if (h->has_coll != a->has_coll ||
      (h->has_coll && (c != a->coll || (uint64_t)h->cpn != a->chunks_per_npu ||
                       (uint64_t)h->size != a->size_bytes)))
    return tn_err_set(err, TN_PARSE,
                      "%s: its collective header (tenet_coll, "
                      "tenet_chunks_per_npu, tenet_size_bytes) differs from rank 0's",
                      what);
  return TN_OK;
}

static int frame_cmp(const void *x, const void *y) {
  const frame_t *p = x, *q = y;
  return p->id < q->id ? -1 : p->id > q->id;
}

/* Index (in ascending id order) of node id, or -1. */
int64_t emit_i_find_frame(const frame_t *f, size_t n, uint64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && f[lo].id == id ? (int64_t)lo : -1;
}

/* State for decoding one file's nodes. */
typedef struct dec {
  const char *what;
  algo_t *a;
  uint32_t rank;
  const frame_t *frames; /* sorted by id */
  size_t n;
  bool dense;           /* frames[i].id == i for every i (tenet's own files): no search needed */
  uint64_t chunk_limit; /* chunk ids must be below it (from the file's own header) */
  uint32_t *seen;       /* per node index: 1 + the index of the node that last listed it */
  tn_vec_t deps;        /* uint32_t scratch */
  tn_vec_t chunks;      /* uint32_t scratch */
} dec_t;

tn_status_t emit_i_dep_index(const frame_t *f, size_t n, bool dense, uint64_t id, uint32_t self,
                             const loc_t *where, uint32_t *index, tn_err_t *err) {
  int64_t j = dense ? (id < n ? (int64_t)id : -1) : emit_i_find_frame(f, n, id);
  if (j < 0)
    return emit_i_loc_err(where, err, TN_PARSE,
                          "depends on node %" PRIu64 ", which is not in the "
                          "file",
                          id);
  if ((uint32_t)j == self) return emit_i_loc_err(where, err, TN_PARSE, "depends on itself");
  *index = (uint32_t)j;
  return TN_OK;
}

static tn_status_t add_deps(dec_t *d, const uint64_t *ids, size_t n, uint32_t self,
                            const loc_t *where, tn_err_t *err) {
  tn_status_t st = tn_vec_reserve(&d->deps, d->deps.len + n, err);
  if (st != TN_OK) return st;
  uint32_t *out = d->deps.data;
  size_t len = d->deps.len;
  for (size_t k = 0; k < n; k++) {
    uint32_t j = 0;
    if (d->dense && ids[k] < d->n && ids[k] != self) /* tenet's files: the id is the index */
      j = (uint32_t)ids[k];
    else if ((st = emit_i_dep_index(d->frames, d->n, d->dense, ids[k], self, where, &j, err)) !=
             TN_OK)
      break;
    if (d->seen[j] == self + 1) continue; /* listed twice (or in data and ctrl deps) */
    d->seen[j] = self + 1;
    out[len++] = j;
  }
  d->deps.len = len;
  return st;
}

static tn_status_t read_chunks(dec_t *d, const attr_t *at, const loc_t *where, tn_err_t *err) {
  if (at->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST)
    return emit_i_loc_err(where, err, TN_PARSE, "tenet_chunks must be an int64_list, not %s",
                          emit_i_member_name(at));
  uint64_t limit = d->chunk_limit;
  const ChakraProtoMsg__Int64List *l = at->int64_list;
  if (l->n_values == 0) return emit_i_loc_err(where, err, TN_PARSE, "tenet_chunks is empty");
  for (size_t k = 0; k < l->n_values; k++) {
    if (l->values[k] < 0 || (uint64_t)l->values[k] >= limit)
      return emit_i_loc_err(where, err, TN_PARSE, "chunk %" PRId64 " is outside 0..%" PRIu64,
                            l->values[k], limit - 1);
    uint32_t c = (uint32_t)l->values[k];
    tn_status_t st = tn_vec_push(&d->chunks, &c, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

enum { A_SRC, A_DST, A_SIZE, A_TAG, A_CHUNKS, A_REDUCE, A_COUNT };

/* tenet's attribute names, and their lengths. Writable only because an attr_t holds its
 * name as a char * (known_attr gives them to the attributes it decodes): nothing writes
 * through them. */
static char attr_names[A_COUNT][16] = {STR_COMM_SRC, STR_COMM_DST,     STR_COMM_SIZE,
                                       STR_COMM_TAG, STR_TENET_CHUNKS, STR_TENET_REDUCE};
static const uint8_t attr_lens[A_COUNT] = {
    sizeof STR_COMM_SRC - 1, sizeof STR_COMM_DST - 1,     sizeof STR_COMM_SIZE - 1,
    sizeof STR_COMM_TAG - 1, sizeof STR_TENET_CHUNKS - 1, sizeof STR_TENET_REDUCE - 1};

/* Which of attr_names the len bytes at name are, or -1: told apart by length first. */
static int attr_kind_of(const void *name, size_t len) {
  for (int k = 0; k < A_COUNT; k++)
    if (len == attr_lens[k] && memcmp(name, attr_names[k], len) == 0) return k;
  return -1;
}

/* The same for a decoded attribute's name (its bytes up to a NUL, as protobuf-c's strings
 * are read everywhere). */
static int attr_kind(const char *name) {
  return attr_kind_of(name, strlen(name));
}

tn_status_t emit_i_read_p2p(const emit_i_p2p_found_t *f, bool send, uint32_t rank,
                            const emit_i_p2p_rules_t *rules, const loc_t *where, int64_t *peer,
                            int64_t *bytes, int64_t *tag, tn_err_t *err) {
  const char *kind = send ? "COMM_SEND_NODE" : "COMM_RECV_NODE";
  const attr_t *peer_at = send ? f->dst : f->src, *self_at = send ? f->src : f->dst;
  const char *peer_name = send ? STR_COMM_DST : STR_COMM_SRC;
  const char *self_name = send ? STR_COMM_SRC : STR_COMM_DST;
  const char *missing = peer_at == NULL                         ? peer_name
                        : f->size == NULL                       ? STR_COMM_SIZE
                        : f->tag == NULL && rules->tag_required ? STR_COMM_TAG
                                                                : NULL;
  if (missing)
    return emit_i_loc_err(where, err, TN_PARSE, "%s lacks the required attribute %s", kind,
                          missing);
  tn_status_t st = emit_i_int_attr(peer_at, 0, rules->peer_max, where, peer, err);
  if (st != TN_OK) return st;
  if (rules->peer_not_self && *peer == rank)
    return emit_i_loc_err(where, err, TN_PARSE, "%s = %" PRId64 " is the node's own rank",
                          peer_name, *peer);
  if (self_at) {
    int64_t v;
    if ((st = emit_i_int_attr(self_at, 0, rules->peer_max, where, &v, err)) != TN_OK) return st;
    if (v != rank)
      return emit_i_loc_err(where, err, TN_PARSE, "%s = %" PRId64 " on a %s of rank %" PRIu32,
                            self_name, v, kind, rank);
  }
  if ((st = emit_i_int_attr(f->size, rules->size_min, rules->size_max, where, bytes, err)) != TN_OK)
    return st;
  *tag = 0;
  if (f->tag) st = emit_i_int_attr(f->tag, rules->tag_min, rules->tag_max, where, tag, err);
  return st;
}

/* Converts one decoded node (index self in id order) and appends it to the rank. Its
 * attributes are ats[0..pn->n_attr), kinds[i] = attr_kind(ats[i]->name). */
static tn_status_t convert(dec_t *d, const emit_i_node_t *pn, const attr_t *const *ats,
                           const int *kinds, uint32_t self, tn_err_t *err) {
  const loc_t loc = {d->what, false, pn->id}, *where = &loc;
  algo_node_t x = {ALGO_COMP, false, -1, 0, 0, 0, 0, 0, 0, 0};
  switch (pn->type) {
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE: x.op = ALGO_COMP; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE: x.op = ALGO_SEND; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE: x.op = ALGO_RECV; break;
  default: {
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
        &chakra_proto_msg__node_type__descriptor, (int)pn->type);
    return emit_i_loc_err(where, err, TN_PARSE,
                          "unsupported node type %d (%s); a collective's "
                          "files hold only COMP_NODE, COMM_SEND_NODE and COMM_RECV_NODE",
                          (int)pn->type, ev ? ev->name : "unknown");
  }
  }
  const attr_t *found[A_COUNT] = {NULL};
  for (size_t i = 0; i < pn->n_attr; i++) {
    int k = kinds[i];
    if (k < 0) continue;
    if (found[k])
      return emit_i_loc_err(where, err, TN_PARSE, "attribute %s appears twice", attr_names[k]);
    found[k] = ats[i];
  }
  d->deps.len = d->chunks.len = 0;
  tn_status_t st = add_deps(d, pn->data_deps, pn->n_data_deps, self, where, err);
  if (st == TN_OK) st = add_deps(d, pn->ctrl_deps, pn->n_ctrl_deps, self, where, err);
  if (st == TN_OK && found[A_CHUNKS]) st = read_chunks(d, found[A_CHUNKS], where, err);
  if (st != TN_OK) return st;
  int64_t v, npus = d->a->npus;
  if (found[A_REDUCE]) {
    if (x.op != ALGO_RECV)
      return emit_i_loc_err(where, err, TN_PARSE, "tenet_reduce on a node that is not a RECV");
    if ((st = emit_i_int_attr(found[A_REDUCE], 0, 1, where, &v, err)) != TN_OK) return st;
    x.reduce = v == 1;
  }
  if (x.op == ALGO_COMP) {
    if (pn->duration_micros > EMIT_CHAKRA_MAX_DURATION_US)
      return emit_i_loc_err(where, err, TN_PARSE,
                            "duration_micros %" PRIu64 " is absurd (over %" PRIu64 ")",
                            pn->duration_micros, (uint64_t)EMIT_CHAKRA_MAX_DURATION_US);
    x.duration_us = pn->duration_micros;
  } else {
    const emit_i_p2p_found_t p2p = {found[A_SRC], found[A_DST], found[A_SIZE], found[A_TAG]};
    const emit_i_p2p_rules_t rules = {
        npus - 1, 1, (int64_t)EMIT_CHAKRA_MAX_MSG_BYTES, 0, ALGO_MAX_TAG, true, true};
    int64_t peer = 0, bytes = 0, tag = 0;
    if ((st = emit_i_read_p2p(&p2p, x.op == ALGO_SEND, d->rank, &rules, where, &peer, &bytes, &tag,
                              err)) != TN_OK)
      return st;
    x.peer = (int32_t)peer;
    x.bytes = (uint64_t)bytes;
    x.tag = (int32_t)tag;
  }
  x.ndeps = (uint32_t)d->deps.len;
  x.nchunks = (uint32_t)d->chunks.len;
  return algo_add(d->a, d->rank, &x, d->deps.data, d->chunks.data, NULL, err);
}

/* A decoded attribute kept by the reader's cache: the bytes it was decoded from are
 * keys[off, off + len). */
typedef struct rattr {
  const attr_t *at;
  int kind;
  uint32_t off, len;
} rattr_t;

enum {
  READER_MAX_KEY = 64,           /* longer attributes are decoded every time */
  READER_MAX_ENTRIES = 1u << 12, /* emptied when this full (between nodes): stays in cache */
};

/* What the reader keeps across nodes (and across the files of a set). A node's record is
 * decoded into scratch kept across nodes, and the attributes decoded directly into an
 * arena reset per node. Other attributes repeat (a foreign producer's comm_type, say), so
 * protobuf-c decodes each distinct encoding of them once, into an arena of its own: no
 * malloc or free per node. */
typedef struct reader {
  emit_i_node_buf_t nb; /* the current node's lists */
  emit_i_node_t cur;    /* the current node */
  emit_i_arena_t node;  /* the current node's attributes decoded directly; reset per node */
  emit_i_arena_t keep; /* the cache's decoded attributes */
  tn_vec_t keys;       /* uint8_t */
  tn_vec_t entries;    /* rattr_t */
  emit_i_map_t map;    /* hash of the bytes → 1 + index into entries */
  tn_vec_t ats;        /* const attr_t *: the current node's attributes */
  tn_vec_t kinds;      /* int */
  /* 1 + the entry last found for attribute position j of a node of type t: consecutive
   * nodes of one type mostly repeat most attributes, so one memcmp finds them. */
  uint32_t last[8][16];
} reader_t;

static void reader_init(reader_t *rd) {
  memset(rd, 0, sizeof *rd);
  emit_i_node_buf_init(&rd->nb);
  emit_i_arena_init(&rd->node);
  emit_i_arena_init(&rd->keep);
  tn_vec_init(&rd->keys, 1);
  tn_vec_init(&rd->entries, sizeof(rattr_t));
  tn_vec_init(&rd->ats, sizeof(const attr_t *));
  tn_vec_init(&rd->kinds, sizeof(int));
}

static void reader_free(reader_t *rd) {
  emit_i_node_buf_free(&rd->nb);
  emit_i_arena_free(&rd->node);
  emit_i_arena_free(&rd->keep);
  tn_vec_free(&rd->keys);
  tn_vec_free(&rd->entries);
  emit_i_map_free(&rd->map);
  tn_vec_free(&rd->ats);
  tn_vec_free(&rd->kinds);
}

/* memcmp(x, y, n) == 0 for the short keys of the cache, without a call. */
static inline bool same_bytes(const uint8_t *x, const uint8_t *y, size_t n) {
  uint64_t u, v;
  if (n < 8) return n == 0 || memcmp(x, y, n) == 0;
  for (size_t i = 0; i + 8 < n; i += 8) {
    memcpy(&u, x + i, 8);
    memcpy(&v, y + i, 8);
    if (u != v) return false;
  }
  memcpy(&u, x + n - 8, 8); /* the last 8 bytes (overlapping the loop's last word) */
  memcpy(&v, y + n - 8, 8);
  return u == v;
}

/* The attributes of the shapes emit_i_attr_shape decodes, when named as tenet names
 * them: most of a set's distinct attributes (every message has its own comm_tag, and
 * most their own chunk list), so the cache need not learn them. false for others. */
static bool known_attr(reader_t *rd, const emit_i_slice_t *b, const attr_t **at, int *kind) {
  emit_i_slice_t name;
  attr_t *a = emit_i_attr_shape(b, &rd->node, &name);
  if (a == NULL) return false;
  int k = attr_kind_of(name.data, name.len);
  if (k < 0) return false;
  a->name = attr_names[k];
  *at = a;
  *kind = k;
  return true;
}

/* Decodes one attribute's bytes: tenet's own shapes directly (known_attr), others with
 * protobuf-c through the cache; *at is NULL when they do not decode as an AttributeProto. */
static tn_status_t decode_attr(reader_t *rd, const emit_i_slice_t *b, uint32_t *last,
                               const attr_t **at, int *kind, tn_err_t *err) {
  *at = NULL;
  if (last && *last) {
    const rattr_t *e = &TN_VEC_AT(&rd->entries, rattr_t, *last - 1);
    if (e->len == b->len && same_bytes((uint8_t *)rd->keys.data + e->off, b->data, b->len)) {
      *at = e->at;
      *kind = e->kind;
      return TN_OK;
    }
  }
  if (known_attr(rd, b, at, kind)) return TN_OK;
  bool cache = b->len <= READER_MAX_KEY;
  uint64_t h = 0;
  if (cache) {
    h = emit_i_hash_bytes(b->data, b->len);
    size_t pos;
    for (uint32_t v = emit_i_map_first(&rd->map, h, &pos); v;
         v = emit_i_map_next(&rd->map, h, &pos)) {
      const rattr_t *e = &TN_VEC_AT(&rd->entries, rattr_t, v - 1);
      if (e->len == b->len && same_bytes((uint8_t *)rd->keys.data + e->off, b->data, b->len)) {
        *at = e->at;
        *kind = e->kind;
        if (last) *last = v;
        return TN_OK;
      }
    }
  }
  emit_i_arena_t *ar = cache ? &rd->keep : &rd->node;
  *at = chakra_proto_msg__attribute_proto__unpack(&ar->pb, b->len, b->data);
  if (*at == NULL) return TN_OK;
  *kind = attr_kind((*at)->name);
  if (!cache) return TN_OK;
  rattr_t e = {*at, *kind, (uint32_t)rd->keys.len, (uint32_t)b->len};
  tn_status_t st = tn_vec_reserve(&rd->keys, rd->keys.len + b->len, err);
  if (st != TN_OK) return st;
  if (b->len) memcpy((uint8_t *)rd->keys.data + rd->keys.len, b->data, b->len);
  rd->keys.len += b->len;
  if ((st = tn_vec_push(&rd->entries, &e, err)) != TN_OK) return st;
  if (last) *last = (uint32_t)rd->entries.len;
  return emit_i_map_put(&rd->map, h, (uint32_t)rd->entries.len, err);
}

/* Decodes record f as a Node (emit_i_node_decode), then each attribute (decode_attr). *pn
 * is NULL when the record does not decode (the Node, or any of its attributes) or its id
 * is not the one scan_id found. */
static tn_status_t decode_node(reader_t *rd, const uint8_t *p, const frame_t *f,
                               emit_i_node_t **pn, tn_err_t *err) {
  emit_i_arena_reset(&rd->node);
  if (rd->entries.len >= READER_MAX_ENTRIES) { /* files whose tags never repeat */
    emit_i_arena_reset(&rd->keep);
    rd->keys.len = rd->entries.len = 0;
    if (rd->map.cap) memset(rd->map.val, 0, rd->map.cap * sizeof *rd->map.val);
    rd->map.len = 0;
    memset(rd->last, 0, sizeof rd->last);
  }
  *pn = NULL;
  emit_i_node_t *n = &rd->cur;
  bool ok = false;
  tn_status_t dst = emit_i_node_decode(p + f->off, f->len, &rd->nb, &rd->node, n, &ok, err);
  if (dst != TN_OK || !ok || n->id != f->id) return dst;
  tn_status_t st = tn_vec_reserve(&rd->ats, n->n_attr, err);
  if (st == TN_OK) st = tn_vec_reserve(&rd->kinds, n->n_attr, err);
  const attr_t **ats = rd->ats.data;
  int *kinds = rd->kinds.data;
  uint32_t *last = rd->last[(unsigned)n->type < 8 ? (unsigned)n->type : 0];
  for (size_t i = 0; i < n->n_attr && st == TN_OK; i++) {
    st = decode_attr(rd, &n->attr[i], i < 16 ? &last[i] : NULL, &ats[i], &kinds[i], err);
    if (st == TN_OK && ats[i] == NULL) return TN_OK;
  }
  if (st == TN_OK) *pn = n;
  return st;
}

/* Frames every node record from pos on into frames (counted first, so allocated once):
 * each must frame, carry an id, and the count must match the header's when it has one. */
tn_status_t emit_i_frame_nodes(const uint8_t *p, size_t len, size_t pos, const char *what,
                               const header_t *h, tn_vec_t *frames, tn_err_t *err) {
  /* The header's count when it has a plausible one (a record takes 2 bytes at least),
   * else the records counted; either way only the first reservation. */
  size_t count = 0;
  if (h->has_nodes && h->nodes > 0 && (uint64_t)h->nodes <= (len - pos) / 2) {
    count = (size_t)h->nodes;
  } else {
    uint64_t rl;
    for (size_t q = pos; q < len && emit_i_get_varint(p, len, &q, &rl) && rl <= len - q;
         q += (size_t)rl)
      count++;
  }
  /* Every frame is pushed before it is read: the room needs no zeroing. */
  tn_status_t st =
      tn_vec_reserve_exact_uninit(frames, count < EMIT_CHAKRA_MAX_NODES ? count + 1 : 1, err);
  for (size_t seq = 1; st == TN_OK && pos < len; seq++) {
    frame_t f;
    if ((st = next_frame(p, len, &pos, what, seq, &f, err)) != TN_OK) return st;
    if (frames->len >= EMIT_CHAKRA_MAX_NODES)
      return tn_err_set(err, TN_LIMIT, "%s: more than %u nodes", what, EMIT_CHAKRA_MAX_NODES);
    if (f.len == 0 || !scan_id(p + f.off, f.len, &f.id))
      return tn_err_set(err, TN_PARSE, "%s: byte %zu: node record %zu %s", what, f.off, seq,
                        f.len ? "does not decode as a Chakra Node" : "is empty");
    st = tn_vec_push(frames, &f, err);
  }
  if (st != TN_OK) return st;
  if (frames->len == 0)
    return tn_err_set(err, TN_PARSE, "%s: holds no node (every rank's file needs at least one)",
                      what);
  if (h->has_nodes && (uint64_t)h->nodes != frames->len)
    return tn_err_set(err, TN_PARSE,
                      "%s: holds %zu nodes, but its header says %" PRId64 " (truncated?)", what,
                      frames->len, h->nodes);
  return TN_OK;
}

/* Orders the frames by id (files normally list them so: sorted only when not) and refuses
 * a repeated id. */
tn_status_t emit_i_order_frames(frame_t *f, size_t n, const char *what, tn_err_t *err) {
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; i++)
    sorted = f[i - 1].id <= f[i].id;
  if (!sorted) qsort(f, n, sizeof *f, frame_cmp);
  for (size_t i = 1; i < n; i++)
    if (f[i].id == f[i - 1].id)
      return tn_err_set(err, TN_PARSE, "%s: node id %" PRIu64 " appears twice", what, f[i].id);
  return TN_OK;
}

static tn_status_t decode_nodes(reader_t *rd, const uint8_t *p, size_t len, size_t pos,
                                const char *what, const header_t *h, algo_t *a, uint32_t rank,
                                tn_err_t *err) {
  tn_vec_t frames;
  tn_vec_init(&frames, sizeof(frame_t));
  /* Chunk ids are checked against this file's header: the caller checks that it agrees
   * with rank 0's (apply_header) before it uses the result. */
  uint64_t limit = h->has_coll && h->has_cpn ? (uint64_t)a->npus * (uint64_t)h->cpn : UINT32_MAX;
  dec_t d = {what, a, rank, NULL, 0, false, limit, NULL, {0}, {0}};
  tn_vec_init(&d.deps, sizeof(uint32_t));
  tn_vec_init(&d.chunks, sizeof(uint32_t));
  tn_status_t st = emit_i_frame_nodes(p, len, pos, what, h, &frames, err);
  if (st == TN_OK) st = emit_i_order_frames(frames.data, frames.len, what, err);
  if (st != TN_OK) goto fail;
  d.frames = frames.data;
  d.n = frames.len;
  d.dense = d.frames[d.n - 1].id == d.n - 1; /* ids unique and ascending from 0 */
  /* Room for the rank's nodes at once (and a dependency and a chunk per node, the usual
   * case), instead of growing by doubling: algo_reserve's exact, unzeroed room (algo_add
   * writes each element before anything reads it). */
  const algo_rank_t *R = &a->ranks[rank];
  if ((st = algo_reserve(a, rank, R->nodes.len + d.n, R->deps.len + d.n, R->chunks.len + d.n,
                         err)) != TN_OK ||
      (st = tn_calloc(d.n, sizeof *d.seen, &d.seen, err)) != TN_OK)
    goto fail;
  for (size_t i = 0; i < d.n; i++) {
    const frame_t *f = &d.frames[i];
    emit_i_node_t *pn = NULL;
    if ((st = decode_node(rd, p, f, &pn, err)) != TN_OK) goto fail;
    if (pn == NULL) {
      st = tn_err_set(err, TN_PARSE,
                      "%s: byte %zu: node record %zu does not decode as a "
                      "Chakra Node",
                      what, f->off, f->seq);
      goto fail;
    }
    if ((st = convert(&d, pn, rd->ats.data, rd->kinds.data, (uint32_t)i, err)) != TN_OK) goto fail;
  }
fail:
  free(d.seen);
  tn_vec_free(&d.deps);
  tn_vec_free(&d.chunks);
  tn_vec_free(&frames);
  return st;
}

/* The first part of reading one rank's file: checks its size, gunzips it when it is
 * gzip'd (*plain then owns the bytes; free it) and reads its header. *data, *len and *pos
 * then give the nodes still to decode. */
static tn_status_t open_file(const uint8_t **data, size_t *len, const char *what, algo_t *a,
                             uint32_t rank, uint8_t **plain, size_t *pos, header_t *h,
                             tn_err_t *err) {
  *plain = NULL;
  *pos = 0;
  if (rank >= a->npus || algo_rank_len(a, rank) > 0)
    return tn_err_set(err, TN_INVAL, "%s: rank %" PRIu32 " is out of range or already read", what,
                      rank);
  return emit_i_open_bytes(data, len, what, plain, pos, h, err);
}

tn_status_t emit_i_open_bytes(const uint8_t **data, size_t *len, const char *what, uint8_t **plain,
                              size_t *pos, header_t *h, tn_err_t *err) {
  *plain = NULL;
  *pos = 0;
  if (*len == 0)
    return tn_err_set(err, TN_PARSE,
                      "%s: empty file (a Chakra ET file holds a GlobalMetadata "
                      "record and at least one node)",
                      what);
  if (*len > EMIT_CHAKRA_MAX_FILE_BYTES)
    return tn_err_set(err, TN_LIMIT, "%s: larger than the %u-byte limit", what,
                      EMIT_CHAKRA_MAX_FILE_BYTES);
  /* gzip magic 1f 8b and method 8 (deflate). A plain file cannot start so: its first
   * byte is a length, and 8b 08 would be the metadata's first tag, a group of field 129,
   * which the schema has not. */
  const uint8_t *p = *data;
  if (*len >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8) {
    tn_status_t st = gunzip(p, *len, what, plain, len, err);
    if (st != TN_OK) return st;
    *data = *plain;
    if (*len == 0) return tn_err_set(err, TN_PARSE, "%s: empty file once gunzipped", what);
  }
  frame_t f;
  tn_status_t st = next_frame(*data, *len, pos, what, 0, &f, err);
  if (st == TN_OK) st = read_header(*data, &f, what, h, err);
  return st;
}

tn_status_t emit_chakra_decode(const uint8_t *data, size_t len, const char *what, algo_t *a,
                               uint32_t rank, tn_err_t *err) {
  reader_t rd;
  reader_init(&rd);
  uint8_t *plain = NULL;
  size_t pos = 0;
  header_t h;
  tn_status_t st = open_file(&data, &len, what, a, rank, &plain, &pos, &h, err);
  if (st == TN_OK) st = apply_header(&h, what, a, rank, err);
  if (st == TN_OK) st = decode_nodes(&rd, data, len, pos, what, &h, a, rank, err);
  free(plain);
  reader_free(&rd);
  return st;
}

/* Reads the file at path into b (replacing its contents), as tn_read_file does but into
 * a buffer reused across the files of a set. */
tn_status_t emit_i_read_whole(const char *path, tn_vec_t *b, tn_err_t *err) {
  b->len = 0;
  int fd;
  size_t size;
  tn_status_t st = tn_input_open_fd(path, &fd, &size, err);
  if (st != TN_OK) return st;
  /* Room for the size fstat saw and a byte more, so that the read that finds the end
   * needs no growth; a file that grows meanwhile is still read to its end (or limit). */
  const size_t limit = (size_t)EMIT_CHAKRA_MAX_FILE_BYTES;
  size_t want = size > 0 ? size + 1 : 65536;
  if (want > limit + 1) want = limit + 1;
  st = tn_vec_reserve_exact_uninit(b, want, err);
  while (st == TN_OK) {
    if (b->len == b->cap && (st = tn_vec_reserve(b, b->cap + 1, err)) != TN_OK) break;
    ssize_t got = read(fd, (uint8_t *)b->data + b->len, b->cap - b->len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      st = tn_err_set(err, TN_IO, "%s: read error: %s", path, strerror(errno));
      break;
    }
    if (got == 0) break;
    b->len += (size_t)got;
    if (b->len > limit)
      st = tn_err_set(err, TN_LIMIT, "%s: larger than the %zu-byte limit", path, limit);
  }
  close(fd);
  return st;
}

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Reading a set: every rank's file is decoded on its own (in parallel) against its own
 * header; then, rank by rank, each header is checked against rank 0's (apply_header) and
 * the first failure in rank order is the one reported, as a rank-by-rank loop would. */
typedef struct read_job {
  const char *prefix;
  algo_t *a;
  reader_t *readers;    /* one per worker */
  tn_vec_t *bufs;       /* uint8_t, one per worker: a file that could not be mapped */
  worker_fail_t *fails; /* one per worker */
  header_t *headers;    /* per rank */
  uint8_t *header_ok;   /* per rank: headers[r] was read */
  first_fail_t first;
} read_job_t;

static void read_rank(void *ctx, size_t item, unsigned worker) {
  read_job_t *j = ctx;
  uint32_t r = (uint32_t)item;
  /* A rank past a failure is still read up to its header: the set's identity is checked
   * on every rank that has one, whatever the threads' timing. */
  bool skip = skip_rank(&j->first, r);
  tn_err_t err = {0};
  char *path = emit_i_rank_path(j->prefix, r, "", &err);
  tn_status_t st = path ? TN_OK : TN_NOMEM;
  const uint8_t *data = NULL;
  size_t len = 0;
  /* read(2) into the worker's buffer rather than mmap: unmapping on one thread stops the
   * others (TLB shootdown), which cost more than the copy. */
  if (st == TN_OK) {
    if ((st = emit_i_read_whole(path, &j->bufs[worker], &err)) == TN_OK) {
      data = j->bufs[worker].data;
      len = j->bufs[worker].len;
    }
  }
  uint8_t *plain = NULL;
  size_t pos = 0;
  if (st == TN_OK) st = open_file(&data, &len, path, j->a, r, &plain, &pos, &j->headers[r], &err);
  if (st == TN_OK) {
    j->header_ok[r] = 1;
    if (!skip)
      st = decode_nodes(&j->readers[worker], data, len, pos, path, &j->headers[r], j->a, r, &err);
  }
  free(plain);
  if (st != TN_OK) note_fail(&j->first, &j->fails[worker], r, &err);
  free(path);
}

/* A rank's set identity for comparison: (has, bits), ordered. */
typedef struct rank_key {
  bool has;
  uint64_t id;
  uint32_t rank;
} rank_key_t;

static int key_cmp(const void *x, const void *y) {
  const rank_key_t *p = x, *q = y;
  if (p->has != q->has) return p->has ? 1 : -1;
  if (p->id != q->id) return p->id < q->id ? -1 : 1;
  return p->rank < q->rank ? -1 : p->rank > q->rank;
}

static uint64_t header_set_id(const header_t *h) {
  uint64_t id;
  memcpy(&id, &h->set, sizeof id);
  return id;
}

/* "id 0123456789abcdef" or "no set id" for a group of ranks. */
static void name_id(char *buf, size_t len, bool has, uint64_t id) {
  if (has)
    snprintf(buf, len, "id %016" PRIx64, id);
  else
    snprintf(buf, len, "no set id");
}

/* Every rank whose header was read must carry the same set identity (tenet_set_id), or
 * none at all (another producer's files, or tenet's from before the id). The set is the
 * identity most ranks carry (ties: the one of the lowest rank); the others are named. When
 * the ranks were counted (files until the first missing one), a set whose files say it has
 * more ranks is incomplete. O(n log n). */
tn_status_t emit_i_check_identity(const char *prefix, uint32_t n, bool counted, const header_t *hs,
                                  const uint8_t *ok, tn_err_t *err) {
  rank_key_t *keys = NULL;
  uint8_t *odd = NULL;
  tn_status_t st = tn_calloc(n, sizeof *keys, &keys, err);
  if (st == TN_OK) st = tn_calloc(n, 1, &odd, err);
  if (st != TN_OK) {
    free(keys);
    return st;
  }
  uint32_t m = 0;
  for (uint32_t r = 0; r < n; r++)
    if (ok[r]) keys[m++] = (rank_key_t){hs[r].has_set, header_set_id(&hs[r]), r};
  qsort(keys, m, sizeof *keys, key_cmp);
  /* The largest group; among equal ones, the one whose first rank is lowest. */
  uint32_t best = 0, best_len = 0, groups = 0;
  for (uint32_t i = 0; i < m;) {
    uint32_t e = i;
    while (e < m && keys[e].has == keys[i].has && keys[e].id == keys[i].id)
      e++;
    if (e - i > best_len || (e - i == best_len && keys[i].rank < keys[best].rank))
      best = i, best_len = e - i;
    groups++;
    i = e;
  }
  if (groups > 1) {
    const rank_key_t ref = keys[best];
    char others[160] = "", one[40], ids[64], them[320], us[320];
    uint32_t shown = 0;
    for (uint32_t i = 0; i < m; i++) {
      bool same = keys[i].has == ref.has && keys[i].id == ref.id;
      odd[keys[i].rank] = same ? 2 : 1;
      if (same || (i > 0 && keys[i].has == keys[i - 1].has && keys[i].id == keys[i - 1].id))
        continue;
      name_id(one, sizeof one, keys[i].has, keys[i].id);
      if (shown++ < 3)
        snprintf(others + strlen(others), sizeof others - strlen(others), "%s%s",
                 shown > 1 ? ", " : "", one);
      else if (shown == 4)
        snprintf(others + strlen(others), sizeof others - strlen(others), ", ...");
    }
    name_ranks(them, sizeof them, odd, n, 1);
    name_ranks(us, sizeof us, odd, n, 2);
    name_id(ids, sizeof ids, ref.has, ref.id);
    bool one_odd = strncmp(them, "ranks", 5) != 0;
    st = tn_err_set(err, TN_PARSE, "%s: %s %s to %s (%s) than %s (%s)", prefix, them,
                    one_odd ? "belongs" : "belong", groups > 2 ? "other sets" : "another set",
                    others, us, ids);
  } else if (m > 0 && counted && keys[0].has && hs[keys[0].rank].has_npus &&
             (uint64_t)hs[keys[0].rank].npus > n) {
    st = tn_err_set(err, TN_PARSE,
                    "%s: an incomplete set: ranks 0-%" PRIu32 " of %" PRId64 " (id %016" PRIx64
                    "); %s.%" PRIu32 ".et is missing",
                    prefix, n - 1, hs[keys[0].rank].npus, keys[0].id, prefix, n);
  }
  free(keys);
  free(odd);
  return st;
}

tn_status_t emit_i_count_ranks(const char *prefix, uint32_t npus, uint32_t *count, tn_err_t *err) {
  if (npus > TOPO_MAX_NPUS)
    return tn_err_set(err, TN_INVAL, "%s: %" PRIu32 " ranks are too many", prefix, npus);
  uint32_t n = npus;
  char *path = NULL;
  if (n == 0) { /* count the files: ranks 0.. until the first missing one */
    for (;; n++) {
      if (n == TOPO_MAX_NPUS)
        return tn_err_set(err, TN_LIMIT, "%s: more than %u rank files", prefix, TOPO_MAX_NPUS);
      if ((path = emit_i_rank_path(prefix, n, "", err)) == NULL) return TN_NOMEM;
      bool there = file_exists(path);
      free(path);
      if (!there) break;
    }
    if (n == 0)
      return tn_err_set(err, TN_IO, "%s.0.et: no Chakra ET set at this prefix: %s", prefix,
                        strerror(ENOENT));
  } else {
    if ((path = emit_i_rank_path(prefix, n, "", err)) == NULL) return TN_NOMEM;
    bool extra = file_exists(path);
    tn_status_t st = extra ? tn_err_set(err, TN_PARSE,
                                        "%s: exists, but the set should have "
                                        "%" PRIu32 " ranks (0..%" PRIu32 ")",
                                        path, n, n - 1)
                           : TN_OK;
    free(path);
    if (st != TN_OK) return st;
  }
  *count = n;
  return TN_OK;
}

tn_status_t emit_chakra_read(const char *prefix, uint32_t npus, algo_t **out, tn_err_t *err) {
  *out = NULL;
  uint32_t n = 0;
  tn_status_t st = emit_i_count_ranks(prefix, npus, &n, err);
  if (st != TN_OK) return st;
  algo_t *a = NULL;
  if ((st = algo_create_unknown("chakra", n, &a, err)) != TN_OK) return st;
  unsigned workers = tn_thread_count();
  if (workers > n) workers = n;
  read_job_t j = {prefix, a, NULL, NULL, NULL, NULL, NULL, {0}};
  atomic_init(&j.first.rank, UINT32_MAX);
  if ((st = tn_calloc(workers, sizeof *j.readers, &j.readers, err)) != TN_OK ||
      (st = tn_calloc(workers, sizeof *j.bufs, &j.bufs, err)) != TN_OK ||
      (st = tn_calloc(workers, sizeof *j.fails, &j.fails, err)) != TN_OK ||
      (st = tn_calloc(n, sizeof *j.headers, &j.headers, err)) != TN_OK ||
      (st = tn_calloc(n, 1, &j.header_ok, err)) != TN_OK)
    goto done;
  for (unsigned k = 0; k < workers; k++) {
    reader_init(&j.readers[k]);
    tn_vec_init(&j.bufs[k], 1);
    j.fails[k].rank = UINT32_MAX;
  }
  tn_parallel_for(n, workers, read_rank, &j);
  for (unsigned k = 0; k < workers; k++) {
    reader_free(&j.readers[k]);
    tn_vec_free(&j.bufs[k]);
  }
  uint32_t failed = (uint32_t)atomic_load(&j.first.rank);
  st = emit_i_check_identity(prefix, n, npus == 0, j.headers, j.header_ok, err);
  for (uint32_t r = 0; r < n && r <= failed && st == TN_OK; r++) {
    if (r == failed && !j.header_ok[r]) break; /* its file or header did not read */
    char *what = emit_i_rank_path(prefix, r, "", err);
    st = what ? apply_header(&j.headers[r], what, a, r, err) : TN_NOMEM;
    free(what);
  }
  if (st == TN_OK) st = first_failure(j.fails, workers, err);
done:
  free(j.readers);
  free(j.bufs);
  free(j.fails);
  free(j.headers);
  free(j.header_ok);
  if (st != TN_OK) {
    algo_free(a);
    return st;
  }
  *out = a;
  return TN_OK;
}
