/* tests/unit/test_chakra_wire.c — the Chakra reader's own decoders (emit/chakra/fast.c) against
 * protobuf-c, the decoder they stand in for: on random Node records — every field of the
 * schema in any order and number, packed and unpacked lists, wrong wire types, multi-byte
 * and zero tags, unknown fields of every wire type, attributes of tenet's shapes and of
 * others — and on random mutations of them (bytes flipped, cut, inserted), the Node
 * decoder must accept exactly the records protobuf-c unpacks (with the Node descriptor
 * whose attr field is read as `repeated bytes`, the same wire format) and yield the same
 * id, type, times, dependency lists and attribute bytes; and the attribute decoder,
 * wherever it decodes, must give the AttributeProto protobuf-c gives. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "emit/chakra/chakra_internal.h"
#include "et_def.pb-c.h"

/* ---- the reference: protobuf-c with attr taken as repeated bytes --------------------- */

/* ChakraProtoMsg__Node with attr as bytes: the layout protobuf-c fills through the twin
 * descriptor below (every field where the generated struct has it). */
typedef struct ref_node {
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
  ProtobufCBinaryData *attr;
} ref_node_t;

#define SAME_AT(f) offsetof(ref_node_t, f) == offsetof(ChakraProtoMsg__Node, f)
_Static_assert(sizeof(ref_node_t) == sizeof(ChakraProtoMsg__Node), "layout");
_Static_assert(SAME_AT(id) && SAME_AT(name) && SAME_AT(type) && SAME_AT(n_ctrl_deps) &&
                   SAME_AT(ctrl_deps) && SAME_AT(n_data_deps) && SAME_AT(data_deps) &&
                   SAME_AT(start_time_micros) && SAME_AT(duration_micros) && SAME_AT(inputs) &&
                   SAME_AT(outputs) && SAME_AT(n_attr) && SAME_AT(attr),
               "layout");
#undef SAME_AT

static ProtobufCMessageDescriptor twin;
static ProtobufCFieldDescriptor twin_fields[10];

static void twin_init(void) {
  const ProtobufCMessageDescriptor *g = &chakra_proto_msg__node__descriptor;
  assert_int_equal(g->n_fields, 10);
  twin = *g;
  memcpy(twin_fields, g->fields, sizeof twin_fields);
  for (unsigned i = 0; i < 10; i++)
    if (twin_fields[i].id == 10) {
      twin_fields[i].type = PROTOBUF_C_TYPE_BYTES;
      twin_fields[i].descriptor = NULL;
    }
  twin.fields = twin_fields;
  twin.message_init = NULL; /* protobuf-c's generic init stamps the twin */
}

/* ---- random records --------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static uint32_t below(uint32_t n) {
  return (uint32_t)(rnd() % n);
}

typedef struct buf {
  uint8_t d[4096];
  size_t n;
} buf_t;

static void put_byte(buf_t *b, uint8_t v) {
  if (b->n < sizeof b->d) b->d[b->n++] = v;
}

static void put_bytes(buf_t *b, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    put_byte(b, ((const uint8_t *)p)[i]);
}

static void put_var(buf_t *b, uint64_t v) {
  while (v >= 0x80) {
    put_byte(b, (uint8_t)(v | 0x80));
    v >>= 7;
  }
  put_byte(b, (uint8_t)v);
}

/* A key: usually canonical, sometimes padded with continuation bytes (protobuf-c reads
 * keys of up to 5 bytes; a longer one is refused). */
static void put_key(buf_t *b, uint32_t tag, unsigned wt) {
  uint64_t k = (uint64_t)tag << 3 | wt;
  if (below(8) == 0) {
    for (; k >= 0x80; k >>= 7)
      put_byte(b, (uint8_t)(k | 0x80));
    put_byte(b, (uint8_t)(k | 0x80));
    for (uint32_t pad = below(3); pad > 0; pad--)
      put_byte(b, 0x80);
    put_byte(b, 0);
    return;
  }
  put_var(b, k);
}

