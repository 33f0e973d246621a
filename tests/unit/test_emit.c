/* tests/unit/test_emit.c — the Chakra ET writer and reader (round trips, determinism, the
 * wire contract of docs/chakra-format.md, rejection of broken sets, foreign producers' files,
 * gzip), the JSON dump and the DOT output. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "emit/emit.h"
#include "et_def.pb-c.h"

static tn_err_t tu_err_;

/* ---- hand-built sets -------------------------------------------------------- */

/* Ring All-Gather on n ranks, K = 1: in step s rank r sends chunk (r-s) mod n to r+1. */
static algo_t *ring_allgather(uint32_t n, uint64_t shard) {
  algo_t *a = NULL;
  TU_OK(algo_create("ring", TN_ALLGATHER, n, 1, shard * n, &a, &tu_err_));
  for (uint32_t r = 0; r < n; r++) {
    uint32_t prev_recv = 0;
    for (uint32_t s = 0; s + 1 < n; s++) {
      uint32_t c_out = (r + n - s) % n, c_in = (r + 2 * n - 1 - s) % n, id;
      TU_OK(algo_add_send(a, r, (r + 1) % n, (int32_t)s, shard, &prev_recv, s ? 1 : 0, &c_out, 1,
                          NULL, &tu_err_));
      TU_OK(algo_add_recv(a, r, (r + n - 1) % n, (int32_t)s, shard, false, NULL, 0, &c_in, 1, &id,
                          &tu_err_));
      prev_recv = id;
    }
  }
  return a;
}

/* Ring Reduce-Scatter (and, with ag, the All-Gather after it = All-Reduce): in step s rank
 * r sends chunk (r-s-1) mod n to r+1 and reduces chunk (r-s-2) mod n from r-1 with a
 * reduce RECV and a COMP. */
static algo_t *ring_reduce(uint32_t n, uint64_t size, bool ag) {
  algo_t *a = NULL;
  uint64_t chunk = size / n;
  TU_OK(algo_create("ring", ag ? TN_ALLREDUCE : TN_REDUCESCATTER, n, 1, size, &a, &tu_err_));
  for (uint32_t r = 0; r < n; r++) {
    uint32_t last = 0, id;
    bool have = false;
    for (uint32_t s = 0; s + 1 < n; s++) {
      uint32_t c_out = (r + 2 * n - s - 1) % n, c_in = (r + 2 * n - s - 2) % n, rv;
      TU_OK(algo_add_send(a, r, (r + 1) % n, (int32_t)s, chunk, &last, have, &c_out, 1, NULL,
                          &tu_err_));
      TU_OK(algo_add_recv(a, r, (r + n - 1) % n, (int32_t)s, chunk, true, NULL, 0, &c_in, 1, &rv,
                          &tu_err_));
      TU_OK(algo_add_comp(a, r, 0, &rv, 1, &c_in, 1, &id, &tu_err_));
      last = id, have = true;
    }
    for (uint32_t s = 0; ag && s + 1 < n; s++) {
      uint32_t c_out = (r + n - s) % n, c_in = (r + 2 * n - 1 - s) % n;
      int32_t tag = (int32_t)(n - 1 + s);
      TU_OK(algo_add_send(a, r, (r + 1) % n, tag, chunk, &last, 1, &c_out, 1, NULL, &tu_err_));
      TU_OK(algo_add_recv(a, r, (r + n - 1) % n, tag, chunk, false, NULL, 0, &c_in, 1, &id,
                          &tu_err_));
      last = id;
    }
  }
  return a;
}

static char *path_of(const char *prefix, uint32_t r) {
  static char buf[1200];
  snprintf(buf, sizeof buf, "%s.%u.et", prefix, r);
  return buf;
}

static uint8_t *slurp(const char *path, size_t *len) {
  char *data = NULL;
  tn_err_t err = {0};
  if (tn_read_file(path, 1u << 26, &data, len, &err) != TN_OK) fail_msg("%s", err.msg);
  return (uint8_t *)data;
}

/* Reads the varint32 record length at *pos. */
static size_t get_len(const uint8_t *d, size_t *pos) {
  size_t v = 0;
  for (unsigned k = 0;; k++) {
    v |= (size_t)(d[*pos] & 0x7f) << (7 * k);
    if ((d[(*pos)++] & 0x80) == 0) return v;
  }
}

