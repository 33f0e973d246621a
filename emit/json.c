/* emit/json.c — a Chakra set (or any algo_t) as one JSON object for people and scripts:
 * the header, then each rank's nodes, one per line. Backs `tenet et dump`.
 * Pipeline: algo → emit → cli. */
#include "emit/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static const char *op_name(algo_op_t op) {
  return op == ALGO_SEND ? "SEND" : op == ALGO_RECV ? "RECV" : "COMP";
}

/* Writes s as a JSON string (escaping quotes, backslashes and control bytes; a byte that
 * does not start valid UTF-8, as a foreign producer's name may hold, becomes U+FFFD). */
static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (size_t n = strlen(s); *s; s++, n--) {
    unsigned char c = (unsigned char)*s;
    size_t k = tn_utf8_char_len(s, n);
    if (c == '"' || c == '\\') {
      fprintf(f, "\\%c", c);
    } else if (c < 0x20) {
      fprintf(f, "\\u%04x", c);
    } else if (k == 0) {
      fputs("\\ufffd", f);
    } else {
      fwrite(s, 1, k, f);
      s += k - 1;
      n -= k - 1;
    }
  }
  fputc('"', f);
}

static void put_ids(FILE *f, const uint32_t *v, uint32_t n) {
  fputc('[', f);
  for (uint32_t i = 0; i < n; i++)
    fprintf(f, "%s%" PRIu32, i ? ", " : "", v[i]);
  fputc(']', f);
}

static void put_node(FILE *f, const algo_t *a, uint32_t r, uint32_t i) {
  const algo_node_t *x = algo_node(a, r, i);
  fprintf(f, "    {\"id\": %" PRIu32 ", \"type\": \"%s\"", i, op_name(x->op));
  if (x->op == ALGO_COMP) {
    fprintf(f, ", \"duration_us\": %" PRIu64, x->duration_us);
  } else {
    fprintf(f, ", \"peer\": %" PRId32 ", \"tag\": %" PRId32 ", \"bytes\": %" PRIu64, x->peer,
            x->tag, x->bytes);
    if (x->op == ALGO_RECV) fprintf(f, ", \"reduce\": %s", x->reduce ? "true" : "false");
  }
  fputs(", \"deps\": ", f);
  put_ids(f, algo_node_deps(a, r, x), x->ndeps);
  fputs(", \"chunks\": ", f);
  put_ids(f, algo_node_chunks(a, r, x), x->nchunks);
  fputc('}', f);
}

tn_status_t emit_json_dump(const algo_t *a, FILE *f, tn_err_t *err) {
  fputs("{\"producer\": ", f);
  put_string(f, a->name);
  fprintf(f, ", \"npus\": %" PRIu32, a->npus);
  if (a->has_coll)
    fprintf(f,
            ", \"collective\": \"%s\", \"chunks_per_npu\": %" PRIu32 ", \"size_bytes\": %" PRIu64,
            tn_coll_name(a->coll), a->chunks_per_npu, a->size_bytes);
  else
    fputs(", \"collective\": null, \"chunks_per_npu\": null, \"size_bytes\": null", f);
  fprintf(f, ", \"nodes\": %" PRIu64 ", \"messages\": %" PRIu64 ",\n \"ranks\": [",
          algo_node_count(a), algo_send_count(a));
  for (uint32_t r = 0; r < a->npus; r++) {
    fprintf(f, "%s\n  {\"rank\": %" PRIu32 ", \"nodes\": [", r ? "," : "", r);
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      fputs(i ? ",\n" : "\n", f);
      put_node(f, a, r, i);
    }
    fputs("]}", f);
  }
  fputs("\n]}\n", f);
  if (ferror(f) || fflush(f) != 0)
    return tn_err_set(err, TN_IO, "writing the JSON dump failed: %s", strerror(errno));
  return TN_OK;
}
