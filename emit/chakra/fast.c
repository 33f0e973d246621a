/* emit/chakra/fast.c — the machinery behind the fast Chakra ET reader (emit/chakra/chakra.c): a
 * bump allocator for protobuf-c's unpack, a small hash map for the attribute cache, the
 * Node decoder, and the decoder of the attribute shapes tenet writes. See
 * chakra_internal.h for what each decodes, and why exactly as protobuf-c does. */
#include "emit/chakra/chakra_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------ node decoder */

void emit_i_node_buf_init(emit_i_node_buf_t *b) {
  tn_vec_init(&b->ctrl, sizeof(uint64_t));
  tn_vec_init(&b->data, sizeof(uint64_t));
  tn_vec_init(&b->attr, sizeof(emit_i_slice_t));
}

void emit_i_node_buf_free(emit_i_node_buf_t *b) {
  tn_vec_free(&b->ctrl);
  tn_vec_free(&b->data);
  tn_vec_free(&b->attr);
}

/* A field's key as protobuf-c reads it (parse_tag_and_wiretype): at most 5 bytes, 0 when
 * the first byte's tag bits are 0 or no byte of the 5 ends it. Returns the bytes used. */
static size_t wire_key(const uint8_t *p, size_t n, uint32_t *tag, unsigned *wt) {
  size_t max = n < 5 ? n : 5;
  if ((p[0] & 0xf8) == 0) return 0;
  *wt = p[0] & 7;
  uint32_t t = (uint32_t)(p[0] & 0x7f) >> 3;
  if ((p[0] & 0x80) == 0) {
    *tag = t;
    return 1;
  }
  unsigned shift = 4;
  for (size_t i = 1; i < max; i++) {
    if (p[i] & 0x80) {
      t |= (uint32_t)(p[i] & 0x7f) << shift;
      shift += 7;
    } else {
      *tag = t | (uint32_t)p[i] << shift;
      return i + 1;
    }
  }
  return 0;
}

/* A length prefix as protobuf-c's scan_length_prefixed_data reads it: at most 5 bytes, a
 * length up to INT_MAX that fits in the n bytes. Returns the prefix's bytes, 0 when bad. */
static size_t wire_prefix(const uint8_t *p, size_t n, size_t *len) {
  size_t max = n < 5 ? n : 5, v = 0;
  for (size_t i = 0; i < max; i++) {
    v |= (size_t)(p[i] & 0x7f) << (7 * i);
    if ((p[i] & 0x80) == 0) {
      if (v > INT_MAX || i + 1 + v > n) return 0;
      *len = v;
      return i + 1;
    }
  }
  return 0;
}

/* Appends x to v (of uint64_t); false when out of memory (*st says so). Inline: a
 * dependency is a few bytes of a record, a call each would cost as much as the rest. */
static inline bool push_u64(tn_vec_t *v, uint64_t x, tn_status_t *st, tn_err_t *err) {
  if (v->len == v->cap && (*st = tn_vec_reserve(v, v->len + 1, err)) != TN_OK) return false;
  ((uint64_t *)v->data)[v->len++] = x;
  return true;
}

/* Appends a packed list of varints to v; false when one does not end within the list, or
 * out of memory (*st then says so). */
static bool packed_u64(const uint8_t *p, size_t n, tn_vec_t *v, tn_status_t *st, tn_err_t *err) {
  for (size_t at = 0; at < n;) {
    uint64_t x;
    if (!emit_i_get_varint(p, n, &at, &x) || !push_u64(v, x, st, err)) return false;
  }
  return true;
}

/* protobuf-c refuses a message of more fields than its scan slabs hold (16 + 32 + ... +
 * 2^26 of them). */
#define NODE_MAX_FIELDS (((size_t)1 << 27) - 16)

