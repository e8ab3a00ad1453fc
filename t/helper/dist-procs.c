/*
 * dist-procs - the rank launcher of dist/launch.c on a machine without a
 * GPU: dist_run with a transport of this file, whose collectives never
 * complete (as NCCL's do not when a rank is gone), and ranks that print,
 * exit, crash or hang as the scenario says.
 *
 *   dist-procs [--world N] [--timeout S] [--gpus M] [--nccl] SCENARIO
 *   dist-procs --count-gpus       (dist_gpu_count: "N GPUs")
 *
 * --gpus M: the GPUs the transport says this machine has (default N).
 * --nccl: the build's own transport (NCCL, or none), not this file's.
 * Under WORLD_SIZE (an external launcher) this process is one rank.
 * Each rank writes "R PID" to the file $BCG_TEST_PIDS when it is set, so
 * that a test can see that no rank outlives the launcher. With
 * $BCG_TEST_JOIN, a directory, the group is made once every rank has
 * joined (ranks started one by one, as an external launcher does).
 * $BCG_TEST_LAUNCHER: a file this process writes its pid to.
 * $BCG_TEST_FAIL_ID: rank 0 fails to make the unique id.
 *
 * Scenarios (rank R of N):
 *   print     "rank R of N: the id is ID" on stdout, "rank R: note" on
 *             stderr, then an unfinished line; exit 0
 *   status    exit with status R
 *   crash     rank N-1 kills itself (SIGKILL); the others wait in an
 *             all_reduce
 *   hang      rank N-1 sleeps without end; the others wait in an all_reduce
 *   stopped   rank N-1 stops itself (SIGSTOP); the others exit with
 *             status 1
 *   collective every rank waits in an all_reduce (one process: the
 *             timeout ends it)
 *   wait-term every rank waits for SIGTERM (bcg_signals_install's, as in
 *             bcgtool), then exits 143
 *
 * Exits with dist_run's status.
 */
#include "config.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist.h"
#include "dist/internal.h"
#include "util.h"

#define FAKE_ID_SIZE 32

struct fake_comm {
	struct dist_comm base;
	char             id[FAKE_ID_SIZE + 1];
	atomic_int       aborted;
	atomic_int       in_call;
	double           since;
};

static int fake_gpus;

static int fake_all_reduce(struct dist_comm *c, void *buf, uint64_t count, int dtype,
                           void *stream, char *msg, size_t len)
{
	struct fake_comm *f = (struct fake_comm *)c;
	struct timespec ts = {0, 10000000};

	f->since = dist_now();
	atomic_store(&f->in_call, 1);
	/* No peer ever answers: only an abort ends the wait. */
	while (!atomic_load(&f->aborted))
		nanosleep(&ts, NULL);
	atomic_store(&f->in_call, 0);
	snprintf(msg, len, "rank %d: %s: aborted", c->rank, c->current ? c->current : "all_reduce");
	return -1;
}

static int fake_all_gather(struct dist_comm *c, const void *send, void *recv, uint64_t count,
                           int dtype, void *stream, char *msg, size_t len)
{
	return fake_all_reduce(c, recv, count, dtype, stream, msg, len);
}

static int fake_barrier(struct dist_comm *c, char *msg, size_t len)
{
	return 0;
}

static void fake_abort(struct dist_comm *c)
{
	struct fake_comm *f = (struct fake_comm *)c;

	atomic_store(&f->aborted, 1);
	fprintf(stderr, "fake transport: rank %d: aborted\n", c->rank);
}

static void fake_destroy(struct dist_comm *c)
{
	free(c);
}

static int fake_pending(struct dist_comm *c, double *since, char *what, size_t len)
{
	struct fake_comm *f = (struct fake_comm *)c;

	if (!atomic_load(&f->in_call))
		return 0;
	*since = f->since;
	snprintf(what, len, "%s", c->current ? c->current : "all_reduce");
	return 1;
}

static const struct dist_comm_ops fake_ops = {
	.name = "fake",
	.all_reduce = fake_all_reduce,
	.all_gather = fake_all_gather,
	.barrier = fake_barrier,
	.abort = fake_abort,
	.destroy = fake_destroy,
	.pending = fake_pending,
};

static int fake_devices(int *count, char *msg, size_t len)
{
	*count = fake_gpus;
	return 0;
}

static int fake_make_id(void *id, char *msg, size_t len)
{
	char buf[FAKE_ID_SIZE + 1];

	if (getenv("BCG_TEST_FAIL_ID") != NULL) {
		snprintf(msg, len, "rank 0: no id (BCG_TEST_FAIL_ID)");
		return -1;
	}
	snprintf(buf, sizeof buf, "id-of-pid-%-21ld", (long)getpid());
	memcpy(id, buf, FAKE_ID_SIZE);
	return 0;
}

static int fake_join(const char *dir, int world, int rank, double timeout_s, char *msg,
                     size_t len)
{
	double start = dist_now();
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/joined.%d", dir, rank);
	f = fopen(path, "w");
	if (f == NULL || fclose(f) != 0) {
		snprintf(msg, len, "rank %d: %s: cannot write", rank, path);
		return -1;
	}
	for (int r = 0; r < world; r++) {
		snprintf(path, sizeof path, "%s/joined.%d", dir, r);
		while (access(path, F_OK) != 0) {
			if (dist_now() - start > timeout_s) {
				snprintf(msg, len, "rank %d: rank %d did not join", rank, r);
				return -1;
			}
			usleep(10000);
		}
	}
	return 0;
}

