/*
 * dist/nccl.c - the communicator over NCCL: one process per GPU.
 *
 * The communicator is made non-blocking (ncclConfig_t.blocking = 0): every
 * NCCL call returns at once, ncclInProgress while work remains, and
 * ncclCommGetAsyncError says when it is done. So no thread is ever stuck
 * inside NCCL where ncclCommAbort cannot reach it: the watchdog
 * (dist/watchdog.c) aborts, and every wait here gives up.
 *
 * The collectives are launched on the op's stream, so that a capture of
 * that stream takes them into its graph. Outside a capture, an event
 * recorded after each one tells the watchdog when it completed: the
 * watchdog sees a collective as pending from its launch (or the
 * completion of the one before it) until that event.
 *
 * The barrier is a one-int all-reduce on a stream of the communicator's
 * own, waited for on the host. It needs nothing but the communicator, so
 * it works the same under the launcher of dist/launch.c and under an
 * external one (which has no pipes between the ranks), and a rank that is
 * gone stops it the way it stops any collective: through the watchdog.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

int dist_cuda_devices(int *count, char *msg, size_t len)
{
	cudaError_t e = cudaGetDeviceCount(count);

	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
		*count = 0;
		return 0;
	}
	if (e != cudaSuccess) {
		*count = 0;
		snprintf(msg, len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
		return -1;
	}
	return 0;
}
#else
int dist_cuda_devices(int *count, char *msg, size_t len)
{
	(void)msg;
	(void)len;
	*count = 0;
	return 0;
}
#endif

#ifdef HAVE_NCCL

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions without prototypes (f() for f(void)). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "plan.h"

/* Collectives in flight that the watchdog can follow. */
#define NCCL_RING 256
#define NCCL_NAME 96
/* The least time a communicator is given to come up, in seconds. */
#define NCCL_INIT_MIN_S 30.0

struct nccl_launch {
	cudaEvent_t done;
	double      since;
	char        what[NCCL_NAME];
};

struct dist_nccl {
	struct dist_comm   base;
	ncclComm_t         comm;
	cudaStream_t       side;        /* the barrier's */
	int               *flag;        /* the barrier's device int */
	double             timeout_s;
	atomic_int         aborted;     /* ncclCommAbort called: touch nothing */
	int                watcher_relaxed; /* the watchdog's thread, in relaxed
	                                       capture mode (pending() only) */
	pthread_mutex_t    mu;          /* the fields below */
	struct nccl_launch ring[NCCL_RING];
	unsigned           head, count; /* in flight: ring[head], ... */
	double             last_done;   /* when the last one was seen complete */
	int                in_call;     /* a thread is in an NCCL call here */
	double             call_since;
	char               call_what[NCCL_NAME];
	/* Symmetric memory (sym_alloc): the buffer and its window. */
	void              *sym;
	uint64_t           sym_bytes;
#ifdef NCCL_WIN_COLL_SYMMETRIC
	ncclWindow_t       win;
#endif
};

static int nccl_fail(struct dist_nccl *n, char *msg, size_t len, const char *what,
                     const char *call, ncclResult_t r)
{
	const char *last = n != NULL && n->comm != NULL ? ncclGetLastError(n->comm)
	                                                : ncclGetLastError(NULL);

	snprintf(msg, len, "rank %d: %s: %s: %s%s%s", n != NULL ? n->base.rank : -1, what, call,
	         ncclGetErrorString(r), last != NULL && *last ? ": " : "", last ? last : "");
	return -1;
}

static int cuda_fail(struct dist_nccl *n, int rank, char *msg, size_t len, const char *what,
                     const char *call, cudaError_t e)
{
	snprintf(msg, len, "rank %d: %s: %s: %s", n != NULL ? n->base.rank : rank, what, call,
	         cudaGetErrorString(e));
	return -1;
}

