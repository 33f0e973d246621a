/* lp — the one place tenet calls GLPK for linear programs outside the MILP: a guard that
 * turns GLPK's fatal errors into a failed call (GLPK would abort the process) and frees
 * GLPK's per-thread environment afterwards, so callers on worker threads leak nothing.
 * Callers build and solve their problem with GLPK's own API inside the guard. When the
 * build has no GLPK (TENET_WITH_MILP off), lp_available() is false and lp_guarded fails,
 * and callers use their fallbacks. Module DAG: common → lp → topo, forest, trees. */
#ifndef TENET_LP_H
#define TENET_LP_H

#include <stdbool.h>

/* Whether this build has GLPK. */
bool lp_available(void);

/* Runs body(ctx) with GLPK's fatal errors caught and its output silenced; returns body's
 * result, or false when GLPK failed inside it (every GLPK object body made is gone then).
 * body must not keep GLPK objects past its return. Thread-safe (GLPK's environment is per
 * thread). */
bool lp_guarded(bool (*body)(void *ctx), void *ctx);

#endif
