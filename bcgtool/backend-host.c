/*
 * backend-host.c - the host backend: the reference kernels on host memory.
 *
 * It computes real results (the numerical reference for the CUDA kernels)
 * and implements capture faithfully enough to test the engine without a
 * GPU: a captured segment is a snapshot of its op calls taken at capture,
 * so, as in a CUDA graph, later changes to host state do not reach it; an
 * op captured in its graph-safe form reads its var from the arena mirror at
 * replay, as the CUDA kernel reads device memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine/verify.h"
#include "ops/host.h"
#include "util.h"

struct backend {
	uint64_t              *marks;      /* ns per time stamp */
	struct backend_graph  *capturing;  /* the segment being captured */
	uint64_t               capture_start;
	char                   fault[256]; /* a kernel's fault, reported at the next wait
	                                      as CUDA reports a device-side error */
	int                    share;      /* graphs wait for graph_instantiate */
	int                    refuse;     /* test hook: refuse every update
	                                      (BCG_TEST_SHARE=refuse) */
	char                   nudge_op[128]; /* test hook BCG_TEST_NUDGE=OP:AMOUNT:
	                                         the op whose output a graph's */
	float                  nudge;      /* replay changes by this much */
};

/* BCG_TEST_NUDGE=OP:AMOUNT (bcgtool(1)): in a graph's replay, not in an
 * eager launch, AMOUNT is added to element 1 of every row of the first
 * output of the op named OP, as a graph-safe form that sums in another
 * order changes a full replay's results. */
static int host_nudge_parse(struct backend *b, char *msg, size_t len)
{
	const char *v = getenv("BCG_TEST_NUDGE"), *colon;
	char *end;

	if (v == NULL || v[0] == '\0')
		return 0;
	colon = strrchr(v, ':');
	if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof b->nudge_op ||
	    colon[1] == '\0' || (b->nudge = strtof(colon + 1, &end), *end != '\0') ||
	    b->nudge == 0.0f) {
		snprintf(msg, len, "BCG_TEST_NUDGE: '%s' is not OP:AMOUNT (an op's name, a "
		         "number other than 0)", v);
		return -1;
	}
	memcpy(b->nudge_op, v, (size_t)(colon - v));
	b->nudge_op[colon - v] = '\0';
	return 0;
}

/* A shared "executable": the calls of the graph it was last updated to,
 * copied in as an update copies a graph's parameters into a CUDA
 * executable. */
struct backend_exec {
	unsigned              refs;
	struct backend_graph *current;
	uint32_t              ncalls;
	struct op_call       *calls;
};

struct backend_graph {
	uint32_t             ncalls;
	uint32_t             cap;
	struct op_call      *calls;     /* the template, as captured */
	struct backend_exec *shared;    /* NULL: runs its own calls */
};

