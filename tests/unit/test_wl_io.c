/* tests/unit/test_wl_io.c — Chakra workloads read and written by emit/ (emit.h, "Chakra
 * workloads"): round trips of every node type, determinism, gzip, the files other producers
 * write (Chakra's et_generator and PyTorch converter, ASTRA-sim's microbenchmarks), every
 * rejection naming its file and node, and the files read by protobuf's Python runtime. */
#include "testutil.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "emit/emit.h"
#include "et_def.pb-c.h"
#include "workload/workload.h"

static tn_err_t tu_err_;

/* ---- workloads built by hand ------------------------------------------------------- */

static void add(workload_t *w, uint32_t r, wl_node_t x, const char *name, const uint32_t *deps,
                uint32_t ndeps) {
  TU_OK(wl_add(w, r, &x, name, deps, ndeps, NULL, &tu_err_));
}

/* Three ranks holding every op: a COMP (on the CPU on rank 2), an ALL_REDUCE after it,
 * an ALL_GATHER of process group 5 on ranks 0 and 1, a SEND from 0 to 1 with its RECV
 * (a METADATA node on rank 2), a BROADCAST replayed for 3 µs, and on rank 0 a nameless
 * COMP with a 41-bit id. Passes wl_check. */
static workload_t *every_op(void) {
  workload_t *w = NULL;
  TU_OK(wl_create(3, &w, &tu_err_));
  for (uint32_t r = 0; r < 3; r++) {
    uint32_t d0[] = {0}, d1[] = {1}, d2[] = {1, 0};
    add(w, r, (wl_node_t){.id = 10, .op = WL_COMP, .cpu = r == 2, .duration_us = 100},
        "backward layer 0", NULL, 0);
    add(w, r, (wl_node_t){.id = 20, .op = WL_COLL, .comm_type = WL_CT_ALL_REDUCE, .bytes = 1 << 20},
        "grad all-reduce", d0, 1);
    uint32_t next = 2;
    if (r < 2) {
      add(w, r,
          (wl_node_t){
              .id = 30, .op = WL_COLL, .comm_type = WL_CT_ALL_GATHER, .bytes = 4096, .pg = 5},
          "tp all-gather", d1, 1);
      next = 3;
    }
    wl_node_t p2p = {.id = 40, .op = WL_NOP};
    if (r == 0) p2p = (wl_node_t){.id = 40, .op = WL_SEND, .peer = 1, .tag = 7, .bytes = 300};
    if (r == 1) p2p = (wl_node_t){.id = 40, .op = WL_RECV, .peer = 0, .tag = 7, .bytes = 300};
    add(w, r, p2p, r == 2 ? "marker" : "activations", d2, 2);
    uint32_t d3[] = {next};
    add(w, r, (wl_node_t){.id = 50, .op = WL_COLL, .comm_type = WL_CT_BROADCAST, .duration_us = 3},
        "broadcast", d3, 1);
  }
  add(w, 0, (wl_node_t){.id = 1ull << 40, .op = WL_COMP, .duration_us = 7}, NULL, NULL, 0);
  return w;
}

/* Asserts a and b hold the same ranks, nodes, values, dependencies and names. */
static void assert_same_workload(const workload_t *a, const workload_t *b) {
  assert_int_equal(a->npus, b->npus);
  char na[WL_MAX_NAME + 1], nb[WL_MAX_NAME + 1];
  for (uint32_t r = 0; r < a->npus; r++) {
    assert_int_equal(wl_count(a, r), wl_count(b, r));
    for (uint32_t i = 0; i < wl_count(a, r); i++) {
      const wl_node_t *x = wl_node(a, r, i), *y = wl_node(b, r, i);
      assert_int_equal(x->id, y->id);
      assert_int_equal(x->op, y->op);
      assert_int_equal(x->cpu, y->cpu);
      assert_int_equal(x->duration_us, y->duration_us);
      assert_int_equal(x->comm_type, y->comm_type);
      assert_int_equal(x->bytes, y->bytes);
      assert_int_equal(x->peer, y->peer);
      assert_int_equal(x->tag, y->tag);
      assert_int_equal(x->pg, y->pg);
      assert_string_equal(wl_name(a, r, x, na), wl_name(b, r, y, nb));
      assert_int_equal(x->ndeps, y->ndeps);
      if (x->ndeps)
        assert_memory_equal(wl_deps(a, r, x), wl_deps(b, r, y), x->ndeps * sizeof(uint32_t));
    }
  }
}

