/* tests/unit/test_common.c — common/: size parsing (units, overflow, lists, ranges), the
 * link transfer-time formula, all-or-nothing output files, first-error-wins errors and
 * the small helpers every module leans on. */
#include "testutil.h"

#include <dirent.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"

static tn_err_t tu_err_;

static uint64_t size_of(const char *s) {
  uint64_t v = 0;
  tn_err_clear(&tu_err_);
  TU_OK(tn_parse_size(s, &v, &tu_err_));
  return v;
}

static void size_rejected(const char *s, const char *frag) {
  uint64_t v = 7;
  tn_err_t err = {0};
  assert_int_equal(tn_parse_size(s, &v, &err), TN_INVAL);
  if (strstr(err.msg, frag) == NULL) fail_msg("'%s' -> '%s' lacks '%s'", s, err.msg, frag);
}

static void parse_size_reads_decimal_and_binary_units(void **state) {
  (void)state;
  assert_int_equal(size_of("0"), 0);
  assert_int_equal(size_of("1024"), 1024);
  assert_int_equal(size_of("5B"), 5);
  assert_int_equal(size_of("1KB"), 1000);
  assert_int_equal(size_of("3MB"), 3000000);
  assert_int_equal(size_of("2GB"), 2000000000ull);
  assert_int_equal(size_of("1KiB"), 1024);
  assert_int_equal(size_of("64MiB"), 64ull << 20);
  assert_int_equal(size_of("1GiB"), 1ull << 30);
  assert_int_equal(size_of("2TiB"), 2ull << 40);
}

static void parse_size_rejects_overflow_and_bad_units(void **state) {
  (void)state;
  size_rejected("", "empty size");
  size_rejected("-1", "must start with a digit");
  size_rejected("KB", "must start with a digit");
  size_rejected("99999999999999999999", "too large");
  size_rejected("20000000TiB", "too large");
  size_rejected("5XB", "unknown unit 'XB'");
  size_rejected("1.5KB", "unknown unit '.5KB'");
  size_rejected("12 MB", "unknown unit ' MB'");
}

static void parse_size_list_reads_lists_and_ranges(void **state) {
  (void)state;
  uint64_t *v = NULL;
  size_t n = 0;
  TU_OK(tn_parse_size_list("1KiB,4KiB,1MB", &v, &n, &tu_err_));
  assert_int_equal(n, 3);
  assert_int_equal(v[0], 1024);
  assert_int_equal(v[1], 4096);
  assert_int_equal(v[2], 1000000);
  free(v);
  TU_OK(tn_parse_size_list("1KiB..1MiB", &v, &n, &tu_err_));
  assert_int_equal(n, 11); /* powers of two from 2^10 to 2^20 */
  assert_int_equal(v[0], 1024);
  assert_int_equal(v[10], 1u << 20);
  free(v);
  tn_err_t err = {0};
  assert_int_equal(tn_parse_size_list("8KiB..1KiB", &v, &n, &err), TN_INVAL);
  assert_null(v);
  assert_non_null(strstr(err.msg, "8KiB..1KiB"));
  tn_err_clear(&err);
  assert_int_equal(tn_parse_size_list("1KiB,zz", &v, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "'zz'"));
  tn_err_clear(&err);
  assert_int_equal(tn_parse_size_list(",", &v, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "empty size list"));
  /* A range stops only where doubling lands: 3MiB would have been dropped silently. */
  tn_err_clear(&err);
  assert_int_equal(tn_parse_size_list("1KiB..3MiB", &v, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "never reaches 3MiB (end it at 2MiB"));
  TU_OK(tn_parse_size_list("3KiB..12KiB", &v, &n, &tu_err_));
  assert_int_equal(n, 3);
  free(v);
}

static void fmt_size_prints_compact_binary_units(void **state) {
  (void)state;
  char buf[32];
  assert_string_equal(tn_fmt_size(1u << 20, buf, sizeof buf), "1MiB");
  assert_string_equal(tn_fmt_size(65536, buf, sizeof buf), "64KiB");
  assert_string_equal(tn_fmt_size(1000, buf, sizeof buf), "1000B");
}

static void xfer_ps_uses_gib_per_second(void **state) {
  (void)state;
  /* 2^30 bytes at 1 GB/s (= 2^30 B/s) take one second. */
  assert_int_equal(tu_xfer_ps(1ull << 30, 1.0), 1000000000000ull);
  /* 1 MiB at 50 GB/s: 2^20 / (50 * 2^30) s = 19531250 ps exactly. */
  assert_int_equal(tu_xfer_ps(1u << 20, 50.0), 19531250ull);
  /* One byte at 50 GB/s is 18.6 ps: rounded to the nearest. */
  assert_int_equal(tu_xfer_ps(1, 50.0), 19);
  assert_true(tn_gbps(1ull << 30, 1000000000000ull) == 1.0);
  assert_true(tn_gbps(5, 0) == 0.0);
}

/* A time past 2^62 ps is refused, never capped or wrapped: the transfer, the sum, the
 * conversion of a bound. */
