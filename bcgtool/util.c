/*
 * util.c - messages and checked allocation for the program.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "util.h"

/*
 * The few things here that are process-wide by nature -- stderr's state,
 * the -q flag, the signal that came, the temporary files a signal must
 * remove -- are the program's only mutable globals.
 */
static volatile sig_atomic_t quiet;   /* read by the signal handler */
static int progress_shown;
/* A tensor-parallel rank other than 0 (dist_rank_enter mutes it, thread
 * or process): its progress is rank 0's, and the lines above are
 * one process's state. */
static _Thread_local int progress_muted;
static volatile sig_atomic_t interrupted;
/* Taken and given back by compare-and-swap: the ranks of --tp on the host
 * are threads that write their files at once, and the signal handler
 * reads the slots (lock-free atomics, so safe there). */
#define TEMP_MAX 8
static _Atomic(char *) temps[TEMP_MAX];

void bcg_set_quiet(int q)
{
	quiet = q;
}

int bcg_is_quiet(void)
{
	return quiet;
}

int bcg_progress_mode(void)
{
	const char *force = getenv("BCG_PROGRESS");

	if (quiet || (force != NULL && strcmp(force, "never") == 0))
		return BCG_PROGRESS_OFF;
	if (force != NULL && strcmp(force, "always") == 0)
		return BCG_PROGRESS_TERMINAL;
	if (force != NULL && strcmp(force, "plain") == 0)
		return BCG_PROGRESS_PLAIN;
	return isatty(STDERR_FILENO) ? BCG_PROGRESS_TERMINAL : BCG_PROGRESS_PLAIN;
}

int bcg_progress_on(void)
{
	return bcg_progress_mode() == BCG_PROGRESS_TERMINAL;
}

const char *bcg_progress_check_env(void)
{
	const char *v = getenv("BCG_PROGRESS");

	if (v == NULL || v[0] == '\0' || strcmp(v, "always") == 0 || strcmp(v, "never") == 0 ||
	    strcmp(v, "plain") == 0)
		return NULL;
	return v;
}

/*
 * Plain progress: when stderr is not a terminal, a line is written only
 * every PLAIN_PERIOD_S seconds of work, by a SIGALRM, from the latest
 * message: "bcgtool: [15 s] capture: variant 1 of 3 (4 tokens): tune".
 * The handler may only write(2): the message is kept formatted in one of
 * two buffers, the other filled and then made current, so the handler
 * (which runs to completion before the program goes on) never sees half
 * of one.
 */
#define PLAIN_PERIOD_S 5
#define PLAIN_LEN      256
static char plain_msg[2][PLAIN_LEN];
static volatile sig_atomic_t plain_cur = -1;   /* the buffer to write; -1: no work */
static volatile sig_atomic_t plain_ticks;      /* periods of the work so far */
static int plain_armed;

static void on_alarm(int sig)
{
	char line[PLAIN_LEN + 48], num[24];
	int k = plain_cur, n = 0, d = 0;
	unsigned long secs;

	(void)sig;
	if (k < 0 || quiet)
		return;
	secs = (unsigned long)(++plain_ticks) * PLAIN_PERIOD_S;
	do
		num[d++] = (char)('0' + secs % 10);
	while ((secs /= 10) != 0 && d < (int)sizeof num);
	memcpy(line, "bcgtool: [", 10);
	n = 10;
	while (d > 0)
		line[n++] = num[--d];
	memcpy(line + n, " s] ", 4);
	n += 4;
	for (const char *m = plain_msg[k]; *m != '\0' && n < (int)sizeof line - 1; m++)
		line[n++] = *m;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

static void plain_set(const char *fmt, va_list ap)
{
	int k = plain_cur == 0 ? 1 : 0;
	struct itimerval it = { { PLAIN_PERIOD_S, 0 }, { PLAIN_PERIOD_S, 0 } };

	vsnprintf(plain_msg[k], PLAIN_LEN, fmt, ap);
	if (!plain_armed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;   /* the work's system calls go on */
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0)
			return;
		plain_ticks = 0;
		plain_armed = 1;
	}
	plain_cur = k;
}

static void plain_stop(void)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	plain_cur = -1;
	if (!plain_armed)
		return;
	setitimer(ITIMER_REAL, &off, NULL);
	plain_armed = 0;
}

void bcg_progress_mute_thread(void)
{
	progress_muted = 1;
}

