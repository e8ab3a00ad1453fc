/*
 * dist/launch.c - ranks as processes: one per GPU, forked by this process,
 * which never touches CUDA itself; and one rank per process under an
 * external launcher.
 *
 * Between this process (the parent) and rank R (a child) run three pipes:
 *  - R's standard output and error, which the parent copies to its own,
 *    line by line, each line prefixed "[rank R] " -- except rank 0's
 *    standard output, which is the command's own result (its table or
 *    its JSON, as with one GPU) and comes through as it is;
 *  - the control pipe, parent to child: first the unique id, which rank 0
 *    made and sent up through a fourth pipe of its own; then notices
 *    "Q TEXT\n" that rank Q failed so, for R's watchdog.
 * A rank that exits with an error or dies is reported, the others are told
 * (their watchdogs abort a collective that waits for it, or end the rank
 * after the timeout) and get the timeout to finish, and a grace of
 * KILL_GRACE_S; then they are stopped (SIGTERM, then SIGKILL). A
 * rank whose parent dies is killed by the kernel (PR_SET_PDEATHSIG). So no
 * rank outlives the command.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

/* The grace between SIGTERM and SIGKILL, in seconds. */
#define KILL_GRACE_S 2.0
/* The longest line relayed whole; longer ones are cut into pieces. */
#define LINE_MAX_BYTES 16384

struct relay {
	int    fd;                  /* read end, or -1 at EOF */
	int    plain;               /* copied without the "[rank R] " prefix */
	FILE  *to;                  /* stdout or stderr */
	char  *buf;
	size_t len;
};

struct rank_proc {
	pid_t        pid;
	int          rank;
	int          running;
	int          stopped;       /* we sent it a signal */
	int          status;        /* 0..255: its exit status, or 3 for a death */
	int          ctl;           /* write end of its control pipe, or -1 */
	struct relay out, err;
};

static int worst(int a, int b)
{
	return a > b ? a : b;
}

/* Copies each whole line of R's buffer, prefixed; with FLUSH the rest
 * too, as a line. */
static void relay_lines(struct relay *r, int rank, int flush)
{
	size_t start = 0;

	for (size_t i = 0; i < r->len; i++) {
		if (r->buf[i] != '\n' && i - start + 1 < LINE_MAX_BYTES)
			continue;
		if (!r->plain)
			fprintf(r->to, "[rank %d] ", rank);
		fprintf(r->to, "%.*s%s", (int)(i + 1 - start), r->buf + start,
		        r->buf[i] == '\n' ? "" : "\n");
		start = i + 1;
	}
	if (flush && start < r->len) {
		if (!r->plain)
			fprintf(r->to, "[rank %d] ", rank);
		fprintf(r->to, "%.*s\n", (int)(r->len - start), r->buf + start);
		start = r->len;
	}
	if (start > 0) {
		memmove(r->buf, r->buf + start, r->len - start);
		r->len -= start;
		fflush(r->to);
	}
}

