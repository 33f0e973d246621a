/* emit/chakra/fast.c — the machinery behind the fast Chakra ET reader (emit/chakra/chakra.c): the
 * lazy-attribute twin of the Node descriptor, a bump allocator for protobuf-c's unpack,
 * and a small hash map for the attribute cache. See chakra_internal.h for why the bytes
 * stay those of the Chakra schema. */
#include "emit/chakra/chakra_internal.h"

#include <stdlib.h>
#include <string.h>

/* The twin struct must place every field where ChakraProtoMsg__Node does, since the twin
 * descriptor reuses the generated field offsets. */
#define SAME_AT(f) offsetof(emit_i_lazy_node_t, f) == offsetof(ChakraProtoMsg__Node, f)
_Static_assert(sizeof(emit_i_lazy_node_t) == sizeof(ChakraProtoMsg__Node), "layout");
_Static_assert(SAME_AT(id) && SAME_AT(name) && SAME_AT(type) && SAME_AT(n_ctrl_deps) &&
                   SAME_AT(ctrl_deps) && SAME_AT(n_data_deps) && SAME_AT(data_deps) &&
                   SAME_AT(start_time_micros) && SAME_AT(duration_micros) && SAME_AT(inputs) &&
                   SAME_AT(outputs) && SAME_AT(n_attr) && SAME_AT(attr),
               "layout");
#undef SAME_AT

void emit_i_lazy_desc_init(emit_i_lazy_desc_t *d) {
  const ProtobufCMessageDescriptor *g = &chakra_proto_msg__node__descriptor;
  _Static_assert(sizeof d->fields / sizeof d->fields[0] == 10, "Node has 10 fields");
  d->desc = *g;
  memcpy(d->fields, g->fields, sizeof d->fields);
  for (unsigned i = 0; i < 10; i++)
    if (d->fields[i].id == 10) { /* attr: repeated AttributeProto → repeated bytes */
      d->fields[i].type = PROTOBUF_C_TYPE_BYTES;
      d->fields[i].descriptor = NULL;
    }
  d->desc.fields = d->fields;
  /* The generated init would stamp the real descriptor into the message; protobuf-c's
   * generic init (used when this is NULL) stamps ours. */
  d->desc.message_init = NULL;
}

/* ------------------------------------------------------------------ arena */

enum { ARENA_ALIGN = 16, ARENA_MIN_BLOCK = 1 << 16 };

static void *arena_pb_alloc(void *data, size_t size) {
  return emit_i_arena_alloc(data, size);
}
static void arena_pb_free(void *data, void *p) {
  (void)data, (void)p;
}

void emit_i_arena_init(emit_i_arena_t *a) {
  memset(a, 0, sizeof *a);
  tn_vec_init(&a->blocks, sizeof(void *));
  a->pb.alloc = arena_pb_alloc;
  a->pb.free = arena_pb_free;
  a->pb.allocator_data = a;
}

static void free_blocks(emit_i_arena_t *a) {
  for (size_t i = 0; i < a->blocks.len; i++)
    free(TN_VEC_AT(&a->blocks, void *, i));
  a->blocks.len = 0;
  a->cur = a->end = NULL;
  a->cap = a->held = 0;
}

/* Opens a new current block of at least size bytes. */
static bool new_block(emit_i_arena_t *a, size_t size) {
  size_t cap = a->cap * 2 > ARENA_MIN_BLOCK ? a->cap * 2 : ARENA_MIN_BLOCK;
  if (cap < size) cap = size;
  void *b = NULL;
  if (tn_vec_reserve(&a->blocks, a->blocks.len + 1, NULL) != TN_OK ||
      tn_malloc(cap, 1, &b, NULL) != TN_OK)
    return false;
  TN_VEC_AT(&a->blocks, void *, a->blocks.len++) = b;
  a->cur = b;
  a->end = a->cur + cap;
  a->cap = cap;
  a->held += cap;
  return true;
}

void *emit_i_arena_alloc(emit_i_arena_t *a, size_t size) {
  if (size > SIZE_MAX - ARENA_ALIGN) return NULL;
  size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if ((a->cur == NULL || (size_t)(a->end - a->cur) < size) && !new_block(a, size)) return NULL;
  uint8_t *p = a->cur;
  a->cur += size;
  return p;
}

void emit_i_arena_reset(emit_i_arena_t *a) {
  if (a->blocks.len > 1) { /* replace the blocks by one that holds them all */
    size_t want = a->held;
    free_blocks(a);
    if (!new_block(a, want)) free_blocks(a);
  } else if (a->blocks.len == 1) {
    a->cur = TN_VEC_AT(&a->blocks, void *, 0);
  }
}

void emit_i_arena_free(emit_i_arena_t *a) {
  free_blocks(a);
  tn_vec_free(&a->blocks);
}

/* -------------------------------------------------------------------- map */

void emit_i_map_free(emit_i_map_t *m) {
  free(m->hash);
  free(m->val);
  memset(m, 0, sizeof *m);
}

uint32_t emit_i_map_first(const emit_i_map_t *m, uint64_t h, size_t *pos) {
  if (m->cap == 0) return 0;
  *pos = (size_t)h & (m->cap - 1);
  for (; m->val[*pos]; *pos = (*pos + 1) & (m->cap - 1))
    if (m->hash[*pos] == h) return m->val[*pos];
  return 0;
}

uint32_t emit_i_map_next(const emit_i_map_t *m, uint64_t h, size_t *pos) {
  for (*pos = (*pos + 1) & (m->cap - 1); m->val[*pos]; *pos = (*pos + 1) & (m->cap - 1))
    if (m->hash[*pos] == h) return m->val[*pos];
  return 0;
}

static void put_slot(uint64_t *hash, uint32_t *val, size_t cap, uint64_t h, uint32_t v) {
  size_t p = (size_t)h & (cap - 1);
  while (val[p])
    p = (p + 1) & (cap - 1);
  hash[p] = h;
  val[p] = v;
}

tn_status_t emit_i_map_put(emit_i_map_t *m, uint64_t h, uint32_t val, tn_err_t *err) {
  if (2 * (m->len + 1) > m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 256;
    uint64_t *hash = NULL;
    uint32_t *vals = NULL;
    if (tn_calloc(cap, sizeof *hash, &hash, err) != TN_OK ||
        tn_calloc(cap, sizeof *vals, &vals, err) != TN_OK) {
      free(hash);
      return TN_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->val[i]) put_slot(hash, vals, cap, m->hash[i], m->val[i]);
    free(m->hash);
    free(m->val);
    m->hash = hash;
    m->val = vals;
    m->cap = cap;
  }
  put_slot(m->hash, m->val, m->cap, h, val);
  m->len++;
  return TN_OK;
}
