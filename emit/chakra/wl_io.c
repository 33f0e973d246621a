/* emit/chakra/wl_io.c — Chakra workloads (a whole training step, one file per rank) to and
 * from workload_t, for tenet workload and tenet sim --workload. The file machinery (reading
 * under tn_input_open's rule, gzip within its budget, record framing, the set written as
 * one unit, its identity) is chakra.c's; this file maps node types and attributes
 * (emit.h, "Chakra workloads"). Pipeline: files → emit → workload → sim (and back). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emit/chakra/chakra_internal.h"
#include "emit/emit.h"

typedef ChakraProtoMsg__AttributeProto attr_t;
typedef ChakraProtoMsg__Node pbnode_t;

/* The attributes a workload's nodes carry, in the members real producers use: Chakra's
 * et_generator and ASTRA-sim's microbenchmarks write comm_type and comm_size as int64_val,
 * comm_src, comm_dst and comm_tag as int32_val, is_cpu_op as bool_val; Chakra's PyTorch
 * converter writes pg_name as a string_val. */
enum { A_TYPE, A_SIZE, A_SRC, A_DST, A_TAG, A_CPU, A_PG, A_COUNT };
static char k_type[] = "comm_type", k_size[] = "comm_size", k_src[] = "comm_src",
            k_dst[] = "comm_dst", k_tag[] = "comm_tag", k_cpu[] = "is_cpu_op", k_pg[] = "pg_name";
static char *const attr_names[A_COUNT] = {k_type, k_size, k_src, k_dst, k_tag, k_cpu, k_pg};
static char k_npus[] = "tenet_npus", k_nodes[] = "tenet_nodes", k_set[] = "tenet_set_id",
            k_version[] = EMIT_CHAKRA_VERSION;

/* ======================================================================== reader */

/* One file's nodes being decoded into rank `rank` of w. */
typedef struct wdec {
  const char *what;
  workload_t *w;
  uint32_t rank;
  const emit_i_frame_t *frames; /* sorted by id */
  size_t n;
  tn_vec_t deps; /* uint32_t scratch: the current node's dependencies */
} wdec_t;