static int host_open(struct backend **out, struct backend_info *info, char *msg, size_t len)
{
	struct backend *b = calloc(1, sizeof *b);

	if (b == NULL || (b->marks = calloc(BACKEND_MAX_MARKS, sizeof *b->marks)) == NULL) {
		free(b);
		snprintf(msg, len, "out of memory");
		return -1;
	}
	memset(info, 0, sizeof *info);
	{
		const char *t = getenv("BCG_TEST_SHARE");
		b->refuse = t != NULL && strcmp(t, "refuse") == 0;
	}
	if (host_nudge_parse(b, msg, len) != 0) {
		free(b->marks);
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

static void host_close(struct backend *b)
{
	if (b == NULL)
		return;
	if (b->capturing != NULL) {
		free(b->capturing->calls);
		free(b->capturing);
	}
	free(b->marks);
	free(b);
}

static int host_alloc(struct backend *b, uint64_t arena_bytes, uint64_t scratch_bytes,
                      void **base, char *msg, size_t len)
{
	(void)b;
	uint64_t total = arena_bytes + scratch_bytes;

	/* Round up for aligned_alloc, and never ask for zero bytes. */
	total = (total + 255) & ~(uint64_t)255;
	if (total == 0)
		total = 256;
	if (total > SIZE_MAX || (*base = aligned_alloc(256, (size_t)total)) == NULL) {
		char h[32];
		snprintf(msg, len, "cannot allocate the %s arena in host memory",
		         bcg_human_bytes(total, h, sizeof h));
		return -1;
	}
	/* Deterministic contents for anything never written. */
	memset(*base, 0, (size_t)total);
	return 0;
}

static void host_free(struct backend *b, void *base)
{
	(void)b;
	free(base);
}

static size_t host_scratch_bytes(const struct op_call *call)
{
	(void)call;
	return 0;
}

static int host_init(struct backend *b, void *dst, int dtype, uint64_t count,
                     const struct plan_init *init, const struct bcg_slice *slice, char *msg,
                     size_t len)
{
	/* In parts of 4 Mi elements: a large weight takes a good part of a
	 * second, and an interrupt stops the work between parts (the engine
	 * sees it and ends). */
	const uint64_t part = (uint64_t)1 << 22;

	(void)b;
	(void)msg;
	(void)len;
	for (uint64_t at = 0; at < count && !bcg_interrupted(); at += part)
		host_init_range_slice(dst, dtype, at, count - at < part ? count - at : part, init,
		                      slice);
	return 0;
}

static int host_copy(struct backend *b, void *dst, const void *src, size_t bytes,
                     char *msg, size_t len)
{
	(void)b;
	(void)msg;
	(void)len;
	memmove(dst, src, bytes);
	return 0;
}

static int host_spare_alloc(struct backend *b, uint64_t bytes, void **p, char *msg, size_t len)
{
	(void)b;
	(void)msg;
	(void)len;
	/* No room is no copy: the caller keeps none, or says why. */
	*p = bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
	return 0;
}

static void host_spare_free(struct backend *b, void *p)
{
	(void)b;
	free(p);
}

static int host_compare(struct backend *b, int dtype, const void *got, const void *want,
                        uint64_t count, int tolerant, struct verify_result *res,
                        char *msg, size_t len)
{
	(void)b;
	(void)msg;
	(void)len;
	verify_compare(dtype, got, want, count, tolerant, res);
	return 0;
}

static int host_run_call(const struct op_call *call, char *why, size_t len);

/* Run CALL; a router whose logits give NaN, or a decoder_layer that found
 * no memory, is a fault of the step, reported at the next wait
 * (host_sync), as a device-side check would report it on the GPU: with
 * BCG_SYNC=1 that wait follows this launch and names it. */
static void host_run(struct backend *b, const struct op_call *call)
{
	int64_t row;
	char why[200];

	if (call->kind->id == OP_ALL_REDUCE || call->kind->id == OP_ALL_GATHER) {
		if (host_collective(call, why, sizeof why) != 0 && b->fault[0] == '\0')
			snprintf(b->fault, sizeof b->fault, "%s", why);
		return;
	}
	if (host_run_call(call, why, sizeof why) != 0 && b->fault[0] == '\0')
		snprintf(b->fault, sizeof b->fault, "kernel fault: %s", why);
	if ((call->kind->id == OP_MOE_ROUTER || call->kind->id == OP_MOE_ROUTER_PAGED) &&
	    b->fault[0] == '\0' && (row = host_moe_router_nan_row(call)) >= 0)
		snprintf(b->fault, sizeof b->fault, "kernel fault: %s: the logits of row %lld give "
		         "NaN weights (no expert can be chosen)", call->kind->name, (long long)row);
}

/* Run CALL's kernel: 0, or -1 with WHY (decoder_layer out of memory). */
static int host_run_call(const struct op_call *call, char *why, size_t len)
{
	struct op_call c;
	const struct op_call *use = call;

	if (call->graph_safe) {
		/* The graph-safe form: var-bound attributes come from the mirrors. */
		c = *call;
		for (int p = 0; p < OP_MAX_ATTRS; p++)
			if (c.attr_dev[p] != NULL)
				c.attr[p].i = *c.attr_dev[p];
		use = &c;
	}
	if (use->kind->id == OP_DECODER_LAYER)
		return host_decoder_layer_run(use, use->impl, why, len);
	host_impl_kernel(use->kind->id, use->impl)(use);
	return 0;
}

static int host_launch(struct backend *b, const struct op_call *call, char *msg, size_t len)
{
	struct backend_graph *g = b->capturing;

	if (g == NULL) {
		host_run(b, call);
		return 0;
	}
	if (g->ncalls == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 16;
		struct op_call *n = realloc(g->calls, cap * sizeof *n);
		if (n == NULL) {
			snprintf(msg, len, "out of memory");
			return -1;
		}
		g->calls = n;
		g->cap = cap;
	}
	g->calls[g->ncalls++] = *call;
	return 0;
}

/* Every host implementation runs every call its kind's check accepts. */
static int host_impl_usable(const struct op_call *call, int impl)
{
	return impl >= 0 && impl < host_impl_count(call->kind->id);
}

/* The host has no caches to empty worth the name next to its kernels'
 * run times: the median of REPS runs. */
static int host_time_call(struct backend *b, const struct op_call *call, unsigned reps,
                          double *us, char *msg, size_t len)
{
	double *t = calloc(reps ? reps : 1, sizeof *t);

	(void)b;
	if (t == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	/* An interrupt ends the repetitions (the caller sees it): a product
	 * of the host can take a good part of a second. */
	unsigned done = 0;
	while (done < reps && (done == 0 || !bcg_interrupted())) {
		uint64_t t0 = bcg_now_ns();
		if (host_run_call(call, msg, len) != 0) {
			free(t);
			return -1;
		}
		t[done++] = (double)(bcg_now_ns() - t0) / 1e3;
	}
	*us = bcg_percentile(t, done, 50);
	free(t);
	return 0;
}

static uint32_t host_set_features(struct backend *b, uint32_t features)
{
	(void)b;
	(void)features;   /* nothing to launch differently on the host */
	return 0;
}

static int host_capture_begin(struct backend *b, int step_start, char *msg, size_t len)
{
	(void)step_start;       /* the feeds are written before the step, as always */
	if (b->capturing != NULL) {
		snprintf(msg, len, "a capture is already in progress");
		return -1;
	}
	if ((b->capturing = calloc(1, sizeof *b->capturing)) == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	b->capture_start = bcg_now_ns();
	return 0;
}

static int host_capture_op_done(struct backend *b, uint32_t op, char *msg, size_t len)
{
	(void)b;
	(void)op;
	(void)msg;
	(void)len;
	return 0;
}

static int host_capture_end(struct backend *b, struct backend_graph **graph,
                            struct backend_capture *rec, char *msg, size_t len)
{
	if (b->capturing == NULL) {
		snprintf(msg, len, "no capture in progress");
		return -1;
	}
	*graph = b->capturing;
	b->capturing = NULL;
	if (rec != NULL) {
		struct backend_graph *g = *graph;
		memset(rec, 0, sizeof *rec);
		rec->capture_ns = bcg_now_ns() - b->capture_start;
		/* No nodes, but the keys of sharing: each call a kernel of its
		 * kind and implementation, in its graph-safe form or not. */
		if (g->ncalls > 0) {
			rec->keys = calloc(g->ncalls, sizeof *rec->keys);
			if (rec->keys == NULL) {
				snprintf(msg, len, "out of memory");
				return -1;
			}
			rec->nkeys = g->ncalls;
			for (uint32_t i = 0; i < g->ncalls; i++) {
				rec->keys[i].type = PLAN_NODE_KERNEL;
				rec->keys[i].func = ((uint64_t)g->calls[i].kind->id << 16) +
				                    (uint64_t)g->calls[i].impl + 1;
				rec->keys[i].attrs = (uint64_t)g->calls[i].graph_safe;
			}
		}
	}
	return 0;
}

static void host_share(struct backend *b, int on)
{
	b->share = on;
}

static void host_exec_put(struct backend *b, struct backend_exec *x)
{
	(void)b;
	if (x == NULL || --x->refs > 0)
		return;
	free(x->calls);
	free(x);
}

/* Update X to G, as cudaGraphExecUpdate would: refused (1) when the
 * calls differ in number, kind or implementation. */
static int host_exec_update(struct backend *b, struct backend_exec *x, struct backend_graph *g)
{
	int same = !b->refuse && x->ncalls == g->ncalls;

	for (uint32_t i = 0; same && i < g->ncalls; i++)
		same = x->calls[i].kind == g->calls[i].kind && x->calls[i].impl == g->calls[i].impl &&
		       x->calls[i].graph_safe == g->calls[i].graph_safe;
	if (!same) {
		x->current = NULL;
		return 1;
	}
	if (g->ncalls > 0)
		memcpy(x->calls, g->calls, g->ncalls * sizeof *x->calls);
	x->current = g;
	return 0;
}

static int host_graph_instantiate(struct backend *b, struct backend_graph *g,
                                  struct backend_exec **shared, struct backend_capture *rec,
                                  int *refused, char *msg, size_t len)
{
	struct backend_exec *x;

	(void)rec;
	*refused = 0;
	if (shared == NULL)
		return 0;       /* a host graph is its own executable */
	if (*shared == NULL) {
		x = calloc(1, sizeof *x);
		if (x == NULL ||
		    (x->calls = calloc(g->ncalls ? g->ncalls : 1, sizeof *x->calls)) == NULL) {
			free(x);
			snprintf(msg, len, "out of memory");
			return -1;
		}
		x->ncalls = g->ncalls;
		if (g->ncalls > 0)
			memcpy(x->calls, g->calls, g->ncalls * sizeof *x->calls);
		x->refs = 2;
		x->current = g;
		g->shared = x;
		*shared = x;
		return 0;
	}
	x = *shared;
	if ((*refused = host_exec_update(b, x, g)) != 0)
		return 0;
	x->refs++;
	g->shared = x;
	return 0;
}

/* One call of a graph's replay: host_run, then the test hook's nudge. */
static void host_run_replayed(struct backend *b, const struct op_call *call)
{
	host_run(b, call);
	if (b->nudge_op[0] == '\0' || call->name == NULL || strcmp(call->name, b->nudge_op) != 0 ||
	    call->nout < 1)
		return;
	const struct op_tensor *t = &call->out[0];
	int64_t rows = op_tensor_rows(t), cols = op_tensor_cols(t);
	if (t->dtype == PLAN_DTYPE_I32 || cols < 2)
		return;
	for (int64_t r = 0; r < rows; r++)
		host_store(t, r * cols + 1, host_load(t, r * cols + 1) + b->nudge);
}

static int host_graph_launch(struct backend *b, struct backend_graph *g, char *msg, size_t len)
{
	struct backend_exec *x = g->shared;

	(void)msg;
	(void)len;
	/* Another size ran on the shared calls since: update them to G's;
	 * refused, G runs its own (backend-cuda.c does the same). */
	if (x != NULL && x->current != g && host_exec_update(b, x, g) != 0) {
		g->shared = NULL;
		host_exec_put(b, x);
		x = NULL;
	}
	if (x != NULL) {
		for (uint32_t i = 0; i < x->ncalls; i++)
			host_run_replayed(b, &x->calls[i]);
		return 0;
	}
	for (uint32_t i = 0; i < g->ncalls; i++)
		host_run_replayed(b, &g->calls[i]);
	return 0;
}

static void host_graph_free(struct backend *b, struct backend_graph *g)
{
	if (g != NULL) {
		if (g->shared != NULL) {
			if (g->shared->current == g)
				g->shared->current = NULL;
			host_exec_put(b, g->shared);
		}
		free(g->calls);
		free(g);
	}
}

static int host_mark(struct backend *b, unsigned slot, char *msg, size_t len)
{
	if (slot >= BACKEND_MAX_MARKS) {
		snprintf(msg, len, "time stamp %u out of range", slot);
		return -1;
	}
	b->marks[slot] = bcg_now_ns();
	return 0;
}

static int host_sync(struct backend *b, char *msg, size_t len)
{
	if (b->fault[0] == '\0')
		return 0;
	snprintf(msg, len, "%s", b->fault);
	b->fault[0] = '\0';
	return -1;
}

static int host_elapsed(struct backend *b, unsigned from, unsigned to, double *ms,
                        char *msg, size_t len)
{
	if (from >= BACKEND_MAX_MARKS || to >= BACKEND_MAX_MARKS) {
		snprintf(msg, len, "time stamp out of range");
		return -1;
	}
	*ms = ((double)b->marks[to] - (double)b->marks[from]) / 1e6;
	return 0;
}

/* The test hook's fault (backend.h): a reference kernel cannot fault, so
 * the launch fails as a faulting kernel's would. */
static int host_fault(struct backend *b, int wait, char *msg, size_t len)
{
	(void)b;
	(void)wait;
	snprintf(msg, len, "kernel fault: an illegal memory access (BCG_TEST_FAULT)");
	return -1;
}

const struct backend_ops backend_host = {
	.name = "host",
	.kind = PLAN_BACKEND_HOST,
	.open = host_open,
	.close = host_close,
	.alloc = host_alloc,
	.free = host_free,
	.scratch_bytes = host_scratch_bytes,
	.init = host_init,
	.write = host_copy,
	.read = host_copy,
	.spare_alloc = host_spare_alloc,
	.spare_free = host_spare_free,
	.copy = host_copy,
	.compare = host_compare,
	.launch = host_launch,
	.impl_count = host_impl_count,
	.impl_name = host_impl_name,
	.impl_usable = host_impl_usable,
	.time_call = host_time_call,
	.set_features = host_set_features,
	.capture_begin = host_capture_begin,
	.capture_op_done = host_capture_op_done,
	.capture_end = host_capture_end,
	.graph_launch = host_graph_launch,
	.graph_free = host_graph_free,
	.share = host_share,
	.graph_instantiate = host_graph_instantiate,
	.exec_put = host_exec_put,
	.hold = NULL,
	.mark = host_mark,
	.sync = host_sync,
	.elapsed = host_elapsed,
	.fault = host_fault,
};
