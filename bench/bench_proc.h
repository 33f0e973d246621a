/* bench/bench_proc.h — timing a whole process, for the bench programs that compare tenet
 * with an outside tool as processes (bench_astra, bench_tacos). A header of static
 * functions: every C file in bench/ is a program of its own. */
#ifndef TENET_BENCH_PROC_H
#define TENET_BENCH_PROC_H

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double tv_s(struct timeval tv) {
  return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* Starts argv[0] with argv (at most 23 arguments), its stdout to out_path (NULL:
 * /dev/null) and its stderr to /dev/null; the child's pid, or -1. */
static inline pid_t spawn_child(const char *const argv[], const char *out_path) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int nul = open("/dev/null", O_WRONLY);
  if (fd >= 0) dup2(fd, 1);
  if (nul >= 0) dup2(nul, 2);
  char *v[24];
  size_t n = 0;
  for (; argv[n] && n + 1 < sizeof v / sizeof v[0]; n++)
    v[n] = strdup(argv[n]);
  v[n] = NULL;
  execv(v[0], v);
  _exit(127);
}

/* Runs argv as a child, stdout to out_path (or /dev/null), stderr to /dev/null; its wall
 * time and CPU time (user + system, from the children's rusage before and after). Returns
 * the exit status, or -1 when it could not run or was killed. */
static inline int run_child(const char *const argv[], const char *out_path, double *wall,
                            double *cpu) {
  struct rusage r0, r1;
  getrusage(RUSAGE_CHILDREN, &r0);
  double w0 = wall_now();
  pid_t pid = spawn_child(argv, out_path);
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  double w1 = wall_now();
  getrusage(RUSAGE_CHILDREN, &r1);
  *wall = w1 - w0;
  *cpu = tv_s(r1.ru_utime) - tv_s(r0.ru_utime) + tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The tenet binary: $TENET, else "tenet" beside this program. */
static inline void tenet_path(const char *argv0, char *out, size_t len) {
  const char *env = getenv("TENET");
  if (env && *env) {
    snprintf(out, len, "%s", env);
    return;
  }
  const char *slash = strrchr(argv0, '/');
  if (slash)
    snprintf(out, len, "%.*s/tenet", (int)(slash - argv0), argv0);
  else
    snprintf(out, len, "./tenet");
}

#endif