static void nccl_pause(unsigned spins)
{
	struct timespec ts = {0, 50000};

	if (spins < 1000)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/*
 * Waits for the communicator's calls to be done (ncclInProgress over).
 * Gives up after TIMEOUT_S, or forever blocks once the watchdog aborted
 * the communicator (the process is then about to end: nothing here may
 * touch the communicator again).
 */
static ncclResult_t nccl_settle(struct dist_nccl *n, double timeout_s)
{
	double start = dist_now();
	ncclResult_t st = ncclInProgress;
	unsigned spins = 0;

	for (;;) {
		ncclResult_t r;

		if (atomic_load(&n->aborted))
			for (;;)
				sleep(1);
		r = ncclCommGetAsyncError(n->comm, &st);
		if (r != ncclSuccess)
			return r;
		if (st != ncclInProgress)
			return st;
		if (dist_now() - start > timeout_s)
			return ncclInProgress;
		nccl_pause(spins++);
	}
}

static const char *nccl_name(struct dist_nccl *n, const char *kind, char *buf, size_t len)
{
	if (n->base.current != NULL)
		snprintf(buf, len, "%s", n->base.current);
	else
		snprintf(buf, len, "%s", kind);
	return buf;
}

static void nccl_enter(struct dist_nccl *n, const char *what)
{
	pthread_mutex_lock(&n->mu);
	n->in_call = 1;
	n->call_since = dist_now();
	snprintf(n->call_what, sizeof n->call_what, "%s", what);
	pthread_mutex_unlock(&n->mu);
}

static void nccl_leave(struct dist_nccl *n)
{
	pthread_mutex_lock(&n->mu);
	n->in_call = 0;
	pthread_mutex_unlock(&n->mu);
}

/* Drops the launches seen complete from the ring's head. Under n->mu. */
static void nccl_reap(struct dist_nccl *n)
{
	while (n->count > 0 && cudaEventQuery(n->ring[n->head].done) == cudaSuccess) {
		n->head = (n->head + 1) % NCCL_RING;
		n->count--;
		n->last_done = dist_now();
	}
}

/* After a launch on STREAM: an event the watchdog follows, unless STREAM
 * is being captured (a graph's launch is followed through watch()). */
static int nccl_follow(struct dist_nccl *n, cudaStream_t stream, const char *what, char *msg,
                       size_t len)
{
	enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	struct nccl_launch *l;
	cudaError_t e;

	e = cudaStreamIsCapturing(stream, &cs);
	if (e != cudaSuccess)
		return cuda_fail(n, 0, msg, len, what, "cudaStreamIsCapturing", e);
	if (cs != cudaStreamCaptureStatusNone)
		return 0;
	pthread_mutex_lock(&n->mu);
	nccl_reap(n);
	if (n->count == NCCL_RING) {
		/* As many in flight as followed: wait for the oldest (the
		 * watchdog still times it). */
		cudaEvent_t oldest = n->ring[n->head].done;

		pthread_mutex_unlock(&n->mu);
		e = cudaEventSynchronize(oldest);
		if (e != cudaSuccess)
			return cuda_fail(n, 0, msg, len, what, "cudaEventSynchronize", e);
		pthread_mutex_lock(&n->mu);
		nccl_reap(n);
	}
	l = &n->ring[(n->head + n->count) % NCCL_RING];
	e = cudaEventRecord(l->done, stream);
	if (e == cudaSuccess) {
		l->since = dist_now();
		snprintf(l->what, sizeof l->what, "%s", what);
		n->count++;
	}
	pthread_mutex_unlock(&n->mu);
	if (e != cudaSuccess)
		return cuda_fail(n, 0, msg, len, what, "cudaEventRecord", e);
	return 0;
}

/* The end of an NCCL collective call: its result (waiting out
 * ncclInProgress), then the event that follows it. */
static int nccl_launched(struct dist_nccl *n, ncclResult_t r, const char *call,
                         cudaStream_t stream, const char *what, char *msg, size_t len)
{
	if (r == ncclInProgress)
		r = nccl_settle(n, n->timeout_s);
	if (r == ncclInProgress) {
		snprintf(msg, len, "rank %d: %s: %s did not return within %g s (a rank is gone?)",
		         n->base.rank, what, call, n->timeout_s);
		return -1;
	}
	if (r != ncclSuccess)
		return nccl_fail(n, msg, len, what, call, r);
	return nccl_follow(n, stream, what, msg, len);
}

static int nccl_type(int dtype, ncclDataType_t *t)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:  *t = ncclFloat32;  return 0;
	case PLAN_DTYPE_F16:  *t = ncclFloat16;  return 0;
	case PLAN_DTYPE_BF16: *t = ncclBfloat16; return 0;
	case PLAN_DTYPE_I32:  *t = ncclInt32;    return 0;
	default:              return -1;
	}
}