static const char *prefix_in(const char *test, const char *name) {
  static char p[1200];
  const char *dir = tu_tmpdir(test);
  assert_non_null(dir);
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static const char *rank_file(const char *prefix, uint32_t r) {
  static char p[1300];
  snprintf(p, sizeof p, "%s.%u.et", prefix, r);
  return p;
}

/* ---- round trips ------------------------------------------------------------------- */

static void wl_io_round_trip_keeps_every_node_type_dep_name_group_tag_and_cpu_flag(void **state) {
  (void)state;
  workload_t *w = every_op(), *back = NULL;
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  wl_colls_free(&c);
  const char *prefix = prefix_in("wl_round_trip", "step");
  TU_OK(emit_chakra_write_wl(w, prefix, &tu_err_));
  TU_OK(emit_chakra_read_workload(prefix, 0, &back, &tu_err_));
  assert_same_workload(w, back);
  wl_free(back);
  TU_OK(emit_chakra_read_workload(prefix, 3, &back, &tu_err_));
  assert_same_workload(w, back);
  TU_OK(wl_check(back, &c, &tu_err_));
  assert_int_equal(c.n, 3); /* ids 20, 30, 50 */
  assert_int_equal(c.c[1].pg, 5);
  assert_int_equal(c.c[1].nranks, 2);
  wl_colls_free(&c);
  wl_free(back);
  wl_free(w);
}

static bool same_bytes_on_disk(const char *p, const char *q) {
  char *a = NULL, *b = NULL;
  size_t la = 0, lb = 0;
  tn_err_t err = {0};
  bool same = tn_read_file(p, 1u << 24, &a, &la, &err) == TN_OK &&
              tn_read_file(q, 1u << 24, &b, &lb, &err) == TN_OK && la == lb &&
              memcmp(a, b, la) == 0;
  free(a);
  free(b);
  return same;
}

static void wl_io_write_is_byte_identical_across_runs(void **state) {
  (void)state;
  workload_t *w = every_op();
  char p1[1300], p2[1300];
  snprintf(p1, sizeof p1, "%s", prefix_in("wl_identical", "a"));
  snprintf(p2, sizeof p2, "%s2", p1);
  TU_OK(emit_chakra_write_wl(w, p1, &tu_err_));
  TU_OK(emit_chakra_write_wl(w, p2, &tu_err_));
  for (uint32_t r = 0; r < 3; r++) {
    char f1[1400];
    snprintf(f1, sizeof f1, "%s", rank_file(p1, r));
    assert_true(same_bytes_on_disk(f1, rank_file(p2, r)));
  }
  wl_free(w);
}

/* Rewrites path gzip'd (one member). */
static void to_gzip(const char *path) {
  char *d = NULL;
  size_t n = 0;
  TU_OK(tn_read_file(path, 1u << 24, &d, &n, &tu_err_));
  gzFile g = gzopen(path, "wb9");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, d, (unsigned)n), (int)n);
  assert_int_equal(gzclose(g), Z_OK);
  free(d);
}

static void wl_io_reads_gzip_files(void **state) {
  (void)state;
  workload_t *w = every_op(), *back = NULL;
  const char *prefix = prefix_in("wl_gzip", "z");
  TU_OK(emit_chakra_write_wl(w, prefix, &tu_err_));
  to_gzip(rank_file(prefix, 1));
  TU_OK(emit_chakra_read_workload(prefix, 0, &back, &tu_err_));
  assert_same_workload(w, back);
  wl_free(back);
  wl_free(w);
}

/* ---- files other producers write ----------------------------------------------------
 * Records packed with the generated protobuf-c code, as Chakra's Python tools would. */

typedef struct fattr {
  const char *name;
  char member; /* 'i' int32_val, 'l' int64_val, 'u' uint64_val, 'b' bool_val,
                  's' string_val, 'd' double_val, 'z' sint64_val, 'x' fixed64_val */
  int64_t v;
  const char *s;
} fattr_t;

typedef struct fnode {
  uint64_t id;
  int type; /* ChakraProtoMsg__NodeType, or a code it lacks */
  uint64_t duration_us;
  uint64_t data[4], ctrl[4];
  size_t ndata, nctrl;
  fattr_t at[8];
  size_t nat;
} fnode_t;

