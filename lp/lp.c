/* lp/lp.c — the GLPK guard (lp.h). */
#include "lp/lp.h"

#ifdef TENET_HAVE_GLPK
#include <glpk.h>
#include <setjmp.h>

bool lp_available(void) {
  return true;
}

typedef struct guard {
  jmp_buf jb;
  volatile bool ok; /* volatile: set between setjmp and a possible longjmp */
} guard_t;

static void on_error(void *info) {
  guard_t *g = info;
  longjmp(g->jb, 1);
}

static int quiet(void *info, const char *s) {
  (void)info, (void)s;
  return 1;
}

bool lp_guarded(bool (*body)(void *ctx), void *ctx) {
  guard_t g;
  g.ok = false;
  if (setjmp(g.jb) == 0) {
    glp_error_hook(on_error, &g);
    glp_term_hook(quiet, NULL);
    g.ok = body(ctx);
  }
  glp_error_hook(NULL, NULL);
  glp_term_hook(NULL, NULL);
  glp_free_env(); /* everything GLPK still holds on this thread, a failed body's included */
  return g.ok;
}

#else

bool lp_available(void) {
  return false;
}

bool lp_guarded(bool (*body)(void *ctx), void *ctx) {
  (void)body, (void)ctx;
  return false;
}

#endif