static int nccl_all_reduce(struct dist_comm *c, void *buf, uint64_t count, int dtype,
                           void *stream, char *msg, size_t len)
{
	struct dist_nccl *n = (struct dist_nccl *)c;
	char what[NCCL_NAME];
	ncclDataType_t t;
	ncclResult_t r;
	int rc;

	nccl_name(n, "all_reduce", what, sizeof what);
	if (nccl_type(dtype, &t) != 0 || dtype == PLAN_DTYPE_I32) {
		snprintf(msg, len, "rank %d: %s: all_reduce of dtype %d: only f32, f16 and bf16 are "
		         "summed", c->rank, what, dtype);
		return -1;
	}
	nccl_enter(n, what);
	r = ncclAllReduce(buf, buf, (size_t)count, t, ncclSum, n->comm, (cudaStream_t)stream);
	rc = nccl_launched(n, r, "ncclAllReduce", (cudaStream_t)stream, what, msg, len);
	nccl_leave(n);
	return rc;
}

static int nccl_all_gather(struct dist_comm *c, const void *send, void *recv, uint64_t count,
                           int dtype, void *stream, char *msg, size_t len)
{
	struct dist_nccl *n = (struct dist_nccl *)c;
	char what[NCCL_NAME];
	ncclDataType_t t;
	ncclResult_t r;
	int rc;

	nccl_name(n, "all_gather", what, sizeof what);
	if (nccl_type(dtype, &t) != 0) {
		snprintf(msg, len, "rank %d: %s: all_gather of dtype %d: not a dtype of plan.h",
		         c->rank, what, dtype);
		return -1;
	}
	nccl_enter(n, what);
	r = ncclAllGather(send, recv, (size_t)count, t, n->comm, (cudaStream_t)stream);
	rc = nccl_launched(n, r, "ncclAllGather", (cudaStream_t)stream, what, msg, len);
	nccl_leave(n);
	return rc;
}

static int nccl_barrier(struct dist_comm *c, char *msg, size_t len)
{
	struct dist_nccl *n = (struct dist_nccl *)c;
	const char *what = "barrier";
	ncclResult_t r;
	cudaError_t e;
	int rc = -1;

	nccl_enter(n, what);
	/* The sum itself is not used; kept 0, it never overflows. */
	e = cudaMemsetAsync(n->flag, 0, sizeof *n->flag, n->side);
	if (e != cudaSuccess) {
		cuda_fail(n, 0, msg, len, what, "cudaMemsetAsync", e);
		goto out;
	}
	r = ncclAllReduce(n->flag, n->flag, 1, ncclInt32, ncclSum, n->comm, n->side);
	if (r == ncclInProgress)
		r = nccl_settle(n, n->timeout_s);
	if (r == ncclInProgress) {
		snprintf(msg, len, "rank %d: barrier: ncclAllReduce did not return within %g s "
		         "(a rank is gone?)", c->rank, n->timeout_s);
		goto out;
	}
	if (r != ncclSuccess) {
		nccl_fail(n, msg, len, what, "ncclAllReduce", r);
		goto out;
	}
	/* Blocks while a rank is missing: the watchdog sees this call. */
	e = cudaStreamSynchronize(n->side);
	if (e != cudaSuccess) {
		cuda_fail(n, 0, msg, len, what, "cudaStreamSynchronize", e);
		goto out;
	}
	rc = 0;
out:
	nccl_leave(n);
	return rc;
}

static void nccl_abort(struct dist_comm *c);