void bcg_progress(const char *fmt, ...)
{
	va_list ap;

	if (progress_muted)
		return;
	switch (bcg_progress_mode()) {
	case BCG_PROGRESS_TERMINAL:
		fputs("\rbcgtool: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputs("\033[K", stderr);
		fflush(stderr);
		progress_shown = 1;
		break;
	case BCG_PROGRESS_PLAIN:
		va_start(ap, fmt);
		plain_set(fmt, ap);
		va_end(ap);
		break;
	default:
		break;
	}
}

/* Before another message: the terminal's line goes; plain progress goes
 * on (its lines are whole). */
static void progress_erase(void)
{
	if (!progress_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	progress_shown = 0;
}

void bcg_progress_clear(void)
{
	if (progress_muted)
		return;
	progress_erase();
	plain_stop();
}

void bcg_steps_begin(struct bcg_steps *p, const char *what, uint64_t total)
{
	p->what = what;
	p->total = total;
	p->t0 = bcg_now_ns();
	p->shown = 0;
	bcg_progress("%s: step 0 of %llu", what, (unsigned long long)total);
}

void bcg_steps_update(struct bcg_steps *p, uint64_t done)
{
	uint64_t now = bcg_now_ns();
	double left;

	if (now - p->shown < 100000000u && done < p->total)
		return;
	p->shown = now;
	if (done == 0 || done > p->total) {
		bcg_progress("%s: step %llu of %llu", p->what, (unsigned long long)done,
		             (unsigned long long)p->total);
		return;
	}
	left = (double)(now - p->t0) / 1e9 / (double)done * (double)(p->total - done);
	if (left >= 120.0)
		bcg_progress("%s: step %llu of %llu, about %.0f min left", p->what,
		             (unsigned long long)done, (unsigned long long)p->total, left / 60.0);
	else
		bcg_progress("%s: step %llu of %llu, about %.0f s left", p->what,
		             (unsigned long long)done, (unsigned long long)p->total, left);
}

static void remove_temps(void)
{
	for (int i = 0; i < TEMP_MAX; i++) {
		char *path = atomic_load(&temps[i]);
		if (path != NULL)
			unlink(path);
	}
}

static void on_signal(int sig)
{
	static const char again[] = "\nbcgtool: interrupted again: stopping now\n";
	/* Said at once: the step under way may take long, and whoever pressed
	 * Ctrl-C (or a test) learns that it was heard and what a second does. */
	static const char first[] = "\nbcgtool: interrupted: stopping after the current step "
	                            "(interrupt again to stop now)\n";

	if (interrupted != 0 && sig == SIGINT) {
		/* The second Ctrl-C: no more waiting for a step to end. */
		remove_temps();
		(void)!write(STDERR_FILENO, again, sizeof again - 1);
		_exit(128 + sig);
	}
	if (interrupted != 0)
		return;
	interrupted = sig;
	if (sig == SIGINT && !quiet)
		(void)!write(STDERR_FILENO, first, sizeof first - 1);
}

void bcg_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int bcg_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t block, was;
	int e;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	/* The new thread inherits the mask in force here. */
	e = pthread_sigmask(SIG_BLOCK, &block, &was);
	if (e != 0)
		return e;
	e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return e;
}

int bcg_interrupted(void)
{
	return (int)interrupted;
}

int bcg_signal_status(int sig)
{
	return 128 + sig;
}

void bcg_temp_register(const char *path)
{
	for (int i = 0; i < TEMP_MAX; i++) {
		char *none = NULL;
		if (atomic_compare_exchange_strong(&temps[i], &none, (char *)path))
			return;
	}
}

void bcg_temp_forget(const char *path)
{
	for (int i = 0; i < TEMP_MAX; i++) {
		char *mine = (char *)path;
		atomic_compare_exchange_strong(&temps[i], &mine, NULL);
	}
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	progress_erase();
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
	progress_erase();
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
	if (quiet)
		return;
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
	int is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	struct stat sb;
	int saved;

	if (f == NULL)
		return -1;
	if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
		errno = EISDIR;
		goto fail;
	}
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
		if (errno == 0)
			errno = EIO;
		goto fail;
	}
	if (!is_stdin)
		fclose(f);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
fail:
	saved = errno;
	free(buf);
	if (!is_stdin)
		fclose(f);
	errno = saved;
	return -1;
}

int bcg_read_input(const char *path, char **data, size_t *len)
{
	if (bcg_read_file(path, data, len) == 0)
		return 0;
	if (errno == EISDIR)
		bcg_error("%s: is a directory", strcmp(path, "-") == 0 ? "standard input" : path);
	else
		bcg_error("%s: cannot read: %s", strcmp(path, "-") == 0 ? "standard input" : path,
		          strerror(errno));
	return -1;
}

int bcg_temp_owner(const char *name, long *pid)
{
	size_t n = strlen(name), at;
	char *end;
	long v;

	/* ".BASE.PID.N.tmp": from the end, "tmp", N, PID, a non-empty BASE. */
	if (n < 10 || name[0] != '.' || strcmp(name + n - 4, ".tmp") != 0)
		return 0;
	at = n - 4;
	if (at == 0 || name[at - 1] < '0' || name[at - 1] > '9')
		return 0;
	while (at > 0 && name[at - 1] >= '0' && name[at - 1] <= '9')
		at--;
	if (at < 2 || name[at - 1] != '.')
		return 0;
	at--;
	if (at == 0 || name[at - 1] < '0' || name[at - 1] > '9')
		return 0;
	while (at > 0 && name[at - 1] >= '0' && name[at - 1] <= '9')
		at--;
	if (at < 3 || name[at - 1] != '.')
		return 0;
	errno = 0;
	v = strtol(name + at, &end, 10);
	if (errno != 0 || v <= 0 || *end != '.')
		return 0;
	*pid = v;
	return 1;
}

