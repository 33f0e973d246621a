/* cli/table.c — aligned text tables for the terminal (compare, demo, batch). Cells are
 * copied strings; widths are computed over the header and every row. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

tn_status_t cli_table_init(cli_table_t *t, const char *const *headers, const char *align,
                           size_t ncols, tn_err_t *err) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  t->headers = headers;
  t->align = align;
  tn_vec_init(&t->cells, sizeof(char *));
  return (ncols == 0 || ncols > CLI_TABLE_MAX_COLS || strlen(align) != ncols)
             ? tn_err_set(err, TN_INVAL, "table: %zu columns but alignment '%s'", ncols, align)
             : TN_OK;
}

tn_status_t cli_table_add(cli_table_t *t, const char *const *cells, tn_err_t *err) {
  tn_status_t st = tn_vec_reserve(&t->cells, t->cells.len + t->ncols, err);
  for (size_t c = 0; st == TN_OK && c < t->ncols; c++) {
    char *copy = NULL;
    if ((st = tn_strdup(cells[c] ? cells[c] : "", &copy, err)) == TN_OK)
      st = tn_vec_push(&t->cells, &copy, err); /* cannot fail: reserved above */
  }
  if (st == TN_OK) t->nrows++;
  /* On failure a partial row is dropped: trim the cells pushed so far. */
  while (st != TN_OK && t->cells.len > t->nrows * t->ncols)
    free(TN_VEC_AT(&t->cells, char *, --t->cells.len));
  return st;
}

const char *cli_table_cell(const cli_table_t *t, size_t row, size_t col) {
  return TN_VEC_AT(&t->cells, char *, row * t->ncols + col);
}

size_t cli_table_width(const cli_table_t *t, size_t col) {
  size_t w = strlen(t->headers[col]);
  for (size_t r = 0; r < t->nrows; r++) {
    size_t n = strlen(cli_table_cell(t, r, col));
    if (n > w) w = n;
  }
  return w;
}

static void print_row(const cli_table_t *t, FILE *f, const size_t *w, size_t row, bool header) {
  for (size_t c = 0; c < t->ncols; c++) {
    const char *s = header ? t->headers[c] : cli_table_cell(t, row, c);
    int width = (int)w[c];
    bool last = c + 1 == t->ncols;
    if (t->align[c] == 'r')
      fprintf(f, "%*s", width, s);
    else if (last)
      fputs(s, f); /* no trailing blanks */
    else
      fprintf(f, "%-*s", width, s);
    fputs(last ? "\n" : "  ", f);
  }
}

void cli_table_print(const cli_table_t *t, FILE *f) {
  size_t w[CLI_TABLE_MAX_COLS] = {0};
  size_t total = 0;
  for (size_t c = 0; c < t->ncols; c++)
    total += (w[c] = cli_table_width(t, c)) + 2;
  print_row(t, f, w, 0, true);
  for (size_t i = 0; i + 2 < total; i++)
    fputc('-', f);
  fputc('\n', f);
  for (size_t r = 0; r < t->nrows; r++)
    print_row(t, f, w, r, false);
}

void cli_table_free(cli_table_t *t) {
  if (t == NULL) return;
  for (size_t i = 0; i < t->cells.len; i++)
    free(TN_VEC_AT(&t->cells, char *, i));
  tn_vec_free(&t->cells);
  t->nrows = 0;
}
