/*
 * table.h - output for people: aligned tables and colors.
 *
 * Colors are escape sequences used only when asked for: --color=always,
 * or --color=auto (the default) on a terminal with NO_COLOR unset or
 * empty (https://no-color.org). Widths never count the escapes.
 */
#ifndef BCG_TABLE_H
#define BCG_TABLE_H

#include <stdio.h>

#include "util.h"

struct style {
	const char *bold;
	const char *dim;
	const char *red;
	const char *green;
	const char *yellow;
	const char *cyan;
	const char *reset;
};

/* Fill S for output to F: WHEN is "auto", "always" or "never". Returns -1
 * (S then has no colors) for any other word. */
int style_init(struct style *s, const char *when, FILE *f);

/*
 * A table: cells added row by row, printed with every column as wide as
 * its widest cell. ALIGN has one letter per column, 'l' or 'r'; the last
 * column is never padded, so no line ends in spaces. The first row is the
 * header (printed dim). Allocation failure exits (xmalloc).
 */
struct table;
struct table *table_new(const char *align);
void table_free(struct table *t);
/* Add a cell to the current row. */
void table_cell(struct table *t, const char *fmt, ...) BCG_PRINTF(2, 3);
/* End the current row; COLOR (a style member, may be NULL or "") colors
 * the whole row. */
void table_end_row(struct table *t, const char *color);
/* Print every row, each line starting with INDENT. */
void table_print(const struct table *t, FILE *f, const char *indent, const struct style *s);

/* A duration for people: "850 ns", "12.3 us", "1.25 ms", "2.50 s". */
const char *bcg_human_ns(uint64_t ns, char *buf, size_t len);

#endif /* BCG_TABLE_H */