static void put_message(FILE *f, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t head[10], *body = malloc(n + 1);
  assert_non_null(body);
  size_t h = 0;
  for (size_t v = n; h == 0 || v; v >>= 7)
    head[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
  assert_int_equal(protobuf_c_message_pack(m, body), n);
  assert_int_equal(fwrite(head, 1, h, f), h);
  if (n) assert_int_equal(fwrite(body, 1, n, f), n);
  free(body);
}

/* The AttributeProto member (its field number, also its value_case) a spec's letter names. */
static unsigned member_field(char m) {
  static const char letters[] = "ilubsdzx";
  static const unsigned fields[] = {7, 9, 13, 27, 29, 3, 17, 21};
  const char *at = strchr(letters, m);
  assert_non_null(at);
  return fields[at - letters];
}

/* Fills a from s through protobuf-c's descriptor: the member's offset and type, and the
 * oneof's case, so that any member can be written. */
static void fill_attr(ChakraProtoMsg__AttributeProto *a, const fattr_t *s) {
  chakra_proto_msg__attribute_proto__init(a);
  a->name = (char *)(uintptr_t)s->name; /* protobuf-c never writes through it */
  const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
      &chakra_proto_msg__attribute_proto__descriptor, member_field(s->member));
  assert_non_null(fd);
  uint8_t *slot = (uint8_t *)a + fd->offset;
  int32_t i32 = (int32_t)s->v;
  protobuf_c_boolean b = s->v != 0;
  double d = (double)s->v;
  const char *str = s->s;
  switch (fd->type) {
  case PROTOBUF_C_TYPE_INT32: memcpy(slot, &i32, sizeof i32); break;
  case PROTOBUF_C_TYPE_BOOL: memcpy(slot, &b, sizeof b); break;
  case PROTOBUF_C_TYPE_DOUBLE: memcpy(slot, &d, sizeof d); break;
  case PROTOBUF_C_TYPE_STRING: memcpy(slot, &str, sizeof str); break;
  default: memcpy(slot, &s->v, sizeof s->v); /* the 64-bit integers */
  }
  a->value_case = (ChakraProtoMsg__AttributeProto__ValueCase)fd->id;
}

/* Writes path: a GlobalMetadata with version and, as the PyTorch converter writes, string
 * and uint64 attributes; then nodes[0..n) in the order given. */
static void write_foreign(const char *path, const fnode_t *nodes, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  ChakraProtoMsg__GlobalMetadata md;
  chakra_proto_msg__global_metadata__init(&md);
  char version[] = "0.0.4";
  ChakraProtoMsg__AttributeProto mat[2], *map[2] = {&mat[0], &mat[1]};
  fill_attr(&mat[0], &(fattr_t){"schema", 's', 0, "1.1.0-chakra.0.0.4"});
  fill_attr(&mat[1], &(fattr_t){"pid", 'u', 4242, NULL});
  md.version = version;
  md.n_attr = 2;
  md.attr = map;
  put_message(f, &md.base);
  for (size_t i = 0; i < n; i++) {
    const fnode_t *s = &nodes[i];
    ChakraProtoMsg__Node x;
    chakra_proto_msg__node__init(&x);
    ChakraProtoMsg__AttributeProto at[8], *ap[8];
    char name[32];
    snprintf(name, sizeof name, "op%" PRIu64, s->id);
    x.id = s->id;
    x.name = name;
    x.type = (ChakraProtoMsg__NodeType)s->type;
    x.duration_micros = s->duration_us;
    uint64_t data[4], ctrl[4];
    memcpy(data, s->data, sizeof data);
    memcpy(ctrl, s->ctrl, sizeof ctrl);
    x.n_data_deps = s->ndata, x.data_deps = data;
    x.n_ctrl_deps = s->nctrl, x.ctrl_deps = ctrl;
    for (size_t k = 0; k < s->nat; k++)
      fill_attr(&at[k], &s->at[k]), ap[k] = &at[k];
    x.n_attr = s->nat;
    x.attr = ap;
    put_message(f, &x.base);
  }
  assert_int_equal(fclose(f), 0);
}

enum {
  T_META = CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE,
  T_LOAD = CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE,
  T_COMP = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE,
  T_SEND = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE,
  T_RECV = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE,
  T_COLL = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE,
};

/* A PyTorch-converter-like rank: ids out of order, control dependencies on the parent,
 * comm_size as uint64_val, pg_name as a string, is_cpu_op as bool or int32, attributes
 * tenet does not know; a METADATA node; an et_generator-like p2p pair. */