static void time_arithmetic_refuses_what_passes_2_to_the_62_ps(void **state) {
  (void)state;
  uint64_t ps = 7;
  /* 2^62 ps at 1 GB/s is 2^62 / 1e12 * 2^30 bytes, about 4.95e15. */
  assert_true(tn_xfer_ps(4000000000000000ull, 1.0, &ps));
  uint64_t fits = ps; /* 3.725e18 */
  assert_true(fits > 3700000000000000000ull && fits < TN_TIME_MAX_PS);
  assert_false(tn_xfer_ps(5000000000000000ull, 1.0, &ps));
  assert_false(tn_xfer_ps(UINT64_MAX, 50.0, &ps));
  assert_false(tn_xfer_ps(1ull << 30, 1e-9, &ps)); /* 31 years */
  assert_false(tn_xfer_ps(1, 0.0, &ps));
  assert_int_equal(ps, fits); /* untouched by the refusals */
  assert_true(tn_time_add(TN_TIME_MAX_PS - 1, 1, &ps) && ps == TN_TIME_MAX_PS);
  assert_false(tn_time_add(TN_TIME_MAX_PS, 1, &ps));
  assert_false(tn_time_add(UINT64_MAX, UINT64_MAX, &ps));
  assert_true(tn_time_from_double(1.9, &ps) && ps == 1);
  assert_false(tn_time_from_double(1.8e19, &ps));
  assert_false(tn_time_from_double(NAN, &ps));
  assert_false(tn_time_from_double(-1.0, &ps));
  tn_err_t err = {0};
  assert_int_equal(tn_time_overflow(&err, "sending %d bytes", 5), TN_INVAL);
  assert_string_equal(err.msg, "sending 5 bytes passes 2^62 ps (53.4 days), the longest time "
                               "tenet computes with");
}

