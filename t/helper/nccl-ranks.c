/*
 * nccl-ranks - two or more ranks on GPUs through dist_run (dist/launch.c
 * forks them, dist/nccl.c makes their communicators): the collectives'
 * values against sums worked out by hand, eagerly and inside a CUDA graph;
 * and the faults of a rank that dies or hangs.
 *
 *   nccl-ranks [--world N] [--timeout S] SCENARIO
 *   nccl-ranks --nccl-version     ncclGetVersion(), e.g. 22809
 *
 * Scenarios:
 *   values      every rank: all_reduce and all_gather of f32 and bf16
 *               vectors (1000 and 300000 elements), eagerly, then captured
 *               into one graph replayed twice with new inputs; a barrier;
 *               one line "rank R: WHAT: ok" (or "FAIL: why") for each
 *   kill        after a barrier, the last rank kills itself (SIGKILL) while
 *               the others wait in an eager all_reduce
 *   kill-graph  the same, the others waiting in a replay of a graph that
 *               holds the all_reduce (followed through dist_watch)
 *   hang        the last rank sleeps without end; the others wait in an
 *               all_reduce until the timeout
 *   values-symmetric, kill-symmetric
 *               values and kill with the buffers in symmetric memory
 *               (comm.h: sym_alloc, one window a rank, the same layout on
 *               every rank), so that NCCL runs its symmetric kernels; a
 *               line "rank R: symmetric memory: N bytes" says it was had
 *
 * Rank r's inputs: all_reduce x[i] = (r + 1) * (i % 7 + 1) * k, so the sum
 * over N ranks is N (N + 1) / 2 * (i % 7 + 1) * k; all_gather y[i] =
 * 100 r + i % 50 + k, so the gathered z[q * C + i] = 100 q + i % 50 + k.
 * Every value is a small integer, exact in f32 and bf16; k is 1 eagerly
 * and 2, 3 in the graph's two replays.
 */
#include "config.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "dist/dist.h"
#include "dist/internal.h"
#include "ops/numeric.h"
#include "plan.h"

struct bufs {
	int      dtype;
	size_t   n, es;
	void    *x, *y, *z;       /* device: all_reduce's, all_gather's send, recv */
	void    *hx, *hy, *hz;    /* host */
	void    *sym;             /* x, y and z in one symmetric window, or NULL */
	struct dist_comm *comm;
};

/* The scenario's name ends in "-symmetric". */
static int symmetric;

static float load(const struct bufs *b, const void *base, size_t i)
{
	if (b->dtype == PLAN_DTYPE_F32)
		return ((const float *)base)[i];
	return bcg_bf16_to_f32(((const uint16_t *)base)[i]);
}

static void store(const struct bufs *b, void *base, size_t i, float v)
{
	if (b->dtype == PLAN_DTYPE_F32)
		((float *)base)[i] = v;
	else
		((uint16_t *)base)[i] = bcg_f32_to_bf16(v);
}

#define CU(call)                                                                  \
	do {                                                                      \
		cudaError_t e_ = (call);                                          \
		if (e_ != cudaSuccess) {                                          \
			fprintf(stderr, "rank %d: %s: %s\n", c->rank, #call,     \
			        cudaGetErrorString(e_));                          \
			return -1;                                                \
		}                                                                 \
	} while (0)