static void pytorch_like(fnode_t n[6], uint32_t rank) {
  n[0] = (fnode_t){
      .id = 7,
      .type = T_COMP,
      .duration_us = 250,
      .ctrl = {3},
      .nctrl = 1,
      .at = {{"is_cpu_op", 'b', 1, NULL}, {"op_schema", 's', 0, "aten::mm"}, {"tid", 'l', 1, NULL}},
      .nat = 3};
  n[1] = (fnode_t){.id = 3, .type = T_META, .at = {{"rf_id", 'l', 9, NULL}}, .nat = 1};
  n[2] = (fnode_t){.id = 12,
                   .type = T_COLL,
                   .data = {7},
                   .ndata = 1,
                   .ctrl = {7, 3},
                   .nctrl = 2,
                   .at = {{"comm_type", 'l', WL_CT_ALL_REDUCE, NULL},
                          {"comm_size", 'u', 1 << 20, NULL},
                          {"pg_name", 's', 0, "0"},
                          {"is_cpu_op", 'i', 0, NULL}},
                   .nat = 4};
  n[3] = (fnode_t){.id = 13,
                   .type = T_COLL,
                   .data = {12},
                   .ndata = 1,
                   .at = {{"comm_type", 'l', WL_CT_ALL_GATHER, NULL},
                          {"comm_size", 'l', 8192, NULL},
                          {"pg_name", 's', 0, "2"},
                          {"involved_dim", 'b', 1, NULL}},
                   .nat = 4};
  bool send = rank == 0;
  n[4] = (fnode_t){.id = 20,
                   .type = send ? T_SEND : T_RECV,
                   .data = {13},
                   .ndata = 1,
                   .at = {{"comm_src", 'i', 0, NULL},
                          {"comm_dst", 'i', 1, NULL},
                          {"comm_size", 'l', 512, NULL},
                          {"comm_tag", 'i', 4, NULL},
                          {"comm_type", 'l', send ? T_SEND : T_RECV, NULL}},
                   .nat = 5};
  n[5] = (fnode_t){.id = 21,
                   .type = T_COLL,
                   .data = {20},
                   .ndata = 1,
                   .at = {{"comm_type", 'l', WL_CT_ALL_TO_ALL, NULL},
                          {"comm_size", 'l', 65536, NULL},
                          {"pg_name", 's', 0, ""}},
                   .nat = 3};
}

static void wl_io_reads_foreign_producers_files(void **state) {
  (void)state;
  const char *prefix = prefix_in("wl_foreign", "pt");
  fnode_t n[6];
  for (uint32_t r = 0; r < 2; r++) {
    pytorch_like(n, r);
    write_foreign(rank_file(prefix, r), n, 6);
  }
  to_gzip(rank_file(prefix, 1));
  workload_t *w = NULL;
  TU_OK(emit_chakra_read_workload(prefix, 0, &w, &tu_err_));
  assert_int_equal(w->npus, 2);
  char nm[WL_MAX_NAME + 1];
  for (uint32_t r = 0; r < 2; r++) {
    assert_int_equal(wl_count(w, r), 6);
    const wl_node_t *meta = wl_node(w, r, 0), *comp = wl_node(w, r, 1), *ar = wl_node(w, r, 2),
                    *ag = wl_node(w, r, 3), *p2p = wl_node(w, r, 4), *a2a = wl_node(w, r, 5);
    assert_int_equal(meta->op, WL_NOP);
    assert_int_equal(comp->op, WL_COMP);
    assert_true(comp->cpu);
    assert_int_equal(comp->duration_us, 250);
    assert_int_equal(comp->ndeps, 1);
    assert_int_equal(wl_deps(w, r, comp)[0], 0);
    assert_string_equal(wl_name(w, r, comp, nm), "op7");
    assert_int_equal(ar->comm_type, WL_CT_ALL_REDUCE);
    assert_int_equal(ar->bytes, 1 << 20);
    assert_int_equal(ar->pg, 0);
    assert_false(ar->cpu);
    assert_int_equal(ar->ndeps, 2); /* 7 in data and ctrl deps, 3 in ctrl deps: merged */
    assert_int_equal(ag->pg, 2);
    assert_int_equal(ag->bytes, 8192);
    assert_int_equal(p2p->op, r == 0 ? WL_SEND : WL_RECV);
    assert_int_equal(p2p->peer, 1 - r);
    assert_int_equal(p2p->tag, 4);
    assert_int_equal(p2p->bytes, 512);
    assert_int_equal(a2a->pg, 0);
  }
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 3);
  wl_colls_free(&c);
  wl_free(w);
}

/* ASTRA-sim's microbenchmarks (one COMM_COLL_NODE per rank, as et_generator writes them):
 * read back, and the p2p attributes may come in any integer member. */