static tn_status_t add_deps(wdec_t *d, const uint64_t *ids, size_t n, uint32_t self,
                            const emit_i_loc_t *where, tn_err_t *err) {
  for (size_t k = 0; k < n; k++) {
    uint32_t j = 0; /* repeats are merged by wl_add */
    tn_status_t st = emit_i_dep_index(d->frames, d->n, false, ids[k], self, where, &j, err);
    if (st == TN_OK) st = tn_vec_push(&d->deps, &j, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* is_cpu_op: a bool, or an integer 0 or 1 (Chakra's older feeder read int32_val). */
static tn_status_t read_cpu(const attr_t *at, const emit_i_loc_t *where, bool *cpu, tn_err_t *err) {
  if (at->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL) {
    *cpu = at->bool_val != 0;
    return TN_OK;
  }
  int64_t v = 0;
  if (at->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET &&
      !emit_i_attr_int(at, &v))
    return emit_i_loc_err(where, err, TN_PARSE, "is_cpu_op must hold a bool or an integer, not %s",
                          emit_i_member_name(at));
  tn_status_t st = emit_i_int_attr(at, 0, 1, where, &v, err);
  *cpu = v == 1;
  return st;
}

/* pg_name: a string holding a decimal integer ("" is 0, every rank), or an integer. */
static tn_status_t read_pg(const attr_t *at, const emit_i_loc_t *where, int64_t *pg,
                           tn_err_t *err) {
  if (at->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
    return emit_i_int_attr(at, 0, INT64_MAX, where, pg, err);
  const char *s = at->string_val;
  *pg = 0;
  if (s[0] == '\0') return TN_OK;
  char *end = NULL;
  errno = 0;
  long long v = s[0] >= '0' && s[0] <= '9' ? strtoll(s, &end, 10) : -1;
  if (end == NULL || *end != '\0' || errno != 0 || v < 0) {
    char shown[48];
    tn_fit_line(shown, sizeof shown, s);
    return emit_i_loc_err(where, err, TN_PARSE,
                          "pg_name \"%s\" is not a process group number (tenet reads groups "
                          "named by non-negative integers)",
                          shown);
  }
  *pg = (int64_t)v;
  return TN_OK;
}

/* A SEND's or RECV's attributes: any rank number (wl_check checks the workload's), any
 * size (wl_check refuses 0), comm_tag optional and any int32. */
static tn_status_t read_p2p(const attr_t *const *found, bool send, uint32_t rank,
                            const emit_i_loc_t *where, wl_node_t *x, tn_err_t *err) {
  const emit_i_p2p_found_t f = {found[A_SRC], found[A_DST], found[A_SIZE], found[A_TAG]};
  const emit_i_p2p_rules_t rules = {INT32_MAX, 0, INT64_MAX, INT32_MIN, INT32_MAX, false, false};
  int64_t peer = 0, bytes = 0, tag = 0;
  tn_status_t st = emit_i_read_p2p(&f, send, rank, &rules, where, &peer, &bytes, &tag, err);
  x->peer = (uint32_t)peer;
  x->bytes = (uint64_t)bytes;
  x->tag = (int32_t)tag;
  return st;
}

/* A COMM_COLL_NODE's attributes: comm_type, comm_size (not for BROADCAST), pg_name. */
static tn_status_t read_coll(const attr_t *const *found, const emit_i_loc_t *where, wl_node_t *x,
                             tn_err_t *err) {
  if (found[A_TYPE] == NULL)
    return emit_i_loc_err(where, err, TN_PARSE, "COMM_COLL_NODE lacks the required attribute %s",
                          k_type);
  tn_status_t st = emit_i_int_attr(found[A_TYPE], INT64_MIN, INT64_MAX, where, &x->comm_type, err);
  if (st != TN_OK) return st;
  if (found[A_SIZE] == NULL && x->comm_type != WL_CT_BROADCAST)
    return emit_i_loc_err(where, err, TN_PARSE, "COMM_COLL_NODE lacks the required attribute %s",
                          k_size);
  int64_t v = 0;
  if (found[A_SIZE] && (st = emit_i_int_attr(found[A_SIZE], 0, INT64_MAX, where, &v, err)) != TN_OK)
    return st;
  x->bytes = (uint64_t)v;
  if (found[A_PG]) st = read_pg(found[A_PG], where, &x->pg, err);
  return st;
}

/* Converts one decoded node (index self in id order) and appends it to the rank. */
static tn_status_t convert(wdec_t *d, const pbnode_t *pn, uint32_t self, tn_err_t *err) {
  const emit_i_loc_t loc = {d->what, false, pn->id}, *where = &loc;
  wl_node_t x = {.id = pn->id};
  switch (pn->type) {
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE: x.op = WL_COMP; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE: x.op = WL_COLL; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE: x.op = WL_SEND; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE: x.op = WL_RECV; break;
  case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
  case CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE: x.op = WL_NOP; break;
  default: {
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
        &chakra_proto_msg__node_type__descriptor, (int)pn->type);
    if (ev)
      return emit_i_loc_err(where, err, TN_PARSE, "%s, which tenet does not simulate", ev->name);
    return emit_i_loc_err(where, err, TN_PARSE, "node type %d, which Chakra does not define",
                          (int)pn->type);
  }
  }
  const attr_t *found[A_COUNT] = {NULL};
  for (size_t i = 0; i < pn->n_attr; i++)
    for (int k = 0; k < A_COUNT; k++) {
      if (strcmp(pn->attr[i]->name, attr_names[k]) != 0) continue;
      if (found[k])
        return emit_i_loc_err(where, err, TN_PARSE, "attribute %s appears twice", attr_names[k]);
      found[k] = pn->attr[i];
    }
  d->deps.len = 0;
  tn_status_t st = add_deps(d, pn->data_deps, pn->n_data_deps, self, where, err);
  if (st == TN_OK) st = add_deps(d, pn->ctrl_deps, pn->n_ctrl_deps, self, where, err);
  if (st == TN_OK && found[A_CPU]) st = read_cpu(found[A_CPU], where, &x.cpu, err);
  if (st != TN_OK) return st;
  if (x.op == WL_COMP || x.op == WL_COLL) x.duration_us = pn->duration_micros;
  if (x.op == WL_COLL) st = read_coll(found, where, &x, err);
  if (x.op == WL_SEND || x.op == WL_RECV)
    st = read_p2p(found, x.op == WL_SEND, d->rank, where, &x, err);
  if (st != TN_OK) return st;
  return wl_add(d->w, d->rank, &x, pn->name, d->deps.data, (uint32_t)d->deps.len, NULL, err);
}

/* Decodes the node records of p[pos..len) into rank d->rank, in ascending id. Each Node is
 * unpacked by protobuf-c into an arena reset per node. */
static tn_status_t decode_nodes(wdec_t *d, const uint8_t *p, size_t len, size_t pos,
                                const emit_i_header_t *h, tn_err_t *err) {
  tn_vec_t frames;
  tn_vec_init(&frames, sizeof(emit_i_frame_t));
  emit_i_arena_t ar;
  emit_i_arena_init(&ar);
  tn_status_t st = emit_i_frame_nodes(p, len, pos, d->what, h, &frames, err);
  if (st == TN_OK && frames.len > WL_MAX_NODES)
    st =
        tn_err_set(err, TN_LIMIT, "%s: %zu nodes, more than %u", d->what, frames.len, WL_MAX_NODES);
  if (st == TN_OK) st = emit_i_order_frames(frames.data, frames.len, d->what, err);
  d->frames = frames.data;
  d->n = frames.len;
  for (size_t i = 0; i < d->n && st == TN_OK; i++) {
    const emit_i_frame_t *f = &d->frames[i];
    emit_i_arena_reset(&ar);
    pbnode_t *pn = chakra_proto_msg__node__unpack(&ar.pb, f->len, p + f->off);
    if (pn == NULL || pn->id != f->id)
      st = tn_err_set(err, TN_PARSE,
                      "%s: byte %zu: node record %zu does not decode as a Chakra Node", d->what,
                      f->off, f->seq);
    else
      st = convert(d, pn, (uint32_t)i, err);
  }
  emit_i_arena_free(&ar);
  tn_vec_free(&frames);
  return st;
}

/* The set's rank count in a file's header (tenet_npus), when it has one, must be w's. */
static tn_status_t check_npus(const emit_i_header_t *h, const char *what, uint32_t npus,
                              tn_err_t *err) {
  if (h->has_npus && (uint64_t)h->npus != npus)
    return tn_err_set(err, TN_PARSE,
                      "%s: written for a workload of %" PRId64 " ranks, but it has %" PRIu32, what,
                      h->npus, npus);
  return TN_OK;
}

/* Decodes a file whose header open_bytes has read; *h receives it. */
static tn_status_t decode_file(const uint8_t *data, size_t len, const char *what, workload_t *w,
                               uint32_t rank, emit_i_header_t *h, bool *header_ok, tn_err_t *err) {
  *header_ok = false;
  if (rank >= w->npus || wl_count(w, rank) > 0)
    return tn_err_set(err, TN_INVAL, "%s: rank %" PRIu32 " is out of range or already read", what,
                      rank);
  uint8_t *plain = NULL;
  size_t pos = 0;
  tn_status_t st = emit_i_open_bytes(&data, &len, what, &plain, &pos, h, err);
  if (st == TN_OK) {
    *header_ok = true;
    wdec_t d = {.what = what, .w = w, .rank = rank};
    tn_vec_init(&d.deps, sizeof(uint32_t));
    st = decode_nodes(&d, data, len, pos, h, err);
    tn_vec_free(&d.deps);
  }
  free(plain);
  return st;
}

tn_status_t emit_chakra_decode_workload(const uint8_t *data, size_t len, const char *what,
                                        workload_t *w, uint32_t rank, tn_err_t *err) {
  emit_i_header_t h;
  bool ok;
  tn_status_t st = decode_file(data, len, what, w, rank, &h, &ok, err);
  if (st == TN_OK) st = check_npus(&h, what, w->npus, err);
  return st;
}

tn_status_t emit_chakra_read_workload(const char *prefix, uint32_t npus, workload_t **out,
                                      tn_err_t *err) {
  *out = NULL;
  uint32_t n = 0;
  tn_status_t st = emit_i_count_ranks(prefix, npus, &n, err);
  workload_t *w = NULL;
  emit_i_header_t *hs = NULL;
  uint8_t *ok = NULL;
  tn_vec_t buf;
  tn_vec_init(&buf, 1);
  if (st == TN_OK) st = wl_create(n, &w, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *hs, &hs, err);
  if (st == TN_OK) st = tn_calloc(n, 1, &ok, err);
  if (st != TN_OK) goto done;
  /* Every rank is read at least up to its header, so that files of two sets are named as
   * such before the first rank's own error; the first failure in rank order is kept. */
  tn_err_t first = {0};
  for (uint32_t r = 0; r < n; r++) {
    tn_err_t e = {0};
    char *path = emit_i_rank_path(prefix, r, "", &e);
    tn_status_t rs = path ? emit_i_read_whole(path, &buf, &e) : TN_NOMEM;
    bool hok = false;
    if (rs == TN_OK && first.status == TN_OK)
      rs = decode_file(buf.data, buf.len, path, w, r, &hs[r], &hok, &e);
    else if (rs == TN_OK) { /* past a failure: the header only */
      const uint8_t *data = buf.data;
      size_t len = buf.len, pos = 0;
      uint8_t *plain = NULL;
      hok = emit_i_open_bytes(&data, &len, path, &plain, &pos, &hs[r], &e) == TN_OK;
      free(plain);
      rs = TN_OK;
    }
    ok[r] = hok;
    if (rs == TN_OK && hok) rs = check_npus(&hs[r], path, n, &e);
    if (rs != TN_OK && first.status == TN_OK) first = e;
    free(path);
  }
  st = emit_i_check_identity(prefix, n, npus == 0, hs, ok, err);
  if (st == TN_OK && first.status != TN_OK) {
    *err = first;
    st = first.status;
  }
done:
  tn_vec_free(&buf);
  free(hs);
  free(ok);
  if (st != TN_OK) {
    wl_free(w);
    return st;
  }
  *out = w;
  return TN_OK;
}

/* ======================================================================== writer */

/* The workload's identity (tenet_set_id in every file): a hash of every value the files
 * encode, folded rank by rank in order, so the same workload gets the same id anywhere. */
static uint64_t wl_set_id(const workload_t *w) {
  uint64_t h = emit_i_hash_mix(0x452821e638d01377ull, w->npus);
  for (uint32_t r = 0; r < w->npus; r++) {
    uint64_t rh = emit_i_hash_mix(emit_i_hash_mix(0xbe5466cf34e90c6cull, r), wl_count(w, r));
    for (uint32_t i = 0; i < wl_count(w, r); i++) {
      const wl_node_t *x = wl_node(w, r, i);
      rh = emit_i_hash_mix(emit_i_hash_mix(rh, x->id), (uint64_t)x->op | (uint64_t)x->cpu << 8);
      rh = emit_i_hash_mix(emit_i_hash_mix(rh, x->duration_us), (uint64_t)x->comm_type);
      rh = emit_i_hash_mix(emit_i_hash_mix(rh, x->bytes),
                           (uint64_t)x->peer << 32 | (uint32_t)x->tag);
      rh = emit_i_hash_mix(emit_i_hash_mix(rh, (uint64_t)x->pg), x->ndeps);
      const uint32_t *d = wl_deps(w, r, x);
      for (uint32_t k = 0; k < x->ndeps; k++)
        rh = emit_i_hash_mix(rh, d[k]);
      const uint8_t *nm = (const uint8_t *)w->ranks[r].names.data + x->name_off;
      rh = emit_i_hash_mix(rh, x->name_len);
      for (uint32_t k = 0; k < x->name_len; k++)
        rh = emit_i_hash_mix(rh, nm[k]);
    }
    h = emit_i_hash_mix(h, emit_i_hash_final(rh));
  }
  return emit_i_hash_final(h);
}

/* The writer refuses what the reader would reject, so every workload it writes reads
 * back: dependencies out of range or on the node itself, values that do not fit the
 * members they are written in. */
static tn_status_t check_node(const workload_t *w, uint32_t r, uint32_t i, tn_err_t *err) {
  const wl_node_t *x = wl_node(w, r, i);
  const uint32_t *d = wl_deps(w, r, x);
  for (uint32_t k = 0; k < x->ndeps; k++)
    if (d[k] >= wl_count(w, r) || d[k] == i)
      return tn_err_set(err, TN_INVAL, "rank %" PRIu32 " node %" PRIu64 ": bad dependency %" PRIu32,
                        r, x->id, d[k]);
  if (x->op > WL_NOP)
    return tn_err_set(err, TN_INVAL, "rank %" PRIu32 " node %" PRIu64 ": unknown op %d", r, x->id,
                      (int)x->op);
  const char *bad = x->bytes > INT64_MAX  ? "comm_size above INT64_MAX"
                    : x->pg < 0           ? "a negative process group"
                    : x->peer > INT32_MAX ? "a peer above INT32_MAX"
                                          : NULL;
  if (bad) return tn_err_set(err, TN_INVAL, "rank %" PRIu32 " node %" PRIu64 ": %s", r, x->id, bad);
  return TN_OK;
}

static attr_t *attr_i32(attr_t *at, char *name, int32_t v) {
  chakra_proto_msg__attribute_proto__init(at);
  at->name = name;
  at->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
  at->int32_val = v;
  return at;
}

/* Scratch for one node's record. */
typedef struct wnode {
  attr_t at[6];
  attr_t *ap[6];
  char name[WL_MAX_NAME + 1], pg[24];
  tn_vec_t deps; /* uint64_t: the ids of the node's dependencies */
} wnode_t;

/* Appends node i of rank r: its id, name, type, data_deps (the ids of its dependencies),
 * duration_micros (COMP, COLL), and the attributes of its type; is_cpu_op on every node. */
static tn_status_t put_wl_node(tn_vec_t *buf, const workload_t *w, uint32_t r, uint32_t i,
                               wnode_t *s, tn_err_t *err) {
  static const ChakraProtoMsg__NodeType types[] = {
      CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE,
      CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE,
      CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE};
  tn_status_t st = check_node(w, r, i, err);
  const wl_node_t *x = wl_node(w, r, i);
  if (st == TN_OK) st = tn_vec_reserve(&s->deps, x->ndeps, err);
  if (st != TN_OK) return st;
  pbnode_t n;
  chakra_proto_msg__node__init(&n);
  n.id = x->id;
  wl_name(w, r, x, s->name);
  n.name = s->name;
  n.type = types[x->op];
  const uint32_t *d = wl_deps(w, r, x);
  uint64_t *ids = s->deps.data;
  for (uint32_t k = 0; k < x->ndeps; k++)
    ids[k] = wl_node(w, r, d[k])->id;
  n.n_data_deps = x->ndeps;
  n.data_deps = ids;
  if (x->op == WL_COMP || x->op == WL_COLL) n.duration_micros = x->duration_us;
  size_t na = 0;
  if (x->op == WL_COLL) {
    s->ap[na] = emit_i_attr_i64(&s->at[na], k_type, x->comm_type), na++;
    s->ap[na] = emit_i_attr_i64(&s->at[na], k_size, (int64_t)x->bytes), na++;
    if (x->pg != 0) { /* a string, as Chakra's PyTorch converter writes it */
      snprintf(s->pg, sizeof s->pg, "%" PRId64, x->pg);
      chakra_proto_msg__attribute_proto__init(&s->at[na]);
      s->at[na].name = k_pg;
      s->at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
      s->at[na].string_val = s->pg;
      s->ap[na] = &s->at[na], na++;
    }
  } else if (x->op == WL_SEND || x->op == WL_RECV) {
    bool send = x->op == WL_SEND;
    s->ap[na] = attr_i32(&s->at[na], k_src, (int32_t)(send ? r : x->peer)), na++;
    s->ap[na] = attr_i32(&s->at[na], k_dst, (int32_t)(send ? x->peer : r)), na++;
    s->ap[na] = emit_i_attr_i64(&s->at[na], k_size, (int64_t)x->bytes), na++;
    s->ap[na] = attr_i32(&s->at[na], k_tag, x->tag), na++;
    s->ap[na] = emit_i_attr_i64(&s->at[na], k_type, (int64_t)n.type), na++;
  }
  chakra_proto_msg__attribute_proto__init(&s->at[na]);
  s->at[na].name = k_cpu;
  s->at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
  s->at[na].bool_val = x->cpu;
  s->ap[na] = &s->at[na], na++;
  n.n_attr = na;
  n.attr = s->ap;
  return emit_i_put_record(buf, &n.base, err);
}

typedef struct wl_enc {
  const workload_t *w;
  uint64_t set_id;
} wl_enc_t;

/* One rank's file: a GlobalMetadata (version, tenet_npus, tenet_nodes, tenet_set_id),
 * then its nodes in order. */
static tn_status_t encode_wl_rank(void *ctx, uint32_t r, tn_vec_t *buf, tn_err_t *err) {
  const wl_enc_t *e = ctx;
  attr_t at[3], *ap[3];
  int64_t id_bits; /* the id's 64 bits as an int64 (the reader copies them back) */
  memcpy(&id_bits, &e->set_id, sizeof id_bits);
  ap[0] = emit_i_attr_i64(&at[0], k_npus, e->w->npus);
  ap[1] = emit_i_attr_i64(&at[1], k_nodes, wl_count(e->w, r));
  ap[2] = emit_i_attr_i64(&at[2], k_set, id_bits);
  ChakraProtoMsg__GlobalMetadata md;
  chakra_proto_msg__global_metadata__init(&md);
  md.version = k_version;
  md.n_attr = 3;
  md.attr = ap;
  tn_status_t st = emit_i_put_record(buf, &md.base, err);
  wnode_t *s = NULL;
  if (st == TN_OK) st = tn_calloc(1, sizeof *s, &s, err);
  if (st != TN_OK) return st;
  tn_vec_init(&s->deps, sizeof(uint64_t));
  for (uint32_t i = 0; st == TN_OK && i < wl_count(e->w, r); i++)
    st = put_wl_node(buf, e->w, r, i, s, err);
  tn_vec_free(&s->deps);
  free(s);
  return st;
}

tn_status_t emit_chakra_write_wl(const workload_t *w, const char *prefix, tn_err_t *err) {
  if (w->npus > TOPO_MAX_NPUS)
    return tn_err_set(err, TN_INVAL, "%s: %" PRIu32 " ranks are too many", prefix, w->npus);
  for (uint32_t r = 0; r < w->npus; r++)
    if (wl_count(w, r) == 0)
      return tn_err_set(err, TN_INVAL,
                        "rank %" PRIu32 " has no nodes (every Chakra file needs one)", r);
  wl_enc_t e = {w, wl_set_id(w)};
  return emit_i_write_set(prefix, w->npus, e.set_id, encode_wl_rank, &e, err);
}
