/*
 * util.h - small helpers of the program: messages and checked allocation.
 */
#ifndef BCG_UTIL_H
#define BCG_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BCG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* "bcgtool: MESSAGE" on stderr. */
void bcg_error(const char *fmt, ...) BCG_PRINTF(1, 2);
/* "bcgtool: FILE:LINE:COL: MESSAGE" on stderr (LINE 0: no position). */
void bcg_error_at(const char *file, unsigned line, unsigned col, const char *fmt, ...)
	BCG_PRINTF(4, 5);
/* "bcgtool: note: MESSAGE" / "bcgtool: warning: MESSAGE" on stderr. */
void bcg_note(const char *fmt, ...) BCG_PRINTF(1, 2);
void bcg_warn(const char *fmt, ...) BCG_PRINTF(1, 2);

/* Allocation that cannot return NULL: on failure print "out of memory" and
 * exit with BCG_EXIT_RUNTIME. Use where there is no better recovery. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) BCG_PRINTF(1, 2);

/* Monotonic time in nanoseconds. */
uint64_t bcg_now_ns(void);

/* The P-th percentile (nearest rank; 50: the median) of N values, which
 * are sorted in place; 0 when N is 0. */
double bcg_percentile(double *v, uint64_t n, double p);

/* Read a whole file into a NUL-terminated buffer; -1 with errno on error. */
int bcg_read_file(const char *path, char **data, size_t *len);

/* "1.5 KiB", "12 MiB": at most 4 significant characters before the unit. */
const char *bcg_human_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* BCG_UTIL_H */