static void wl_io_reads_a_microbenchmark_and_any_integer_member(void **state) {
  (void)state;
  const char *prefix = prefix_in("wl_micro", "all_reduce");
  fnode_t coll = {.id = 0,
                  .type = T_COLL,
                  .at = {{"is_cpu_op", 'b', 0, NULL},
                         {"comm_type", 'l', WL_CT_ALL_REDUCE, NULL},
                         {"comm_size", 'l', 1048576, NULL}},
                  .nat = 3};
  for (uint32_t r = 0; r < 4; r++)
    write_foreign(rank_file(prefix, r), &coll, 1);
  workload_t *w = NULL;
  TU_OK(emit_chakra_read_workload(prefix, 4, &w, &tu_err_));
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 1);
  assert_int_equal(c.c[0].nranks, 4);
  assert_true(c.c[0].synthesizable);
  assert_int_equal(c.c[0].coll, TN_ALLREDUCE);
  wl_colls_free(&c);
  wl_free(w);
  fnode_t send = {
      .id = 5,
      .type = T_SEND,
      .at = {{"comm_dst", 'u', 1, NULL}, {"comm_size", 'x', 64, NULL}, {"comm_tag", 'z', 3, NULL}},
      .nat = 3};
  write_foreign(rank_file(prefix, 0), &send, 1);
  TU_OK(emit_chakra_read_workload(prefix, 4, &w, &tu_err_));
  assert_int_equal(wl_node(w, 0, 0)->op, WL_SEND);
  assert_int_equal(wl_node(w, 0, 0)->peer, 1);
  assert_int_equal(wl_node(w, 0, 0)->bytes, 64);
  assert_int_equal(wl_node(w, 0, 0)->tag, 3);
  wl_free(w);
}

/* ---- rejections: each names the file and the node ---------------------------------- */

/* Writes rank 0 as nodes[0..n) and rank 1 as a single COMP, reads, and expects TN_PARSE
 * with needle in the message. */
static void expect_foreign_error(const char *test, const fnode_t *nodes, size_t n,
                                 const char *needle) {
  const char *prefix = prefix_in(test, "bad");
  write_foreign(rank_file(prefix, 0), nodes, n);
  fnode_t idle = {.id = 1, .type = T_COMP};
  write_foreign(rank_file(prefix, 1), &idle, 1);
  workload_t *w = NULL;
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read_workload(prefix, 0, &w, &err), TN_PARSE);
  assert_null(w);
  if (strstr(err.msg, needle) == NULL) fail_msg("expected \"%s\" in: %s", needle, err.msg);
  assert_non_null(strstr(err.msg, "bad.0.et"));
}

static void wl_io_rejects_a_collective_without_comm_type(void **state) {
  (void)state;
  fnode_t n = {.id = 3, .type = T_COLL, .at = {{"comm_size", 'l', 64, NULL}}, .nat = 1};
  expect_foreign_error("wl_no_type", &n, 1,
                       "bad.0.et: node 3: COMM_COLL_NODE lacks the required attribute comm_type");
  fnode_t m = {.id = 4, .type = T_COLL, .at = {{"comm_type", 'l', 0, NULL}}, .nat = 1};
  expect_foreign_error("wl_no_size", &m, 1,
                       "bad.0.et: node 4: COMM_COLL_NODE lacks the required attribute comm_size");
  fnode_t s = {.id = 5, .type = T_SEND, .at = {{"comm_size", 'l', 64, NULL}}, .nat = 1};
  expect_foreign_error("wl_no_dst", &s, 1,
                       "bad.0.et: node 5: COMM_SEND_NODE lacks the required attribute comm_dst");
  fnode_t v = {.id = 6, .type = T_RECV, .at = {{"comm_src", 'i', 1, NULL}}, .nat = 1};
  expect_foreign_error("wl_no_rsize", &v, 1,
                       "bad.0.et: node 6: COMM_RECV_NODE lacks the required attribute comm_size");
}

static void wl_io_accepts_a_broadcast_without_comm_size(void **state) {
  (void)state; /* BROADCAST needs no comm_size: ASTRA-sim replays its duration */
  const char *prefix = prefix_in("wl_bcast", "b");
  fnode_t n = {.id = 3,
               .type = T_COLL,
               .duration_us = 11,
               .at = {{"comm_type", 'l', WL_CT_BROADCAST, NULL}},
               .nat = 1};
  write_foreign(rank_file(prefix, 0), &n, 1);
  workload_t *w = NULL;
  TU_OK(emit_chakra_read_workload(prefix, 0, &w, &tu_err_));
  assert_int_equal(wl_node(w, 0, 0)->bytes, 0);
  assert_int_equal(wl_node(w, 0, 0)->duration_us, 11);
  wl_free(w);
}

static void wl_io_rejects_a_pg_name_that_is_not_an_integer(void **state) {
  (void)state;
  fnode_t n = {.id = 8,
               .type = T_COLL,
               .at = {{"comm_type", 'l', 0, NULL},
                      {"comm_size", 'l', 64, NULL},
                      {"pg_name", 's', 0, "ptd:1"}},
               .nat = 3};
  expect_foreign_error("wl_pg_string", &n, 1, "bad.0.et: node 8: pg_name \"ptd:1\" is not");
  n.at[2] = (fattr_t){"pg_name", 's', 0, "-3"};
  expect_foreign_error("wl_pg_negative", &n, 1, "bad.0.et: node 8: pg_name \"-3\" is not");
  n.at[2] = (fattr_t){"pg_name", 'd', 2, NULL};
  expect_foreign_error("wl_pg_double", &n, 1,
                       "bad.0.et: node 8: pg_name must hold an integer (int32_val or int64_val), "
                       "not double_val");
}

