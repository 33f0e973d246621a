/* emit/chakra/workload.c — the workload side of an ASTRA-sim run: one Chakra ET file per
 * rank holding a single COMM_COLL_NODE (comm_type, comm_size), which ASTRA-sim expands
 * into the collective's algorithm (a custom Chakra set when the system JSON names one). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit/chakra/chakra_internal.h"
#include "emit/emit.h"

static char k_comm_type[] = "comm_type", k_comm_size[] = "comm_size", k_cpu[] = "is_cpu_op",
            k_version[] = EMIT_CHAKRA_VERSION;

/* The bytes of one rank's file (the same for every rank). */
static tn_status_t workload_bytes(tn_coll_t coll, uint64_t size_bytes, tn_vec_t *b, tn_err_t *err) {
  ChakraProtoMsg__GlobalMetadata md;
  chakra_proto_msg__global_metadata__init(&md);
  md.version = k_version;
  tn_status_t st = emit_i_put_record(b, &md.base, err);
  if (st != TN_OK) return st;
  ChakraProtoMsg__AttributeProto at[3], *ap[3] = {&at[0], &at[1], &at[2]};
  for (int i = 0; i < 3; i++)
    chakra_proto_msg__attribute_proto__init(&at[i]);
  at[0].name = k_comm_type;
  at[0].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  at[0].int64_val = emit_i_coll_code(coll);
  at[1].name = k_comm_size;
  at[1].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  at[1].int64_val = (int64_t)size_bytes;
  at[2].name = k_cpu;
  at[2].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
  at[2].bool_val = 0;
  char name[64];
  snprintf(name, sizeof name, "%s %" PRIu64 " B", tn_coll_name(coll), size_bytes);
  ChakraProtoMsg__Node n;
  chakra_proto_msg__node__init(&n);
  n.id = 0;
  n.name = name;
  n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
  n.n_attr = 3;
  n.attr = ap;
  return emit_i_put_record(b, &n.base, err);
}

tn_status_t emit_chakra_write_workload(const char *prefix, uint32_t npus, tn_coll_t coll,
                                       uint64_t size_bytes, tn_err_t *err) {
  if (size_bytes > INT64_MAX)
    return tn_err_set(err, TN_INVAL, "a workload size of %" PRIu64 " B does not fit comm_size",
                      size_bytes);
  tn_vec_t b;
  tn_vec_init(&b, 1);
  tn_status_t st = workload_bytes(coll, size_bytes, &b, err);
  size_t plen = strlen(prefix) + 16;
  char *path = NULL;
  if (st == TN_OK) st = tn_calloc(plen, 1, &path, err);
  for (uint32_t r = 0; st == TN_OK && r < npus; r++) {
    snprintf(path, plen, "%s.%u.et", prefix, r);
    tn_outfile_t o = {0};
    if ((st = tn_outfile_open(&o, path, err)) != TN_OK) break;
    if (fwrite(b.data, 1, b.len, o.f) != b.len) {
      tn_outfile_abort(&o);
      st = tn_err_set(err, TN_IO, "%s: write failed", path);
      break;
    }
    st = tn_outfile_commit(&o, err);
  }
  free(path);
  tn_vec_free(&b);
  return st;
}