static void spit(const char *path, const uint8_t *d, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(d, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void round_trip(algo_t *a, const char *test) {
  const char *dir = tu_tmpdir(test);
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/sub/set", dir); /* the writer creates sub/ */
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  algo_t *b = NULL;
  TU_OK(emit_chakra_read(prefix, 0, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  assert_string_equal(a->name, b->name);
  algo_free(b);
  TU_OK(emit_chakra_read(prefix, a->npus, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  algo_free(b);
  algo_free(a);
}

static void emit_round_trip_ring_allgather(void **state) {
  (void)state;
  round_trip(ring_allgather(8, 1u << 20), "emit_rt_ag");
}

static void emit_round_trip_ring_reducescatter_with_reduce_recvs(void **state) {
  (void)state;
  round_trip(ring_reduce(5, 5u << 20, false), "emit_rt_rs");
}

static void emit_round_trip_ring_allreduce(void **state) {
  (void)state;
  round_trip(ring_reduce(4, 4u << 20, true), "emit_rt_ar");
}

static void emit_round_trip_multi_chunk_nodes_and_unknown_collective(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("greedy-with-a-longer-name", TN_ALLGATHER, 3, 4, 12000, &a, &tu_err_));
  uint32_t ch[] = {0, 1, 2, 3}, odd[] = {7, 5}, d0 = 0, id;
  TU_OK(algo_add_send(a, 0, 1, 0, 4000, NULL, 0, ch, 4, &id, &tu_err_));
  TU_OK(algo_add_comp(a, 0, 12, &d0, 1, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 4000, false, NULL, 0, ch, 4, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 1, 2, ALGO_MAX_TAG, 2000, &d0, 1, odd, 2, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 2, 1, ALGO_MAX_TAG, 2000, false, NULL, 0, odd, 2, NULL, &tu_err_));
  round_trip(a, "emit_rt_multi");
  algo_t *u = NULL;
  TU_OK(algo_create_unknown("msccl", 2, &u, &tu_err_));
  TU_OK(algo_add_send(u, 0, 1, 0, 1, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(u, 1, 0, 0, 1, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  round_trip(u, "emit_rt_unknown");
}

/* Every node record the writer frames is the bytes protobuf-c packs for the message it
 * decodes to (Node and AttributeProto alike), on every kind of node. */
static void check_records_repack(const char *prefix, uint32_t npus) {
  for (uint32_t r = 0; r < npus; r++) {
    size_t len, pos = 0;
    uint8_t *d = slurp(path_of(prefix, r), &len);
    pos += get_len(d, &pos); /* the GlobalMetadata record */
    while (pos < len) {
      size_t n = get_len(d, &pos);
      ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(NULL, n, d + pos);
      assert_non_null(m);
      assert_int_equal(chakra_proto_msg__node__get_packed_size(m), n);
      uint8_t *again = malloc(n + 1);
      assert_non_null(again);
      assert_int_equal(chakra_proto_msg__node__pack(m, again), n);
      assert_memory_equal(again, d + pos, n);
      free(again);
      chakra_proto_msg__node__free_unpacked(m, NULL);
      pos += n;
    }
    free(d);
  }
}

static void emit_node_records_are_what_protobuf_c_packs(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_repack");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/x", dir);
  algo_t *a = NULL;
  TU_OK(algo_create("greedy", TN_ALLGATHER, 3, 300, 900000, &a, &tu_err_));
  uint32_t ch[] = {0, 1, 2, 3}, odd[] = {899, 5, 600}, deps[200], id;
  TU_OK(algo_add_send(a, 0, 1, 0, 4000, NULL, 0, ch, 4, &id, &tu_err_));
  for (uint32_t k = 0; k < 200; k++) /* ids past one varint byte */
    TU_OK(algo_add_comp(a, 0, k == 0 ? 0 : (uint64_t)k << 40, k ? &deps[k - 1] : &id, 1, NULL, 0,
                        &deps[k], &tu_err_));
  TU_OK(algo_add_comp(a, 0, 3, deps, 200, odd, 3, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 4000, false, NULL, 0, ch, 4, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 1, 2, ALGO_MAX_TAG, EMIT_CHAKRA_MAX_MSG_BYTES, NULL, 0, odd, 3, NULL,
                      &tu_err_));
  TU_OK(algo_add_recv(a, 2, 1, ALGO_MAX_TAG, EMIT_CHAKRA_MAX_MSG_BYTES, true, NULL, 0, odd, 3, NULL,
                      &tu_err_));
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  check_records_repack(prefix, 3);
  algo_free(a);
  a = ring_reduce(5, 5u << 20, true);
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  check_records_repack(prefix, 5);
  algo_free(a);
}

/* The names of rank r's nodes, in id order, as one string joined by '|'. */
static char *node_names(const char *prefix, uint32_t r) {
  size_t len, pos = 0, used = 0;
  uint8_t *d = slurp(path_of(prefix, r), &len);
  char *out = calloc(len + 1, 1);
  assert_non_null(out);
  pos += get_len(d, &pos); /* the GlobalMetadata record */
  while (pos < len) {
    size_t n = get_len(d, &pos);
    ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(NULL, n, d + pos);
    assert_non_null(m);
    used += (size_t)sprintf(out + used, "%s%s", used ? "|" : "", m->name);
    chakra_proto_msg__node__free_unpacked(m, NULL);
    pos += n;
  }
  free(d);
  return out;
}

/* Names spell every number in plain decimal (the writer formats them by hand, two digits at
 * a time): one, two, three, four and nine digits, at the edges of each. */
static void emit_node_names_spell_numbers_in_decimal(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_names");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/x", dir);
  algo_t *a = NULL;
  TU_OK(algo_create("greedy", TN_ALLGATHER, 3, 20000, 60000, &a, &tu_err_));
  uint32_t c9[] = {9}, c10[] = {10}, run[] = {99, 100, 101}, odd[] = {1000, 7};
  uint32_t c4[] = {10099}, c59999[] = {59999};
  TU_OK(algo_add_send(a, 0, 1, 0, 1, NULL, 0, c9, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 2, 10, 1, NULL, 0, c10, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 99, 1, NULL, 0, run, 3, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 100, 1, NULL, 0, c4, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, ALGO_MAX_TAG, 1, NULL, 0, c59999, 1, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 0, 0, NULL, 0, odd, 2, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 1234, 1, true, NULL, 0, run, 3, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 2, 0, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  char *r0 = node_names(prefix, 0), *r1 = node_names(prefix, 1), *r2 = node_names(prefix, 2);
  assert_string_equal(r0, "send r0->r1 tag 0 chunk 9|send r0->r2 tag 10 chunk 10|"
                          "send r0->r1 tag 99 chunks 99..101|send r0->r1 tag 100 chunk 10099|"
                          "send r0->r1 tag 499999999 chunk 59999|comp r0 reduce 2 chunks");
  assert_string_equal(r1, "recv r1<-r0 tag 1234 chunks 99..101 reduce");
  assert_string_equal(r2, "comp r2 idle");
  free(r0), free(r1), free(r2);
  algo_free(a);
}

static bool same_file(const char *p, const char *q) {
  size_t n, m;
  uint8_t *x = slurp(p, &n), *y = slurp(q, &m);
  bool same = n == m && memcmp(x, y, n) == 0;
  free(x);
  free(y);
  return same;
}

/* Sets whose tags and sizes never repeat overflow the reader's attribute cache, which is then
 * emptied between nodes: the round trip stays exact. */
static void emit_round_trip_survives_attribute_cache_resets(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", 3, &a, &tu_err_));
  for (uint32_t m = 0; m < 6000; m++) {
    uint32_t from = m % 3, to = (m + 1) % 3, c = m % 7;
    uint64_t bytes = 1000 + m;
    TU_OK(algo_add_send(a, from, to, (int32_t)m, bytes, NULL, 0, &c, 1, NULL, &tu_err_));
    TU_OK(
        algo_add_recv(a, to, from, (int32_t)m, bytes, m % 2 == 0, NULL, 0, &c, 1, NULL, &tu_err_));
  }
  round_trip(a, "emit_cache_reset");
}

static void emit_write_is_byte_identical_across_runs(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_bytes");
  char p1[1100], p2[1100], q[1200];
  snprintf(p1, sizeof p1, "%s/one", dir);
  snprintf(p2, sizeof p2, "%s/two", dir);
  algo_t *a = ring_reduce(6, 6u << 20, true), *b = ring_reduce(6, 6u << 20, true);
  TU_OK(emit_chakra_write(a, p1, &tu_err_));
  TU_OK(emit_chakra_write(b, p2, &tu_err_));
  for (uint32_t r = 0; r < 6; r++) {
    snprintf(q, sizeof q, "%s", path_of(p1, r));
    assert_true(same_file(q, path_of(p2, r)));
  }
  algo_free(a);
  algo_free(b);
}

static const ChakraProtoMsg__AttributeProto *find_attr(ChakraProtoMsg__AttributeProto **at,
                                                       size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(at[i]->name, name) == 0) return at[i];
  return NULL;
}

/* Decodes rank 1 of a ring All-Reduce with protobuf-c directly and checks the wire contract
 * of docs/chakra-format.md: framing, version, names, types, the oneof member of every attribute. */
static void emit_write_follows_the_chakra_wire_contract(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_wire");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ar", dir);
  algo_t *a = ring_reduce(3, 3u << 20, true);
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  size_t len, pos = 0;
  uint8_t *d = slurp(path_of(prefix, 1), &len);
  size_t n = get_len(d, &pos);
  ChakraProtoMsg__GlobalMetadata *md = chakra_proto_msg__global_metadata__unpack(NULL, n, d + pos);
  assert_non_null(md);
  assert_string_equal(md->version, "0.0.4");
  const ChakraProtoMsg__AttributeProto *h = find_attr(md->attr, md->n_attr, "tenet_coll");
  assert_non_null(h);
  assert_int_equal(h->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL);
  assert_int_equal(h->int64_val, 0); /* ALL_REDUCE, written although 0 */
  chakra_proto_msg__global_metadata__free_unpacked(md, NULL);
  pos += n;
  uint64_t id = 0;
  while (pos < len) {
    n = get_len(d, &pos);
    ChakraProtoMsg__Node *x = chakra_proto_msg__node__unpack(NULL, n, d + pos);
    assert_non_null(x);
    pos += n;
    assert_int_equal(x->id, id);
    assert_int_equal(x->n_ctrl_deps, 0);
    assert_true(x->name[0] != '\0');
    const ChakraProtoMsg__AttributeProto *src = find_attr(x->attr, x->n_attr, "comm_src"),
                                         *dst = find_attr(x->attr, x->n_attr, "comm_dst"),
                                         *sz = find_attr(x->attr, x->n_attr, "comm_size"),
                                         *tag = find_attr(x->attr, x->n_attr, "comm_tag"),
                                         *ty = find_attr(x->attr, x->n_attr, "comm_type"),
                                         *cpu = find_attr(x->attr, x->n_attr, "is_cpu_op");
    /* nothing optional: no consumer reads these on a collective's nodes */
    assert_null(cpu);
    assert_null(ty);
    if (x->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE) {
      assert_null(sz);
    } else {
      bool send = x->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
      assert_true(send || x->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE);
      if (send) {
        assert_null(src); /* a SEND's own rank */
      } else {
        assert_non_null(src);
        assert_int_equal(src->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
        assert_int_equal(src->int32_val, 0);
      }
      if (send) {
        assert_non_null(dst);
        assert_int_equal(dst->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
        assert_int_equal(dst->int32_val, 2);
        if (id == 0) assert_string_equal(x->name, "send r1->r2 tag 0 chunk 0");
      }
      assert_int_equal(sz->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL);
      assert_int_equal(sz->int64_val, 1u << 20);
      assert_int_equal(tag->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
    }
    chakra_proto_msg__node__free_unpacked(x, NULL);
    id++;
  }
  assert_int_equal(id, algo_rank_len(a, 1));
  free(d);
  algo_free(a);
}

/* ---- rejections ------------------------------------------------------------ */

static algo_t *empty_set(uint32_t n) {
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", n, &a, &tu_err_));
  return a;
}

static void expect_decode_error(const uint8_t *d, size_t n, uint32_t npus, const char *needle) {
  algo_t *a = empty_set(npus);
  tn_err_t err = {0};
  tn_status_t st = emit_chakra_decode(d, n, "x.0.et", a, 0, &err);
  if (st == TN_OK) fail_msg("decoding %zu bytes succeeded (expected '%s')", n, needle);
  assert_int_equal(st, TN_PARSE);
  if (strstr(err.msg, "x.0.et") == NULL || strstr(err.msg, needle) == NULL)
    fail_msg("message '%s' lacks 'x.0.et' or '%s'", err.msg, needle);
  algo_free(a);
}

static void emit_read_rejects_truncation_at_every_byte(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_trunc");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ar", dir);
  algo_t *a = ring_reduce(3, 3000, true);
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  size_t len;
  uint8_t *d = slurp(path_of(prefix, 0), &len);
  for (size_t cut = 0; cut < len; cut++) {
    algo_t *b = empty_set(3);
    tn_err_t err = {0};
    tn_status_t st = emit_chakra_decode(d, cut, "x.0.et", b, 0, &err);
    if (st != TN_PARSE) fail_msg("cut at %zu of %zu: status %d", cut, len, (int)st);
    assert_non_null(strstr(err.msg, "x.0.et"));
    algo_free(b);
  }
  expect_decode_error(d, 0, 3, "empty file");
  expect_decode_error(d, len - 1, 3, "past the end");
  free(d);
  algo_free(a);
}

static void emit_read_rejects_corrupt_length(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_len");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  algo_t *a = ring_allgather(2, 64);
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  size_t len;
  uint8_t *d = slurp(path_of(prefix, 0), &len);
  uint8_t *m = malloc(len + 8);
  assert_non_null(m);
  /* A length far past the end of the file. */
  memcpy(m, d, len);
  m[0] = 0xff, m[1] = 0x7f;
  expect_decode_error(m, len, 2, "runs past the end");
  /* A length prefix of eleven continuation bytes. */
  memset(m, 0xff, 11);
  expect_decode_error(m, 11, 2, "overlong length prefix");
  /* A length one byte short: the metadata record then decodes as garbage or misframes. */
  memcpy(m, d, len);
  assert_true((d[0] & 0x7f) > 0);
  m[0] = (uint8_t)(d[0] - 1);
  algo_t *b = empty_set(2);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_decode(m, len, "x.0.et", b, 0, &err), TN_PARSE);
  algo_free(b);
  /* The length of the first node record cut so the rest misframes. */
  memcpy(m, d, len);
  size_t node0 = 0;
  node0 += get_len(d, &node0);
  m[node0] = (uint8_t)(d[node0] + 3);
  b = empty_set(2);
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_decode(m, len, "x.0.et", b, 0, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "x.0.et"));
  algo_free(b);
  free(m);
  free(d);
  algo_free(a);
}

static void emit_read_rejects_a_missing_rank_file(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_missing");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  algo_t *a = ring_allgather(4, 64), *b = NULL;
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  assert_int_equal(remove(path_of(prefix, 2)), 0);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read(prefix, 4, &b, &err), TN_IO);
  assert_null(b);
  assert_non_null(strstr(err.msg, "ag.2.et"));
  /* Counting files stops at rank 2; the set's files say it has 4 ranks. */
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_read(prefix, 0, &b, &err), TN_PARSE);
  if (strstr(err.msg, "ag: an incomplete set: ranks 0-1 of 4 (id ") == NULL ||
      strstr(err.msg, "ag.2.et is missing") == NULL)
    fail_msg("%s", err.msg);
  /* A topology of 2 NPUs for a set that has more files. */
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_read(prefix, 2, &b, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "ag.2.et: exists"));
  tn_err_clear(&err);
  char nothing[1100];
  snprintf(nothing, sizeof nothing, "%s/none", dir);
  assert_int_equal(emit_chakra_read(nothing, 0, &b, &err), TN_IO);
  assert_non_null(strstr(err.msg, "none.0.et"));
  algo_free(a);
}

static void emit_read_rejects_an_empty_file(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_empty");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  algo_t *a = ring_allgather(3, 64), *b = NULL;
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  spit(path_of(prefix, 1), NULL, 0);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read(prefix, 3, &b, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "ag.1.et: empty file"));
  /* A file holding only the metadata record. */
  size_t len;
  uint8_t *d = slurp(path_of(prefix, 0), &len);
  size_t end = 0;
  end += get_len(d, &end);
  expect_decode_error(d, end, 3, "holds no node");
  free(d);
  algo_free(a);
}

/* ---- a foreign producer (astra-sim collectiveapi conventions) ------------------- */

typedef struct tw_attr {
  const char *name;
  char kind; /* 'i' int32, 'l' int64, 'u' uint64, 's' string, 'f' float, 'b' bool */
  int64_t v;
} tw_attr_t;

typedef struct tw_node {
  uint64_t id;
  int type;
  uint64_t dur;
  uint64_t deps[3], ctrl[3];
  size_t ndeps, nctrl, nattr;
  tw_attr_t attr[8];
} tw_node_t;

static char *xdup(const char *s) {
  char *p = strdup(s);
  assert_non_null(p);
  return p;
}

static void put_rec(FILE *f, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(n + 1);
  assert_non_null(b);
  protobuf_c_message_pack(m, b);
  for (size_t v = n;;) { /* varint32 length */
    uint8_t low = (uint8_t)(v & 0x7f);
    v >>= 7;
    fputc(v ? low | 0x80 : low, f);
    if (!v) break;
  }
  if (n) fwrite(b, 1, n, f);
  free(b);
}

/* Writes a file the way other producers do: version only in the metadata, no tenet
 * attributes, ids as given (any order), dependencies in data_deps and ctrl_deps. */
static void tw_write(const char *path, const tw_node_t *nodes, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  ChakraProtoMsg__GlobalMetadata md;
  chakra_proto_msg__global_metadata__init(&md);
  md.version = xdup("0.0.4");
  put_rec(f, &md.base);
  free(md.version);
  for (size_t i = 0; i < n; i++) {
    const tw_node_t *t = &nodes[i];
    ChakraProtoMsg__Node x;
    chakra_proto_msg__node__init(&x);
    ChakraProtoMsg__AttributeProto at[8], *ap[8];
    x.id = t->id;
    x.name = xdup("COMM_SEND_NODE");
    x.type = (ChakraProtoMsg__NodeType)t->type;
    x.duration_micros = t->dur;
    uint64_t deps[3], ctrl[3];
    memcpy(deps, t->deps, sizeof deps);
    memcpy(ctrl, t->ctrl, sizeof ctrl);
    x.data_deps = deps;
    x.n_data_deps = t->ndeps;
    x.ctrl_deps = ctrl;
    x.n_ctrl_deps = t->nctrl;
    for (size_t k = 0; k < t->nattr; k++) {
      chakra_proto_msg__attribute_proto__init(&at[k]);
      at[k].name = xdup(t->attr[k].name);
      ap[k] = &at[k];
      int64_t v = t->attr[k].v;
      switch (t->attr[k].kind) {
      case 'i':
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
        at[k].int32_val = (int32_t)v;
        break;
      case 'l':
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        at[k].int64_val = v;
        break;
      case 'u':
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
        at[k].uint64_val = (uint64_t)v;
        break;
      case 's':
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        at[k].string_val = xdup("seven");
        break;
      case 'f':
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL;
        at[k].float_val = (float)v;
        break;
      default:
        at[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
        at[k].bool_val = v != 0;
      }
    }
    x.n_attr = t->nattr;
    x.attr = ap;
    put_rec(f, &x.base);
    free(x.name);
    for (size_t k = 0; k < t->nattr; k++) {
      free(at[k].name);
      if (t->attr[k].kind == 's') free(at[k].string_val);
    }
  }
  assert_int_equal(fclose(f), 0);
}

enum { SEND = 5, RECV = 6, COMP = 4 };

/* collectiveapi style: a serial chain per rank, comm_src and comm_dst on both sides,
 * comm_type, is_cpu_op and an attribute tenet does not know; ids neither dense nor sorted. */
static void foreign_pair(tw_node_t r0[3], tw_node_t r1[3]) {
  tw_node_t s0 = {100,
                  SEND,
                  0,
                  {0},
                  {0},
                  0,
                  0,
                  6,
                  {{"comm_src", 'i', 0},
                   {"comm_dst", 'i', 1},
                   {"comm_size", 'l', 131072},
                   {"comm_tag", 'i', 0},
                   {"comm_type", 'l', 5},
                   {"involved_dim", 's', 0}}};
  tw_node_t v0 = {7,
                  RECV,
                  0,
                  {0},
                  {100},
                  0,
                  1,
                  5,
                  {{"comm_src", 'i', 1},
                   {"comm_dst", 'i', 0},
                   {"comm_size", 'u', 131072},
                   {"comm_tag", 'i', 0},
                   {"is_cpu_op", 'b', 0}}};
  tw_node_t c0 = {42, COMP, 7, {7, 7}, {7}, 2, 1, 1, {{"is_cpu_op", 'b', 0}}};
  r0[0] = s0, r0[1] = v0, r0[2] = c0;
  for (int i = 0; i < 3; i++)
    r1[i] = r0[i];
  r1[0].attr[0].v = 1, r1[0].attr[1].v = 0;
  r1[1].attr[0].v = 0, r1[1].attr[1].v = 1;
}

static void emit_read_accepts_foreign_files(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_foreign");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/msccl", dir);
  tw_node_t r0[3], r1[3];
  foreign_pair(r0, r1);
  tw_write(path_of(prefix, 0), r0, 3);
  tw_write(path_of(prefix, 1), r1, 3);
  algo_t *a = NULL;
  TU_OK(emit_chakra_read(prefix, 0, &a, &tu_err_));
  assert_false(a->has_coll);
  assert_string_equal(a->name, "chakra");
  for (uint32_t r = 0; r < 2; r++) {
    assert_int_equal(algo_rank_len(a, r), 3);
    /* ids 7, 42, 100 become 0, 1, 2 */
    const algo_node_t *v = algo_node(a, r, 0), *c = algo_node(a, r, 1), *s = algo_node(a, r, 2);
    assert_int_equal(v->op, ALGO_RECV);
    assert_int_equal(v->peer, 1 - (int)r);
    assert_int_equal(v->bytes, 131072);
    assert_int_equal(v->ndeps, 1);
    assert_int_equal(algo_node_deps(a, r, v)[0], 2);
    assert_int_equal(c->op, ALGO_COMP);
    assert_int_equal(c->duration_us, 7);
    assert_int_equal(c->ndeps, 1); /* 7 listed twice in data_deps and once in ctrl_deps */
    assert_int_equal(algo_node_deps(a, r, c)[0], 0);
    assert_int_equal(s->op, ALGO_SEND);
    assert_int_equal(s->peer, 1 - (int)r);
    assert_int_equal(s->nchunks, 0);
  }
  algo_free(a);
}

/* Writes the foreign pair with rank 0's node k changed by edit, reads, expects needle. */
static void foreign_reject(const char *test, void (*edit)(tw_node_t *r0), const char *needle) {
  const char *dir = tu_tmpdir(test);
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/f", dir);
  tw_node_t r0[3], r1[3];
  foreign_pair(r0, r1);
  edit(r0);
  tw_write(path_of(prefix, 0), r0, 3);
  tw_write(path_of(prefix, 1), r1, 3);
  algo_t *a = NULL;
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read(prefix, 2, &a, &err), TN_PARSE);
  assert_null(a);
  if (strstr(err.msg, "f.0.et: node") == NULL || strstr(err.msg, needle) == NULL)
    fail_msg("message '%s' lacks 'f.0.et: node' or '%s'", err.msg, needle);
}

static void dangle(tw_node_t *r) {
  r[2].deps[1] = 8;
}
static void no_size(tw_node_t *r) {
  r[0].attr[2].name = "comm_bytes";
}
static void string_tag(tw_node_t *r) {
  r[1].attr[3].kind = 's';
}
static void float_size(tw_node_t *r) {
  r[0].attr[2].kind = 'f';
}
static void metadata_node(tw_node_t *r) {
  r[2].type = 1;
}
static void zero_size(tw_node_t *r) {
  r[0].attr[2].v = 0;
}
static void big_tag(tw_node_t *r) {
  r[0].attr[3].v = 500000000;
}
static void far_peer(tw_node_t *r) {
  r[0].attr[1].v = 2;
}
static void negative_peer(tw_node_t *r) {
  r[1].attr[0].v = -1;
}
static void self_peer(tw_node_t *r) {
  r[0].attr[1].v = 0;
}
static void dup_id(tw_node_t *r) {
  r[2].id = 100;
}
static void no_src(tw_node_t *r) {
  r[1].nattr = 0;
}

static void emit_read_rejects_a_dangling_dependency(void **state) {
  (void)state;
  foreign_reject("emit_dangle", dangle, "node 42: depends on node 8, which is not in the file");
}

static void emit_read_rejects_a_missing_comm_size(void **state) {
  (void)state;
  foreign_reject("emit_nosize", no_size,
                 "node 100: COMM_SEND_NODE lacks the required "
                 "attribute comm_size");
  foreign_reject("emit_nosrc", no_src,
                 "node 7: COMM_RECV_NODE lacks the required attribute "
                 "comm_src");
}

static void emit_read_rejects_a_string_or_float_comm_attr(void **state) {
  (void)state;
  foreign_reject("emit_strtag", string_tag,
                 "node 7: comm_tag must hold an integer "
                 "(int32_val or int64_val), not string_val");
  foreign_reject("emit_fltsize", float_size,
                 "node 100: comm_size must hold an integer "
                 "(int32_val or int64_val), not float_val");
}

static void emit_read_rejects_bad_values(void **state) {
  (void)state;
  foreign_reject("emit_meta", metadata_node, "node 42: unsupported node type 1 (METADATA_NODE)");
  foreign_reject("emit_zero", zero_size, "node 100: comm_size = 0 is outside 1..");
  foreign_reject("emit_tag", big_tag, "node 100: comm_tag = 500000000 is outside 0..499999999");
  foreign_reject("emit_far", far_peer, "node 100: comm_dst = 2 is outside 0..1");
  foreign_reject("emit_neg", negative_peer, "node 7: comm_src = -1 is outside 0..1");
  foreign_reject("emit_self", self_peer, "node 100: comm_dst = 0 is the node's own rank");
  const char *dir = tu_tmpdir("emit_dup");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/f", dir);
  tw_node_t r0[3], r1[3];
  foreign_pair(r0, r1);
  dup_id(r0);
  tw_write(path_of(prefix, 0), r0, 3);
  tw_write(path_of(prefix, 1), r1, 3);
  algo_t *a = NULL;
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read(prefix, 2, &a, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "f.0.et: node id 100 appears twice"));
}