static void wl_io_rejects_bad_attribute_values(void **state) {
  (void)state;
  fnode_t n = {.id = 9,
               .type = T_SEND,
               .at = {{"comm_dst", 'i', 1, NULL}, {"comm_size", 'l', -5, NULL}},
               .nat = 2};
  expect_foreign_error("wl_neg_size", &n, 1, "bad.0.et: node 9: comm_size = -5 is outside");
  n.at[1] = (fattr_t){"comm_size", 'l', 5, NULL};
  n.at[2] = (fattr_t){"comm_src", 'i', 1, NULL};
  n.nat = 3;
  expect_foreign_error("wl_src", &n, 1,
                       "bad.0.et: node 9: comm_src = 1 on a COMM_SEND_NODE of rank 0");
  n.at[2] = (fattr_t){"comm_dst", 'i', 1, NULL};
  expect_foreign_error("wl_twice", &n, 1, "bad.0.et: node 9: attribute comm_dst appears twice");
  n.at[2] = (fattr_t){"comm_tag", 's', 0, "x"};
  expect_foreign_error("wl_string_tag", &n, 1,
                       "bad.0.et: node 9: comm_tag must hold an integer (int32_val or int64_val), "
                       "not string_val");
  fnode_t c = {.id = 2, .type = T_COMP, .at = {{"is_cpu_op", 'i', 2, NULL}}, .nat = 1};
  expect_foreign_error("wl_cpu", &c, 1, "bad.0.et: node 2: is_cpu_op = 2 is outside 0..1");
}

static void wl_io_rejects_memory_and_unknown_node_types(void **state) {
  (void)state;
  fnode_t n[2] = {{.id = 1, .type = T_COMP}, {.id = 2, .type = T_LOAD, .data = {1}, .ndata = 1}};
  expect_foreign_error("wl_mem_load", n, 2,
                       "bad.0.et: node 2: MEM_LOAD_NODE, which tenet does not simulate");
  n[1].type = CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE;
  expect_foreign_error("wl_mem_store", n, 2,
                       "bad.0.et: node 2: MEM_STORE_NODE, which tenet does not simulate");
  n[1].type = 42;
  expect_foreign_error("wl_type_42", n, 2,
                       "bad.0.et: node 2: node type 42, which Chakra does not define");
}

static void wl_io_rejects_dangling_and_self_dependencies(void **state) {
  (void)state;
  fnode_t n[2] = {{.id = 1, .type = T_COMP}, {.id = 2, .type = T_COMP, .data = {99}, .ndata = 1}};
  expect_foreign_error("wl_dangling", n, 2,
                       "bad.0.et: node 2: depends on node 99, which is not in the file");
  n[1] = (fnode_t){.id = 2, .type = T_COMP, .ctrl = {1, 98}, .nctrl = 2};
  expect_foreign_error("wl_dangling_ctrl", n, 2,
                       "bad.0.et: node 2: depends on node 98, which is not in the file");
  n[1] = (fnode_t){.id = 2, .type = T_COMP, .data = {2}, .ndata = 1};
  expect_foreign_error("wl_self", n, 2, "bad.0.et: node 2: depends on itself");
}

static void wl_io_rejects_a_duplicate_id(void **state) {
  (void)state;
  fnode_t n[3] = {{.id = 5, .type = T_COMP}, {.id = 1, .type = T_COMP}, {.id = 5, .type = T_META}};
  expect_foreign_error("wl_dup", n, 3, "bad.0.et: node id 5 appears twice");
}

static void wl_io_rejects_truncation_at_every_byte(void **state) {
  (void)state;
  workload_t *w = every_op(), *part = NULL;
  const char *prefix = prefix_in("wl_truncated", "t");
  TU_OK(emit_chakra_write_wl(w, prefix, &tu_err_));
  char *d = NULL;
  size_t n = 0;
  TU_OK(tn_read_file(rank_file(prefix, 0), 1u << 24, &d, &n, &tu_err_));
  for (size_t cut = 0; cut < n; cut++) {
    TU_OK(wl_create(3, &part, &tu_err_));
    tn_err_t err = {0};
    tn_status_t st = emit_chakra_decode_workload((const uint8_t *)d, cut, "t.0.et", part, 0, &err);
    if (st != TN_PARSE) fail_msg("cut at byte %zu of %zu: %s", cut, n, tn_status_str(st));
    assert_non_null(strstr(err.msg, "t.0.et"));
    wl_free(part);
  }
  /* The whole file decodes; cut to a record boundary, the header's tenet_nodes tells. */
  FILE *f = fopen(rank_file(prefix, 0), "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(d, 1, n - 1, f), n - 1);
  assert_int_equal(fclose(f), 0);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read_workload(prefix, 0, &part, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "t.0.et: byte"));
  free(d);
  wl_free(w);
}

