/* tests/unit/testutil.c — scratch directories for unit tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *tu_tmpdir(const char *test_name) {
  static char path[1024];
  const char *base = getenv("TENET_TMP");
  if (base == NULL || *base == '\0') base = "/tmp";
  mkdir(base, 0777);
  snprintf(path, sizeof path, "%s/%s", base, test_name);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
  if (system(cmd) != 0) return NULL;
  return path;
}
