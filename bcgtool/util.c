/*
 * util.c - messages and checked allocation for the program.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "util.h"

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "bcgtool: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void bcg_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

void bcg_error_at(const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;
	if (line > 0)
		fprintf(stderr, "bcgtool: %s:%u:%u: ", file, line, col);
	else
		fprintf(stderr, "bcgtool: %s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void bcg_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("note: ", fmt, ap);
	va_end(ap);
}

void bcg_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

static void out_of_memory(size_t n)
{
	fprintf(stderr, "bcgtool: out of memory (allocating %zu bytes)\n", n);
	exit(BCG_EXIT_RUNTIME);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		out_of_memory(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		out_of_memory(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		out_of_memory(n);
	return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		out_of_memory(SIZE_MAX);
	return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		out_of_memory(0);
	char *s = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

uint64_t bcg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bcg_percentile(double *v, uint64_t n, double p)
{
	uint64_t rank;

	if (n == 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	rank = (uint64_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

int bcg_read_file(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int saved;

	if (f == NULL)
		return -1;
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (nb == NULL) {
				errno = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	fclose(f);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
fail:
	saved = errno;
	free(buf);
	fclose(f);
	errno = saved;
	return -1;
}

const char *bcg_human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (v < 10.0)
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	else if (v < 100.0)
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	return buf;
}
