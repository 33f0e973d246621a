/* topo/stubs_tmp.c — placeholders until json.c/yaml.c/analyze.c land (deleted then). */
#include "topo/topo.h"
tn_status_t topo_load(const char *path, topo_t **out, tn_err_t *err) { (void)path; *out = NULL; return tn_err_set(err, TN_INTERNAL, "todo"); }
tn_status_t topo_resolve(const char *arg, const char *dir, char **path, tn_err_t *err) { (void)arg; (void)dir; *path = NULL; return tn_err_set(err, TN_INTERNAL, "todo"); }