/*
 * Symmetric memory. NCCL's symmetric kernels take the peers' operands at
 * the offset of this rank's within its window, so every rank must
 * register the same size and place each operand at the same offset: the
 * engine lays the region out from the collectives alone (engine.c), and
 * here the ranks compare (size, layout) through an all-gather before the
 * (collective) registration, which would otherwise hang or compute wrong
 * sums. Everything waits under nccl_enter, so the watchdog ends a rank
 * whose peer is gone within the timeout.
 */
int dist_symmetric_check(int version, char *msg, size_t len)
{
	const char *t = getenv("BCG_TEST_NCCL_VERSION");

	/* test hook (bcgtool(1), ENVIRONMENT): an older NCCL's refusal */
	if (t != NULL && *t != '\0')
		version = atoi(t);
#ifndef NCCL_WIN_COLL_SYMMETRIC
	snprintf(msg, len, "--nccl-mem symmetric: this bcgtool was built with NCCL %d.%d.%d, "
	         "whose nccl.h has no symmetric memory windows (NCCL 2.27 or later)", NCCL_MAJOR,
	         NCCL_MINOR, NCCL_PATCH);
	(void)version;
	return -1;
#else
	if (version < DIST_NCCL_SYMMETRIC_MIN) {
		snprintf(msg, len, "--nccl-mem symmetric: NCCL %d.%d.%d has no symmetric memory "
		         "windows (NCCL 2.27 or later): use --nccl-mem default", version / 10000,
		         version / 100 % 100, version % 100);
		return -1;
	}
	return 0;
#endif
}

#ifdef NCCL_WIN_COLL_SYMMETRIC
/* Every rank's (BYTES, LAYOUT) the same: 0, else -1 with MSG naming the
 * first rank that differs from this one. */
static int nccl_sym_agree(struct dist_nccl *n, uint64_t bytes, uint64_t layout, char *msg,
                          size_t len)
{
	const char *what = "symmetric memory";
	int world = n->base.world, rc = -1;
	uint64_t mine[2] = { bytes, layout }, *all = NULL, *dev = NULL;
	ncclResult_t r;
	cudaError_t e;

	if ((all = malloc(sizeof *all * 2 * (size_t)world)) == NULL) {
		snprintf(msg, len, "rank %d: %s: out of memory", n->base.rank, what);
		return -1;
	}
	e = cudaMalloc((void **)&dev, sizeof *dev * 2 * ((size_t)world + 1));
	if (e != cudaSuccess) {
		cuda_fail(n, 0, msg, len, what, "cudaMalloc", e);
		goto out;
	}
	e = cudaMemcpyAsync(dev, mine, sizeof mine, cudaMemcpyHostToDevice, n->side);
	if (e != cudaSuccess) {
		cuda_fail(n, 0, msg, len, what, "cudaMemcpyAsync", e);
		goto out;
	}
	r = ncclAllGather(dev, dev + 2, 2, ncclUint64, n->comm, n->side);
	if (r == ncclInProgress)
		r = nccl_settle(n, n->timeout_s);
	if (r != ncclSuccess) {
		if (r == ncclInProgress)
			snprintf(msg, len, "rank %d: %s: ncclAllGather did not return within %g s "
			         "(a rank is gone?)", n->base.rank, what, n->timeout_s);
		else
			nccl_fail(n, msg, len, what, "ncclAllGather", r);
		goto out;
	}
	/* Blocks while a rank is missing: the watchdog sees this call. */
	e = cudaMemcpyAsync(all, dev + 2, sizeof *all * 2 * (size_t)world, cudaMemcpyDeviceToHost,
	                    n->side);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(n->side);
	if (e != cudaSuccess) {
		cuda_fail(n, 0, msg, len, what, "cudaMemcpyAsync", e);
		goto out;
	}
	for (int k = 0; k < world; k++)
		if (all[2 * k] != bytes || all[2 * k + 1] != layout) {
			snprintf(msg, len, "rank %d: %s: rank %d lays out %llu bytes (layout %016llx), "
			         "this rank %llu (%016llx): the ranks' collectives differ", n->base.rank,
			         what, k, (unsigned long long)all[2 * k],
			         (unsigned long long)all[2 * k + 1], (unsigned long long)bytes,
			         (unsigned long long)layout);
			goto out;
		}
	rc = 0;
out:
	if (dev != NULL)
		(void)cudaFree(dev);
	free(all);
	return rc;
}
#endif

