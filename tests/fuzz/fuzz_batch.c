/* tests/fuzz/fuzz_batch.c — libFuzzer target for `tenet batch`'s own inputs: a manifest
 * (lines "KEY VALUE") and DIR/batch.json (the plan a folder was started with). The first
 * byte picks which (even: manifest, odd: batch.json); the rest is the text. Anything must
 * parse or fail with a message; a parsed plan written as batch.json reads back to a plan
 * that writes the same JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch.h"
#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* plan -> JSON -> plan -> JSON must give the same text twice. */
static void round_trip(const cli_batch_plan_t *p) {
  char *j1 = NULL, *j2 = NULL;
  tn_err_t e = {0};
  if (cli_batch_plan_json(p, &j1, &e) != TN_OK) abort();
  cli_batch_plan_t q;
  memset(&q, 0, sizeof q);
  if (cli_batch_plan_parse_json(j1, "round trip", &q, &e) != TN_OK) abort();
  if (cli_batch_plan_json(&q, &j2, &e) != TN_OK || strcmp(j1, j2) != 0) abort();
  cli_batch_plan_free(&q);
  free(j1);
  free(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > (1u << 16)) return 0;
  char *text = malloc(size);
  if (text == NULL) return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  cli_batch_plan_t p;
  memset(&p, 0, sizeof p);
  tn_err_t err = {0};
  tn_status_t st = data[0] % 2 == 0 ? cli_batch_manifest_parse(text, "fuzz.txt", &p, &err)
                                    : cli_batch_plan_parse_json(text, "batch.json", &p, &err);
  if (st == TN_OK)
    round_trip(&p);
  else if (err.msg[0] == '\0')
    abort();
  cli_batch_plan_free(&p);
  free(text);
  return 0;
}