static void gzip_file(const char *path) {
  size_t len;
  uint8_t *d = slurp(path, &len);
  gzFile g = gzopen(path, "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, d, (unsigned)len), (int)len);
  assert_int_equal(gzclose(g), Z_OK);
  free(d);
}

static void emit_read_accepts_gzip(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_gzip");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ar", dir);
  algo_t *a = ring_reduce(4, 4096, true), *b = NULL;
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  gzip_file(path_of(prefix, 0));
  gzip_file(path_of(prefix, 3));
  size_t len;
  uint8_t *d = slurp(path_of(prefix, 0), &len);
  assert_true(d[0] == 0x1f && d[1] == 0x8b);
  TU_OK(emit_chakra_read(prefix, 4, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  algo_free(b);
  /* A truncated gzip stream is an error at every cut. */
  for (size_t cut = 1; cut < len; cut += 7) {
    algo_t *c = empty_set(4);
    tn_err_t err = {0};
    assert_int_equal(emit_chakra_decode(d, cut, "x.0.et", c, 0, &err), TN_PARSE);
    assert_non_null(strstr(err.msg, "x.0.et"));
    algo_free(c);
  }
  expect_decode_error(d, len - 9, 4, "truncated gzip stream");
  free(d);
  algo_free(a);
}

/* n zero bytes gzip'd at level 9 (about 1000 to 1): *len bytes, caller frees. */
static uint8_t *gzip_zeros(size_t n, size_t *len) {
  uint8_t *zeros = calloc(n ? n : 1, 1), *out = NULL;
  assert_non_null(zeros);
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, (uLong)n);
  out = malloc(cap);
  assert_non_null(out);
  z.next_in = zeros;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *len = cap - z.avail_out;
  deflateEnd(&z);
  free(zeros);
  return out;
}

/* A gzip bomb stops at its budget (emit.h): the larger of EMIT_CHAKRA_GZIP_MIN_BYTES and
 * EMIT_CHAKRA_GZIP_MAX_RATIO times the compressed size. Zeros inflate to a file whose
 * first record is empty, so a stream within the budget fails on that, one past it on the
 * budget, at exactly the boundary. */
static void emit_read_stops_a_gzip_bomb_at_its_budget(void **state) {
  (void)state;
  size_t len = 0;
  const char *empty = "node record 1 is empty", *budget = "gzip inflates past";
  uint8_t *d = gzip_zeros(EMIT_CHAKRA_GZIP_MIN_BYTES, &len);
  assert_true(len * EMIT_CHAKRA_GZIP_MAX_RATIO < EMIT_CHAKRA_GZIP_MIN_BYTES);
  expect_decode_error(d, len, 2, empty);
  free(d);
  d = gzip_zeros(EMIT_CHAKRA_GZIP_MIN_BYTES + 1, &len);
  algo_t *a = empty_set(2);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_decode(d, len, "x.0.et", a, 0, &err), TN_LIMIT);
  assert_non_null(strstr(err.msg, "x.0.et"));
  assert_non_null(strstr(err.msg, budget));
  algo_free(a);
  free(d);
  /* 256 MiB of zeros: about 250 KiB compressed, refused after 64 times that, not
   * inflated whole. */
  d = gzip_zeros((size_t)256 << 20, &len);
  a = empty_set(2);
  tn_err_t err2 = {0};
  assert_int_equal(emit_chakra_decode(d, len, "x.0.et", a, 0, &err2), TN_LIMIT);
  char want[64];
  snprintf(want, sizeof want, "past %zu bytes", len * EMIT_CHAKRA_GZIP_MAX_RATIO);
  assert_non_null(strstr(err2.msg, want));
  algo_free(a);
  free(d);
}