static void wl_io_rejects_missing_ranks(void **state) {
  (void)state;
  workload_t *w = every_op(), *back = NULL;
  const char *prefix = prefix_in("wl_missing", "m");
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read_workload(prefix, 0, &back, &err), TN_IO);
  assert_non_null(strstr(err.msg, "m.0.et: no Chakra ET set at this prefix"));
  TU_OK(emit_chakra_write_wl(w, prefix, &tu_err_));
  assert_int_equal(unlink(rank_file(prefix, 1)), 0);
  /* Counted: ranks 0.. until the first missing one, and the files say there are 3. */
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_read_workload(prefix, 0, &back, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "an incomplete set: ranks 0-0 of 3"));
  assert_non_null(strstr(err.msg, "m.1.et is missing"));
  /* Given: the missing rank is named. */
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_read_workload(prefix, 3, &back, &err), TN_IO);
  assert_non_null(strstr(err.msg, "m.1.et"));
  /* A rank past the count given. */
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_read_workload(prefix, 2, &back, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "m.2.et: exists, but the set should have 2 ranks"));
  assert_null(back);
  wl_free(w);
}

static void wl_io_rejects_files_of_two_workloads_mixed(void **state) {
  (void)state;
  workload_t *w = every_op(), *other = every_op(), *back = NULL;
  add(other, 2, (wl_node_t){.id = 60, .op = WL_COMP}, "extra", NULL, 0);
  char a[1300], b[1300];
  snprintf(a, sizeof a, "%s", prefix_in("wl_mixed", "a"));
  snprintf(b, sizeof b, "%sb", a);
  TU_OK(emit_chakra_write_wl(w, a, &tu_err_));
  TU_OK(emit_chakra_write_wl(other, b, &tu_err_));
  char from[1400];
  snprintf(from, sizeof from, "%s", rank_file(b, 2));
  assert_int_equal(rename(from, rank_file(a, 2)), 0);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_read_workload(a, 0, &back, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "rank 2 belongs to another set"));
  wl_free(w);
  wl_free(other);
}

static void wl_io_decode_refuses_a_rank_already_read(void **state) {
  (void)state;
  workload_t *w = every_op();
  tn_err_t err = {0};
  const uint8_t junk[] = {0};
  assert_int_equal(emit_chakra_decode_workload(junk, 1, "x.0.et", w, 0, &err), TN_INVAL);
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_decode_workload(junk, 1, "x.9.et", w, 9, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "x.9.et"));
  wl_free(w);
}

/* Two ranks, each a COMP of id 1. */
static workload_t *make_two_comps(void) {
  workload_t *w = NULL;
  TU_OK(wl_create(2, &w, &tu_err_));
  for (uint32_t r = 0; r < 2; r++)
    add(w, r, (wl_node_t){.id = 1, .op = WL_COMP}, "c", NULL, 0);
  return w;
}

