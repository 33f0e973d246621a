/* emit/chakra/chakra_internal.h — private to emit/chakra/: the pieces of chakra.c that the
 * workload reader and writer (wl_io.c) share, and the fast path of the Chakra ET reader.
 * The fast path walks a Node record's wire format itself (emit_i_node_decode), leaving each
 * attribute as its bytes; the attributes of the shapes tenet writes are decoded directly
 * (emit_i_attr_shape), any other by protobuf-c with the real AttributeProto descriptor,
 * once per distinct bytes, and reused. Both direct decoders accept and refuse exactly what
 * protobuf-c does (tests/unit/test_chakra_wire.c compares them on random and mutated
 * records).
 * (The writer encodes node records itself: see put_node in chakra.c.) */
#ifndef TENET_EMIT_CHAKRA_INTERNAL_H
#define TENET_EMIT_CHAKRA_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "common/common.h"
#include "et_def.pb-c.h"

/* A decoded Node record (emit_i_node_decode): what the reader uses of it. The lists point
 * into the decoder's scratch, the attributes into the record: each attribute is still its
 * encoded AttributeProto. */
typedef struct emit_i_slice {
  const uint8_t *data;
  size_t len;
} emit_i_slice_t;

typedef struct emit_i_node {
  uint64_t id;
  int32_t type; /* a ChakraProtoMsg__NodeType, or any other value the record holds */
  uint64_t start_time_micros, duration_micros;
  size_t n_ctrl_deps, n_data_deps, n_attr;
  const uint64_t *ctrl_deps, *data_deps;
  const emit_i_slice_t *attr;
} emit_i_node_t;

/* Reads a varint of at most 10 bytes at *pos (bits past 64 dropped, as protobuf-c drops
 * them); false when it is truncated or overlong. */
static inline bool emit_i_get_varint_long(const uint8_t *p, size_t n, size_t *pos, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned k = 0; k < 10; k++) {
    if (*pos >= n) return false;
    uint8_t b = p[(*pos)++];
    x |= (uint64_t)(b & 0x7f) << (7 * k);
    if ((b & 0x80) == 0) {
      *v = x;
      return true;
    }
  }
  return false;
}

static inline bool emit_i_get_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v) {
  if (*pos < n && p[*pos] < 0x80) { /* one byte: most keys and lengths */
    *v = p[(*pos)++];
    return true;
  }
  return emit_i_get_varint_long(p, n, pos, v);
}

/* Bump allocator for protobuf-c: alloc never frees, reset makes all memory reusable
 * (several blocks are replaced by one as large as all of them together). */
typedef struct emit_i_arena {
  tn_vec_t blocks;    /* void *: every block, the current one last */
  uint8_t *cur, *end; /* free part of the current block */
  size_t cap, held;   /* current block's size; all blocks' sizes */
  ProtobufCAllocator pb;
} emit_i_arena_t;

void emit_i_arena_init(emit_i_arena_t *a);
void emit_i_arena_reset(emit_i_arena_t *a);
void emit_i_arena_free(emit_i_arena_t *a);
void *emit_i_arena_alloc(emit_i_arena_t *a, size_t size); /* NULL when out of memory */

/* The Node decoder of the fast path. protobuf-c's generic unpack (a scan of every field,
 * then a second pass that allocates and copies each one) took about a fifth of the CPU of
 * a 64-NPU `tenet sim`; this one walks the record once and copies nothing: the dependency
 * lists go to scratch kept across nodes, the attributes stay slices of the record. It
 * decodes exactly what protobuf-c 1.4.1 decodes with the Node descriptor whose attr field
 * is taken as `repeated bytes` (the same wire format), and refuses exactly what it refuses
 * (tests/unit/test_chakra_wire.c checks both on random and mutated records): the same tag
 * and length-prefix rules, wire types checked per field, packed and unpacked dependency
 * lists in any mix, the last of a repeated singular field kept, unknown fields skipped,
 * inputs and outputs (which tenet does not write) unpacked by protobuf-c only to refuse
 * them when they do not decode. */
typedef struct emit_i_node_buf {
  tn_vec_t ctrl; /* uint64_t */
  tn_vec_t data; /* uint64_t */
  tn_vec_t attr; /* emit_i_slice_t */
} emit_i_node_buf_t;

void emit_i_node_buf_init(emit_i_node_buf_t *b);
void emit_i_node_buf_free(emit_i_node_buf_t *b);

/* Decodes the Node record p[0, n) into *node (its arrays in b, its attributes pointing
 * into p; valid until the next call with b); *ok is false when the record does not
 * decode. ar holds what protobuf-c allocates for inputs and outputs. TN_NOMEM only when
 * out of memory. */
tn_status_t emit_i_node_decode(const uint8_t *p, size_t n, emit_i_node_buf_t *b,
                               emit_i_arena_t *ar, emit_i_node_t *node, bool *ok,
                               tn_err_t *err);