tn_status_t emit_i_node_decode(const uint8_t *p, size_t n, emit_i_node_buf_t *b,
                               emit_i_arena_t *ar, emit_i_node_t *node, bool *ok,
                               tn_err_t *err) {
  *ok = false;
  b->ctrl.len = b->data.len = b->attr.len = 0;
  memset(node, 0, sizeof *node);
  tn_status_t st = TN_OK;
  size_t i = 0, fields = 0;
  while (i < n) {
    uint32_t tag;
    unsigned wt;
    size_t k = wire_key(p + i, n - i, &tag, &wt);
    if (k == 0 || ++fields > NODE_MAX_FIELDS) return TN_OK;
    i += k;
    /* The field's bytes: [i, i + len), after a prefix of pre bytes for wire type 2. */
    uint64_t v = 0;
    size_t len = 0, pre = 0;
    switch (wt) {
    case 0: {
      size_t end = i;
      if (!emit_i_get_varint(p, n, &end, &v)) return TN_OK;
      len = end - i;
      break;
    }
    case 1: len = 8; break;
    case 2:
      if ((pre = wire_prefix(p + i, n - i, &len)) == 0) return TN_OK;
      break;
    case 5: len = 4; break;
    default: return TN_OK; /* groups (3, 4) and wire types 6, 7 */
    }
    if (len > n - i - pre) return TN_OK; /* a fixed 32- or 64-bit value cut short */
    const uint8_t *f = p + i + pre;
    i += pre + len;
    switch (tag) {
    case 1: /* id */
    case 3: /* type (an enum: its low 32 bits) */
    case 6: /* start_time_micros */
    case 7: /* duration_micros */
      if (wt != 0) return TN_OK;
      if (tag == 1) node->id = v;
      if (tag == 3) node->type = (int32_t)(uint32_t)v;
      if (tag == 6) node->start_time_micros = v;
      if (tag == 7) node->duration_micros = v;
      break;
    case 2: /* name: not kept */
      if (wt != 2) return TN_OK;
      break;
    case 4: /* ctrl_deps */
    case 5: {
      tn_vec_t *d = tag == 4 ? &b->ctrl : &b->data;
      if (wt == 2) {
        if (!packed_u64(f, len, d, &st, err)) return st;
      } else if (wt != 0 || !push_u64(d, v, &st, err)) {
        return st;
      }
      break;
    }
    case 8: /* inputs, outputs: IOInfo messages tenet neither writes nor reads */
    case 9:
      if (wt != 2 || chakra_proto_msg__ioinfo__unpack(&ar->pb, len, f) == NULL) return TN_OK;
      break;
    case 10: { /* attr: kept as its bytes */
      if (wt != 2) return TN_OK;
      if (b->attr.len == b->attr.cap &&
          (st = tn_vec_reserve(&b->attr, b->attr.len + 1, err)) != TN_OK)
        return st;
      ((emit_i_slice_t *)b->attr.data)[b->attr.len++] = (emit_i_slice_t){len ? f : NULL, len};
      break;
    }
    default: break; /* unknown: skipped */
    }
  }
  node->n_ctrl_deps = b->ctrl.len;
  node->ctrl_deps = b->ctrl.data;
  node->n_data_deps = b->data.len;
  node->data_deps = b->data.data;
  node->n_attr = b->attr.len;
  node->attr = b->attr.data;
  *ok = true;
  return TN_OK;
}

/* ------------------------------------------------------- attribute shapes */

ChakraProtoMsg__AttributeProto *emit_i_attr_shape(const emit_i_slice_t *b, emit_i_arena_t *ar,
                                                  emit_i_slice_t *name) {
  const uint8_t *p = b->data;
  size_t n = b->len, nl, pre, i;
  if (n < 4 || p[0] != 0x0a || (pre = wire_prefix(p + 1, n - 1, &nl)) != 1 || 2 + nl >= n)
    return NULL;
  *name = (emit_i_slice_t){p + 2, nl};
  i = 2 + nl;
  uint8_t key = p[i++];
  ChakraProtoMsg__AttributeProto *a = NULL;
  if (key == 0x38 || key == 0x48) { /* int32_val, int64_val */
    uint64_t v;
    if (!emit_i_get_varint(p, n, &i, &v) || i != n ||
        (a = emit_i_arena_alloc(ar, sizeof *a)) == NULL)
      return NULL;
    chakra_proto_msg__attribute_proto__init(a);
    if (key == 0x38) {
      a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
      a->int32_val = (int32_t)(uint32_t)v;
    } else {
      a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
      a->int64_val = (int64_t)v;
    }
    return a;
  }
  if (key != 0x52) return NULL; /* int64_list: {values = 1, packed}, and nothing else */
  size_t ll, vl;
  if ((pre = wire_prefix(p + i, n - i, &ll)) == 0 || i + pre + ll != n) return NULL;
  i += pre;
  if (ll < 2 || p[i] != 0x0a || (pre = wire_prefix(p + i + 1, ll - 1, &vl)) == 0 ||
      1 + pre + vl != ll || vl == 0)
    return NULL;
  const uint8_t *v = p + i + 1 + pre;
  size_t count = 0;
  for (size_t k = 0; k < vl; k++)
    count += (v[k] & 0x80) == 0;
  ChakraProtoMsg__Int64List *l = emit_i_arena_alloc(ar, sizeof *l);
  int64_t *vals = count ? emit_i_arena_alloc(ar, count * sizeof *vals) : NULL;
  if (l == NULL || count == 0 || vals == NULL) return NULL;
  chakra_proto_msg__int64_list__init(l);
  for (size_t k = 0, at = 0; at < vl; k++) {
    uint64_t x;
    if (!emit_i_get_varint(v, vl, &at, &x)) return NULL;
    vals[k] = (int64_t)x;
  }
  l->n_values = count;
  l->values = vals;
  if ((a = emit_i_arena_alloc(ar, sizeof *a)) == NULL) return NULL;
  chakra_proto_msg__attribute_proto__init(a);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST;
  a->int64_list = l;
  return a;
}