static int nccl_sym_alloc(struct dist_comm *c, uint64_t bytes, uint64_t layout, void **p,
                          char *msg, size_t len)
{
	struct dist_nccl *n = (struct dist_nccl *)c;
	int rc = -1;

	*p = NULL;
	if (dist_symmetric_check(c->nccl_version, msg, len) != 0)
		return -1;
#ifdef NCCL_WIN_COLL_SYMMETRIC
	const char *what = "symmetric memory";
	ncclResult_t r;

	if (n->sym != NULL) {
		snprintf(msg, len, "rank %d: %s: a window is registered already", c->rank, what);
		return -1;
	}
	/* A window's size is a multiple of NCCL's alignment. */
	bytes = (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) &
	        ~(uint64_t)(NCCL_WIN_REQUIRED_ALIGNMENT - 1);
	nccl_enter(n, what);
	if (nccl_sym_agree(n, bytes, layout, msg, len) != 0)
		goto out;
	r = ncclMemAlloc(&n->sym, (size_t)bytes);
	if (r != ncclSuccess) {
		n->sym = NULL;
		nccl_fail(n, msg, len, what, "ncclMemAlloc", r);
		goto out;
	}
	n->sym_bytes = bytes;
	if (cudaMemset(n->sym, 0, (size_t)bytes) != cudaSuccess) {
		snprintf(msg, len, "rank %d: %s: cudaMemset failed", c->rank, what);
		goto out;
	}
	r = ncclCommWindowRegister(n->comm, n->sym, (size_t)bytes, &n->win,
	                           NCCL_WIN_COLL_SYMMETRIC);
	if (r == ncclInProgress)
		r = nccl_settle(n, n->timeout_s);
	if (r == ncclInProgress) {
		snprintf(msg, len, "rank %d: %s: ncclCommWindowRegister did not return within %g s "
		         "(a rank is gone?)", c->rank, what, n->timeout_s);
		goto out;
	}
	if (r != ncclSuccess) {
		n->win = NULL;
		nccl_fail(n, msg, len, what, "ncclCommWindowRegister", r);
		goto out;
	}
	if (n->win == NULL) {
		/* NCCL registers no window where it cannot map the peers'
		 * memory (no NVLink or P2P, NCCL_CUMEM_ENABLE=0): the
		 * collectives would silently take the default path. */
		const char *nvls = getenv("NCCL_NVLS_ENABLE");
		snprintf(msg, len, "rank %d: %s: NCCL registered no window (no symmetric memory "
		         "between these GPUs%s%s%s): use --nccl-mem default", c->rank, what,
		         nvls != NULL ? "; NCCL_NVLS_ENABLE=" : "?", nvls != NULL ? nvls : "",
		         nvls != NULL ? " is set" : "");
		goto out;
	}
	*p = n->sym;
	rc = 0;
out:
	nccl_leave(n);
	if (rc != 0 && n->sym != NULL && n->win == NULL) {
		(void)ncclMemFree(n->sym);
		n->sym = NULL;
	}
	return rc;
#else
	(void)n;
	(void)bytes;
	(void)layout;
	return rc;
#endif
}

static void nccl_sym_free(struct dist_comm *c, void *p)
{
	struct dist_nccl *n = (struct dist_nccl *)c;

	if (p == NULL || p != n->sym)
		return;
#ifdef NCCL_WIN_COLL_SYMMETRIC
	/* The window first, while the memory is there: collective, so it
	 * waits under nccl_enter (the watchdog's timeout) and gives up after
	 * the timeout. An aborted communicator took its windows with it. */
	if (n->win != NULL && !atomic_load(&n->aborted)) {
		ncclResult_t r;

		nccl_enter(n, "symmetric memory");
		r = ncclCommWindowDeregister(n->comm, n->win);
		if (r == ncclInProgress)
			r = nccl_settle(n, n->timeout_s);
		nccl_leave(n);
		if (r != ncclSuccess) {
			/* the memory stays mapped by the peers: abort, so that
			 * freeing it below cannot fault them */
			fprintf(stderr, "bcgtool: rank %d: symmetric memory: ncclCommWindowDeregister: "
			        "%s; aborting the communicator\n", c->rank, ncclGetErrorString(r));
			nccl_abort(c);
		}
	}
	n->win = NULL;
	(void)cudaDeviceSynchronize();
	(void)ncclMemFree(n->sym);
#endif
	n->sym = NULL;
	n->sym_bytes = 0;
}