/* The shapes tenet writes its attributes in (put_attr_int, put_attr_list): {name = 1,
 * one of int32_val = 7, int64_val = 9, int64_list = 10 {values = 1, packed}} and nothing
 * else. For such bytes, the AttributeProto protobuf-c would decode, allocated in ar, with
 * its name left unset and given as *name (a slice of b); NULL for any other bytes (the
 * caller then decodes them with protobuf-c). */
ChakraProtoMsg__AttributeProto *emit_i_attr_shape(const emit_i_slice_t *b, emit_i_arena_t *ar,
                                                  emit_i_slice_t *name);

/* Open-addressing map from a 64-bit hash to a 32-bit slot number (1-based values; 0 is
 * empty). Collisions of the hash are resolved by the caller comparing keys. */
typedef struct emit_i_map {
  uint64_t *hash;
  uint32_t *val;
  size_t cap, len; /* cap is a power of two */
} emit_i_map_t;

void emit_i_map_free(emit_i_map_t *m);
/* First candidate slot for h (call emit_i_map_next to continue); returns the value or 0. */
uint32_t emit_i_map_first(const emit_i_map_t *m, uint64_t h, size_t *pos);
uint32_t emit_i_map_next(const emit_i_map_t *m, uint64_t h, size_t *pos);
/* Inserts (h, val); val > 0. Grows at half load. */
tn_status_t emit_i_map_put(emit_i_map_t *m, uint64_t h, uint32_t val, tn_err_t *err);

/* 64-bit hash of bytes (not cryptographic; keys are always compared as well). */
static inline uint64_t emit_i_hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull * (n + 1), w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  if (i < n) {
    /* w = the last n - i bytes, little-endian, zero above (as a memcpy into a zeroed word
     * would give, but without its call and store-to-load stall): read as whole words
     * that may overlap bytes already hashed or repeat one. */
    size_t k = n - i;
    if (n >= 8) {
      memcpy(&w, p + n - 8, 8);
      w >>= 8 * (8 - k);
    } else if (n >= 4) {
      uint32_t lo, hi;
      memcpy(&lo, p, 4);
      memcpy(&hi, p + n - 4, 4);
      w = (uint64_t)lo | (uint64_t)hi << (8 * (n - 4));
    } else {
      w = (uint64_t)p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) |
          (uint64_t)p[n - 1] << (8 * (n - 1));
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h ^ (h >> 32);
}

/* ---- shared by chakra.c (algorithm sets) and wl_io.c (workloads) ------------------ */

static inline uint64_t emit_i_hash_mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}

