/* emit/chakra/chakra_internal.h — private to emit/chakra/: the fast path of the Chakra ET
 * reader. It unpacks a Node with protobuf_c_message_unpack through a twin of the Node
 * descriptor whose field 10 (attr) is `repeated bytes`, the same wire format as `repeated
 * AttributeProto`; each attribute is unpacked by protobuf-c with the real AttributeProto
 * descriptor once per distinct bytes and reused. (The writer encodes node records itself:
 * see put_node in chakra.c.) */
#ifndef TENET_EMIT_CHAKRA_INTERNAL_H
#define TENET_EMIT_CHAKRA_INTERNAL_H

#include <string.h>

#include "common/common.h"
#include "et_def.pb-c.h"

/* A ChakraProtoMsg__Node whose attributes are left as their encoded bytes. The layout
 * matches ChakraProtoMsg__Node field for field (checked in chakra_fast.c). */
typedef struct emit_i_lazy_node {
  ProtobufCMessage base;
  uint64_t id;
  char *name;
  ChakraProtoMsg__NodeType type;
  size_t n_ctrl_deps;
  uint64_t *ctrl_deps;
  size_t n_data_deps;
  uint64_t *data_deps;
  uint64_t start_time_micros;
  uint64_t duration_micros;
  ChakraProtoMsg__IOInfo *inputs;
  ChakraProtoMsg__IOInfo *outputs;
  size_t n_attr;
  ProtobufCBinaryData *attr; /* each element: one packed AttributeProto */
} emit_i_lazy_node_t;

/* The twin descriptor; owned by the caller (no global state), filled by
 * emit_i_lazy_desc_init from the generated Node descriptor. */
typedef struct emit_i_lazy_desc {
  ProtobufCMessageDescriptor desc;
  ProtobufCFieldDescriptor fields[10];
} emit_i_lazy_desc_t;

void emit_i_lazy_desc_init(emit_i_lazy_desc_t *d);

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
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h ^ (h >> 32);
}

/* The Chakra CollectiveCommType of c (chakra.c). */
int64_t emit_i_coll_code(tn_coll_t c);
/* Appends the varint32 length and the packed message m to b (chakra.c). */
tn_status_t emit_i_put_record(tn_vec_t *b, const ProtobufCMessage *m, tn_err_t *err);

#endif