static int nccl_pending(struct dist_comm *c, double *since, char *what, size_t len)
{
	struct dist_nccl *n = (struct dist_nccl *)c;
	int busy = 0;

	/* The runtime's current device is the thread's own; and a capture in
	 * global mode elsewhere must not forbid this thread its queries. */
	if (cudaSetDevice(c->device) != cudaSuccess)
		return 0;
	if (!n->watcher_relaxed) {
		enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;

		if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess)
			return 0;
		n->watcher_relaxed = 1;
	}
	pthread_mutex_lock(&n->mu);
	if (n->in_call) {
		*since = n->call_since;
		snprintf(what, len, "%s", n->call_what);
		busy = 1;
	} else {
		nccl_reap(n);
		if (n->count > 0) {
			const struct nccl_launch *l = &n->ring[n->head];

			*since = l->since > n->last_done ? l->since : n->last_done;
			snprintf(what, len, "%s", l->what);
			busy = 1;
		}
	}
	pthread_mutex_unlock(&n->mu);
	return busy;
}

static int nccl_watch(struct dist_comm *c, void *stream, const char *what, char *msg,
                      size_t len)
{
	return nccl_follow((struct dist_nccl *)c, (cudaStream_t)stream, what, msg, len);
}

static void nccl_abort(struct dist_comm *c)
{
	struct dist_nccl *n = (struct dist_nccl *)c;

	if (atomic_exchange(&n->aborted, 1) == 0)
		(void)ncclCommAbort(n->comm);
}

static void nccl_destroy(struct dist_comm *c)
{
	struct dist_nccl *n = (struct dist_nccl *)c;

	if (n == NULL)
		return;
	/* An engine that did not close (a fault path) leaves its symmetric
	 * memory: deregistered and freed before the communicator goes. */
	if (n->sym != NULL)
		nccl_sym_free(c, n->sym);
	if (n->comm != NULL && !atomic_load(&n->aborted)) {
		ncclResult_t r = ncclCommFinalize(n->comm);

		if (r == ncclInProgress || r == ncclSuccess)
			r = nccl_settle(n, n->timeout_s);
		if (r == ncclSuccess)
			(void)ncclCommDestroy(n->comm);
		else
			nccl_abort(c);
	}
	for (unsigned i = 0; i < NCCL_RING; i++)
		if (n->ring[i].done != NULL)
			(void)cudaEventDestroy(n->ring[i].done);
	if (n->flag != NULL)
		(void)cudaFree(n->flag);
	if (n->side != NULL)
		(void)cudaStreamDestroy(n->side);
	pthread_mutex_destroy(&n->mu);
	free(n);
}


static const struct dist_comm_ops nccl_ops = {
	.name = "nccl",
	.all_reduce = nccl_all_reduce,
	.all_gather = nccl_all_gather,
	.barrier = nccl_barrier,
	.abort = nccl_abort,
	.destroy = nccl_destroy,
	.pending = nccl_pending,
	.watch = nccl_watch,
	.sym_alloc = nccl_sym_alloc,
	.sym_free = nccl_sym_free,
};

static int nccl_make_id(void *id, char *msg, size_t len)
{
	ncclUniqueId u;
	ncclResult_t r = ncclGetUniqueId(&u);

	if (r != ncclSuccess) {
		snprintf(msg, len, "rank 0: ncclGetUniqueId: %s", ncclGetErrorString(r));
		return -1;
	}
	memcpy(id, &u, sizeof u);
	return 0;
}

/* The communicator's own resources: the barrier's stream and int, the
 * events that follow launches. */