/* Remove from DIR the temporary files of bcg_output_try_open whose
 * process has ended (a SIGKILL leaves them): plain files named
 * ".BASE.PID.N.tmp" where no process PID exists on this machine. A
 * process that exists -- this one, another writer, or a new process that
 * took the number -- keeps its files. Failures change nothing and are not
 * reported: the write that follows is what matters. */
static void output_sweep(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		struct stat sb;
		long pid;
		char *p;
		if (!bcg_temp_owner(de->d_name, &pid) || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		p = xasprintf("%s/%s", dir, de->d_name);
		if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode))
			unlink(p);
		free(p);
	}
	closedir(d);
}

int bcg_output_try_open(struct bcg_output *o, const char *path, int stream, char *msg,
                        size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir;
	struct stat sb;

	memset(o, 0, sizeof *o);
	o->path = path;
	o->fd = -1;
	if (strcmp(path, "-") == 0) {
		o->fd = STDOUT_FILENO;
		o->f = stream ? stdout : NULL;
		return 0;
	}
	if (base[0] == '\0' || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))) {
		snprintf(msg, len, "cannot write: is a directory");
		return -1;
	}
	dir = slash == NULL ? xstrdup(".") : slash == path ? xstrdup("/")
	                    : xasprintf("%.*s", (int)(slash - path), path);
	output_sweep(dir);
	for (unsigned n = 0; n < 100; n++) {
		free(o->tmp);
		o->tmp = xasprintf("%s/.%s.%ld.%u.tmp", dir, base, (long)getpid(), n);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (o->fd >= 0 || errno != EEXIST)
			break;
	}
	free(dir);
	if (o->fd < 0) {
		snprintf(msg, len, "cannot write: %s", strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	bcg_temp_register(o->tmp);
	if (stream && (o->f = fdopen(o->fd, "w")) == NULL) {
		snprintf(msg, len, "cannot write: %s", strerror(errno));
		bcg_output_abort(o);
		return -1;
	}
	return 0;
}

int bcg_output_open(struct bcg_output *o, const char *path)
{
	char msg[256];

	if (bcg_output_try_open(o, path, 0, msg, sizeof msg) == 0)
		return 0;
	bcg_error("%s: %s", path, msg);
	return -1;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Flush o->f, if any; 0, or -1 with errno. */
static int flush_stream(struct bcg_output *o)
{
	if (o->f == NULL)
		return 0;
	if (fflush(o->f) != 0 || ferror(o->f)) {
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

int bcg_output_try_commit(struct bcg_output *o, const void *data, size_t n, char *msg,
                          size_t len)
{
	const char *step = "write";
	int rc;

	if (o->tmp == NULL) {
		fflush(stdout);
		errno = 0;
		if (flush_stream(o) != 0 || write_all(o->fd, data, n) != 0) {
			snprintf(msg, len, "cannot write: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	errno = 0;
	rc = flush_stream(o) == 0 && write_all(o->fd, data, n) == 0 ? 0 : -1;
	/* A file system that cannot sync says EINVAL: nothing more to do. */
	if (rc == 0 && fsync(o->fd) != 0 && errno != EINVAL && errno != ENOTSUP) {
		step = "fsync";
		rc = -1;
	}
	if (rc == 0) {
		step = "close";
		rc = o->f != NULL ? fclose(o->f) : close(o->fd);
		o->f = NULL;
		o->fd = -1;
	}
	if (rc == 0 && rename(o->tmp, o->path) != 0) {
		step = "rename";
		rc = -1;
	}
	if (rc != 0) {
		snprintf(msg, len, "cannot write: %s failed: %s", step, strerror(errno));
		bcg_output_abort(o);
		return -1;
	}
	bcg_temp_forget(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

int bcg_output_commit(struct bcg_output *o, const void *data, size_t len)
{
	char msg[256];

	if (bcg_output_try_commit(o, data, len, msg, sizeof msg) == 0)
		return 0;
	bcg_error("%s: %s", o->tmp == NULL && strcmp(o->path, "-") == 0 ? "standard output"
	                                                                  : o->path, msg);
	return -1;
}

void bcg_output_abort(struct bcg_output *o)
{
	if (o->tmp == NULL)
		return;
	if (o->f != NULL)
		fclose(o->f);
	else if (o->fd >= 0)
		close(o->fd);
	o->f = NULL;
	o->fd = -1;
	unlink(o->tmp);
	bcg_temp_forget(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
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

const char *bcg_list_sizes(const int64_t *v, uint32_t n, char *buf, size_t len)
{
	/* Room kept for the tail: ", ..., " and two 20-digit numbers. */
	const size_t tail = 64;
	size_t at = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		char item[32];
		int w = snprintf(item, sizeof item, "%s%lld", i ? ", " : "", (long long)v[i]);
		if (at + (size_t)w + (i + 1 < n ? tail : 0) >= len)
			break;
		memcpy(buf + at, item, (size_t)w + 1);
		at += (size_t)w;
	}
	if (i < n)
		snprintf(buf + at, len - at, "%s..., %lld (%u in all)", at ? ", " : "",
		         (long long)v[n - 1], n);
	return buf;
}