static int bufs_alloc(struct dist_comm *c, struct bufs *b, int dtype, size_t n)
{
	memset(b, 0, sizeof *b);
	b->dtype = dtype;
	b->n = n;
	b->es = dtype == PLAN_DTYPE_F32 ? 4 : 2;
	b->hx = malloc(n * b->es);
	b->hy = malloc(n * b->es);
	b->hz = malloc((size_t)c->world * n * b->es);
	if (b->hx == NULL || b->hy == NULL || b->hz == NULL) {
		fprintf(stderr, "rank %d: out of memory\n", c->rank);
		return -1;
	}
	b->comm = c;
	if (symmetric) {
		/* x, y, z one after the other, 256-byte aligned: the same
		 * offsets on every rank */
		size_t ax = (n * b->es + 255) & ~(size_t)255;
		size_t total = 2 * ax + (size_t)c->world * n * b->es;
		char msg[512];

		if (c->ops->sym_alloc == NULL ||
		    c->ops->sym_alloc(c, total, n, &b->sym, msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s\n", c->ops->sym_alloc ? msg : "no sym_alloc");
			return -1;
		}
		b->x = b->sym;
		b->y = (char *)b->sym + ax;
		b->z = (char *)b->sym + 2 * ax;
		printf("rank %d: symmetric memory: %zu bytes\n", c->rank, total);
		return 0;
	}
	CU(cudaMalloc(&b->x, n * b->es));
	CU(cudaMalloc(&b->y, n * b->es));
	CU(cudaMalloc(&b->z, (size_t)c->world * n * b->es));
	return 0;
}

static void bufs_free(struct bufs *b)
{
	if (b->sym != NULL) {
		b->comm->ops->sym_free(b->comm, b->sym);
		b->x = b->y = b->z = NULL;
	}
	cudaFree(b->x);
	cudaFree(b->y);
	cudaFree(b->z);
	free(b->hx);
	free(b->hy);
	free(b->hz);
}

/* The inputs of step K, copied to the device on STREAM. */
static int bufs_fill(struct dist_comm *c, struct bufs *b, int k, cudaStream_t s)
{
	for (size_t i = 0; i < b->n; i++) {
		store(b, b->hx, i, (float)((c->rank + 1) * (int)(i % 7 + 1) * k));
		store(b, b->hy, i, (float)(100 * c->rank + (int)(i % 50) + k));
	}
	CU(cudaMemcpyAsync(b->x, b->hx, b->n * b->es, cudaMemcpyHostToDevice, s));
	CU(cudaMemcpyAsync(b->y, b->hy, b->n * b->es, cudaMemcpyHostToDevice, s));
	CU(cudaMemsetAsync(b->z, 0xff, (size_t)c->world * b->n * b->es, s));
	return 0;
}

/* Step K's results against the hand-worked values: a line saying so. */
static int bufs_check(struct dist_comm *c, struct bufs *b, int k, cudaStream_t s,
                      const char *what)
{
	const char *dt = b->dtype == PLAN_DTYPE_F32 ? "f32" : "bf16";
	int w = c->world;

	CU(cudaStreamSynchronize(s));
	CU(cudaMemcpy(b->hx, b->x, b->n * b->es, cudaMemcpyDeviceToHost));
	CU(cudaMemcpy(b->hz, b->z, (size_t)w * b->n * b->es, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < b->n; i++) {
		float want = (float)(w * (w + 1) / 2 * (int)(i % 7 + 1) * k);

		if (load(b, b->hx, i) != want) {
			printf("rank %d: all_reduce %s %zu %s: FAIL: element %zu is %g, want %g\n",
			       c->rank, dt, b->n, what, i, load(b, b->hx, i), want);
			return -1;
		}
	}
	printf("rank %d: all_reduce %s %zu %s: ok\n", c->rank, dt, b->n, what);
	for (int q = 0; q < w; q++)
		for (size_t i = 0; i < b->n; i++) {
			float want = (float)(100 * q + (int)(i % 50) + k);
			size_t at = (size_t)q * b->n + i;

			if (load(b, b->hz, at) != want) {
				printf("rank %d: all_gather %s %zu %s: FAIL: element %zu is %g, "
				       "want %g\n", c->rank, dt, b->n, what, at, load(b, b->hz, at),
				       want);
				return -1;
			}
		}
	printf("rank %d: all_gather %s %zu %s: ok\n", c->rank, dt, b->n, what);
	return 0;
}

static int collectives(struct dist_comm *c, struct bufs *b, cudaStream_t s)
{
	char msg[512];

	c->current = "t.all_reduce";
	if (dist_all_reduce(c, b->x, b->n, b->dtype, s, msg, sizeof msg) != 0)
		goto fail;
	c->current = "t.all_gather";
	if (dist_all_gather(c, b->y, b->z, b->n, b->dtype, s, msg, sizeof msg) != 0)
		goto fail;
	c->current = NULL;
	return 0;
fail:
	fprintf(stderr, "bcgtool: %s\n", msg);
	c->current = NULL;
	return -1;
}

static int values(struct dist_comm *c, int dtype, size_t n, cudaStream_t s)
{
	cudaGraphExec_t exec = NULL;
	cudaGraph_t graph = NULL;
	struct bufs b;
	char msg[512];
	int rc = -1;

	if (bufs_alloc(c, &b, dtype, n) != 0)
		goto out;
	/* Eagerly (which also warms the communicator before the capture). */
	if (bufs_fill(c, &b, 1, s) != 0 || collectives(c, &b, s) != 0 ||
	    bufs_check(c, &b, 1, s, "eager") != 0)
		goto out;
	/* Captured; the graph replayed with new inputs. */
	if (dist_barrier(c, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		goto out;
	}
	if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess ||
	    collectives(c, &b, s) != 0 || cudaStreamEndCapture(s, &graph) != cudaSuccess ||
	    cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
		printf("rank %d: capture: FAIL: %s\n", c->rank, cudaGetErrorString(cudaGetLastError()));
		goto out;
	}
	for (int k = 2; k <= 3; k++) {
		char what[32];

		snprintf(what, sizeof what, "graph replay %d", k - 1);
		if (bufs_fill(c, &b, k, s) != 0)
			goto out;
		if (cudaGraphLaunch(exec, s) != cudaSuccess) {
			printf("rank %d: cudaGraphLaunch: FAIL\n", c->rank);
			goto out;
		}
		if (dist_watch(c, s, "t.graph", msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s\n", msg);
			goto out;
		}
		if (bufs_check(c, &b, k, s, what) != 0)
			goto out;
	}
	rc = 0;
out:
	if (exec != NULL)
		cudaGraphExecDestroy(exec);
	if (graph != NULL)
		cudaGraphDestroy(graph);
	bufs_free(&b);
	return rc;
}

/* The last rank dies or hangs after a barrier; the others wait in an
 * all_reduce, eager or in a graph. */
static int fault(struct dist_comm *c, const char *scenario, cudaStream_t s)
{
	cudaGraphExec_t exec = NULL;
	cudaGraph_t graph = NULL;
	struct bufs b;
	char msg[512];

	if (bufs_alloc(c, &b, PLAN_DTYPE_F32, 1000) != 0 || bufs_fill(c, &b, 1, s) != 0)
		return 3;
	c->current = "t.all_reduce";
	if (strcmp(scenario, "kill-graph") == 0) {
		/* Warm, then capture: a graph with the collective in it. */
		if (dist_all_reduce(c, b.x, b.n, b.dtype, s, msg, sizeof msg) != 0 ||
		    cudaStreamSynchronize(s) != cudaSuccess ||
		    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess ||
		    dist_all_reduce(c, b.x, b.n, b.dtype, s, msg, sizeof msg) != 0 ||
		    cudaStreamEndCapture(s, &graph) != cudaSuccess ||
		    cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
			fprintf(stderr, "rank %d: the graph could not be made\n", c->rank);
			return 3;
		}
	}
	if (dist_barrier(c, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		return 3;
	}
	printf("rank %d: past the barrier\n", c->rank);
	fflush(stdout);
	if (c->rank == c->world - 1) {
		usleep(500000);
		if (strcmp(scenario, "hang") == 0)
			for (;;)
				pause();
		raise(SIGKILL);
	}
	if (exec != NULL) {
		if (cudaGraphLaunch(exec, s) != cudaSuccess ||
		    dist_watch(c, s, "t.graph", msg, sizeof msg) != 0) {
			fprintf(stderr, "rank %d: graph launch failed\n", c->rank);
			return 3;
		}
	} else if (dist_all_reduce(c, b.x, b.n, b.dtype, s, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s\n", msg);
		return 3;
	}
	/* Blocks until the watchdog ends this process: its abort wakes the
	 * wait, which is then no result (dist_fired_wait never returns). */
	cudaStreamSynchronize(s);
	dist_fired_wait();
	printf("rank %d: the all_reduce completed without its peer\n", c->rank);
	return 1;
}

static int rank_main(struct dist_comm *c, void *arg)
{
	const char *scenario = arg;
	static const size_t sizes[] = {1000, 300000};
	cudaStream_t s;
	int bad = 0;

	if (c == NULL) {
		fprintf(stderr, "nccl-ranks: a world of one rank has no communicator\n");
		return 2;
	}
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
		fprintf(stderr, "rank %d: cudaStreamCreate failed\n", c->rank);
		return 3;
	}
	if (strcmp(scenario, "values") != 0)
		return fault(c, scenario, s);
	printf("rank %d: device %d, NCCL %s\n", c->rank, c->device,
	       c->nccl_version > 0 && c->nccl_version == dist_nccl_version() ? "version known"
	                                                                     : "version unknown");
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 2; k++)
			if (values(c, d == 0 ? PLAN_DTYPE_F32 : PLAN_DTYPE_BF16, sizes[k], s) != 0)
				bad = 1;
	{
		char msg[512];

		if (dist_barrier(c, msg, sizeof msg) != 0) {
			fprintf(stderr, "bcgtool: %s\n", msg);
			bad = 1;
		} else {
			printf("rank %d: barrier: ok\n", c->rank);
		}
	}
	cudaStreamDestroy(s);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct dist_opts o = {.world = 2, .transport = DIST_NCCL, .timeout_s = 60,
	                      .what = "nccl-ranks"};
	int i = 1;

	/* the NCCL this build runs with, for the tests' prerequisites */
	if (argc == 2 && strcmp(argv[1], "--nccl-version") == 0) {
		printf("%d\n", dist_nccl_version());
		return 0;
	}
	for (; i + 2 < argc; i += 2) {
		if (strcmp(argv[i], "--world") == 0)
			o.world = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--timeout") == 0)
			o.timeout_s = atof(argv[i + 1]);
		else
			break;
	}
	if (i + 1 != argc) {
		fprintf(stderr, "usage: nccl-ranks [--world N] [--timeout S] SCENARIO\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	{
		size_t len = strlen(argv[i]), sl = strlen("-symmetric");
		static char base[64];

		if (len > sl && len - sl < sizeof base &&
		    strcmp(argv[i] + len - sl, "-symmetric") == 0) {
			symmetric = 1;
			o.nccl_mem = DIST_NCCL_MEM_SYMMETRIC;
			memcpy(base, argv[i], len - sl);
			base[len - sl] = '\0';
			return dist_run(&o, rank_main, base);
		}
	}
	return dist_run(&o, rank_main, argv[i]);
}