static int nccl_resources(struct dist_nccl *n, char *msg, size_t len)
{
	cudaError_t e;

	e = cudaStreamCreateWithFlags(&n->side, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return cuda_fail(n, 0, msg, len, "communicator", "cudaStreamCreateWithFlags", e);
	e = cudaMalloc((void **)&n->flag, sizeof *n->flag);
	if (e != cudaSuccess)
		return cuda_fail(n, 0, msg, len, "communicator", "cudaMalloc", e);
	e = cudaMemset(n->flag, 0, sizeof *n->flag);
	if (e != cudaSuccess)
		return cuda_fail(n, 0, msg, len, "communicator", "cudaMemset", e);
	for (unsigned i = 0; i < NCCL_RING; i++) {
		e = cudaEventCreateWithFlags(&n->ring[i].done, cudaEventDisableTiming);
		if (e != cudaSuccess)
			return cuda_fail(n, 0, msg, len, "communicator", "cudaEventCreateWithFlags", e);
	}
	return 0;
}

static int nccl_make_comm(struct dist_comm **out, int world, int rank, int device,
                          const void *id, double timeout_s, char *msg, size_t len)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	struct dist_nccl *n;
	ncclUniqueId u;
	ncclResult_t r;
	cudaError_t e;
	int version = 0;
	/* Making a communicator connects every rank to the others, which
	 * may take longer than a collective may: a short --timeout (meant
	 * for collectives) does not shorten it below NCCL_INIT_MIN_S. */
	double init_s = timeout_s > NCCL_INIT_MIN_S ? timeout_s : NCCL_INIT_MIN_S;

	*out = NULL;
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return cuda_fail(NULL, rank, msg, len, "communicator", "cudaSetDevice", e);
	n = calloc(1, sizeof *n);
	if (n == NULL) {
		snprintf(msg, len, "rank %d: communicator: out of memory", rank);
		return -1;
	}
	pthread_mutex_init(&n->mu, NULL);
	atomic_init(&n->aborted, 0);
	n->base.ops = &nccl_ops;
	n->base.world = world;
	n->base.rank = rank;
	n->base.device = device;
	n->timeout_s = timeout_s;
	(void)ncclGetVersion(&version);
	n->base.nccl_version = version;
	if (nccl_resources(n, msg, len) != 0)
		goto fail;
	memcpy(&u, id, sizeof u);
	cfg.blocking = 0;
	r = ncclCommInitRankConfig(&n->comm, world, u, rank, &cfg);
	if (r == ncclInProgress || (r == ncclSuccess && n->comm != NULL))
		r = nccl_settle(n, init_s);
	if (r == ncclInProgress) {
		snprintf(msg, len, "rank %d: the NCCL communicator of %d ranks was not ready within "
		         "%g s (a rank is gone?)", rank, world, init_s);
		goto fail;
	}
	if (r != ncclSuccess) {
		nccl_fail(n, msg, len, "communicator", "ncclCommInitRankConfig", r);
		goto fail;
	}
	*out = &n->base;
	return 0;
fail:
	if (n->comm != NULL)
		nccl_abort(&n->base);
	nccl_destroy(&n->base);
	return -1;
}

static const struct dist_transport_ops nccl_transport = {
	.name = "nccl",
	.id_size = sizeof(ncclUniqueId),
	.devices = dist_cuda_devices,
	.make_id = nccl_make_id,
	.make_comm = nccl_make_comm,
};

const struct dist_transport_ops *dist_nccl_transport(void)
{
	return &nccl_transport;
}

int dist_have_nccl(void)
{
	return 1;
}

int dist_nccl_version(void)
{
	int v = 0;

	return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

#else /* !HAVE_NCCL */

int dist_symmetric_check(int version, char *msg, size_t len)
{
	(void)version;
	snprintf(msg, len, "--nccl-mem symmetric: " DIST_NO_NCCL);
	return -1;
}

const struct dist_transport_ops *dist_nccl_transport(void)
{
	return NULL;
}

int dist_have_nccl(void)
{
	return 0;
}

int dist_nccl_version(void)
{
	return 0;
}

#endif
