/* tests/unit/testutil.h — helpers shared by the cmocka unit tests. */
#ifndef TENET_TESTUTIL_H
#define TENET_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/common.h"

/* A fresh scratch directory for this test binary (under $TENET_TMP or /tmp), created
 * empty; returns a static path. */
const char *tu_tmpdir(const char *test_name);
/* Asserts st == TN_OK, printing err's message otherwise. */
#define TU_OK(expr)                                                        \
  do {                                                                     \
    tn_status_t tu_st_ = (expr);                                           \
    if (tu_st_ != TN_OK) fail_msg("%s failed: %s", #expr, tu_err_.msg);    \
  } while (0)

#endif