/* Truncates the file at path to half its length. */
static void cut_in_half(const char *path) {
  size_t len;
  uint8_t *d = slurp(path, &len);
  spit(path, d, len / 2);
  free(d);
}

/* The reader decodes the ranks' files on several threads; whatever the thread count, the
 * error it reports is the one of the lowest rank that fails, as a rank-by-rank reader's. */
static void emit_read_reports_the_lowest_failing_rank_on_any_thread_count(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_first_fail");
  char p[1100], other[1100], q[1200];
  snprintf(p, sizeof p, "%s/ag", dir);
  snprintf(other, sizeof other, "%s/other", dir);
  static const char *const threads[] = {"1", "2", "3", "8"};
  for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
    setenv("TENET_THREADS", threads[t], 1);
    algo_t *a = ring_allgather(9, 64), *b = ring_allgather(9, 128), *c = NULL;
    tn_err_t err = {0};
    /* Nodes broken in ranks 6 and 2: rank 2 is reported. */
    TU_OK(emit_chakra_write(a, p, &tu_err_));
    cut_in_half(path_of(p, 6));
    cut_in_half(path_of(p, 2));
    assert_int_equal(emit_chakra_read(p, 9, &c, &err), TN_PARSE);
    assert_null(c);
    if (strstr(err.msg, "ag.2.et") == NULL) fail_msg("%s threads: %s", threads[t], err.msg);
    /* Rank 3 from another set (another size) and broken nodes in rank 5: the mix is
     * reported, naming rank 3. */
    TU_OK(emit_chakra_write(a, p, &tu_err_));
    TU_OK(emit_chakra_write(b, other, &tu_err_));
    snprintf(q, sizeof q, "%s", path_of(other, 3));
    assert_int_equal(rename(q, path_of(p, 3)), 0);
    cut_in_half(path_of(p, 5));
    tn_err_clear(&err);
    assert_int_equal(emit_chakra_read(p, 9, &c, &err), TN_PARSE);
    if (strstr(err.msg, "ag: rank 3 belongs to another set (id ") == NULL ||
        strstr(err.msg, "than ranks 0-2, 4-8 (id ") == NULL)
      fail_msg("%s threads: %s", threads[t], err.msg);
    /* The same two faults the other way round: the mix still comes first, as it is
     * checked on every rank's header before any rank's nodes. */
    TU_OK(emit_chakra_write(a, p, &tu_err_));
    snprintf(q, sizeof q, "%s", path_of(other, 5));
    assert_int_equal(rename(q, path_of(p, 5)), 0);
    cut_in_half(path_of(p, 3));
    tn_err_clear(&err);
    assert_int_equal(emit_chakra_read(p, 9, &c, &err), TN_PARSE);
    if (strstr(err.msg, "ag: rank 5 belongs to another set") == NULL)
      fail_msg("%s threads: %s", threads[t], err.msg);
    /* And a whole set reads back equal. */
    TU_OK(emit_chakra_write(a, p, &tu_err_));
    TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
    assert_true(algo_equal(a, c));
    algo_free(c);
    algo_free(a);
    algo_free(b);
  }
  unsetenv("TENET_THREADS");
}

