/* synth/synth_internal.h — private to synth/: the steps synth_run dispatches to. */
#ifndef TENET_SYNTH_INTERNAL_H
#define TENET_SYNTH_INTERNAL_H

#include "synth/synth.h"

/* One method (not AUTO): fills out->algo (and time_ps / milp_status where the method knows
 * them). The caller has checked the size and zeroed out. */
tn_status_t synth_i_one(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                        synth_method_t m, synth_result_t *out, tn_err_t *err);

/* The greedy and the MILP: plan All-Gather schedules and lower them to coll. */
tn_status_t synth_i_planned(const topo_t *t, tn_coll_t coll, uint64_t size,
                            const synth_opts_t *o, synth_method_t m, synth_result_t *out,
                            tn_err_t *err);

/* Whether the MILP failed only because its model was too large for the chunk count
 * (r->milp_stop says so). */
bool synth_i_milp_too_large(const synth_result_t *r);

/* AUTO: every applicable method, simulated; the fastest is kept in out. */
tn_status_t synth_i_portfolio(const topo_t *t, tn_coll_t coll, uint64_t size,
                              const synth_opts_t *o, synth_result_t *out, tn_err_t *err);

#endif
