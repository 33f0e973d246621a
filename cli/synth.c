/* cli/synth.c — the synthesis pipeline shared by synth, compare, batch and demo. */
#include "cli/cli.h"

tn_status_t cli_synthesize(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const cli_synth_opts_t *opts, cli_synth_out_t *out, tn_err_t *err) {
  (void)t; (void)coll; (void)size_bytes; (void)opts; (void)out;
  return tn_err_set(err, TN_INTERNAL, "synthesis is not wired yet");
}