/* The bytes written do not depend on how many threads wrote them. */
static void emit_write_is_byte_identical_on_any_thread_count(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_bytes_threads");
  char p1[1100], p2[1100], q[1200];
  snprintf(p1, sizeof p1, "%s/one", dir);
  snprintf(p2, sizeof p2, "%s/many", dir);
  algo_t *a = ring_reduce(13, 13u << 20, true);
  setenv("TENET_THREADS", "1", 1);
  TU_OK(emit_chakra_write(a, p1, &tu_err_));
  setenv("TENET_THREADS", "5", 1);
  TU_OK(emit_chakra_write(a, p2, &tu_err_));
  unsetenv("TENET_THREADS");
  for (uint32_t r = 0; r < 13; r++) {
    snprintf(q, sizeof q, "%s", path_of(p1, r));
    assert_true(same_file(q, path_of(p2, r)));
  }
  algo_free(a);
}

/* ---- writer contract ------------------------------------------------------- */

static void emit_write_is_all_or_nothing(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_atomic");
  char prefix[1100], blocker[1200], keep[1200];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  /* Rank 2's final name is a non-empty directory: the output rule (tn_out_plan) refuses
   * it while the temporaries are written, so no rank is renamed into place. */
  snprintf(blocker, sizeof blocker, "%s", path_of(prefix, 2));
  assert_int_equal(mkdir(blocker, 0777), 0);
  snprintf(keep, sizeof keep, "%s/keep", blocker);
  spit(keep, (const uint8_t *)"x", 1);
  algo_t *a = ring_allgather(4, 64);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write(a, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "ag.2.et: is a directory"));
  char cmd[1300];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir); /* only ag.2.et/ */
  assert_int_equal(system(cmd), 0);
  algo_free(a);
}