/* SplitMix64's finalizer: every input bit reaches every output bit. */
static inline uint64_t emit_i_hash_final(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

/* "<prefix>.<rank>.et<suffix>", or NULL (err set) when out of memory. Caller frees. */
char *emit_i_rank_path(const char *prefix, uint32_t rank, const char *suffix, tn_err_t *err);

/* Fills at as an AttributeProto {name, int64_val v} and returns it. */
ChakraProtoMsg__AttributeProto *emit_i_attr_i64(ChakraProtoMsg__AttributeProto *at, char *name,
                                                int64_t v);

/* Encodes rank's whole file (GlobalMetadata record, then node records) into buf, which
 * the caller has emptied. Called on several threads at once, one rank each. */
typedef tn_status_t (*emit_i_encode_fn)(void *ctx, uint32_t rank, tn_vec_t *buf, tn_err_t *err);

/* Writes <prefix>.<rank>.et for ranks 0..npus-1 as one unit, each encoded by encode (see
 * emit_chakra_write in emit.h for the temporaries, the renames, the roll back, the
 * cleanup registration and the removal of a larger earlier set's files); set_id is named
 * when a failed roll back leaves a mixed set. */
tn_status_t emit_i_write_set(const char *prefix, uint32_t npus, uint64_t set_id,
                             emit_i_encode_fn encode, void *ctx, tn_err_t *err);

/* A check of the set being written, run beside its encoding (emit_i_write_set_checked). */
typedef tn_status_t (*emit_i_check_fn)(void *ctx, tn_err_t *err);

/* emit_i_write_set, with check(check_ctx) run beside the encoding: the files move into
 * place only when it returns TN_OK (see emit_chakra_write_checked in emit.h). */
tn_status_t emit_i_write_set_checked(const char *prefix, uint32_t npus, uint64_t set_id,
                                     emit_i_encode_fn encode, void *ctx, emit_i_check_fn check,
                                     void *check_ctx, tn_err_t *err);

/* Header fields found in a file's GlobalMetadata (tenet's attributes; others ignored). */
typedef struct emit_i_header {
  bool has_npus, has_nodes, has_coll, has_cpn, has_size, has_producer, has_set, has_fabric;
  int64_t npus, nodes, coll, cpn, size, producer, set, fabric; /* set: the id's 64 bits */
  char producer_name[32];
  char fabric_name[64];
} emit_i_header_t;

/* One record's place in the file: its frame, and for nodes the id found on the wire. */
typedef struct emit_i_frame {
  uint64_t id;
  size_t off, len;
  size_t seq; /* record number, 1-based for nodes (for messages) */
} emit_i_frame_t;

/* Reads the file at path into b (replacing its contents) under tn_input_open's rule and
 * the EMIT_CHAKRA_MAX_FILE_BYTES limit. */
tn_status_t emit_i_read_whole(const char *path, tn_vec_t *b, tn_err_t *err);

/* The rank count of the set at prefix: npus when given (a file for rank npus is an
 * error), else the files 0.. until the first missing one (none: TN_IO). */
tn_status_t emit_i_count_ranks(const char *prefix, uint32_t npus, uint32_t *n, tn_err_t *err);

/* Checks one file's size, gunzips it when it is gzip'd within its budget (*plain then owns
 * the bytes; free it) and reads its GlobalMetadata into h. *data, *len and *pos then give
 * the node records. what names the file in messages. */
tn_status_t emit_i_open_bytes(const uint8_t **data, size_t *len, const char *what, uint8_t **plain,
                              size_t *pos, emit_i_header_t *h, tn_err_t *err);

/* Frames every node record of p[pos..len) into frames (emit_i_frame_t): each must frame and
 * carry a readable id, there must be one at least and as many as the header's tenet_nodes. */
tn_status_t emit_i_frame_nodes(const uint8_t *p, size_t len, size_t pos, const char *what,
                               const emit_i_header_t *h, tn_vec_t *frames, tn_err_t *err);
/* Sorts frames by id (when they are not) and refuses a repeated id. */
tn_status_t emit_i_order_frames(emit_i_frame_t *f, size_t n, const char *what, tn_err_t *err);
/* Index of node id among frames sorted by id, or -1. */
int64_t emit_i_find_frame(const emit_i_frame_t *f, size_t n, uint64_t id);

/* Every rank whose header was read (ok[r]) must carry one set identity or none; when
 * counted, a set whose files say it has more than n ranks is incomplete. */
tn_status_t emit_i_check_identity(const char *prefix, uint32_t n, bool counted,
                                  const emit_i_header_t *hs, const uint8_t *ok, tn_err_t *err);

/* Where a message points: "<file>: GlobalMetadata" or "<file>: node <id>". */
typedef struct emit_i_loc {
  const char *what;
  bool header;
  uint64_t id;
} emit_i_loc_t;

tn_status_t emit_i_loc_err(const emit_i_loc_t *l, tn_err_t *err, tn_status_t st, const char *fmt,
                           ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Integer value of an attribute held in any integer member; false for other members. */
bool emit_i_attr_int(const ChakraProtoMsg__AttributeProto *at, int64_t *v);
/* "string_val", "float_val", … for messages; "no value" when unset. */
const char *emit_i_member_name(const ChakraProtoMsg__AttributeProto *at);
/* Reads an integer attribute into *v within [lo, hi]; where names file and node. */
tn_status_t emit_i_int_attr(const ChakraProtoMsg__AttributeProto *at, int64_t lo, int64_t hi,
                            const emit_i_loc_t *where, int64_t *v, tn_err_t *err);

/* The index among frames f[0..n) (sorted by id; dense: f[i].id == i) of node id, on
 * which the node at index self depends, or TN_PARSE naming where: an id not in the file,
 * or the node itself. */
tn_status_t emit_i_dep_index(const emit_i_frame_t *f, size_t n, bool dense, uint64_t id,
                             uint32_t self, const emit_i_loc_t *where, uint32_t *index,
                             tn_err_t *err);

/* A SEND's or RECV's comm attributes as found on a node (NULL: absent). */
typedef struct emit_i_p2p_found {
  const ChakraProtoMsg__AttributeProto *src, *dst, *size, *tag;
} emit_i_p2p_found_t;

/* What a reader accepts in them. */
typedef struct emit_i_p2p_rules {
  int64_t peer_max;           /* comm_src and comm_dst in 0..peer_max */
  int64_t size_min, size_max; /* comm_size */
  int64_t tag_min, tag_max;   /* comm_tag */
  bool tag_required;          /* else an absent comm_tag is 0 */
  bool peer_not_self;         /* refuse the node's own rank as its peer */
} emit_i_p2p_rules_t;

/* Reads the attributes of a SEND (send) or RECV of rank `rank`: its peer (comm_dst of a
 * SEND, comm_src of a RECV) and comm_size are required, its own side when present must be
 * rank, comm_tag as the rules say; TN_PARSE naming where otherwise. */
tn_status_t emit_i_read_p2p(const emit_i_p2p_found_t *f, bool send, uint32_t rank,
                            const emit_i_p2p_rules_t *rules, const emit_i_loc_t *where,
                            int64_t *peer, int64_t *bytes, int64_t *tag, tn_err_t *err);

/* The Chakra CollectiveCommType of c (chakra.c). */
int64_t emit_i_coll_code(tn_coll_t c);
/* Appends the varint32 length and the packed message m to b (chakra.c). */
tn_status_t emit_i_put_record(tn_vec_t *b, const ProtobufCMessage *m, tn_err_t *err);

#endif
