/* cli/dl.c — PLplot and graphviz opened on first use (cli/plot_internal.h,
 * cli/gv_internal.h): dlopen by the libraries' sonames, found when tenet was configured,
 * and every function cli/ calls looked up once. */
#define CLI_PL_IMPL
#define CLI_GV_IMPL
#include <dlfcn.h>
#include <string.h>

#include "cli/gv_internal.h"
#include "cli/plot_internal.h"

cli_pl_api_t cli_pl;
cli_gv_api_t cli_gv;

/* The address of name in h into *slot (a function or data pointer); false when missing. */
static bool find(void *h, const char *name, void *slot) {
  void *p = dlsym(h, name);
  if (p != NULL) memcpy(slot, &p, sizeof p);
  return p != NULL;
}

static tn_status_t open_lib(const char *soname, void **h, tn_err_t *err) {
  *h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (*h != NULL) return TN_OK;
  const char *why = dlerror();
  return tn_err_set(err, TN_INTERNAL, "cannot load %s: %s", soname, why ? why : "not found");
}

static tn_status_t missing(const char *soname, const char *name, tn_err_t *err) {
  return tn_err_set(err, TN_INTERNAL, "%s has no %s", soname, name);
}

#define CLI_DL_FIND(api, lib, soname, name)                                                        \
  if (st == TN_OK && !find(lib, #name, &api.name)) st = missing(soname, #name, err);

tn_status_t cli_i_pl_open(tn_err_t *err) {
  static bool done;
  if (done) return TN_OK;
  void *h = NULL;
  tn_status_t st = open_lib(TENET_PLPLOT_SONAME, &h, err);
#define PL_FIND(name) CLI_DL_FIND(cli_pl, h, TENET_PLPLOT_SONAME, name)
  CLI_PL_FUNCS(PL_FIND)
#undef PL_FIND
  done = st == TN_OK;
  return st;
}

tn_status_t cli_i_gv_open(tn_err_t *err) {
  static bool done;
  if (done) return TN_OK;
  void *cg = NULL, *gvc = NULL;
  tn_status_t st = open_lib(TENET_CGRAPH_SONAME, &cg, err);
  if (st == TN_OK) st = open_lib(TENET_GVC_SONAME, &gvc, err);
#define CG_FIND(name) CLI_DL_FIND(cli_gv, cg, TENET_CGRAPH_SONAME, name)
#define GVC_FIND(name) CLI_DL_FIND(cli_gv, gvc, TENET_GVC_SONAME, name)
  CLI_CGRAPH_FUNCS(CG_FIND)
  CLI_GVC_FUNCS(GVC_FIND)
  CG_FIND(Agdirected)
#undef CG_FIND
#undef GVC_FIND
  done = st == TN_OK;
  return st;
}