/* The output rule for sets: a prefix naming a folder is refused before anything is
 * written (it used to write hidden ".0.et" files inside it), and a rank file that is a
 * link has the file it names replaced, the link kept. */
static void emit_write_refuses_a_folder_prefix_and_follows_linked_rank_files(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_out_rule");
  char prefix[1200], real[1200], cmd[1300];
  algo_t *a = ring_allgather(4, 64);
  const char *folders[] = {dir, "/"};
  for (size_t i = 0; i < 2; i++) {
    tn_err_t err = {0};
    assert_int_equal(emit_chakra_write(a, folders[i], &err), TN_INVAL);
    assert_non_null(strstr(err.msg, "is a directory"));
  }
  snprintf(prefix, sizeof prefix, "%s/sub/", dir);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write(a, prefix, &err), TN_INVAL);
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir); /* not even sub/ */
  assert_int_equal(system(cmd), 0);
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  snprintf(real, sizeof real, "%s/elsewhere.et", dir);
  assert_int_equal(symlink("elsewhere.et", path_of(prefix, 1)), 0);
  TU_OK(emit_chakra_write(a, prefix, &tu_err_));
  struct stat sb;
  assert_int_equal(lstat(path_of(prefix, 1), &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_int_equal(stat(real, &sb), 0);
  assert_true(S_ISREG(sb.st_mode) && sb.st_size > 0);
  algo_t *back = NULL;
  TU_OK(emit_chakra_read(prefix, 0, &back, &tu_err_));
  assert_int_equal(back->npus, 4);
  algo_free(back);
  algo_free(a);
}

/* A node the writer refuses in one rank, while other threads write the other ranks: the
 * error names that rank and node, and no file (final or temporary) is left. */
static void emit_write_refusing_a_node_leaves_no_file_on_any_thread_count(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_refuse");
  char prefix[1100], cmd[1300];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  static const char *const threads[] = {"1", "3"};
  for (size_t t = 0; t < 2; t++) {
    setenv("TENET_THREADS", threads[t], 1);
    algo_t *a = ring_allgather(8, 64);
    uint32_t c = 0;
    TU_OK(algo_add_send(a, 5, 6, 7, 0, NULL, 0, &c, 1, NULL, &tu_err_)); /* 0 bytes */
    tn_err_t err = {0};
    assert_int_equal(emit_chakra_write(a, prefix, &err), TN_INVAL);
    if (strstr(err.msg, "rank 5 node 14") == NULL) fail_msg("%s threads: %s", threads[t], err.msg);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
    assert_int_equal(system(cmd), 0);
    algo_free(a);
  }
  unsetenv("TENET_THREADS");
}

static void emit_write_replaces_a_larger_set_and_refuses_empty_ranks(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_stale");
  char prefix[1100];
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  algo_t *big = ring_allgather(8, 64), *small = ring_allgather(4, 64), *b = NULL;
  TU_OK(emit_chakra_write(big, prefix, &tu_err_));
  TU_OK(emit_chakra_write(small, prefix, &tu_err_));
  TU_OK(emit_chakra_read(prefix, 0, &b, &tu_err_));
  assert_true(algo_equal(small, b));
  algo_free(b);
  algo_t *e = empty_set(2);
  TU_OK(algo_add_comp(e, 0, 0, NULL, 0, NULL, 0, NULL, &tu_err_));
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write(e, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 1 has no nodes"));
  TU_OK(algo_fill_idle(e, &tu_err_));
  TU_OK(emit_chakra_write(e, prefix, &tu_err_));
  algo_free(e);
  algo_free(big);
  algo_free(small);
}

/* ---- the set's identity ---------------------------------------------------- */

/* The tenet_set_id of a file (its 64 bits), asserting it is there as an int64_val. */
static uint64_t file_set_id(const char *path) {
  size_t len, pos = 0;
  uint8_t *d = slurp(path, &len);
  size_t n = get_len(d, &pos);
  ChakraProtoMsg__GlobalMetadata *md = chakra_proto_msg__global_metadata__unpack(NULL, n, d + pos);
  assert_non_null(md);
  const ChakraProtoMsg__AttributeProto *h = find_attr(md->attr, md->n_attr, "tenet_set_id");
  assert_non_null(h);
  assert_int_equal(h->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL);
  uint64_t id;
  memcpy(&id, &h->int64_val, sizeof id);
  chakra_proto_msg__global_metadata__free_unpacked(md, NULL);
  free(d);
  return id;
}

/* Rewrites a file without its tenet_set_id, as tenet wrote files before the id. */
static void strip_set_id(const char *path) {
  size_t len, pos = 0;
  uint8_t *d = slurp(path, &len);
  size_t n = get_len(d, &pos);
  ChakraProtoMsg__GlobalMetadata *md = chakra_proto_msg__global_metadata__unpack(NULL, n, d + pos);
  assert_non_null(md);
  size_t k = 0;
  for (size_t i = 0; i < md->n_attr; i++)
    if (strcmp(md->attr[i]->name, "tenet_set_id") != 0) md->attr[k++] = md->attr[i];
  assert_int_equal(k + 1, md->n_attr);
  size_t was = md->n_attr;
  md->n_attr = k;
  uint8_t buf[4096];
  size_t m = chakra_proto_msg__global_metadata__get_packed_size(md), at = 0;
  assert_true(m + 2 < sizeof buf && m < 16384);
  if (m >= 128) buf[at++] = (uint8_t)(m | 0x80);
  buf[at++] = (uint8_t)(m >= 128 ? m >> 7 : m);
  chakra_proto_msg__global_metadata__pack(md, buf + at);
  m += at;
  md->n_attr = was;
  chakra_proto_msg__global_metadata__free_unpacked(md, NULL);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, m, f), m);
  assert_int_equal(fwrite(d + pos + n, 1, len - pos - n, f), len - pos - n);
  assert_int_equal(fclose(f), 0);
  free(d);
}

static void copy_file(const char *from, const char *to) {
  size_t len;
  uint8_t *d = slurp(from, &len);
  spit(to, d, len);
  free(d);
}

/* A node that lists a dependency twice (order-proofing's gates could) reads back listing it
 * once: the set read back has another id than its files', and emit_chakra_read_id gives
 * the read-back one for both. */
static void emit_read_id_survives_a_twice_listed_dependency(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_read_id");
  char p[1100];
  snprintf(p, sizeof p, "%s/ag", dir);
  const uint32_t n = 4;
  algo_t *a = NULL, *c = NULL;
  TU_OK(algo_create("ring", TN_ALLGATHER, n, 1, 64 * n, &a, &tu_err_));
  for (uint32_t r = 0; r < n; r++) {
    uint32_t prev[2] = {0, 0};
    for (uint32_t s = 0; s + 1 < n; s++) {
      uint32_t c_out = (r + n - s) % n, c_in = (r + 2 * n - 1 - s) % n, id;
      TU_OK(algo_add_send(a, r, (r + 1) % n, (int32_t)s, 64, prev, s ? 2 : 0, &c_out, 1, NULL,
                          &tu_err_));
      TU_OK(algo_add_recv(a, r, (r + n - 1) % n, (int32_t)s, 64, false, NULL, 0, &c_in, 1, &id,
                          &tu_err_));
      prev[0] = prev[1] = id;
    }
  }
  TU_OK(emit_chakra_write(a, p, &tu_err_));
  TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
  assert_int_equal(algo_node(a, 0, 2)->ndeps, 2);
  assert_int_equal(algo_node(c, 0, 2)->ndeps, 1);
  assert_true(file_set_id(path_of(p, 0)) == emit_chakra_set_id(a));
  assert_true(emit_chakra_set_id(c) != emit_chakra_set_id(a));
  assert_true(emit_chakra_read_id(a) == emit_chakra_set_id(c));
  assert_true(emit_chakra_read_id(c) == emit_chakra_set_id(c));
  /* Without a twice-listed dependency the two ids are one. */
  algo_t *b = ring_allgather(n, 64);
  assert_true(emit_chakra_read_id(b) == emit_chakra_set_id(b));
  algo_free(a);
  algo_free(b);
  algo_free(c);
}

