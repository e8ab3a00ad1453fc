/*
 * table.c - aligned tables and colors for the output meant for people.
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "table.h"
#include "util.h"

int style_init(struct style *s, const char *when, FILE *f)
{
	const char *no_color = getenv("NO_COLOR");
	int on;

	if (strcmp(when, "always") == 0)
		on = 1;
	else if (strcmp(when, "never") == 0)
		on = 0;
	else if (strcmp(when, "auto") == 0)
		on = isatty(fileno(f)) && (no_color == NULL || no_color[0] == '\0');
	else
		on = -1;
	if (on == 1) {
		*s = (struct style){ "\033[1m", "\033[2m", "\033[31m", "\033[32m", "\033[33m",
		                     "\033[36m", "\033[0m" };
	} else {
		*s = (struct style){ "", "", "", "", "", "", "" };
	}
	return on < 0 ? -1 : 0;
}

struct table_row {
	char      **cells;
	unsigned    n;
	const char *color;
};

struct table {
	unsigned          ncols;
	char             *align;
	struct table_row *rows;
	unsigned          nrows;
	unsigned          cap;
	struct table_row  cur;
};

struct table *table_new(const char *align)
{
	struct table *t = xcalloc(1, sizeof *t);

	t->align = xstrdup(align);
	t->ncols = (unsigned)strlen(align);
	return t;
}

void table_free(struct table *t)
{
	if (t == NULL)
		return;
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned c = 0; c < t->rows[r].n; c++)
			free(t->rows[r].cells[c]);
		free(t->rows[r].cells);
	}
	for (unsigned c = 0; c < t->cur.n; c++)
		free(t->cur.cells[c]);
	free(t->cur.cells);
	free(t->rows);
	free(t->align);
	free(t);
}

void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	va_start(ap, fmt);
	vsnprintf(s, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
	va_end(ap);
	if (n <= 0)
		s[0] = '\0';
	t->cur.cells = xreallocarray(t->cur.cells, t->cur.n + 1, sizeof *t->cur.cells);
	t->cur.cells[t->cur.n++] = s;
}

void table_end_row(struct table *t, const char *color)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->rows = xreallocarray(t->rows, t->cap, sizeof *t->rows);
	}
	t->cur.color = color;
	t->rows[t->nrows++] = t->cur;
	memset(&t->cur, 0, sizeof t->cur);
}

void table_print(const struct table *t, FILE *f, const char *indent, const struct style *s)
{
	size_t *w = xcalloc(t->ncols + 1, sizeof *w);

	for (unsigned r = 0; r < t->nrows; r++)
		for (unsigned c = 0; c < t->rows[r].n && c < t->ncols; c++) {
			size_t l = strlen(t->rows[r].cells[c]);
			if (l > w[c])
				w[c] = l;
		}
	for (unsigned r = 0; r < t->nrows; r++) {
		const struct table_row *row = &t->rows[r];
		const char *color = r == 0 ? s->dim : row->color != NULL ? row->color : "";
		unsigned last = row->n < t->ncols ? row->n : t->ncols;

		/* Trailing empty cells make no padding either. */
		while (last > 0 && row->cells[last - 1][0] == '\0')
			last--;
		fputs(indent, f);
		fputs(color, f);
		for (unsigned c = 0; c < last; c++) {
			const char *cell = row->cells[c];
			int pad = (int)(w[c] - strlen(cell));
			if (c > 0)
				fputs("  ", f);
			if (t->align[c] == 'r')
				fprintf(f, "%*s%s", pad, "", cell);
			else if (c + 1 < last)
				fprintf(f, "%s%*s", cell, pad, "");
			else
				fputs(cell, f);
		}
		if (color[0] != '\0')
			fputs(s->reset, f);
		fputc('\n', f);
	}
	free(w);
}

const char *bcg_human_ns(uint64_t ns, char *buf, size_t len)
{
	double v = (double)ns;

	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", v / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", v / 1e6);
	else
		snprintf(buf, len, "%.2f s", v / 1e9);
	return buf;
}
