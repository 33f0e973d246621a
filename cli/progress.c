/* cli/progress.c — progress on stderr for long runs (batch, compare, demo): a bar with
 * counts and ETA redrawn in place on a terminal, plain lines (or nothing) otherwise. */
#include "cli/cli.h"

#include <string.h>

void cli_progress_init(cli_progress_t *p, const char *cmd, size_t total, bool tty, bool lines) {
  memset(p, 0, sizeof *p);
  p->cmd = cmd;
  p->total = total;
  p->tty = tty;
  p->lines = lines;
  p->start_s = tn_wall_seconds();
  p->work_total = total;
}

void cli_progress_set_work(cli_progress_t *p, uint64_t work_total) {
  p->work_total = work_total;
}

const char *cli_fmt_duration(double s, char *buf, size_t len) {
  if (s < 0 || s != s) s = 0;
  unsigned long t = (unsigned long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
  return buf;
}

void cli_progress_bar(const cli_progress_t *p, double now_s, char *buf, size_t len) {
  enum { WIDTH = 24 };
  size_t fill = p->total ? p->done * WIDTH / p->total : WIDTH;
  char bar[WIDTH + 1];
  for (size_t i = 0; i < WIDTH; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  char eta[32] = "-:--";
  if (p->work_ran > 0 && p->done < p->total) {
    double per = (now_s - p->start_s) / (double)p->work_ran;
    double left = p->work_done < p->work_total ? (double)(p->work_total - p->work_done) : 0.0;
    cli_fmt_duration(per * left, eta, sizeof eta);
  } else if (p->done == p->total) {
    snprintf(eta, sizeof eta, "0:00");
  }
  char extra[64] = "";
  if (p->failed) snprintf(extra, sizeof extra, ", %zu failed", p->failed);
  snprintf(buf, len, "[%s] %zu/%zu%s  ETA %s", bar, p->done, p->total, extra, eta);
}

void cli_progress_step(cli_progress_t *p, const char *item, bool ok, bool skipped, double seconds) {
  cli_progress_step_work(p, item, ok, skipped, seconds, 1);
}

void cli_progress_step_work(cli_progress_t *p, const char *item, bool ok, bool skipped,
                            double seconds, uint64_t work) {
  cli_progress_step_as(p, item, ok, skipped, NULL, seconds, work);
}

void cli_progress_step_as(cli_progress_t *p, const char *item, bool ok, bool skipped,
                          const char *label, double seconds, uint64_t work) {
  p->done++;
  p->work_done += work;
  if (!skipped) p->work_ran += work;
  if (!ok) p->failed++;
  if (skipped) p->skipped++;
  if (p->tty) {
    char line[160];
    cli_progress_bar(p, tn_wall_seconds(), line, sizeof line);
    fprintf(stderr, "\r\033[K%s %s", line, item ? item : "");
    fflush(stderr);
    p->drawn = true;
  } else if (p->lines) {
    fprintf(stderr, "tenet %s: [%zu/%zu] %s %s", p->cmd, p->done, p->total,
            label     ? label
            : skipped ? "done-before"
            : ok      ? "ok"
                      : "FAILED",
            item ? item : "");
    if (!skipped) fprintf(stderr, " (%.2f s)", seconds);
    fputc('\n', stderr);
  }
}

void cli_progress_finish(cli_progress_t *p) {
  if (p->tty && p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->drawn = false;
}