/* Every file of a set carries the same id, a function of the content alone; files of two
 * sets mixed are refused naming the odd ranks; files without any id read as before. */
static void emit_set_id_marks_every_file_and_a_mix_is_refused(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_set_id");
  char p[1100], q[1100], want[400], from[1200];
  snprintf(p, sizeof p, "%s/ag", dir);
  snprintf(q, sizeof q, "%s/other", dir);
  algo_t *a = ring_allgather(8, 64), *b = ring_allgather(8, 128), *a2 = ring_allgather(8, 64);
  algo_t *c = NULL;
  uint64_t ia = emit_chakra_set_id(a), ib = emit_chakra_set_id(b);
  assert_true(ia != ib);
  assert_true(emit_chakra_set_id(a2) == ia); /* the content decides, not the object */
  TU_OK(emit_chakra_write(a, p, &tu_err_));
  TU_OK(emit_chakra_write(b, q, &tu_err_));
  for (uint32_t r = 0; r < 8; r++) {
    assert_true(file_set_id(path_of(p, r)) == ia);
    assert_true(file_set_id(path_of(q, r)) == ib);
  }
  /* The id survives a read: the set read back has the same one. */
  TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
  assert_true(emit_chakra_set_id(c) == ia);
  algo_free(c), c = NULL;
  /* Ranks 5-7 of the other set among ranks 0-4 of this one: refused, on any thread count,
   * whether counted or given. */
  for (uint32_t r = 5; r < 8; r++) {
    snprintf(from, sizeof from, "%s", path_of(q, r));
    copy_file(from, path_of(p, r));
  }
  snprintf(want, sizeof want,
           "ag: ranks 5-7 belong to another set (id %016" PRIx64 ") than ranks 0-4 (id %016" PRIx64
           ")",
           ib, ia);
  static const char *const threads[] = {"1", "3"};
  for (size_t t = 0; t < 2; t++) {
    setenv("TENET_THREADS", threads[t], 1);
    for (uint32_t npus = 0; npus <= 8; npus += 8) {
      tn_err_t err = {0};
      assert_int_equal(emit_chakra_read(p, npus, &c, &err), TN_PARSE);
      assert_null(c);
      if (strstr(err.msg, want) == NULL) fail_msg("want '%s', got '%s'", want, err.msg);
    }
  }
  unsetenv("TENET_THREADS");
  /* Files without the id (another producer's, tenet's before it) are read as before... */
  TU_OK(emit_chakra_write(a, p, &tu_err_));
  for (uint32_t r = 0; r < 8; r++)
    strip_set_id(path_of(p, r));
  TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
  assert_true(algo_equal(a, c));
  algo_free(c), c = NULL;
  /* ...but not beside files that have one. */
  snprintf(from, sizeof from, "%s", path_of(q, 2));
  copy_file(from, path_of(p, 2));
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read(p, 8, &c, &err), TN_PARSE);
  snprintf(want, sizeof want,
           "rank 2 belongs to another set (id %016" PRIx64 ") than ranks 0-1, 3-7 (no set id)", ib);
  if (strstr(err.msg, want) == NULL) fail_msg("want '%s', got '%s'", want, err.msg);
  algo_free(a);
  algo_free(a2);
  algo_free(b);
}

/* A rename that fails midway (rank 2's previous file cannot be moved aside: its backup
 * name is taken by a folder) puts ranks 0 and 1 back: the previous set is whole, and no
 * temporary or backup is left. */
static void emit_write_failing_midway_puts_the_previous_set_back(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_midway");
  char p[1100], block[1300], keep[1400], cmd[1400];
  snprintf(p, sizeof p, "%s/ag", dir);
  algo_t *a = ring_allgather(4, 64), *b = ring_allgather(4, 128), *c = NULL;
  TU_OK(emit_chakra_write(a, p, &tu_err_));
  snprintf(block, sizeof block, "%s.old.%ld", path_of(p, 2), (long)getpid());
  assert_int_equal(mkdir(block, 0777), 0);
  snprintf(keep, sizeof keep, "%s/keep", block);
  spit(keep, (const uint8_t *)"x", 1);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write(b, p, &err), TN_IO);
  if (strstr(err.msg, "ag.2.et: cannot move the previous file aside") == NULL ||
      strstr(err.msg, "the previous files are left as they were") == NULL)
    fail_msg("%s", err.msg);
  TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
  assert_true(algo_equal(a, c));
  algo_free(c);
  assert_int_equal(remove(keep), 0);
  assert_int_equal(rmdir(block), 0);
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 4", dir); /* ag.0.et .. ag.3.et */
  assert_int_equal(system(cmd), 0);
  algo_free(a);
  algo_free(b);
}

/* A check for emit_chakra_write_checked: counts its calls, records how many entries of
 * dir it saw while it ran (the files being written beside it, or none when it runs first)
 * and passes or fails as told. */
typedef struct check_probe {
  const char *dir;
  bool pass;
  unsigned calls;
  long seen; /* entries of dir during the last call */
} check_probe_t;

static tn_status_t probe_check(void *ctx, const algo_t *a, tn_err_t *err) {
  check_probe_t *c = ctx;
  char cmd[1300];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", c->dir);
  FILE *f = popen(cmd, "r");
  c->seen = -1;
  if (f != NULL) {
    if (fscanf(f, "%ld", &c->seen) != 1) c->seen = -1;
    pclose(f);
  }
  c->calls++;
  if (c->pass) return TN_OK;
  return tn_err_set(err, TN_INTERNAL, "probe refused the set of %u ranks", a->npus);
}

/* The checked write on any thread count: a passing check gives the same files as the plain
 * write; a failing one returns its own error, runs once, and leaves the previous set as it
 * was with no temporary beside it (its files are written beside the check, then removed). */
static void emit_checked_write_moves_files_only_when_the_check_passes(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_checked");
  char p[1100], q[1100], cmd[1300];
  snprintf(p, sizeof p, "%s/ag", dir);
  snprintf(q, sizeof q, "%s/plain/ag", dir);
  static const char *const threads[] = {"1", "2", "3"};
  for (size_t t = 0; t < 3; t++) {
    setenv("TENET_THREADS", threads[t], 1);
    algo_t *a = ring_allgather(6, 64), *b = ring_allgather(6, 128), *c = NULL;
    check_probe_t ok = {dir, true, 0, 0}, no = {dir, false, 0, 0};
    TU_OK(emit_chakra_write_checked(a, p, probe_check, &ok, &tu_err_));
    assert_int_equal(ok.calls, 1);
    TU_OK(emit_chakra_write(a, q, &tu_err_));
    for (uint32_t r = 0; r < 6; r++) {
      char pr[1200];
      snprintf(pr, sizeof pr, "%s", path_of(p, r));
      if (!same_file(pr, path_of(q, r))) fail_msg("%s threads: rank %u differs", threads[t], r);
    }
    tn_err_t err = {0};
    assert_int_equal(emit_chakra_write_checked(b, p, probe_check, &no, &err), TN_INTERNAL);
    assert_int_equal(no.calls, 1);
    if (strcmp(err.msg, "probe refused the set of 6 ranks") != 0)
      fail_msg("%s threads: %s", threads[t], err.msg);
    TU_OK(emit_chakra_read(p, 0, &c, &tu_err_));
    assert_true(algo_equal(a, c));
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 7", dir); /* ag.0..5.et, plain */
    assert_int_equal(system(cmd), 0);
    algo_free(a);
    algo_free(b);
    algo_free(c);
  }
  unsetenv("TENET_THREADS");
}

/* A rank file that is a device is written straight in and cannot be taken back: the check
 * then runs before anything is written (it sees only the link), and a failing one leaves
 * no file of the set. */