static void wl_io_write_refuses_what_the_reader_would_reject(void **state) {
  (void)state;
  workload_t *w = NULL;
  const char *prefix = prefix_in("wl_write_refuses", "r");
  TU_OK(wl_create(2, &w, &tu_err_));
  add(w, 0, (wl_node_t){.id = 1, .op = WL_COMP}, "a", NULL, 0);
  tn_err_t err = {0};
  assert_int_equal(emit_chakra_write_wl(w, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 1 has no nodes"));
  uint32_t fwd[] = {1};
  add(w, 1, (wl_node_t){.id = 1, .op = WL_COMP}, "b", fwd, 1); /* a dependency on nothing */
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_write_wl(w, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 1 node 1: bad dependency 1"));
  assert_int_equal(access(rank_file(prefix, 0), F_OK), -1); /* nothing written */
  wl_free(w);
  w = make_two_comps();
  TU_OK(wl_add(w, 1, &(wl_node_t){.id = 2, .op = WL_COLL, .bytes = 8, .pg = -1}, "g", NULL, 0, NULL,
               &tu_err_));
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_write_wl(w, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 1 node 2: a negative process group"));
  wl_free(w);
  w = make_two_comps();
  TU_OK(wl_add(w, 0, &(wl_node_t){.id = 2, .op = WL_SEND, .bytes = 1ull << 63, .peer = 1}, "s",
               NULL, 0, NULL, &tu_err_));
  tn_err_clear(&err);
  assert_int_equal(emit_chakra_write_wl(w, prefix, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 0 node 2: comm_size above INT64_MAX"));
  wl_free(w);
}

/* protobuf's own Python runtime decodes what tenet writes (where /usr/bin/python3 has
 * google.protobuf and protoc is installed; the test says it skips otherwise). */
static void wl_io_files_decode_with_python_protobuf(void **state) {
  (void)state;
  if (system("/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null && command -v protoc "
             ">/dev/null") != 0) {
    print_message("skipped: needs /usr/bin/python3 with google.protobuf and protoc\n");
    return;
  }
  workload_t *w = every_op();
  const char *prefix = prefix_in("wl_python", "py");
  char pre[1300], cmd[4096];
  snprintf(pre, sizeof pre, "%s", prefix);
  TU_OK(emit_chakra_write_wl(w, pre, &tu_err_));
  char *dir = strdup(pre);
  assert_non_null(dir);
  *strrchr(dir, '/') = '\0';
  snprintf(
      cmd, sizeof cmd,
      "protoc --python_out='%s' --proto_path='%s/emit/chakra' '%s/emit/chakra/et_def.proto' "
      "&& cd '%s' && /usr/bin/python3 -c \"\n"
      "import sys; sys.dont_write_bytecode = True; import et_def_pb2 as pb\n"
      "from google.protobuf.internal.decoder import _DecodeVarint32 as dv\n"
      "out = []\n"
      "for r in range(3):\n"
      "    b = open('py.%%d.et' %% r, 'rb').read(); pos = 0; recs = []\n"
      "    while pos < len(b):\n"
      "        n, pos = dv(b, pos); recs.append(b[pos:pos + n]); pos += n\n"
      "    md = pb.GlobalMetadata(); md.ParseFromString(recs[0]); assert md.version\n"
      "    for raw in recs[1:]:\n"
      "        x = pb.Node(); x.ParseFromString(raw)\n"
      "        a = {t.name: getattr(t, t.WhichOneof('value')) for t in x.attr}\n"
      "        out.append('%%d:%%d:%%d:%%s:%%s:%%s' %% (r, x.id, x.type, a.get('comm_type', ''), "
      "a.get('pg_name', ''), ','.join(map(str, x.data_deps))))\n"
      "open('py.txt', 'w').write(' '.join(out))\n\"",
      dir, TENET_SOURCE_DIR, TENET_SOURCE_DIR, dir);
  assert_int_equal(system(cmd), 0);
  char path[1400], *got = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/py.txt", dir);
  TU_OK(tn_read_file(path, 1u << 20, &got, &len, &tu_err_));
  /* Rank 0: COMP 10, ALL_REDUCE 20 after 10, ALL_GATHER 30 of group "5", SEND 40 (comm_type
   * 5), BROADCAST 50 after 40, COMP 2^40. */
  assert_non_null(strstr(got, "0:10:4::: 0:20:7:0::10 0:30:7:2:5:20 0:40:5:5::10,20 "
                              "0:50:7:5::40 0:1099511627776:4:::"));
  assert_non_null(strstr(got, "2:40:1:::10,20"));
  free(got);
  free(dir);
  wl_free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wl_io_round_trip_keeps_every_node_type_dep_name_group_tag_and_cpu_flag),
      cmocka_unit_test(wl_io_write_is_byte_identical_across_runs),
      cmocka_unit_test(wl_io_reads_gzip_files),
      cmocka_unit_test(wl_io_reads_foreign_producers_files),
      cmocka_unit_test(wl_io_reads_a_microbenchmark_and_any_integer_member),
      cmocka_unit_test(wl_io_rejects_a_collective_without_comm_type),
      cmocka_unit_test(wl_io_accepts_a_broadcast_without_comm_size),
      cmocka_unit_test(wl_io_rejects_a_pg_name_that_is_not_an_integer),
      cmocka_unit_test(wl_io_rejects_bad_attribute_values),
      cmocka_unit_test(wl_io_rejects_memory_and_unknown_node_types),
      cmocka_unit_test(wl_io_rejects_dangling_and_self_dependencies),
      cmocka_unit_test(wl_io_rejects_a_duplicate_id),
      cmocka_unit_test(wl_io_rejects_truncation_at_every_byte),
      cmocka_unit_test(wl_io_rejects_missing_ranks),
      cmocka_unit_test(wl_io_rejects_files_of_two_workloads_mixed),
      cmocka_unit_test(wl_io_decode_refuses_a_rank_already_read),
      cmocka_unit_test(wl_io_write_refuses_what_the_reader_would_reject),
      cmocka_unit_test(wl_io_files_decode_with_python_protobuf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
