/*
 * dist/watchdog.c - one rank's watchdog: a collective that does not
 * complete ends the process.
 *
 * A rank blocked in a collective whose peer is gone waits forever: NCCL's
 * kernels spin on the GPU, and the thread that launched them blocks in
 * the next synchronization. So a thread of its own watches the comm's
 * pending collective (comm.h: pending) and, past the timeout or once the
 * launcher says another rank failed, prints which collective hung,
 * aborts the communicator (which wakes whatever waits on it) and exits 3.
 * A rank told that another failed, and still running the timeout later
 * with no collective it can name, is ended the same way: the group is
 * lost, and the launcher would stop it a little later anyway.
 * It exits from its own thread: the thread that launched the collective
 * may be blocked where nothing can reach it.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

/* How often the pending collective is looked at, in milliseconds. */
#define WATCH_PERIOD_MS 20
/* How long ncclCommAbort may take before the process exits anyway. */
#define ABORT_GRACE_S 10

struct dist_watchdog {
	pthread_t         thread;
	struct dist_comm *comm;
	double            timeout_s;
	int               notice_fd;
	int               stop[2];      /* a byte on stop[1] ends the thread */
	char              notice[256];  /* lines from the launcher, as read */
	size_t            notice_len;
	int               gone_rank;    /* the first rank said to be gone, or -1 */
	char              gone_why[200];
	double            gone_at;      /* when we heard */
};

double dist_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Set once the watchdog has given up on the group, before the abort
 * that wakes the rank's other threads: what they see after it is no
 * result, and the process is about to exit 3. */
static atomic_int watchdog_fired;

int dist_fired(void)
{
	return atomic_load(&watchdog_fired);
}

void dist_fired_wait(void)
{
	if (!atomic_load(&watchdog_fired))
		return;
	for (;;)
		pause();       /* the watchdog's _exit(3), or its reaper's */
}

static void *watchdog_reaper(void *arg)
{
	(void)arg;
	sleep(ABORT_GRACE_S);
	_exit(3);
	return NULL;
}

/* The end of the process: the message, the communicator aborted, exit 3. */
static void watchdog_fire(struct dist_watchdog *w, const char *what, double since)
{
	struct dist_comm *c = w->comm;
	pthread_t t;

	if (what == NULL)
		fprintf(stderr, "bcgtool: rank %d: rank %d %s, and this rank has not finished "
		        "%g s later; aborting\n", c->rank, w->gone_rank, w->gone_why, w->timeout_s);
	else if (w->gone_rank >= 0)
		fprintf(stderr, "bcgtool: rank %d: collective %s stopped: rank %d %s "
		        "(waited %.1f s); aborting\n", c->rank, what, w->gone_rank, w->gone_why,
		        dist_now() - since);
	else
		fprintf(stderr, "bcgtool: rank %d: collective %s did not complete within %g s "
		        "(a rank is gone?)\n", c->rank, what, w->timeout_s);
	fflush(stderr);
	fflush(stdout);
	atomic_store(&watchdog_fired, 1);
	/* ncclCommAbort waits for the communicator's threads; should it
	 * block too, the process still ends. */
	if (bcg_thread_start(&t, watchdog_reaper, NULL) == 0)
		pthread_detach(t);
	if (c->ops->abort != NULL)
		c->ops->abort(c);
	_exit(3);
}

/* Takes the launcher's lines "R TEXT\n": rank R is gone, TEXT says how. */
static void watchdog_read_notice(struct dist_watchdog *w)
{
	ssize_t n;
	char *nl;

	n = read(w->notice_fd, w->notice + w->notice_len, sizeof w->notice - 1 - w->notice_len);
	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			w->notice_fd = -1;     /* the launcher is done with us */
		return;
	}
	w->notice_len += (size_t)n;
	w->notice[w->notice_len] = '\0';
	while ((nl = strchr(w->notice, '\n')) != NULL) {
		char *end;
		long r;

		*nl = '\0';
		r = strtol(w->notice, &end, 10);
		if (w->gone_rank < 0 && end != w->notice && *end == ' ') {
			w->gone_rank = (int)r;
			w->gone_at = dist_now();
			snprintf(w->gone_why, sizeof w->gone_why, "%s", end + 1);
		}
		w->notice_len -= (size_t)(nl + 1 - w->notice);
		memmove(w->notice, nl + 1, w->notice_len + 1);
	}
	if (w->notice_len == sizeof w->notice - 1)
		w->notice_len = 0;             /* a line too long to be ours */
}

static void *watchdog_main(void *arg)
{
	struct dist_watchdog *w = arg;
	struct dist_comm *c = w->comm;

	for (;;) {
		struct pollfd p[2];
		char what[128];
		double since;
		int n = 1;

		p[0].fd = w->stop[0];
		p[0].events = POLLIN;
		if (w->notice_fd >= 0) {
			p[1].fd = w->notice_fd;
			p[1].events = POLLIN;
			n = 2;
		}
		if (poll(p, (nfds_t)n, WATCH_PERIOD_MS) < 0 && errno != EINTR)
			return NULL;
		if (p[0].revents != 0)
			return NULL;
		if (n == 2 && p[1].revents != 0)
			watchdog_read_notice(w);
		if (c->ops->pending != NULL && c->ops->pending(c, &since, what, sizeof what)) {
			if (w->gone_rank >= 0 || dist_now() - since > w->timeout_s)
				watchdog_fire(w, what, since);
		} else if (w->gone_rank >= 0 && dist_now() - w->gone_at > w->timeout_s) {
			/* Blocked where no collective is followed (waiting for
			 * a graph's launch that holds one, say): the group is
			 * lost all the same. */
			watchdog_fire(w, NULL, 0);
		}
	}
}

int dist_watchdog_start(struct dist_watchdog **out, struct dist_comm *comm, double timeout_s,
                        int notice_fd, char *msg, size_t len)
{
	struct dist_watchdog *w = calloc(1, sizeof *w);
	int e;

	*out = NULL;
	if (w == NULL) {
		snprintf(msg, len, "rank %d: the watchdog: out of memory", comm->rank);
		return -1;
	}
	w->comm = comm;
	w->timeout_s = timeout_s;
	w->notice_fd = notice_fd;
	w->gone_rank = -1;
	if (pipe(w->stop) != 0) {
		snprintf(msg, len, "rank %d: the watchdog: pipe: %s", comm->rank, strerror(errno));
		free(w);
		return -1;
	}
	e = bcg_thread_start(&w->thread, watchdog_main, w);
	if (e != 0) {
		snprintf(msg, len, "rank %d: the watchdog: pthread_create: %s", comm->rank,
		         strerror(e));
		close(w->stop[0]);
		close(w->stop[1]);
		free(w);
		return -1;
	}
	*out = w;
	return 0;
}

void dist_watchdog_stop(struct dist_watchdog *w)
{
	if (w == NULL)
		return;
	(void)!write(w->stop[1], "", 1);
	pthread_join(w->thread, NULL);
	close(w->stop[0]);
	close(w->stop[1]);
	free(w);
}