static uint64_t rnd_value(void) {
  switch (below(5)) {
  case 0: return below(4);
  case 1: return below(300);
  case 2: return rnd() >> below(64);
  case 3: return (uint64_t) - (int64_t)below(5); /* negative int32/int64: ten bytes */
  default: return rnd();
  }
}

static void put_len_delim(buf_t *b, uint32_t tag, const buf_t *inner) {
  put_key(b, tag, 2);
  put_var(b, inner->n);
  put_bytes(b, inner->d, inner->n);
}

static const char *const names[] = {
    "comm_src",     "comm_dst",  "comm_size", "comm_tag", "tenet_chunks",
    "tenet_reduce", "comm_type", "",          "comm_sr",  "x"};

/* An AttributeProto's bytes: tenet's shapes most often, or anything else. */
static void rnd_attr(buf_t *a) {
  a->n = 0;
  const char *nm = names[below(sizeof names / sizeof names[0])];
  switch (below(6)) {
  case 0:
  case 1: /* {name, int32_val | int64_val} */
    put_key(a, 1, 2);
    put_var(a, strlen(nm));
    put_bytes(a, nm, strlen(nm));
    put_key(a, below(2) ? 7 : 9, 0);
    put_var(a, rnd_value());
    break;
  case 2: { /* {name, int64_list {values packed}} */
    put_key(a, 1, 2);
    put_var(a, strlen(nm));
    put_bytes(a, nm, strlen(nm));
    buf_t vals = {.n = 0}, list = {.n = 0};
    for (uint32_t k = below(6); k > 0; k--)
      put_var(&vals, rnd_value());
    put_len_delim(&list, 1, &vals);
    if (below(6) == 0) { /* an unpacked value after it */
      put_key(&list, 1, 0);
      put_var(&list, rnd_value());
    }
    put_len_delim(a, 10, &list);
    break;
  }
  case 3: /* the fields in another order, or another member */
    put_key(a, below(3) ? 9 : 11, 0);
    put_var(a, rnd_value());
    put_key(a, 1, 2);
    put_var(a, strlen(nm));
    put_bytes(a, nm, strlen(nm));
    break;
  case 4: /* a string value */
    put_key(a, 1, 2);
    put_var(a, strlen(nm));
    put_bytes(a, nm, strlen(nm));
    put_key(a, 29, 2);
    put_var(a, 3);
    put_bytes(a, "abc", 3);
    break;
  default: /* random bytes */
    for (uint32_t k = below(12); k > 0; k--)
      put_byte(a, (uint8_t)rnd());
  }
}

/* One field of a Node, chosen at random: right most of the time, a wrong wire type or an
 * unknown field otherwise. */
static void rnd_field(buf_t *b) {
  uint32_t tag = below(3) == 0 ? 10 : 1 + below(12); /* 11, 12: unknown */
  if (below(40) == 0) tag = below(2) ? 0 : 1000 + below(100000);
  unsigned wt;
  switch (tag) {
  case 1:
  case 3:
  case 6:
  case 7: wt = 0; break;
  case 4:
  case 5: wt = below(2) ? 0 : 2; break;
  default: wt = 2;
  }
  if (below(80) == 0) wt = below(8); /* any wire type, groups and 6, 7 included */
  if (tag == 0) { /* a tag of 0 in a key of two bytes: protobuf-c takes it as unknown */
    put_byte(b, (uint8_t)(0x80 | wt));
    put_byte(b, 0);
  } else {
    put_key(b, tag, wt);
  }
  buf_t in = {.n = 0};
  switch (wt) {
  case 0: put_var(b, rnd_value()); return;
  case 1: put_bytes(b, "12345678", 8); return;
  case 5: put_bytes(b, "1234", 4); return;
  case 2: break;
  default: return; /* 3, 4, 6, 7: nothing follows (protobuf-c refuses the key) */
  }
  if (tag == 4 || tag == 5) {
    for (uint32_t k = below(5); k > 0; k--)
      put_var(&in, rnd_value());
  } else if (tag == 8 || tag == 9) { /* IOInfo {values = 1 string, shape = 2 packed int64} */
    if (below(2)) {
      put_key(&in, 1, 2);
      put_var(&in, 2);
      put_bytes(&in, "io", 2);
    } else {
      for (uint32_t k = below(4); k > 0; k--)
        put_byte(&in, (uint8_t)rnd());
    }
  } else if (tag == 10) {
    rnd_attr(&in);
  } else {
    for (uint32_t k = below(10); k > 0; k--)
      put_byte(&in, (uint8_t)(tag == 2 ? 'a' + below(26) : rnd()));
  }
  put_var(b, in.n); /* the key is written above */
  put_bytes(b, in.d, in.n);
}