static void parse_numbers_check_ranges(void **state) {
  (void)state;
  uint64_t u = 0;
  double d = 0;
  tn_err_t err = {0};
  TU_OK(tn_parse_u64("42", 1, 100, "--seed", &u, &tu_err_));
  assert_int_equal(u, 42);
  assert_int_equal(tn_parse_u64("420", 1, 100, "--chunks", &u, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--chunks"));
  tn_err_clear(&err);
  assert_int_equal(tn_parse_u64("4x", 1, 100, "--chunks", &u, &err), TN_INVAL);
  tn_err_clear(&err);
  TU_OK(tn_parse_double("2.5", 0, 10, "--bandwidth", &d, &tu_err_));
  assert_true(d == 2.5);
  assert_int_equal(tn_parse_double("nan", 0, 10, "--bandwidth", &d, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--bandwidth"));
  tn_err_clear(&err);
  assert_int_equal(tn_parse_double("11", 0, 10, "--latency", &d, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "out of range"));
}

/* A message far longer than the struct keeps its start (the item) and its end (the
 * reason), and is one line. */
static void err_keeps_the_reason_of_an_overlong_message(void **state) {
  (void)state;
  size_t n = 3 * TN_ERR_MSG_MAX;
  char *path = malloc(n + 1);
  assert_non_null(path);
  memset(path, 'd', n);
  memcpy(path, "/start", 6);
  path[n] = '\0';
  tn_err_t err = {0};
  assert_int_equal(tn_err_set(&err, TN_IO, "%s: cannot write: No space left on device", path),
                   TN_IO);
  assert_true(strlen(err.msg) < sizeof err.msg);
  assert_true(strncmp(err.msg, "/start", 6) == 0);
  assert_non_null(strstr(err.msg, "..."));
  size_t len = strlen(err.msg);
  const char *tail = ": cannot write: No space left on device";
  assert_string_equal(err.msg + len - strlen(tail), tail);
  /* A prefix added later keeps the reason too. */
  tn_err_prefix(&err, "%s", path);
  len = strlen(err.msg);
  assert_string_equal(err.msg + len - strlen(tail), tail);
  free(path);
}

/* Third-party messages span lines; ours never do. */
static void err_folds_a_multiline_message_into_one_line(void **state) {
  (void)state;
  tn_err_t err = {0};
  tn_err_set(&err, TN_PARSE, "x.xml:3: %s", "Opening and ending tag mismatch\n<a>\n ^\n");
  assert_string_equal(err.msg, "x.xml:3: Opening and ending tag mismatch <a>  ^");
  char small[8];
  tn_fit_line(small, sizeof small, "abcdefghij");
  assert_string_equal(small, "a...hij");
  /* A cut never splits a UTF-8 character: "é" is two bytes. */
  tn_fit_line(small, sizeof small, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  assert_string_equal(small, "...\xc3\xa9");
}

static void err_first_error_wins(void **state) {
  (void)state;
  tn_err_t err = {0};
  assert_int_equal(tn_err_set(&err, TN_PARSE, "first %d", 1), TN_PARSE);
  assert_int_equal(tn_err_set(&err, TN_IO, "second"), TN_IO);
  assert_int_equal(err.status, TN_PARSE);
  assert_string_equal(err.msg, "first 1");
  tn_err_prefix(&err, "f.json");
  assert_string_equal(err.msg, "f.json: first 1");
  tn_err_clear(&err);
  assert_int_equal(err.status, TN_OK);
  tn_err_prefix(&err, "ignored");
  assert_string_equal(err.msg, "");
  assert_int_equal(tn_err_set(NULL, TN_NOMEM, "x"), TN_NOMEM);
  assert_int_equal(tn_status_exit_code(TN_PARSE), 1);
  assert_int_equal(tn_status_exit_code(TN_INFEASIBLE), 2);
  assert_int_equal(tn_status_exit_code(TN_INTERNAL), 3);
  assert_string_equal(tn_status_str(TN_NOMEM), "out of memory");
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n;
}

static void outfile_commit_and_abort_leave_no_partial_file(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_outfile");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  tn_outfile_t o;
  TU_OK(tn_outfile_open(&o, path, &tu_err_));
  fputs("hello", o.f);
  /* Before the commit the real name does not exist, only the temporary. */
  assert_null(fopen(path, "r"));
  TU_OK(tn_outfile_commit(&o, &tu_err_));
  char *data = NULL;
  size_t len = 0;
  TU_OK(tn_read_file(path, 100, &data, &len, &tu_err_));
  assert_string_equal(data, "hello");
  free(data);
  assert_int_equal(count_entries(dir), 1);
  /* An aborted rewrite keeps the old file and leaves no temporary behind. */
  TU_OK(tn_outfile_open(&o, path, &tu_err_));
  fputs("partial", o.f);
  tn_outfile_abort(&o);
  TU_OK(tn_read_file(path, 100, &data, &len, &tu_err_));
  assert_string_equal(data, "hello");
  free(data);
  assert_int_equal(count_entries(dir), 1);
  tn_outfile_abort(&o); /* a second abort is harmless */
  /* Opening in a missing folder fails and names the path. */
  tn_err_t err = {0};
  char bad[1200];
  snprintf(bad, sizeof bad, "%s/no/such/dir/x", dir);
  assert_int_equal(tn_outfile_open(&o, bad, &err), TN_IO);
  assert_non_null(strstr(err.msg, bad));
}

/* A pid no process has any more: a child that has exited and been reaped. */
static long dead_pid(void) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return (long)pid;
}

static void touch(const char *path) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("x", f);
  assert_int_equal(fclose(f), 0);
}

/* A killed writer's temporary of an output (and only that) goes when the output is opened
 * again; a running process's stays. */
static void outfile_open_removes_the_stale_temporaries_of_its_target(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_stale");
  char path[1100], dead_tmp[1200], live_tmp[1200], other[1200];
  snprintf(path, sizeof path, "%s/result.json", dir);
  long dead = dead_pid();
  snprintf(dead_tmp, sizeof dead_tmp, "%s.tmp.%ld", path, dead);
  snprintf(live_tmp, sizeof live_tmp, "%s.tmp.%ld", path, (long)getppid());
  snprintf(other, sizeof other, "%s/summary.json.tmp.%ld", dir, dead);
  touch(dead_tmp), touch(live_tmp), touch(other);
  tn_outfile_t o;
  TU_OK(tn_outfile_open(&o, path, &tu_err_));
  fputs("{}", o.f);
  TU_OK(tn_outfile_commit(&o, &tu_err_));
  struct stat sb;
  assert_int_equal(stat(dead_tmp, &sb), -1);
  assert_int_equal(stat(live_tmp, &sb), 0);
  assert_int_equal(stat(other, &sb), 0);
  size_t removed = 0;
  TU_OK(tn_out_clean_stale(other, NULL, &removed, &tu_err_)); /* its own stem is "…tmp.N" */
  assert_int_equal(removed, 0);
  snprintf(path, sizeof path, "%s/summary.json", dir);
  TU_OK(tn_out_clean_stale(path, NULL, &removed, &tu_err_));
  assert_int_equal(removed, 1);
}

/* What a fatal signal's handler does with a registration: the temporaries are unlinked and
 * each backup that still exists is renamed back over its target. (In a child: the handler
 * marks the process as ending.) */
static void cleanup_on_signal_unlinks_temporaries_and_puts_backups_back(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_cleanup");
  static char tmp0[1100], tmp1[1100], bak0[1100], bak1[1100], tgt0[1100], tgt1[1100];
  snprintf(tmp0, sizeof tmp0, "%s/x.0.et.tmp.1", dir);
  snprintf(tmp1, sizeof tmp1, "%s/x.1.et.tmp.1", dir);
  snprintf(bak0, sizeof bak0, "%s/x.0.et.old.1", dir);
  snprintf(bak1, sizeof bak1, "%s/x.1.et.old.1", dir); /* never made: rank 1 had no file */
  snprintf(tgt0, sizeof tgt0, "%s/x.0.et", dir);
  snprintf(tgt1, sizeof tgt1, "%s/x.1.et", dir);
  touch(tmp0), touch(tmp1), touch(bak0), touch(tgt0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *tmps[] = {tmp0, tmp1}, *baks[] = {bak0, bak1}, *tgts[] = {tgt0, tgt1};
    const tn_cleanup_t c = {2, tmps, baks, tgts};
    if (tn_cleanup_register(&c) < 0 || !tn_cleanup_begin()) _exit(2);
    tn_cleanup_end();
    tn_cleanup_on_signal();
    _exit(tn_cleanup_begin() ? 3 : 0); /* nothing may be created any more */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat sb;
  assert_int_equal(stat(tmp0, &sb), -1);
  assert_int_equal(stat(tmp1, &sb), -1);
  assert_int_equal(stat(bak0, &sb), -1);
  assert_int_equal(stat(tgt0, &sb), 0); /* the backup, back in place */
  assert_int_equal(stat(tgt1, &sb), -1);
}

/* tn_out_plan: where every output goes. */
static void out_plan_follows_links_writes_devices_in_place_and_refuses_directories(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_out_plan");
  char path[1200], link[1200], link2[1200], fifo[1200];
  char *target = NULL, *tmp = NULL;
  /* A new regular file: a temporary next to it. */
  snprintf(path, sizeof path, "%s/a.json", dir);
  TU_OK(tn_out_plan(path, &target, &tmp, &tu_err_));
  assert_string_equal(target, path);
  assert_non_null(tmp);
  assert_true(strncmp(tmp, path, strlen(path)) == 0 && strstr(tmp, ".tmp.") != NULL);
  free(target), free(tmp);
  /* A chain of links, relative ones included, to a file that does not exist yet: the
   * file at the end is the target, its temporary next to it. */
  snprintf(link, sizeof link, "%s/l1", dir);
  snprintf(link2, sizeof link2, "%s/l2", dir);
  assert_int_equal(symlink("l2", link), 0);
  assert_int_equal(symlink(path, link2), 0);
  TU_OK(tn_out_plan(link, &target, &tmp, &tu_err_));
  assert_string_equal(target, path);
  assert_true(strncmp(tmp, path, strlen(path)) == 0);
  free(target), free(tmp);
  /* A device and a FIFO are written straight into. */
  TU_OK(tn_out_plan("/dev/null", &target, &tmp, &tu_err_));
  assert_string_equal(target, "/dev/null");
  assert_null(tmp);
  free(target);
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  TU_OK(tn_out_plan(fifo, &target, &tmp, &tu_err_));
  assert_null(tmp);
  free(target);
  /* A directory, a name ending in '/', "/" and "" are refused, naming the path. */
  const char *bad[] = {dir, "/", "", "no/such/dir/"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tn_err_t err = {0};
    assert_int_equal(tn_out_plan(bad[i], &target, &tmp, &err), TN_INVAL);
    assert_null(target);
    assert_null(tmp);
    assert_non_null(strstr(err.msg, "is a directory"));
    if (bad[i][0]) assert_non_null(strstr(err.msg, bad[i]));
  }
  /* A loop of links is an error, not a hang. */
  snprintf(link, sizeof link, "%s/loop", dir);
  assert_int_equal(symlink("loop", link), 0);
  tn_err_t err = {0};
  assert_int_equal(tn_out_plan(link, &target, &tmp, &err), TN_IO);
  assert_non_null(strstr(err.msg, "loop"));
}

static void outfile_replaces_what_a_link_names_and_keeps_the_link(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_outfile_link");
  char real[1200], link[1200];
  snprintf(real, sizeof real, "%s/real.txt", dir);
  snprintf(link, sizeof link, "%s/link.txt", dir);
  FILE *f = fopen(real, "w");
  assert_non_null(f);
  fputs("old", f);
  fclose(f);
  assert_int_equal(symlink("real.txt", link), 0);
  tn_outfile_t o;
  TU_OK(tn_outfile_open(&o, link, &tu_err_));
  fputs("new", o.f);
  TU_OK(tn_outfile_commit(&o, &tu_err_));
  struct stat sb;
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  char *data = NULL;
  size_t len = 0;
  TU_OK(tn_read_file(real, 100, &data, &len, &tu_err_));
  assert_string_equal(data, "new");
  free(data);
  assert_int_equal(count_entries(dir), 2);
}

/* /dev/full stays a device, and the failed write is reported with its reason. */
static void outfile_writes_into_a_device_and_reports_a_full_one(void **state) {
  (void)state;
  tn_outfile_t o;
  TU_OK(tn_outfile_open(&o, "/dev/null", &tu_err_));
  assert_null(o.tmp);
  fputs("gone", o.f);
  TU_OK(tn_outfile_commit(&o, &tu_err_));
  struct stat sb;
  if (stat("/dev/full", &sb) != 0) skip();
  TU_OK(tn_outfile_open(&o, "/dev/full", &tu_err_));
  fputs("never fits", o.f);
  tn_err_t err = {0};
  assert_int_equal(tn_outfile_commit(&o, &err), TN_IO);
  assert_non_null(strstr(err.msg, "/dev/full: write failed: No space left on device"));
  assert_int_equal(stat("/dev/full", &sb), 0);
  assert_true(S_ISCHR(sb.st_mode));
}

static void mkdir_parents_refuses_a_directory_name_before_creating_anything(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_mkdir");
  char path[1200];
  snprintf(path, sizeof path, "%s/a/b/", dir);
  tn_err_t err = {0};
  assert_int_equal(tn_mkdir_parents(path, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "is a directory"));
  assert_int_equal(count_entries(dir), 0);
}

/* UTF-8: what names must be, and what JSON writers make of anything else. */
static void utf8_check_and_repair_follow_the_standard(void **state) {
  (void)state;
  assert_int_equal(tn_utf8_char_len("a", 1), 1);
  assert_int_equal(tn_utf8_char_len("\xc3\xa9", 2), 2);
  assert_int_equal(tn_utf8_char_len("\xe2\x82\xac", 3), 3);
  assert_int_equal(tn_utf8_char_len("\xf0\x9f\x98\x80", 4), 4);
  assert_int_equal(tn_utf8_char_len("\xff", 1), 0);             /* never in UTF-8 */
  assert_int_equal(tn_utf8_char_len("\x80", 1), 0);             /* a stray continuation */
  assert_int_equal(tn_utf8_char_len("\xc0\xaf", 2), 0);         /* overlong '/' */
  assert_int_equal(tn_utf8_char_len("\xed\xa0\x80", 3), 0);     /* a UTF-16 surrogate */
  assert_int_equal(tn_utf8_char_len("\xf4\x90\x80\x80", 4), 0); /* past U+10FFFF */
  assert_int_equal(tn_utf8_char_len("\xe2\x82", 2), 0);         /* cut short */
  size_t bad = 99;
  assert_true(tn_text_ok("r\xc3\xa9seau-8", false, &bad));
  assert_false(tn_text_ok("ab\xff", false, &bad));
  assert_int_equal(bad, 2);
  assert_false(tn_text_ok("a\nb", false, &bad));
  assert_int_equal(bad, 1);
  assert_true(tn_text_ok("a\nb", true, NULL));
  assert_false(tn_text_ok("a\x7f", false, NULL));
  char *out = NULL;
  size_t len = 0;
  TU_OK(tn_utf8_repair("a\xff\xc3\xa9\xe2\x82", 6, &out, &len, &tu_err_));
  assert_string_equal(out, "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
  assert_int_equal(len, strlen(out));
  assert_true(tn_text_ok(out, false, NULL));
  free(out);
}

static void read_file_enforces_its_cap(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_read");
  char path[1100];
  snprintf(path, sizeof path, "%s/big", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < 100; i++)
    fputs("0123456789", f);
  fclose(f);
  char *data = NULL;
  size_t len = 0;
  tn_err_t err = {0};
  assert_int_equal(tn_read_file(path, 999, &data, &len, &err), TN_LIMIT);
  assert_null(data);
  assert_non_null(strstr(err.msg, path));
  TU_OK(tn_read_file(path, 1000, &data, &len, &tu_err_));
  assert_int_equal(len, 1000);
  free(data);
  tn_err_clear(&err);
  assert_int_equal(tn_read_file("/nonexistent/x", 10, &data, &len, &err), TN_IO);
}

/* The one input rule: a FIFO is refused without blocking (its open would wait for a
 * writer), so are a device and a directory; a regular file opens. */
static void input_open_refuses_what_is_not_a_regular_file(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("common_input");
  char fifo[1100], reg[1100];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  snprintf(reg, sizeof reg, "%s/reg", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  FILE *f = fopen(reg, "w");
  assert_non_null(f);
  fputs("x", f);
  fclose(f);
  const struct {
    const char *path, *why;
  } refused[] = {{fifo, "a FIFO, not a regular file"},
                 {"/dev/null", "a character device, not a regular file"},
                 {dir, "a directory, not a regular file"}};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    tn_err_t err = {0};
    assert_int_equal(tn_input_open(refused[i].path, &f, &err), TN_INVAL);
    assert_null(f);
    assert_non_null(strstr(err.msg, refused[i].path));
    assert_non_null(strstr(err.msg, refused[i].why));
    tn_err_t err2 = {0};
    assert_int_equal(tn_input_check(refused[i].path, &err2), TN_INVAL);
    assert_string_equal(err.msg, err2.msg);
    char *data = NULL;
    size_t len = 0;
    tn_err_t err3 = {0};
    assert_int_equal(tn_read_file(refused[i].path, 10, &data, &len, &err3), TN_INVAL);
    assert_string_equal(err.msg, err3.msg);
  }
  TU_OK(tn_input_open(reg, &f, &tu_err_));
  assert_int_equal(fgetc(f), 'x');
  fclose(f);
  TU_OK(tn_input_check(reg, &tu_err_));
  tn_err_t err = {0};
  assert_int_equal(tn_input_check("/nonexistent/x", &err), TN_IO);
  assert_non_null(strstr(err.msg, "/nonexistent/x: cannot open"));
}

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#if defined(__GLIBC__) && !defined(TEST_ASAN)
/* In a child: tn_alloc_setup, under an address-space limit when limited; exits 0 when the
 * main arena then holds the reserved GiB (or, limited, does not), and arrays of their own
 * mapping (advised to use huge pages) still come zeroed and grow with a zeroed tail. */
static int setup_child(bool limited) {
  if (limited) {
    struct rlimit r = {(rlim_t)64 << 30, (rlim_t)64 << 30};
    if (setrlimit(RLIMIT_AS, &r) != 0) return 10;
  }
  tn_alloc_setup();
  struct mallinfo2 mi = mallinfo2();
  bool reserved = mi.arena >= TN_ALLOC_HUGE_HEAP_BYTES;
  if (reserved == limited) return 11;
  tn_err_t err = {0};
  unsigned char *p = NULL;
  size_t n = TN_ALLOC_OWN_MAP_BYTES + 12345;
  if (tn_calloc(n, 1, &p, &err) != TN_OK) return 12;
  for (size_t i = 0; i < n; i += 4093)
    if (p[i]) return 13;
  memset(p, 0xab, n);
  if (tn_realloc(&p, n, 2 * n, 1, &err) != TN_OK) return 14;
  if (p[n - 1] != 0xab || p[n] != 0 || p[2 * n - 1] != 0) return 15;
  free(p);
  return 0;
}
#endif

/* A tenet process's allocator setup reserves the heap's first GiB for huge pages only
 * where that takes nothing from it: not under a limit on its address space (a run that
 * fitted the limit could fail). Checked where the test itself runs unlimited, with
 * overcommit not strict and outside AddressSanitizer (which the setup leaves alone). */
static void alloc_setup_reserves_only_without_a_limit(void **state) {
  (void)state;
#if defined(__GLIBC__) && !defined(TEST_ASAN)
  struct rlimit as, data;
  assert_int_equal(getrlimit(RLIMIT_AS, &as), 0);
  assert_int_equal(getrlimit(RLIMIT_DATA, &data), 0);
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = 0;
  if (f) {
    if (fscanf(f, "%d", &mode) != 1) mode = 2;
    fclose(f);
  }
  if (as.rlim_cur != RLIM_INFINITY || data.rlim_cur != RLIM_INFINITY || mode == 2) skip();
  for (int limited = 0; limited < 2; limited++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(setup_child(limited));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
      fail_msg("%s: the child's check %d failed", limited ? "limited" : "unlimited",
               WEXITSTATUS(status));
  }
#else
  skip();
#endif
}

static void alloc_and_arithmetic_detect_overflow(void **state) {
  (void)state;
  uint64_t r = 0;
  assert_false(tn_mul_u64(UINT64_MAX / 2 + 1, 2, &r));
  assert_true(tn_mul_u64(3, 4, &r) && r == 12);
  assert_false(tn_add_u64(UINT64_MAX, 1, &r));
  void *p = NULL;
  tn_err_t err = {0};
  assert_int_equal(tn_calloc(SIZE_MAX / 2, 4, &p, &err), TN_NOMEM);
  assert_null(p);
  tn_vec_t v;
  tn_vec_init(&v, sizeof(uint32_t));
  for (uint32_t i = 0; i < 1000; i++)
    TU_OK(tn_vec_push(&v, &i, &tu_err_));
  assert_int_equal(v.len, 1000);
  assert_int_equal(TN_VEC_AT(&v, uint32_t, 999), 999);
  tn_vec_free(&v);
}

static void rng_and_collectives_are_deterministic(void **state) {
  (void)state;
  tn_rng_t a, b;
  tn_rng_seed(&a, 7);
  tn_rng_seed(&b, 7);
  for (int i = 0; i < 100; i++)
    assert_int_equal(tn_rng_next(&a), tn_rng_next(&b));
  for (int i = 0; i < 100; i++)
    assert_true(tn_rng_below(&a, 10) < 10);
  tn_coll_t c;
  TU_OK(tn_coll_parse("all-reduce", &c, &tu_err_));
  assert_int_equal(c, TN_ALLREDUCE);
  assert_string_equal(tn_coll_name(TN_REDUCESCATTER), "reducescatter");
  tn_err_t err = {0};
  assert_int_equal(tn_coll_parse("allgahter", &c, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "allgahter"));
  assert_true(tn_coll_busbw_factor(TN_ALLREDUCE, 4) == 1.5);
  assert_true(tn_coll_busbw_factor(TN_ALLGATHER, 4) == 0.75);
  assert_true(tn_coll_busbw_factor(TN_ALLTOALL, 4) == 0.75);
  /* MSCCL's and NCCL's spellings. */
  static const struct {
    const char *s;
    tn_coll_t c;
  } names[] = {
      {"reduce_scatter", TN_REDUCESCATTER}, {"all_gather", TN_ALLGATHER}, {"alltoall", TN_ALLTOALL},
      {"all-to-all", TN_ALLTOALL},          {"all_to_all", TN_ALLTOALL},  {"a2a", TN_ALLTOALL}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    TU_OK(tn_coll_parse(names[i].s, &c, &tu_err_));
    assert_int_equal(c, names[i].c);
  }
  assert_string_equal(tn_coll_name(TN_ALLTOALL), "alltoall");
  assert_int_equal(tn_coll_parse("all--", &c, &err), TN_INVAL);
  uint64_t space;
  assert_true(tn_coll_space(TN_ALLTOALL, 8, 1000, &space) && space == 8000);
  assert_true(tn_coll_space(TN_ALLGATHER, 8, 1000, &space) && space == 1000);
  assert_false(tn_coll_space(TN_ALLTOALL, 8, UINT64_MAX / 4, &space));
}

static void suggest_finds_the_nearest_plausible_name_in_strings_and_tables(void **state) {
  (void)state;
  static const char *const names[] = {"ring", "mesh", "torus", "switch"};
  assert_string_equal(tn_suggest("tours", names, 4, sizeof *names), "torus");
  assert_string_equal(tn_suggest("rng", names, 4, sizeof *names), "ring");
  assert_null(tn_suggest("hypercube", names, 4, sizeof *names));
  assert_null(tn_suggest("fc", names, 4, sizeof *names)); /* 3 letters or fewer: 1 edit */
  static const struct {
    const char *name;
    int value;
  } table[] = {{"synth", 1}, {"sim", 2}, {"verify", 3}};
  assert_string_equal(tn_suggest("verfy", table, 3, sizeof *table), "verify");
  assert_string_equal(tn_suggest("sin", table, 3, sizeof *table), "sim");
  assert_null(tn_suggest("x", table, 0, sizeof *table));
}

static void edit_distance_counts_single_edits_and_caps_long_words(void **state) {
  (void)state;
  assert_int_equal(tn_edit_distance("", ""), 0);
  assert_int_equal(tn_edit_distance("ring", "ring"), 0);
  assert_int_equal(tn_edit_distance("rng", "ring"), 1);    /* insertion */
  assert_int_equal(tn_edit_distance("sizes", "size"), 1);  /* deletion */
  assert_int_equal(tn_edit_distance("tours", "torus"), 2); /* transposition = 2 edits */
  assert_int_equal(tn_edit_distance("mesh", "ring"), 4);
  assert_int_equal(tn_edit_distance("", "abc"), 3);
  char w64[65], w65[66];
  memset(w64, 'a', 64);
  w64[64] = '\0';
  memset(w65, 'a', 65);
  w65[65] = '\0';
  assert_int_equal(tn_edit_distance(w64, w64), 0);
  assert_true(tn_edit_distance(w65, "a") == SIZE_MAX);
}

/* tn_parallel_for: every item exactly once, worker ids below the count used. */
typedef struct par_ctx {
  unsigned hits[1000];
  unsigned worker_of[1000];
} par_ctx_t;

static void par_item(void *ctx, size_t i, unsigned worker) {
  par_ctx_t *c = ctx;
  c->hits[i]++;
  c->worker_of[i] = worker;
}

static void parallel_for_runs_every_item_once(void **state) {
  (void)state;
  static const unsigned threads[] = {0, 1, 2, 7, 64, 100};
  static const size_t sizes[] = {0, 1, 3, 1000};
  static par_ctx_t c;
  for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
      memset(&c, 0, sizeof c);
      unsigned used = tn_parallel_for(sizes[z], threads[t], par_item, &c);
      assert_true(used >= 1 && used <= (threads[t] ? threads[t] : 1));
      for (size_t i = 0; i < sizes[z]; i++) {
        assert_int_equal(c.hits[i], 1);
        assert_true(c.worker_of[i] < used);
      }
    }
  setenv("TENET_THREADS", "3", 1);
  assert_int_equal(tn_thread_count(), 3);
  setenv("TENET_THREADS", "0", 1); /* out of range: ignored */
  unsigned n = tn_thread_count();
  assert_true(n >= 1 && n <= 8);
  setenv("TENET_THREADS", "2x", 1);
  assert_int_equal(tn_thread_count(), n);
  unsetenv("TENET_THREADS");
}

/* tn_thread_limit caps the count on the calling thread only, and gives back the cap it
 * replaced; 0 lifts it. */
static void thread_limit_caps_the_calling_thread(void **state) {
  (void)state;
  setenv("TENET_THREADS", "4", 1);
  assert_int_equal(tn_thread_limit(1), 0);
  assert_int_equal(tn_thread_count(), 1);
  assert_int_equal(tn_thread_limit(8), 1); /* a cap above the count leaves the count */
  assert_int_equal(tn_thread_count(), 4);
  assert_int_equal(tn_thread_limit(0), 8);
  assert_int_equal(tn_thread_count(), 4);
  unsetenv("TENET_THREADS");
}

/* The one thread term: nothing more with one thread, beside_pct percent of the work more
 * with two or more, the same figures every call, and no wrap-around. */
static void mem_threads_adds_the_share_beside_from_two_threads(void **state) {
  (void)state;
  uint64_t base = 8u << 20, work = 100u << 20;
  assert_true(tn_mem_threads(base, work, 25, 1) == base + work);
  assert_true(tn_mem_threads(base, work, 25, 2) == base + work + (25u << 20));
  assert_true(tn_mem_threads(base, work, 25, 8) == tn_mem_threads(base, work, 25, 2));
  assert_true(tn_mem_threads(base, work, 0, 2) == base + work);
  assert_true(tn_mem_threads(base, 199, 50, 2) == base + 199 + 99);
  assert_true(tn_mem_threads(UINT64_MAX - 5, 10, 0, 1) == UINT64_MAX);
  assert_true(tn_mem_threads(0, UINT64_MAX / 2, 300, 2) == UINT64_MAX);
}

/* The CLI refuses a TENET_THREADS that tn_thread_count would ignore, naming the value. */
static void thread_env_check_names_a_bad_value(void **state) {
  (void)state;
  static const char *bad[] = {"0", "1025", "2x", "x", "-3", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tn_err_t err = {0};
    setenv("TENET_THREADS", bad[i], 1);
    assert_int_equal(tn_thread_env_check(&err), TN_INVAL);
    assert_non_null(strstr(err.msg, bad[i]));
    assert_non_null(strstr(err.msg, "1..1024"));
  }
  static const char *good[] = {"1", "2", "1024", ""};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    tn_err_t err = {0};
    setenv("TENET_THREADS", good[i], 1);
    assert_int_equal(tn_thread_env_check(&err), TN_OK);
  }
  unsetenv("TENET_THREADS");
  tn_err_t err = {0};
  assert_int_equal(tn_thread_env_check(&err), TN_OK);
}

static void fnv1a64_matches_reference_values_and_continues(void **state) {
  (void)state;
  /* The published FNV-1a 64 test vectors. */
  assert_true(tn_fnv1a64("", 0, TN_FNV1A64_INIT) == UINT64_C(0xcbf29ce484222325));
  assert_true(tn_fnv1a64("a", 1, TN_FNV1A64_INIT) == UINT64_C(0xaf63dc4c8601ec8c));
  assert_true(tn_fnv1a64("foobar", 6, TN_FNV1A64_INIT) == UINT64_C(0x85944171f73967e8));
  uint64_t h = tn_fnv1a64("foo", 3, TN_FNV1A64_INIT);
  assert_true(tn_fnv1a64("bar", 3, h) == UINT64_C(0x85944171f73967e8));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(suggest_finds_the_nearest_plausible_name_in_strings_and_tables),
      cmocka_unit_test(parse_size_reads_decimal_and_binary_units),
      cmocka_unit_test(thread_limit_caps_the_calling_thread),
      cmocka_unit_test(mem_threads_adds_the_share_beside_from_two_threads),
      cmocka_unit_test(parse_size_rejects_overflow_and_bad_units),
      cmocka_unit_test(parse_size_list_reads_lists_and_ranges),
      cmocka_unit_test(fmt_size_prints_compact_binary_units),
      cmocka_unit_test(xfer_ps_uses_gib_per_second),
      cmocka_unit_test(time_arithmetic_refuses_what_passes_2_to_the_62_ps),
      cmocka_unit_test(parse_numbers_check_ranges),
      cmocka_unit_test(err_first_error_wins),
      cmocka_unit_test(err_keeps_the_reason_of_an_overlong_message),
      cmocka_unit_test(err_folds_a_multiline_message_into_one_line),
      cmocka_unit_test(outfile_commit_and_abort_leave_no_partial_file),
      cmocka_unit_test(utf8_check_and_repair_follow_the_standard),
      cmocka_unit_test(out_plan_follows_links_writes_devices_in_place_and_refuses_directories),
      cmocka_unit_test(outfile_open_removes_the_stale_temporaries_of_its_target),
      cmocka_unit_test(cleanup_on_signal_unlinks_temporaries_and_puts_backups_back),
      cmocka_unit_test(outfile_replaces_what_a_link_names_and_keeps_the_link),
      cmocka_unit_test(outfile_writes_into_a_device_and_reports_a_full_one),
      cmocka_unit_test(mkdir_parents_refuses_a_directory_name_before_creating_anything),
      cmocka_unit_test(read_file_enforces_its_cap),
      cmocka_unit_test(input_open_refuses_what_is_not_a_regular_file),
      cmocka_unit_test(alloc_and_arithmetic_detect_overflow),
      cmocka_unit_test(alloc_setup_reserves_only_without_a_limit),
      cmocka_unit_test(rng_and_collectives_are_deterministic),
      cmocka_unit_test(edit_distance_counts_single_edits_and_caps_long_words),
      cmocka_unit_test(fnv1a64_matches_reference_values_and_continues),
      cmocka_unit_test(parallel_for_runs_every_item_once),
      cmocka_unit_test(thread_env_check_names_a_bad_value),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