static int fake_make_comm(struct dist_comm **out, int world, int rank, int device,
                          const void *id, double timeout_s, char *msg, size_t len)
{
	struct fake_comm *f;
	const char *join = getenv("BCG_TEST_JOIN");

	/* Like NCCL's, the group is made once every rank has joined: each
	 * rank leaves a file in the directory BCG_TEST_JOIN and waits for
	 * the others'. */
	if (join != NULL && fake_join(join, world, rank, timeout_s, msg, len) != 0)
		return -1;
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		snprintf(msg, len, "rank %d: out of memory", rank);
		return -1;
	}
	f->base.ops = &fake_ops;
	f->base.world = world;
	f->base.rank = rank;
	f->base.device = device;
	memcpy(f->id, id, FAKE_ID_SIZE);
	atomic_init(&f->aborted, 0);
	atomic_init(&f->in_call, 0);
	*out = &f->base;
	return 0;
}

static const struct dist_transport_ops fake_transport = {
	.name = "fake",
	.id_size = FAKE_ID_SIZE,
	.devices = fake_devices,
	.make_id = fake_make_id,
	.make_comm = fake_make_comm,
};

static int collective(struct dist_comm *c)
{
	char msg[256];
	float x = 1;

	c->current = "step.3/all_reduce";
	if (dist_all_reduce(c, &x, 1, 1, NULL, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		return 3;
	}
	return 0;
}

static int rank_main(struct dist_comm *c, void *arg)
{
	const char *scenario = arg;
	const char *pids = getenv("BCG_TEST_PIDS");
	int last = c != NULL ? c->world - 1 : 0, rank = c != NULL ? c->rank : 0;

	if (pids != NULL) {
		FILE *f = fopen(pids, "a");

		if (f != NULL) {
			fprintf(f, "%d %ld\n", rank, (long)getpid());
			fclose(f);
		}
	}
	if (strcmp(scenario, "print") == 0) {
		printf("rank %d of %d: the id is %.*s\n", rank, c ? c->world : 1, FAKE_ID_SIZE,
		       c ? ((struct fake_comm *)c)->id : "none");
		fprintf(stderr, "rank %d: note\n", rank);
		printf("unfinished %d", rank);
		return 0;
	}
	if (strcmp(scenario, "status") == 0)
		return rank;
	if (strcmp(scenario, "crash") == 0 && rank == last) {
		usleep(200000);
		raise(SIGKILL);
	}
	if (strcmp(scenario, "hang") == 0 && rank == last)
		for (;;)
			pause();
	if (strcmp(scenario, "stopped") == 0) {
		if (rank != last)
			return 1;
		/* Its watchdog stopped with it: only the launcher can end it. */
		raise(SIGSTOP);
		return 0;
	}
	if (strcmp(scenario, "wait-term") == 0) {
		printf("rank %d: waiting\n", rank);
		while (bcg_interrupted() == 0)
			usleep(10000);
		printf("rank %d: stopping on signal %d\n", rank, bcg_interrupted());
		return bcg_signal_status(bcg_interrupted());
	}
	if (strcmp(scenario, "crash") == 0 || strcmp(scenario, "hang") == 0 ||
	    strcmp(scenario, "collective") == 0)
		return collective(c);
	fprintf(stderr, "dist-procs: unknown scenario %s\n", scenario);
	return 2;
}

int main(int argc, char **argv)
{
	struct dist_opts o = {.world = 2, .transport = DIST_NCCL, .timeout_s = 60,
	                      .what = "dist-procs", .via = &fake_transport};
	int i = 1;

	fake_gpus = -1;
	if (argc == 2 && strcmp(argv[1], "--count-gpus") == 0) {
		char msg[512];
		int n;

		if (dist_gpu_count(&n, msg, sizeof msg) != 0) {
			fprintf(stderr, "dist-procs: %s\n", msg);
			return 3;
		}
		printf("%d GPUs\n", n);
		return 0;
	}
	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--nccl") == 0) {
			o.via = NULL;
			continue;
		}
		if (i + 2 >= argc)
			break;
		if (strcmp(argv[i], "--world") == 0)
			o.world = atoi(argv[++i]);
		else if (strcmp(argv[i], "--timeout") == 0)
			o.timeout_s = atof(argv[++i]);
		else if (strcmp(argv[i], "--gpus") == 0)
			fake_gpus = atoi(argv[++i]);
		else
			break;
	}
	if (i + 1 != argc) {
		fprintf(stderr, "usage: dist-procs [--world N] [--timeout S] [--gpus M] [--nccl] "
		        "SCENARIO\n");
		return 2;
	}
	if (fake_gpus < 0)
		fake_gpus = o.world;
	setvbuf(stdout, NULL, _IOLBF, 0);
	bcg_signals_install();          /* as bcgtool's main does */
	if (getenv("BCG_TEST_LAUNCHER") != NULL) {
		/* A shell may start this program under a process of its own:
		 * the test learns which process to signal from here. */
		FILE *f = fopen(getenv("BCG_TEST_LAUNCHER"), "w");

		if (f == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0)
			return 2;
	}
	return dist_run(&o, rank_main, argv[i]);
}