static void rnd_node(buf_t *b) {
  b->n = 0;
  for (uint32_t k = below(12); k > 0; k--)
    rnd_field(b);
}

/* A random change: a byte changed, the record cut, a byte inserted or removed. */
static void mutate(buf_t *b) {
  if (b->n == 0) return;
  size_t at = below((uint32_t)b->n);
  switch (below(4)) {
  case 0: b->d[at] = (uint8_t)rnd(); break;
  case 1: b->n = at; break;
  case 2:
    if (b->n < sizeof b->d) {
      memmove(b->d + at + 1, b->d + at, b->n - at);
      b->d[at] = (uint8_t)rnd();
      b->n++;
    }
    break;
  default: memmove(b->d + at, b->d + at + 1, b->n - at - 1); b->n--;
  }
}

/* ---- the comparisons ----------------------------------------------------------- */

static void same_attr(const ChakraProtoMsg__AttributeProto *x,
                      const ChakraProtoMsg__AttributeProto *ref, const emit_i_slice_t *name) {
  /* protobuf-c copies the name's bytes (a NUL among them too) and ends them with one */
  if (name->len) assert_memory_equal(ref->name, name->data, name->len);
  assert_int_equal(ref->name[name->len], '\0');
  assert_int_equal(x->value_case, ref->value_case);
  switch (ref->value_case) {
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
    assert_int_equal(x->int32_val, ref->int32_val);
    break;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
    assert_int_equal(x->int64_val, ref->int64_val);
    break;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST:
    assert_int_equal(x->int64_list->n_values, ref->int64_list->n_values);
    for (size_t k = 0; k < ref->int64_list->n_values; k++)
      assert_int_equal(x->int64_list->values[k], ref->int64_list->values[k]);
    break;
  default: fail_msg("value case %d decoded directly", (int)ref->value_case);
  }
}

typedef struct tally {
  size_t nodes, nodes_ok, attrs, attrs_direct;
} tally_t;

/* The attribute bytes a[0, n) both ways: where the direct decoder decodes, protobuf-c does
 * too, to the same value. */
static void check_attr(const uint8_t *a, size_t n, emit_i_arena_t *ar, tally_t *t) {
  emit_i_slice_t s = {n ? a : NULL, n}, name;
  const ChakraProtoMsg__AttributeProto *x = emit_i_attr_shape(&s, ar, &name);
  ChakraProtoMsg__AttributeProto *ref = chakra_proto_msg__attribute_proto__unpack(NULL, n, a);
  t->attrs++;
  if (x) {
    t->attrs_direct++;
    assert_non_null(ref);
    same_attr(x, ref, &name);
  }
  if (ref) chakra_proto_msg__attribute_proto__free_unpacked(ref, NULL);
}