static void relay_read(struct relay *r, int rank)
{
	ssize_t n = read(r->fd, r->buf + r->len, LINE_MAX_BYTES - r->len);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		relay_lines(r, rank, 1);
		close(r->fd);
		r->fd = -1;
		return;
	}
	r->len += (size_t)n;
	relay_lines(r, rank, 0);
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads SIZE bytes from FD within TIMEOUT_S: 0, 1 at EOF, -1 on timeout. */
static int read_within(int fd, void *p, size_t size, double timeout_s)
{
	double start = dist_now();
	size_t got = 0;

	while (got < size) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		double left = timeout_s - (dist_now() - start);
		ssize_t n;

		if (left <= 0)
			return -1;
		if (poll(&pf, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return 1;
		if (pf.revents == 0)
			continue;
		n = read(fd, (char *)p + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	return 0;
}

/* The exit status of a process from waitpid's STATUS; reports a failure. */
static int rank_status(int rank, int status, int report, char *why, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(why, len, "exited with status %d", WEXITSTATUS(status));
		if (report && WEXITSTATUS(status) != 0)
			fprintf(stderr, "bcgtool: rank %d %s\n", rank, why);
		return WEXITSTATUS(status);
	}
	snprintf(why, len, "died of signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (report)
		fprintf(stderr, "bcgtool: rank %d %s\n", rank, why);
	return 3;
}

/* The devices T says this machine has, counted by a child process, so
 * that this one stays free of CUDA (a forked process cannot use its
 * parent's CUDA). */
static int count_devices(int (*devices)(int *, char *, size_t), int *count, char *msg,
                         size_t len)
{
	char buf[512];
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	if (pipe(p) != 0) {
		snprintf(msg, len, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char why[400] = "";
		int n = 0, rc;

		close(p[0]);
		rc = devices(&n, why, sizeof why);
		snprintf(buf, sizeof buf, "%d %d %s", rc, n, why);
		(void)!write_all(p[1], buf, strlen(buf));
		_exit(0);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], buf + got, sizeof buf - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	buf[got] = '\0';
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	{
		int rc, n, at = 0;

		if (sscanf(buf, "%d %d %n", &rc, &n, &at) < 2) {
			snprintf(msg, len, "the GPUs could not be counted (the counting process %s)",
			         WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "said nothing");
			return -1;
		}
		if (rc != 0) {
			snprintf(msg, len, "%s", buf + at);
			return -1;
		}
		*count = n;
	}
	return 0;
}

int dist_gpu_count(int *count, char *msg, size_t len)
{
	return count_devices(dist_cuda_devices, count, msg, len);
}

/* Rank R's process, from the fork on: it never returns. */
static void rank_child(const struct dist_opts *opts, const struct dist_transport_ops *t,
                       int rank, int out_fd, int err_fd, int ctl_fd, int up_fd,
                       dist_rank_fn rank_main, void *arg)
{
	unsigned char id[DIST_ID_MAX];
	struct dist_watchdog *w = NULL;
	struct dist_comm *comm = NULL;
	char msg[1024];
	int st, rc;

	if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
		_exit(3);
	close(out_fd);
	close(err_fd);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rank == 0) {
		if (t->make_id(id, msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s\n", msg);
			_exit(3);
		}
		if (write_all(up_fd, id, t->id_size) != 0)
			_exit(3);
		close(up_fd);
	}
	rc = read_within(ctl_fd, id, t->id_size, opts->timeout_s);
	if (rc < 0) {
		fprintf(stderr, "bcgtool: rank %d: no unique id from rank 0 within %g s\n", rank,
		        opts->timeout_s);
		_exit(3);
	}
	if (rc > 0) {
		fprintf(stderr, "bcgtool: rank %d: the launch stopped before the unique id came "
		        "(a rank failed)\n", rank);
		_exit(3);
	}
	if (t->make_comm(&comm, opts->world, rank, rank, id, opts->timeout_s, msg,
	                 sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		_exit(3);
	}
	comm->nccl_mem = opts->nccl_mem;
	if (dist_watchdog_start(&w, comm, opts->timeout_s, ctl_fd, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		dist_comm_destroy(comm);
		_exit(3);
	}
	dist_rank_enter(comm);
	st = rank_main(comm, arg);
	dist_self_set(NULL);
	fflush(NULL);
	dist_fired_wait();         /* what rank_main saw after an abort is no result */
	dist_watchdog_stop(w);
	dist_comm_destroy(comm);
	_exit(st >= 0 && st <= 255 ? st : 3);
}

struct launch {
	const struct dist_opts          *opts;
	const struct dist_transport_ops *t;
	struct rank_proc                *p;
	int                              n;       /* forked so far */
	int                              up;      /* rank 0's id pipe, or -1 */
	unsigned char                    id[DIST_ID_MAX];
	size_t                           id_got;
	int                              failed;  /* the first rank that failed, or -1 */
	double                           failed_at;
	double                           deadline;/* then the survivors are stopped */
	double                           kill_at; /* then they are killed */
	double                           ended_at;/* when the last rank ended */
	int                              term_sent;
	int                              status;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Stops the launch: every control pipe closed (a rank waiting for the id
 * then gives up). */
static void launch_close_controls(struct launch *l)
{
	for (int i = 0; i < l->n; i++)
		close_fd(&l->p[i].ctl);
}

static void launch_failure(struct launch *l, int rank, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof line, "%d %s\n", rank, why);

	if (l->failed < 0) {
		/* The ranks' watchdogs end them after the timeout; the grace
		 * lets them say which collective they were in. */
		l->failed = rank;
		l->failed_at = dist_now();
		l->deadline = l->failed_at + l->opts->timeout_s + KILL_GRACE_S;
	}
	if (l->id_got < l->t->id_size) {
		launch_close_controls(l);
		return;
	}
	for (int i = 0; i < l->n; i++)
		if (l->p[i].running && l->p[i].ctl >= 0)
			(void)!write_all(l->p[i].ctl, line, (size_t)n);
}

static void launch_reap(struct launch *l)
{
	for (int i = 0; i < l->n; i++) {
		struct rank_proc *p = &l->p[i];
		char why[128];
		pid_t r;
		int st;

		if (!p->running)
			continue;
		r = waitpid(p->pid, &st, WNOHANG);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		p->running = 0;
		close_fd(&p->ctl);
		if (r < 0) {
			p->status = 3;
			continue;
		}
		p->status = rank_status(p->rank, st, !p->stopped, why, sizeof why);
		if (p->stopped && p->status == 0)
			p->status = 3;
		if (p->status != 0)
			launch_failure(l, p->rank, why);
	}
}

/* Past the deadline, the ranks still running are stopped, then killed. */
static void launch_stop_survivors(struct launch *l)
{
	double now = dist_now();

	if (l->failed < 0 || now < l->deadline)
		return;
	for (int i = 0; i < l->n; i++) {
		struct rank_proc *p = &l->p[i];

		if (!p->running)
			continue;
		if (!p->stopped) {
			fprintf(stderr, "bcgtool: rank %d still running %.0f s after rank %d failed: "
			        "stopping it\n", p->rank, now - l->failed_at, l->failed);
			kill(p->pid, SIGTERM);
			p->stopped = 1;
			l->kill_at = now + KILL_GRACE_S;
		} else if (now >= l->kill_at) {
			kill(p->pid, SIGKILL);
		}
	}
}

/* A SIGTERM sent to this process alone (bcg_signals_install's handler
 * took it) goes on to the ranks, which stop as this process would. A
 * SIGINT is not passed on: from a terminal, the ranks (in the same
 * process group) had it already. */
static void launch_forward_term(struct launch *l)
{
	if (l->term_sent || bcg_interrupted() != SIGTERM)
		return;
	l->term_sent = 1;
	for (int i = 0; i < l->n; i++)
		if (l->p[i].running)
			kill(l->p[i].pid, SIGTERM);
}

/* The id from rank 0, as it comes; once whole, to every rank. */
static void launch_read_id(struct launch *l)
{
	ssize_t n = read(l->up, l->id + l->id_got, l->t->id_size - l->id_got);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* Rank 0 failed before it made the id: its exit says why. */
		close_fd(&l->up);
		launch_close_controls(l);
		return;
	}
	l->id_got += (size_t)n;
	if (l->id_got < l->t->id_size)
		return;
	close_fd(&l->up);
	for (int i = 0; i < l->n; i++)
		if (l->p[i].ctl >= 0 && write_all(l->p[i].ctl, l->id, l->t->id_size) != 0)
			close_fd(&l->p[i].ctl);
}

/* Relays output and watches the ranks until every one has ended and said
 * all it had to say. */
static void launch_wait(struct launch *l)
{
	struct pollfd *pf = calloc((size_t)(2 * l->n + 1), sizeof *pf);

	for (;;) {
		int n = 0, open = 0, running = 0;

		for (int i = 0; i < l->n; i++) {
			running += l->p[i].running;
			if (l->p[i].out.fd >= 0)
				open++;
			if (l->p[i].err.fd >= 0)
				open++;
		}
		if (!running && !open)
			break;
		if (pf != NULL) {
			for (int i = 0; i < l->n; i++) {
				if (l->p[i].out.fd >= 0)
					pf[n++] = (struct pollfd){.fd = l->p[i].out.fd, .events = POLLIN};
				if (l->p[i].err.fd >= 0)
					pf[n++] = (struct pollfd){.fd = l->p[i].err.fd, .events = POLLIN};
			}
			if (l->up >= 0)
				pf[n++] = (struct pollfd){.fd = l->up, .events = POLLIN};
			if (poll(pf, (nfds_t)n, 20) < 0 && errno != EINTR)
				n = 0;
		} else {
			usleep(20000);
		}
		for (int k = 0; k < n; k++) {
			if (pf[k].revents == 0)
				continue;
			if (pf[k].fd == l->up) {
				launch_read_id(l);
				continue;
			}
			for (int i = 0; i < l->n; i++) {
				if (pf[k].fd == l->p[i].out.fd)
					relay_read(&l->p[i].out, l->p[i].rank);
				else if (pf[k].fd == l->p[i].err.fd)
					relay_read(&l->p[i].err, l->p[i].rank);
			}
		}
		launch_reap(l);
		launch_forward_term(l);
		launch_stop_survivors(l);
		/* Every rank gone but some output held open (by a process a
		 * rank started, still running): nothing more is waited for. */
		if (running == 0 && l->ended_at == 0)
			l->ended_at = dist_now();
		if (running == 0 && dist_now() >= l->ended_at + KILL_GRACE_S)
			break;
	}
	free(pf);
}

/* Forks rank R; its pipes' parent ends into P. */
static int launch_fork(struct launch *l, int rank, dist_rank_fn rank_main, void *arg,
                       const struct sigaction *pipe_was, char *msg, size_t len)
{
	struct rank_proc *p = &l->p[rank];
	int out[2] = {-1, -1}, err[2] = {-1, -1}, ctl[2] = {-1, -1}, up[2] = {-1, -1};
	pid_t parent = getpid(), pid;

	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
	    pipe2(ctl, O_CLOEXEC) != 0 || (rank == 0 && pipe2(up, O_CLOEXEC) != 0)) {
		snprintf(msg, len, "pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/* The parent's ends of the earlier ranks' pipes are not ours. */
		for (int i = 0; i < rank; i++) {
			close_fd(&l->p[i].out.fd);
			close_fd(&l->p[i].err.fd);
			close_fd(&l->p[i].ctl);
		}
		close_fd(&l->up);
		close(out[0]);
		close(err[0]);
		close(ctl[1]);
		if (rank == 0)
			close(up[0]);
		sigaction(SIGPIPE, pipe_was, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(3);
		rank_child(l->opts, l->t, rank, out[1], err[1], ctl[0], up[1], rank_main, arg);
	}
	close(out[1]);
	close(err[1]);
	close(ctl[0]);
	if (rank == 0) {
		close(up[1]);
		l->up = up[0];
	}
	p->pid = pid;
	p->rank = rank;
	p->running = 1;
	p->ctl = ctl[1];
	p->out = (struct relay){.fd = out[0], .to = stdout, .plain = rank == 0};
	p->err = (struct relay){.fd = err[0], .to = stderr};
	p->out.buf = malloc(LINE_MAX_BYTES);
	p->err.buf = malloc(LINE_MAX_BYTES);
	l->n = rank + 1;
	if (p->out.buf == NULL || p->err.buf == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&err[i]);
		close_fd(&ctl[i]);
		close_fd(&up[i]);
	}
	return -1;
}

int dist_run_processes(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	const struct dist_transport_ops *t = opts->via != NULL ? opts->via : dist_nccl_transport();
	struct sigaction ign, pipe_was;
	struct launch l;
	char msg[1024];
	int gpus = 0;

	if (t == NULL) {
		fprintf(stderr, "bcgtool: %s: " DIST_NO_NCCL "\n", opts->what);
		return 2;
	}
	if (count_devices(t->devices, &gpus, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s: --tp %d needs %d GPUs: %s\n", opts->what, opts->world,
		        opts->world, msg);
		return 3;
	}
	if (gpus < opts->world) {
		fprintf(stderr, "bcgtool: %s: --tp %d needs %d GPUs; this machine has %d\n",
		        opts->what, opts->world, opts->world, gpus);
		return 2;
	}
	memset(&l, 0, sizeof l);
	l.opts = opts;
	l.t = t;
	l.up = -1;
	l.failed = -1;
	l.p = calloc((size_t)opts->world, sizeof *l.p);
	if (l.p == NULL) {
		fprintf(stderr, "bcgtool: %s: out of memory\n", opts->what);
		return 3;
	}
	/* A rank that is gone must not end this process through its pipe. */
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &pipe_was);
	for (int r = 0; r < opts->world; r++) {
		if (launch_fork(&l, r, rank_main, arg, &pipe_was, msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s: rank %d: %s\n", opts->what, r, msg);
			l.status = 3;
			launch_failure(&l, r, "could not be started");
			break;
		}
	}
	launch_wait(&l);
	for (int i = 0; i < l.n; i++) {
		struct rank_proc *p = &l.p[i];

		if (p->running) {
			/* Only a rank that ignored SIGKILL's deadline: wait. */
			int st;

			kill(p->pid, SIGKILL);
			while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
				;
			p->status = 3;
		}
		close_fd(&p->out.fd);
		close_fd(&p->err.fd);
		close_fd(&p->ctl);
		free(p->out.buf);
		free(p->err.buf);
		l.status = worst(l.status, p->status);
	}
	close_fd(&l.up);
	sigaction(SIGPIPE, &pipe_was, NULL);
	free(l.p);
	return l.status;
}

int dist_run_external(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	const struct dist_transport_ops *t = opts->via != NULL ? opts->via : dist_nccl_transport();
	unsigned char id[DIST_ID_MAX];
	struct dist_watchdog *w = NULL;
	struct dist_comm *comm = NULL;
	struct dist_env env;
	char msg[1024];
	int st;

	if (dist_env_read(&env, msg, sizeof msg) != 1) {
		fprintf(stderr, "bcgtool: %s: %s\n", opts->what,
		        *msg ? msg : "not started by an external launcher");
		return 2;
	}
	if (env.world == 1)
		return rank_main(NULL, arg);
	if (t == NULL) {
		fprintf(stderr, "bcgtool: %s: " DIST_NO_NCCL "\n", opts->what);
		return 2;
	}
	if (env.rank == 0) {
		if (t->make_id(id, msg, sizeof msg) != 0 ||
		    dist_store_put(env.store, env.world, id, t->id_size, msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s\n", msg);
			return 3;
		}
	} else if (dist_store_get(env.store, env.world, id, t->id_size, opts->timeout_s, msg,
	                          sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: rank %d: %s\n", env.rank, msg);
		return 3;
	}
	st = t->make_comm(&comm, env.world, env.rank, env.local_rank, id, opts->timeout_s, msg,
	                  sizeof msg);
	/* Every rank has joined (or never will): a later run must not find
	 * this one's id. */
	if (env.rank == 0)
		(void)unlink(env.store);
	if (st != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		return 3;
	}
	comm->nccl_mem = opts->nccl_mem;
	if (dist_watchdog_start(&w, comm, opts->timeout_s, -1, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		dist_comm_destroy(comm);
		return 3;
	}
	dist_rank_enter(comm);
	st = rank_main(comm, arg);
	dist_self_set(NULL);
	fflush(NULL);
	dist_fired_wait();
	dist_watchdog_stop(w);
	dist_comm_destroy(comm);
	return st;
}