static void emit_checked_write_checks_first_when_a_rank_is_a_device(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_checked_dev");
  char p[1100], cmd[1300];
  snprintf(p, sizeof p, "%s/ag", dir);
  assert_int_equal(symlink("/dev/null", path_of(p, 0)), 0);
  algo_t *a = ring_allgather(4, 64);
  check_probe_t no = {dir, false, 0, 0}, ok = {dir, true, 0, 0};
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write_checked(a, p, probe_check, &no, &err), TN_INTERNAL);
  assert_int_equal(no.calls, 1);
  assert_int_equal(no.seen, 1); /* only ag.0.et, the link */
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
  assert_int_equal(system(cmd), 0);
  TU_OK(emit_chakra_write_checked(a, p, probe_check, &ok, &tu_err_));
  assert_int_equal(ok.seen, 1);
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 4", dir);
  assert_int_equal(system(cmd), 0);
  algo_free(a);
}

/* A pid that no process has any more: a child that has exited and been reaped. */
static long dead_pid(void) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return (long)pid;
}

/* A name in dir: head, a pid, tail. */
typedef struct stale_name {
  const char *head;
  bool live; /* pid 1 (alive) instead of a dead one */
  const char *tail;
} stale_name_t;

static const char *stale_path(const char *dir, const stale_name_t *n, long dead) {
  static char buf[1300];
  snprintf(buf, sizeof buf, "%s/%s%ld%s", dir, n->head, n->live ? 1L : dead, n->tail);
  return buf;
}

/* Temporaries and backups that killed writers left beside a prefix are removed by the next
 * write to it; those of live processes and other names stay. */
static void emit_write_removes_stale_temporaries_of_its_prefix(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("emit_stale_tmp");
  char p[1100];
  snprintf(p, sizeof p, "%s/ag", dir);
  long dead = dead_pid();
  const stale_name_t gone[] = {
      {"ag.0.et.tmp.", false, ""}, {"ag.7.et.tmp.", false, ""}, {"ag.3.et.old.", false, ""}};
  const stale_name_t stay[] = {{"ag.0.et.tmp.", true, ""},    {"agx.0.et.tmp.", false, ""},
                               {"ag.0.et.tmp.", false, ".x"}, {"ag.0.json.tmp.", false, ""},
                               {"ag.et.tmp.", false, ""},     {"other.0.et.tmp.", false, ""}};
  for (size_t i = 0; i < 3; i++)
    spit(stale_path(dir, &gone[i], dead), (const uint8_t *)"x", 1);
  for (size_t i = 0; i < 6; i++)
    spit(stale_path(dir, &stay[i], dead), (const uint8_t *)"x", 1);
  algo_t *a = ring_allgather(4, 64);
  TU_OK(emit_chakra_write(a, p, &tu_err_));
  struct stat sb;
  for (size_t i = 0; i < 3; i++)
    if (stat(stale_path(dir, &gone[i], dead), &sb) == 0)
      fail_msg("%s was not removed", stale_path(dir, &gone[i], dead));
  for (size_t i = 0; i < 6; i++)
    if (stat(stale_path(dir, &stay[i], dead), &sb) != 0)
      fail_msg("%s was removed", stale_path(dir, &stay[i], dead));
  algo_free(a);
}

/* ---- JSON and DOT --------------------------------------------------------- */

static char *dump_to_string(const algo_t *a, bool dot, uint32_t rank, tn_status_t *st) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  assert_non_null(f);
  tn_err_t err = {0};
  *st = dot ? emit_dot(a, rank, f, &err) : emit_json_dump(a, f, &err);
  fclose(f);
  return buf;
}

static void emit_json_dump_is_one_valid_object(void **state) {
  (void)state;
  algo_t *a = ring_reduce(3, 3000, true);
  tn_status_t st;
  char *s = dump_to_string(a, false, 0, &st);
  assert_int_equal(st, TN_OK);
  cJSON *j = cJSON_Parse(s);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "collective")->valuestring, "allreduce");
  assert_int_equal(cJSON_GetObjectItem(j, "npus")->valueint, 3);
  assert_int_equal(cJSON_GetObjectItem(j, "nodes")->valueint, (int)algo_node_count(a));
  cJSON *ranks = cJSON_GetObjectItem(j, "ranks");
  assert_int_equal(cJSON_GetArraySize(ranks), 3);
  cJSON *n2 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 1), "nodes"), 2);
  assert_string_equal(cJSON_GetObjectItem(n2, "type")->valuestring, "COMP");
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(n2, "deps"), 0)->valueint, 1);
  cJSON_Delete(j);
  free(s);
  algo_free(a);
}

static void emit_dot_draws_one_rank(void **state) {
  (void)state;
  algo_t *a = ring_reduce(3, 3000, false);
  tn_status_t st;
  char *s = dump_to_string(a, true, 1, &st);
  assert_int_equal(st, TN_OK);
  assert_non_null(strstr(s, "digraph \"rank1\""));
  assert_non_null(strstr(s, "n1 -> n2;"));
  assert_non_null(strstr(s, "RECV from r0"));
  free(s);
  s = dump_to_string(a, true, 3, &st);
  assert_int_equal(st, TN_INVAL);
  free(s);
  algo_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(emit_round_trip_ring_allgather),
      cmocka_unit_test(emit_checked_write_moves_files_only_when_the_check_passes),
      cmocka_unit_test(emit_checked_write_checks_first_when_a_rank_is_a_device),
      cmocka_unit_test(emit_round_trip_ring_reducescatter_with_reduce_recvs),
      cmocka_unit_test(emit_round_trip_ring_allreduce),
      cmocka_unit_test(emit_round_trip_multi_chunk_nodes_and_unknown_collective),
      cmocka_unit_test(emit_round_trip_survives_attribute_cache_resets),
      cmocka_unit_test(emit_node_records_are_what_protobuf_c_packs),
      cmocka_unit_test(emit_node_names_spell_numbers_in_decimal),
      cmocka_unit_test(emit_write_is_byte_identical_across_runs),
      cmocka_unit_test(emit_write_follows_the_chakra_wire_contract),
      cmocka_unit_test(emit_read_rejects_truncation_at_every_byte),
      cmocka_unit_test(emit_read_rejects_corrupt_length),
      cmocka_unit_test(emit_read_rejects_a_missing_rank_file),
      cmocka_unit_test(emit_read_rejects_an_empty_file),
      cmocka_unit_test(emit_read_accepts_foreign_files),
      cmocka_unit_test(emit_read_rejects_a_dangling_dependency),
      cmocka_unit_test(emit_read_rejects_a_missing_comm_size),
      cmocka_unit_test(emit_read_rejects_a_string_or_float_comm_attr),
      cmocka_unit_test(emit_read_rejects_bad_values),
      cmocka_unit_test(emit_read_accepts_gzip),
      cmocka_unit_test(emit_read_stops_a_gzip_bomb_at_its_budget),
      cmocka_unit_test(emit_read_reports_the_lowest_failing_rank_on_any_thread_count),
      cmocka_unit_test(emit_write_is_byte_identical_on_any_thread_count),
      cmocka_unit_test(emit_write_is_all_or_nothing),
      cmocka_unit_test(emit_write_refuses_a_folder_prefix_and_follows_linked_rank_files),
      cmocka_unit_test(emit_write_refusing_a_node_leaves_no_file_on_any_thread_count),
      cmocka_unit_test(emit_write_replaces_a_larger_set_and_refuses_empty_ranks),
      cmocka_unit_test(emit_set_id_marks_every_file_and_a_mix_is_refused),
      cmocka_unit_test(emit_read_id_survives_a_twice_listed_dependency),
      cmocka_unit_test(emit_write_failing_midway_puts_the_previous_set_back),
      cmocka_unit_test(emit_write_removes_stale_temporaries_of_its_prefix),
      cmocka_unit_test(emit_json_dump_is_one_valid_object),
      cmocka_unit_test(emit_dot_draws_one_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