static void check_record(const buf_t *b, emit_i_node_buf_t *nb, emit_i_arena_t *ar, tally_t *t) {
  emit_i_arena_reset(ar);
  emit_i_node_t x;
  bool ok = false;
  tn_err_t err = {0};
  assert_int_equal(emit_i_node_decode(b->d, b->n, nb, ar, &x, &ok, &err), TN_OK);
  ref_node_t *ref = (ref_node_t *)protobuf_c_message_unpack(&twin, NULL, b->n, b->d);
  t->nodes++;
  if (ok != (ref != NULL)) {
    char hex[3 * 64 + 1] = "";
    for (size_t i = 0; i < b->n && i < 64; i++)
      sprintf(hex + 3 * i, "%02x ", b->d[i]);
    fail_msg("%s decodes %s (%zu bytes: %s)", ok ? "ours" : "protobuf-c",
             ok ? "what protobuf-c refuses" : "what ours refuses", b->n, hex);
  }
  if (ref == NULL) return;
  t->nodes_ok++;
  assert_true(x.id == ref->id);
  assert_int_equal(x.type, (int32_t)ref->type);
  assert_true(x.start_time_micros == ref->start_time_micros);
  assert_true(x.duration_micros == ref->duration_micros);
  assert_int_equal(x.n_ctrl_deps, ref->n_ctrl_deps);
  assert_int_equal(x.n_data_deps, ref->n_data_deps);
  for (size_t k = 0; k < ref->n_ctrl_deps; k++)
    assert_true(x.ctrl_deps[k] == ref->ctrl_deps[k]);
  for (size_t k = 0; k < ref->n_data_deps; k++)
    assert_true(x.data_deps[k] == ref->data_deps[k]);
  assert_int_equal(x.n_attr, ref->n_attr);
  for (size_t k = 0; k < ref->n_attr; k++) {
    assert_int_equal(x.attr[k].len, ref->attr[k].len);
    if (ref->attr[k].len) assert_memory_equal(x.attr[k].data, ref->attr[k].data, ref->attr[k].len);
    check_attr(x.attr[k].data, x.attr[k].len, ar, t);
  }
  protobuf_c_message_free_unpacked(&ref->base, NULL);
}

static void wire_node_decoder_matches_protobuf_c(void **state) {
  (void)state;
  twin_init();
  emit_i_node_buf_t nb;
  emit_i_node_buf_init(&nb);
  emit_i_arena_t ar;
  emit_i_arena_init(&ar);
  tally_t t = {0};
  rng_state = 0x9e3779b97f4a7c15ull;
  buf_t b;
  for (int i = 0; i < 40000; i++) {
    rnd_node(&b);
    check_record(&b, &nb, &ar, &t);
    for (uint32_t m = 1 + below(3); m > 0; m--)
      mutate(&b);
    check_record(&b, &nb, &ar, &t);
  }
  /* The generator reaches both outcomes and the direct attribute path often. */
  print_message("%zu records, %zu decoded; %zu attributes, %zu decoded directly\n", t.nodes,
                t.nodes_ok, t.attrs, t.attrs_direct);
  assert_true(t.nodes_ok > t.nodes / 5 && t.nodes_ok < t.nodes - t.nodes / 5);
  assert_true(t.attrs_direct > t.attrs / 8);
  emit_i_arena_free(&ar);
  emit_i_node_buf_free(&nb);
}

/* Attributes alone, mutated: where the direct decoder still decodes, it agrees. */
static void wire_attr_decoder_matches_protobuf_c(void **state) {
  (void)state;
  emit_i_arena_t ar;
  emit_i_arena_init(&ar);
  tally_t t = {0};
  rng_state = 0x2545f4914f6cdd1dull;
  buf_t a;
  for (int i = 0; i < 100000; i++) {
    emit_i_arena_reset(&ar);
    rnd_attr(&a);
    check_attr(a.d, a.n, &ar, &t);
    mutate(&a);
    check_attr(a.d, a.n, &ar, &t);
  }
  print_message("%zu attributes, %zu decoded directly\n", t.attrs, t.attrs_direct);
  assert_true(t.attrs_direct > t.attrs / 8);
  emit_i_arena_free(&ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wire_node_decoder_matches_protobuf_c),
      cmocka_unit_test(wire_attr_decoder_matches_protobuf_c),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
