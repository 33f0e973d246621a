/* tests/unit/testutil.h — helpers shared by the cmocka unit tests. */
#ifndef TENET_TESTUTIL_H
#define TENET_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/common.h"
#include "topo/topo.h"

/* A fresh scratch directory for this test binary (under $TENET_TMP or /tmp), created
 * empty; returns a static path. */
const char *tu_tmpdir(const char *test_name);
/* Asserts expr returns TN_OK, printing the message expr left in the test file's tu_err_
 * (which expr names as its error argument). tu_err_ is cleared first, so a failure never
 * shows what an earlier check or test left there; an expr that reports through another
 * error struct prints "(message elsewhere)". */
#define TU_OK(expr)                                                                  \
  do {                                                                               \
    tn_err_clear(&tu_err_);                                                          \
    tn_status_t tu_st_ = (expr);                                                     \
    if (tu_st_ != TN_OK)                                                             \
      fail_msg("%s failed (%s): %s", #expr, tn_status_str(tu_st_),                   \
               tu_err_.msg[0] ? tu_err_.msg : "(message elsewhere)");                \
  } while (0)

/* tn_xfer_ps for figures that fit (the test fails otherwise). */
uint64_t tu_xfer_ps(uint64_t bytes, double gbps);

/* topo_bound_ps and topo_lower_bound_ps for sizes whose bound fits (the test fails
 * otherwise). */
uint64_t tu_bound_ps(const topo_bounds_t *b, tn_coll_t c, uint64_t size);
uint64_t tu_lower_bound_ps(const topo_t *t, tn_coll_t c, uint64_t size);

/* The shipped fabric topologies/NAME.json of this source tree (the test fails when it does
 * not load). Caller frees. */
topo_t *tu_shipped(const char *name);

/* A random strongly connected fabric of n NPUs: a directed Hamiltonian cycle in random
 * order plus random extra links, all with random figures (10..99 GB/s, 0..999 ns:
 * asymmetric and heterogeneous), and with with_switch one switch joined both ways to a
 * random subset of the NPUs. Same (n, seed, with_switch), same fabric. Caller frees. */
topo_t *tu_random_fabric(uint32_t n, uint64_t seed, bool with_switch);

#endif
