/* cli/main.c — the top-level command table, --help and --version, and the one check
 * that standard output received everything a command printed. */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tenet_source_digest.h"

typedef struct command {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} command_t;

/* Only finished subcommands are listed here: --help tells the truth. */
static const command_t commands[] = {
    {"topo", cmd_topo, "generate, inspect, list and draw fabrics (gen, info, list, draw)"},
    {"synth", cmd_synth, "synthesize a collective for a fabric and write Chakra ET files"},
    {"sim", cmd_sim, "simulate a Chakra ET set on a fabric: time, busbw, bound, busiest links"},
    {"astra", cmd_astra,
     "write a directory ASTRA-sim runs as it is: set, workload, configs, run.sh"},
    {"workload", cmd_workload,
     "synthesize every collective of a Chakra workload; write its ASTRA-sim run directory"},
    {"verify", cmd_verify, "check a Chakra ET set: matching, deadlock, collective semantics"},
    {"et", cmd_et, "look inside a Chakra ET set (dump as JSON, dot of one rank)"},
    {"import", cmd_import, "convert an MSCCL-IR XML algorithm to a Chakra ET set (msccl)"},
    {"export", cmd_export, "write a Chakra ET set tenet produced as MSCCL-IR XML (msccl)"},
    {"compare", cmd_compare, "score algorithms across sizes: table, JSON, CSV, plot"},
    {"batch", cmd_batch, "sweep fabrics x collectives x sizes x algorithms (resumable)"},
    {"demo", cmd_demo, "the paper's 64-NPU comparison: tables, plots, Chakra sets"},
};

static void usage(FILE *f) {
  fprintf(f,
          "tenet %s — topology-aware collective algorithm synthesis\n\n"
          "usage: tenet COMMAND [options]   (tenet COMMAND --help for details)\n\n"
          "commands:\n",
          TENET_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nUnits: bandwidth GB/s = 2^30 B/s, latency and times ns, sizes B/KB/MB/GB "
             "(10^3) or KiB/MiB/GiB (2^10).\n"
             "Exit codes: 0 ok, 1 bad input or usage, 2 cannot be done, 3 internal error.\n");
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("tenet %s (sources %s)\n", TENET_VERSION, TENET_SOURCE_DIGEST);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(cmd, commands[i].name) != 0) continue;
    tn_err_t err = {0};
    if (tn_thread_env_check(&err) != TN_OK) return cli_report(cmd, &err);
    if (tn_mem_env_check(&err) != TN_OK) return cli_report(cmd, &err);
    return commands[i].run(argc - 1, argv + 1);
  }
  const char *best =
      tn_suggest(cmd, commands, sizeof commands / sizeof commands[0], sizeof commands[0]);
  if (best)
    fprintf(stderr, "tenet: unknown command '%s' (did you mean '%s'?)\n", cmd, best);
  else
    fprintf(stderr, "tenet: unknown command '%s' (see 'tenet --help')\n", cmd);
  return 1;
}

/* A standard stream the shell closed (`>&-`) is reopened on /dev/null in the direction that
 * fails: otherwise the first file a command opens would take its number and receive what
 * the command prints, and the failed writes could not be seen. */
static void guard_std_streams(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
      if (got >= 0 && got != fd) close(got);
    }
}

/* The one owner of the rule "every write to standard output is checked": a table or a
 * JSON object that did not all reach a full disk, a closed pipe or a closed stream turns a
 * success into exit 1 with the reason. */
static int finish_stdout(const char *cmd, int rc) {
  errno = 0;
  bool lost = ferror(stdout) != 0;
  if (fflush(stdout) != 0) lost = true;
  if (!lost) return rc;
  int why = errno;
  /* A write that failed while the command ran left no errno behind: an empty write
   * usually meets the same refusal again (a full device, a closed stream). */
  if (why == 0 && write(STDOUT_FILENO, "", 0) < 0) why = errno;
  fprintf(stderr, "tenet %s: standard output: %s\n", cmd,
          why ? strerror(why) : "write error (output lost)");
  return rc == 0 ? 1 : rc;
}

/* SIGINT, SIGTERM and SIGHUP end the process as they would, but first remove the
 * temporaries of outputs being written and put back the files they were replacing
 * (tn_cleanup_on_signal: only unlink and rename of names prepared beforehand). */
static void on_fatal_signal(int sig) {
  tn_cleanup_on_signal();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_signal_cleanup(void) {
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    /* A signal the parent set to be ignored (nohup's SIGHUP) stays ignored. */
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
      sigaction(sigs[i], &sa, NULL);
  }
}

int cli_main(int argc, char **argv) {
  tn_alloc_setup();
  guard_std_streams();
  install_signal_cleanup();
  int rc = dispatch(argc, argv);
  return finish_stdout(argc >= 2 ? argv[1] : "", rc);
}
