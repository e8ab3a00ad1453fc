/*
 * util.h - small helpers of the program: messages and checked allocation.
 */
#ifndef BCG_UTIL_H
#define BCG_UTIL_H

#include <pthread.h>
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

/* -q: no notes and no progress. Process-wide, as stderr itself is. */
void bcg_set_quiet(int quiet);
int bcg_is_quiet(void);

/*
 * Progress of long work, on stderr (not with -q). On a terminal: one line,
 * redrawn in place, cleared before any other message and at the end.
 * Otherwise (a pipe, a log file): every 5 s of work, a whole line with the
 * seconds so far and the latest message, so that short work prints
 * nothing. BCG_PROGRESS=always redraws whatever stderr is (tests),
 * BCG_PROGRESS=plain writes the plain lines whatever it is, and
 * BCG_PROGRESS=never shows nothing. bcg_progress_clear() ends the work.
 */
enum { BCG_PROGRESS_OFF, BCG_PROGRESS_TERMINAL, BCG_PROGRESS_PLAIN };
int bcg_progress_mode(void);
int bcg_progress_on(void);            /* the terminal's line */
/* BCG_PROGRESS's value when it is none of those (nor empty); NULL if fine. */
const char *bcg_progress_check_env(void);
void bcg_progress(const char *fmt, ...) BCG_PRINTF(1, 2);
void bcg_progress_clear(void);
/* This thread shows no progress from now on: dist_rank_enter calls it for
 * every tensor-parallel rank other than 0, a thread of this process or a
 * process of its own. */
void bcg_progress_mute_thread(void);

/* "WHAT: step K of N, about T left", redrawn at most ten times a second. */
struct bcg_steps {
	const char *what;
	uint64_t    total;
	uint64_t    t0;        /* ns, at the first step */
	uint64_t    shown;     /* ns, when last drawn */
};
void bcg_steps_begin(struct bcg_steps *p, const char *what, uint64_t total);
void bcg_steps_update(struct bcg_steps *p, uint64_t done);

/*
 * SIGINT and SIGTERM. The first asks the running command to stop at the
 * next step boundary (bcg_interrupted() says which signal came); a second
 * SIGINT ends the process at once, removing the registered temporary
 * files first. A command stopped so prints what it has, marked partial,
 * and exits with bcg_signal_status().
 */
void bcg_signals_install(void);
int bcg_interrupted(void);
int bcg_signal_status(int sig);          /* 128 + SIG: 130, 143 */
/*
 * A helper thread of this process (capture's checksums, the watchdog,
 * host ranks): started with SIGINT and SIGTERM blocked, so that their
 * handler runs on the main thread alone. Run on a helper, a second SIGINT
 * left the main thread free to go on (and print its end-of-step report)
 * while the handler ended the process. Returns pthread_create's error.
 */
int bcg_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* Temporary files removed if a signal ends the process; up to 8. */
void bcg_temp_register(const char *path);
void bcg_temp_forget(const char *path);

/*
 * An output file written atomically: created early as a temporary file
 * next to PATH (so that an unwritable place fails before the work; a
 * signal that ends the process removes it), then renamed over PATH by
 * bcg_output_commit, or removed by bcg_output_abort. PATH "-" is standard
 * output. Errors are printed ("bcgtool: PATH: cannot write: why") and
 * return -1.
 */
struct bcg_output {
	const char *path;
	char       *tmp;       /* NULL for standard output */
	int         fd;
	FILE       *f;         /* the stream of bcg_output_try_open's STREAM */
};
int bcg_output_open(struct bcg_output *o, const char *path);
int bcg_output_commit(struct bcg_output *o, const void *data, size_t len);
void bcg_output_abort(struct bcg_output *o);
/* The same, printing nothing: -1 with "cannot write: why" in MSG (for
 * callers that add their own context). STREAM: o->f is a stream on the
 * file (standard output for "-"), written with stdio; commit then flushes
 * it before DATA, if any, is written. */
int bcg_output_try_open(struct bcg_output *o, const char *path, int stream, char *msg,
                        size_t len);
int bcg_output_try_commit(struct bcg_output *o, const void *data, size_t n, char *msg,
                          size_t len);
/* Whether NAME (a file name, no directory) is one of those temporary
 * files, ".BASE.PID.N.tmp"; its process id in PID. Opening an output
 * removes those of ended processes from the output's directory. */
int bcg_temp_owner(const char *name, long *pid);

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

/* Read a whole file into a NUL-terminated buffer; "-" is standard input.
 * -1 with errno on error (EISDIR for a directory). */
int bcg_read_file(const char *path, char **data, size_t *len);

/* Read PATH as bcg_read_file does; on failure print "bcgtool: PATH: why"
 * ("is a directory", "No such file or directory") and return -1. */
int bcg_read_input(const char *path, char **data, size_t *len);

/* The "s" of a plural: "%u variant%s", n, BCG_S(n). */
#define BCG_S(n) ((n) == 1 ? "" : "s")

/* "1.5 KiB", "12 MiB": at most 4 significant characters before the unit. */
const char *bcg_human_bytes(uint64_t bytes, char *buf, size_t len);

/* "1, 2, 4": the N sizes V; where they do not fit in LEN bytes (at least
 * 64), as many as fit and then ", ..., 512 (51 in all)". */
const char *bcg_list_sizes(const int64_t *v, uint32_t n, char *buf, size_t len);

#endif /* BCG_UTIL_H */
