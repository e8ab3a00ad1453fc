/*
 * cuda-ops.c - the CUDA kernels (bcgtool/ops/cuda-*.cu) against the host
 * reference kernels, on a real device.
 *
 * Every case fills its inputs from a fresh seed (printed first; set
 * BCG_TEST_SEED to repeat a run), poisons its outputs on both sides (0xFF
 * bytes: NaN in every float dtype; the host's i32 outputs get other bytes,
 * so that an element neither side writes still differs), runs the CUDA
 * launcher and the host kernel, and compares:
 *  - bit for bit where the arithmetic is the same single rounding on both
 *    sides: fill, copy, add, mul, scale, embedding, kv_write, argmax and
 *    the initializers;
 *  - else within a bound relative to the output's largest magnitude
 *    (f32 1e-5, matmul and attention 1e-4; f16 and bf16 1e-2).
 * A NaN on either side never passes. Attention runs in both forms at many
 * kv_len, with GQA, odd and misaligned head dims, and different split
 * counts; the graph-safe form is also captured once into a CUDA graph and
 * replayed with new device kv_len values. Every op kind is also launched
 * once inside a stream capture, as the engine does.
 *
 * Without a usable CUDA device the whole program is skipped.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ops/cuda.h"
#include "ops/host.h"
#include "ops/numeric.h"
#include "tap.h"

#define POISON_DEV      0xFF
#define POISON_HOST_I32 0x7F

static const int float_dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16 };
#define N_FLOAT_DTYPES ((int)(sizeof float_dtypes / sizeof float_dtypes[0]))

struct env {
	cudaStream_t       stream;
	cublasHandle_t     cublas;
	void              *workspace;
	struct cuda_op_ctx ctx;          /* scratch set per case */
	uint64_t           seed;
	uint64_t           counter;      /* the generator's next counter */
};

/* A tensor on both sides: HOST feeds and receives the reference, DEV the
 * kernel under test, SHIFT bytes into its allocation (to misalign it). */
struct tbuf {
	int     dtype;
	int     rank;
	int64_t dim[PLAN_MAX_RANK];
	int64_t numel;
	size_t  bytes;
	size_t  shift;
	void   *host;
	void   *dev_base;
	void   *dev;
};

/* One launch to check. */
struct tcase {
	char               what[200];
	enum op_id         id;
	int                nin, nout;
	struct tbuf       *in[OP_MAX_IN];
	struct tbuf       *out[OP_MAX_OUT];
	union op_value     attr[OP_MAX_ATTRS];
	const int32_t     *attr_dev[OP_MAX_ATTRS];
	int                graph_safe;
	int                keep_out;     /* outputs hold contents to keep (kv_write) */
	int                capture;      /* also run it inside a captured graph */
	double             tol;          /* 0: bit for bit */
	size_t             scratch;      /* scratch bytes to give the launcher */
	int                sm_count;     /* 0: the device's */
};

/* --- plumbing ------------------------------------------------------------- */

__attribute__((format(printf, 1, 2), noreturn))
static void bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

#define CK(expr) ck_((expr), #expr, __FILE__, __LINE__)
static void ck_(cudaError_t err, const char *what, const char *file, int line)
{
	if (err != cudaSuccess)
		bail("%s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

static size_t dtype_size(int dtype)
{
	return dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16 ? 2 : 4;
}

static const char *dtype_name(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:
		return "f32";
	case PLAN_DTYPE_F16:
		return "f16";
	case PLAN_DTYPE_BF16:
		return "bf16";
	case PLAN_DTYPE_I32:
		return "i32";
	}
	return "?";
}

/* The bound for DTYPE given the f32 one. */
static double tol_for(int dtype, double f32_tol)
{
	return dtype == PLAN_DTYPE_F32 ? f32_tol : 1e-2;
}

static float env_uniform(struct env *e)
{
	return bcg_uniform(e->seed, e->counter++);
}

/* Uniform in [lo, hi). */
static int32_t env_int(struct env *e, int32_t lo, int32_t hi)
{
	uint64_t r = bcg_mix64(e->seed, e->counter++);
	return lo + (int32_t)(r % (uint64_t)(hi - lo));
}

static void tbuf_init(struct tbuf *b, int dtype, int rank, const int64_t *dim, size_t shift)
{
	memset(b, 0, sizeof *b);
	b->dtype = dtype;
	b->rank = rank;
	b->numel = 1;
	for (int d = 0; d < rank; d++) {
		b->dim[d] = dim[d];
		b->numel *= dim[d];
	}
	b->bytes = (size_t)b->numel * dtype_size(dtype);
	b->shift = shift;
	b->host = malloc(b->bytes + 16);
	if (!b->host)
		bail("out of memory");
	CK(cudaMalloc(&b->dev_base, b->bytes + shift + 16));
	b->dev = (char *)b->dev_base + shift;
}

static void tbuf_free(struct tbuf *b)
{
	free(b->host);
	if (b->dev_base)
		CK(cudaFree(b->dev_base));
	memset(b, 0, sizeof *b);
}

static struct op_tensor tbuf_view(const struct tbuf *b, int dev)
{
	struct op_tensor t;

	memset(&t, 0, sizeof t);
	t.dtype = b->dtype;
	t.rank = b->rank;
	for (int d = 0; d < b->rank; d++)
		t.dim[d] = b->dim[d];
	t.data = dev ? b->dev : b->host;
	return t;
}

/* Host values uniform in [-scale, scale), stored in the dtype. */
static void tbuf_random(struct env *e, struct tbuf *b, float scale)
{
	struct op_tensor t = tbuf_view(b, 0);

	for (int64_t i = 0; i < b->numel; i++)
		host_store(&t, i, env_uniform(e) * scale);
}

static void tbuf_upload(const struct tbuf *b)
{
	if (b->bytes > 0)
		CK(cudaMemcpy(b->dev, b->host, b->bytes, cudaMemcpyHostToDevice));
}

static void tbuf_poison(const struct tbuf *b)
{
	memset(b->host, b->dtype == PLAN_DTYPE_I32 ? POISON_HOST_I32 : POISON_DEV, b->bytes);
	CK(cudaMemset(b->dev, POISON_DEV, b->bytes));
}

/* Compare GOT (the device's bytes) with B's host bytes. TOL 0: bit for bit;
 * else |got - want| <= tol * max|want|. NaN on either side fails. */
static int tbuf_compare(const struct tbuf *b, const void *got, double tol, char *why, size_t len)
{
	struct op_tensor want = tbuf_view(b, 0), have = tbuf_view(b, 0);
	size_t es = dtype_size(b->dtype);
	double amax = 0.0;

	have.data = (void *)(uintptr_t)got;
	if (b->dtype == PLAN_DTYPE_I32) {
		const int32_t *w = b->host, *g = got;
		for (int64_t i = 0; i < b->numel; i++) {
			if (w[i] != g[i]) {
				snprintf(why, len, "element %lld: got %d, want %d", (long long)i,
				         (int)g[i], (int)w[i]);
				return 0;
			}
		}
		return 1;
	}
	for (int64_t i = 0; i < b->numel; i++) {
		float w = host_load(&want, i);
		if (isnan(w)) {
			snprintf(why, len, "element %lld: the reference is NaN", (long long)i);
			return 0;
		}
		if (fabs((double)w) > amax)
			amax = fabs((double)w);
	}
	for (int64_t i = 0; i < b->numel; i++) {
		float g = host_load(&have, i), w = host_load(&want, i);
		if (isnan(g)) {
			snprintf(why, len, "element %lld: got NaN, want %.9g", (long long)i, (double)w);
			return 0;
		}
		if (tol == 0.0) {
			if (memcmp((const char *)got + (size_t)i * es,
			           (const char *)b->host + (size_t)i * es, es) != 0) {
				snprintf(why, len, "element %lld: got %.9g, want %.9g (bit for bit)",
				         (long long)i, (double)g, (double)w);
				return 0;
			}
		} else if (fabs((double)g - (double)w) > tol * amax) {
			snprintf(why, len, "element %lld: got %.9g, want %.9g, error %.3g > %g * %.6g",
			         (long long)i, (double)g, (double)w, fabs((double)g - (double)w), tol,
			         amax);
			return 0;
		}
	}
	return 1;
}

static void tcase_init(struct tcase *c, enum op_id id, int nin, int nout)
{
	memset(c, 0, sizeof *c);
	c->id = id;
	c->nin = nin;
	c->nout = nout;
}

static void tcase_call(const struct tcase *c, struct op_call *call, int dev)
{
	memset(call, 0, sizeof *call);
	call->kind = NULL;              /* launchers must not need it */
	call->nin = c->nin;
	call->nout = c->nout;
	for (int i = 0; i < c->nin; i++)
		call->in[i] = tbuf_view(c->in[i], dev);
	for (int o = 0; o < c->nout; o++)
		call->out[o] = tbuf_view(c->out[o], dev);
	memcpy(call->attr, c->attr, sizeof call->attr);
	if (dev)
		memcpy(call->attr_dev, c->attr_dev, sizeof call->attr_dev);
	call->graph_safe = c->graph_safe;
}

static int tcase_is_input(const struct tcase *c, const struct tbuf *b)
{
	for (int i = 0; i < c->nin; i++)
		if (c->in[i] == b)
			return 1;
	return 0;
}

/* Launch CALL inside a stream capture, then run the graph once. */
static int launch_captured(struct env *e, cuda_kernel_fn fn, const struct op_call *call,
                           const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	cudaError_t err;
	int rc;

	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc = fn(call, ctx, msg, len);
	err = cudaStreamEndCapture(e->stream, &graph);
	if (rc == 0 && err != cudaSuccess) {
		snprintf(msg, len, "cudaStreamEndCapture: %s", cudaGetErrorString(err));
		rc = -1;
	}
	if (rc == 0 && (err = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess) {
		snprintf(msg, len, "cudaGraphInstantiate: %s", cudaGetErrorString(err));
		rc = -1;
	}
	if (rc == 0 && (err = cudaGraphLaunch(exec, e->stream)) != cudaSuccess) {
		snprintf(msg, len, "cudaGraphLaunch: %s", cudaGetErrorString(err));
		rc = -1;
	}
	if (rc == 0 && (err = cudaStreamSynchronize(e->stream)) != cudaSuccess) {
		snprintf(msg, len, "the graph failed: %s", cudaGetErrorString(err));
		rc = -1;
	}
	if (exec)
		CK(cudaGraphExecDestroy(exec));
	if (graph)
		CK(cudaGraphDestroy(graph));
	return rc;
}

/* Run C once, eagerly or captured, and report one TAP result. */
static void tcase_run_once(struct env *e, const struct tcase *c, int captured)
{
	struct op_call dcall, hcall;
	struct cuda_op_ctx ctx = e->ctx;
	cuda_kernel_fn fn = cuda_kernel(c->id);
	host_kernel_fn ref = host_kernel(c->id);
	char msg[256] = "", why[320] = "";
	void *scratch = NULL;
	int rc, pass = 1;

	if (!fn || !ref)
		bail("no kernel for op %d", (int)c->id);
	for (int i = 0; i < c->nin; i++)
		tbuf_upload(c->in[i]);
	for (int o = 0; o < c->nout; o++) {
		if (c->keep_out)
			tbuf_upload(c->out[o]);
		else if (!tcase_is_input(c, c->out[o]))
			tbuf_poison(c->out[o]);
	}
	if (c->scratch > 0) {
		CK(cudaMalloc(&scratch, c->scratch));
		CK(cudaMemset(scratch, POISON_DEV, c->scratch));
	}
	ctx.scratch = scratch;
	ctx.scratch_bytes = c->scratch;
	if (c->sm_count > 0)
		ctx.sm_count = c->sm_count;
	tcase_call(c, &dcall, 1);
	tcase_call(c, &hcall, 0);

	/* The uploads and poisoning above ran on the legacy default stream,
	 * which e->stream (non-blocking) does not wait for. */
	CK(cudaDeviceSynchronize());
	if (captured) {
		rc = launch_captured(e, fn, &dcall, &ctx, msg, sizeof msg);
	} else {
		rc = fn(&dcall, &ctx, msg, sizeof msg);
		if (rc == 0) {
			cudaError_t err = cudaStreamSynchronize(e->stream);
			if (err != cudaSuccess) {
				snprintf(msg, sizeof msg, "the kernel failed: %s", cudaGetErrorString(err));
				rc = -1;
			}
		}
	}
	ref(&hcall);

	if (rc != 0) {
		pass = 0;
		snprintf(why, sizeof why, "launcher: %s", msg);
	}
	for (int o = 0; pass && o < c->nout; o++) {
		const struct tbuf *b = c->out[o];
		void *got = malloc(b->bytes + 16);
		if (!got)
			bail("out of memory");
		if (b->bytes > 0)
			CK(cudaMemcpy(got, b->dev, b->bytes, cudaMemcpyDeviceToHost));
		pass = tbuf_compare(b, got, c->tol, why, sizeof why);
		free(got);
	}
	ok(pass, "%s%s", c->what, captured ? " (captured)" : "");
	if (!pass)
		diag("  %s", why);
	if (scratch)
		CK(cudaFree(scratch));
}

static void tcase_run(struct env *e, const struct tcase *c)
{
	tcase_run_once(e, c, 0);
	if (c->capture)
		tcase_run_once(e, c, 1);
}

/* --- element by element ---------------------------------------------------- */

static void test_fill(struct env *e)
{
	static const int dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16,
	                              PLAN_DTYPE_I32 };
	static const double values[] = { 0.3, -7.9, 1e10, 65519.0 };
	struct tbuf out;
	struct tcase c;

	for (int d = 0; d < 4; d++) {
		for (int v = 0; v < 4; v++) {
			tbuf_init(&out, dtypes[d], 2, (const int64_t[]){ 3, 37 }, 0);
			tcase_init(&c, OP_FILL, 0, 1);
			c.out[0] = &out;
			c.attr[FILL_VALUE].f = values[v];
			c.capture = v == 0;
			snprintf(c.what, sizeof c.what, "fill %s [3,37] value %g", dtype_name(dtypes[d]),
			         values[v]);
			tcase_run(e, &c);
			tbuf_free(&out);
		}
	}
}

static void test_copy(struct env *e)
{
	struct tbuf x, out;
	struct tcase c;

	for (int a = 0; a < N_FLOAT_DTYPES; a++) {
		for (int b = 0; b < N_FLOAT_DTYPES; b++) {
			tbuf_init(&x, float_dtypes[a], 2, (const int64_t[]){ 5, 33 }, 0);
			tbuf_init(&out, float_dtypes[b], 3, (const int64_t[]){ 5, 3, 11 }, 0);
			tbuf_random(e, &x, 70000.0f);   /* beyond f16's range: infinities */
			tcase_init(&c, OP_COPY, 1, 1);
			c.in[0] = &x;
			c.out[0] = &out;
			c.capture = a == 1 && b == 2;
			snprintf(c.what, sizeof c.what, "copy %s -> %s", dtype_name(float_dtypes[a]),
			         dtype_name(float_dtypes[b]));
			tcase_run(e, &c);
			tbuf_free(&x);
			tbuf_free(&out);
		}
	}
	/* i32 to i32, and a copy onto itself. */
	tbuf_init(&x, PLAN_DTYPE_I32, 1, (const int64_t[]){ 1001 }, 0);
	tbuf_init(&out, PLAN_DTYPE_I32, 1, (const int64_t[]){ 1001 }, 0);
	for (int64_t i = 0; i < x.numel; i++)
		((int32_t *)x.host)[i] = env_int(e, -1000000, 1000000);
	tcase_init(&c, OP_COPY, 1, 1);
	c.in[0] = &x;
	c.out[0] = &out;
	snprintf(c.what, sizeof c.what, "copy i32 -> i32");
	tcase_run(e, &c);
	tbuf_free(&out);
	tbuf_free(&x);
	for (int a = 0; a < N_FLOAT_DTYPES; a++) {
		tbuf_init(&x, float_dtypes[a], 1, (const int64_t[]){ 515 }, 0);
		tbuf_random(e, &x, 3.0f);
		tcase_init(&c, OP_COPY, 1, 1);
		c.in[0] = c.out[0] = &x;
		snprintf(c.what, sizeof c.what, "copy %s in place", dtype_name(float_dtypes[a]));
		tcase_run(e, &c);
		tbuf_free(&x);
	}
}

static void test_binary(struct env *e)
{
	static const enum op_id ids[] = { OP_ADD, OP_MUL };
	/* b's shapes: a's own, and trailing parts of it. */
	static const int64_t bshape[3][3] = { { 4, 3, 50 }, { 3, 50, 0 }, { 50, 0, 0 } };
	static const int brank[3] = { 3, 2, 1 };
	struct tbuf a, b, out;
	struct tcase c;

	for (int k = 0; k < 2; k++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int s = 0; s < 3; s++) {
				for (int inplace = 0; inplace < 2; inplace++) {
					tbuf_init(&a, dt, 3, (const int64_t[]){ 4, 3, 50 }, 0);
					tbuf_init(&b, dt, brank[s], bshape[s], 0);
					tbuf_random(e, &a, 4.0f);
					tbuf_random(e, &b, 4.0f);
					tcase_init(&c, ids[k], 2, 1);
					c.in[0] = &a;
					c.in[1] = &b;
					if (inplace) {
						c.out[0] = &a;
					} else {
						tbuf_init(&out, dt, 3, (const int64_t[]){ 4, 3, 50 }, 0);
						c.out[0] = &out;
					}
					c.capture = dt == PLAN_DTYPE_F16 && s == 1;
					snprintf(c.what, sizeof c.what, "%s %s, b of rank %d%s",
					         k ? "mul" : "add", dtype_name(dt), brank[s],
					         inplace ? ", in place" : "");
					tcase_run(e, &c);
					if (!inplace)
						tbuf_free(&out);
					tbuf_free(&a);
					tbuf_free(&b);
				}
			}
		}
	}
}

/* scale, gelu, silu_mul: one input, elementwise maths. */
static void test_unary(struct env *e)
{
	struct tbuf x, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int inplace = 0; inplace < 2; inplace++) {
			tbuf_init(&x, dt, 2, (const int64_t[]){ 7, 129 }, 0);
			tbuf_random(e, &x, 5.0f);
			tcase_init(&c, OP_SCALE, 1, 1);
			c.in[0] = &x;
			if (inplace) {
				c.out[0] = &x;
			} else {
				tbuf_init(&out, dt, 2, (const int64_t[]){ 7, 129 }, 0);
				c.out[0] = &out;
			}
			c.attr[SCALE_ALPHA].f = -1.7;
			c.capture = dt == PLAN_DTYPE_F16 && !inplace;
			snprintf(c.what, sizeof c.what, "scale %s by -1.7%s", dtype_name(dt),
			         inplace ? ", in place" : "");
			tcase_run(e, &c);

			tcase_init(&c, OP_GELU, 1, 1);
			c.in[0] = &x;
			c.out[0] = inplace ? &x : &out;
			c.tol = tol_for(dt, 1e-5);
			c.capture = dt == PLAN_DTYPE_F16 && !inplace;
			snprintf(c.what, sizeof c.what, "gelu %s [7,129]%s", dtype_name(dt),
			         inplace ? ", in place" : "");
			tcase_run(e, &c);
			if (!inplace)
				tbuf_free(&out);
			tbuf_free(&x);
		}

		tbuf_init(&x, dt, 3, (const int64_t[]){ 2, 3, 2 * 77 }, 0);
		tbuf_init(&out, dt, 3, (const int64_t[]){ 2, 3, 77 }, 0);
		tbuf_random(e, &x, 6.0f);
		tcase_init(&c, OP_SILU_MUL, 1, 1);
		c.in[0] = &x;
		c.out[0] = &out;
		c.tol = tol_for(dt, 1e-5);
		c.capture = dt == PLAN_DTYPE_F16;
		snprintf(c.what, sizeof c.what, "silu_mul %s [2,3,154] -> [2,3,77]", dtype_name(dt));
		tcase_run(e, &c);
		tbuf_free(&x);
		tbuf_free(&out);
	}
}

/* --- matmul ---------------------------------------------------------------- */

static void test_matmul(struct env *e)
{
	/* Decode-sized products (M of a few rows, K and N in the thousands)
	 * beside small odd shapes. */
	static const int64_t mnk[][3] = { { 1, 64, 128 }, { 7, 33, 65 }, { 32, 96, 40 },
	                                  { 3, 5, 1 }, { 8, 1024, 1024 }, { 16, 136, 2816 },
	                                  { 5, 5632, 104 }, { 13, 8, 704 }, { 2, 32000, 64 } };
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);
	struct tbuf a, b, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		for (int f32out = 0; f32out < 2; f32out++) {
			int dt = float_dtypes[d], odt = f32out ? PLAN_DTYPE_F32 : dt;
			if (f32out && dt == PLAN_DTYPE_F32)
				continue;
			for (int s = 0; s < nshapes; s++) {
				for (int t = 0; t < 4; t++) {
					int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
					int ta = t & 1, tb = (t >> 1) & 1;
					tbuf_init(&a, dt, 2, ta ? (const int64_t[]){ K, M } :
					                          (const int64_t[]){ M, K }, 0);
					tbuf_init(&b, dt, 2, tb ? (const int64_t[]){ N, K } :
					                          (const int64_t[]){ K, N }, 0);
					tbuf_init(&out, odt, 2, (const int64_t[]){ M, N }, 0);
					tbuf_random(e, &a, 1.0f);
					tbuf_random(e, &b, 1.0f);
					tcase_init(&c, OP_MATMUL, 2, 1);
					c.in[0] = &a;
					c.in[1] = &b;
					c.out[0] = &out;
					c.attr[MATMUL_TRANS_A].i = ta;
					c.attr[MATMUL_TRANS_B].i = tb;
					c.tol = tol_for(odt, 1e-4);
					c.capture = dt == PLAN_DTYPE_F16 && (s == 1 || s == 4);
					snprintf(c.what, sizeof c.what,
					         "matmul %s -> %s M %lld N %lld K %lld trans_a %d trans_b %d",
					         dtype_name(dt), dtype_name(odt), (long long)M, (long long)N,
					         (long long)K, ta, tb);
					tcase_run(e, &c);
					tbuf_free(&a);
					tbuf_free(&b);
					tbuf_free(&out);
				}
			}
		}
	}
}

/* One graph holding a decode-sized matmul, replayed again and again,
 * gives the eager launch's bytes every time: replays can be held to bit
 * equality with eager runs. */
static void test_matmul_replays(struct env *e)
{
	const int64_t M = 8, N = 1024, K = 2816;
	struct tbuf a, b, out;
	struct tcase c;
	struct op_call call;
	cuda_kernel_fn fn = cuda_kernel(OP_MATMUL);
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	void *want, *got;
	char msg[256];
	int same = 1, rc;

	tbuf_init(&a, PLAN_DTYPE_F16, 2, (const int64_t[]){ M, K }, 0);
	tbuf_init(&b, PLAN_DTYPE_F16, 2, (const int64_t[]){ K, N }, 0);
	tbuf_init(&out, PLAN_DTYPE_F16, 2, (const int64_t[]){ M, N }, 0);
	tbuf_random(e, &a, 1.0f);
	tbuf_random(e, &b, 1.0f);
	tbuf_upload(&a);
	tbuf_upload(&b);
	tcase_init(&c, OP_MATMUL, 2, 1);
	c.in[0] = &a;
	c.in[1] = &b;
	c.out[0] = &out;
	tcase_call(&c, &call, 1);
	want = malloc(out.bytes);
	got = malloc(out.bytes);
	if (want == NULL || got == NULL)
		bail("out of memory");
	CK(cudaDeviceSynchronize());

	rc = fn(&call, &e->ctx, msg, sizeof msg);
	CK(cudaStreamSynchronize(e->stream));
	CK(cudaMemcpy(want, out.dev, out.bytes, cudaMemcpyDeviceToHost));
	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc |= fn(&call, &e->ctx, msg, sizeof msg);
	CK(cudaStreamEndCapture(e->stream, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));
	for (int i = 0; i < 5; i++) {
		CK(cudaMemsetAsync(out.dev, POISON_DEV, out.bytes, e->stream));
		CK(cudaGraphLaunch(exec, e->stream));
		CK(cudaStreamSynchronize(e->stream));
		CK(cudaMemcpy(got, out.dev, out.bytes, cudaMemcpyDeviceToHost));
		same &= memcmp(got, want, out.bytes) == 0;
	}
	ok(rc == 0 && same, "matmul 8x1024x2816 f16 replayed 5 times from one graph matches the "
	   "eager launch bit for bit%s%s", rc ? ": " : "", rc ? msg : "");
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	free(want);
	free(got);
	tbuf_free(&a);
	tbuf_free(&b);
	tbuf_free(&out);
}

/* --- row reductions ---------------------------------------------------------- */

static void test_rows(struct env *e)
{
	static const int64_t shapes[][2] = { { 5, 300 }, { 3, 4096 }, { 2, 1 }, { 70000, 3 } };
	static const enum op_id ids[] = { OP_RMSNORM, OP_LAYERNORM, OP_SOFTMAX };
	static const char *const names[] = { "rmsnorm", "layernorm", "softmax" };
	static const int nins[] = { 2, 3, 1 };
	struct tbuf x, w, b, out;
	struct tcase c;

	for (int k = 0; k < 3; k++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int s = 0; s < 4; s++) {
				for (int inplace = 0; inplace < 2; inplace++) {
					int64_t rows = shapes[s][0], cols = shapes[s][1];
					tbuf_init(&x, dt, 2, shapes[s], 0);
					tbuf_init(&w, dt, 1, &cols, 0);
					tbuf_init(&b, dt, 1, &cols, 0);
					/* softmax over a wide range; norms around an offset. */
					tbuf_random(e, &x, ids[k] == OP_SOFTMAX ? 8.0f : 2.0f);
					tbuf_random(e, &w, 1.5f);
					tbuf_random(e, &b, 0.5f);
					tcase_init(&c, ids[k], nins[k], 1);
					c.in[0] = &x;
					c.in[1] = &w;
					c.in[2] = &b;
					if (inplace) {
						c.out[0] = &x;
					} else {
						tbuf_init(&out, dt, 2, shapes[s], 0);
						c.out[0] = &out;
					}
					c.attr[NORM_EPS].f = ids[k] == OP_RMSNORM ? 1e-6 : 1e-5;
					c.tol = tol_for(dt, 1e-5);
					c.capture = dt == PLAN_DTYPE_F16 && s == 0 && !inplace;
					snprintf(c.what, sizeof c.what, "%s %s [%lld,%lld]%s", names[k],
					         dtype_name(dt), (long long)rows, (long long)cols,
					         inplace ? ", in place" : "");
					tcase_run(e, &c);
					if (!inplace)
						tbuf_free(&out);
					tbuf_free(&x);
					tbuf_free(&w);
					tbuf_free(&b);
				}
			}
		}
	}
}

static void test_argmax(struct env *e)
{
	static const int64_t shapes[][2] = { { 7, 1000 }, { 3, 50000 }, { 1, 1 }, { 9, 31 } };
	struct tbuf x, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int s = 0; s < 4; s++) {
			int64_t rows = shapes[s][0], cols = shapes[s][1];
			tbuf_init(&x, dt, 2, shapes[s], 0);
			tbuf_init(&out, PLAN_DTYPE_I32, 1, &rows, 0);
			tbuf_random(e, &x, 1.0f);
			if (rows >= 3 && cols >= 10) {
				struct op_tensor t = tbuf_view(&x, 0);
				/* Row 1: all equal, the first wins. Row 2: two NaNs
				 * after a large value, the first NaN wins. */
				for (int64_t j = 0; j < cols; j++)
					host_store(&t, cols + j, 0.25f);
				host_store(&t, 2 * cols + 2, 100.0f);
				host_store(&t, 2 * cols + cols - 3, NAN);
				host_store(&t, 2 * cols + cols - 1, NAN);
			}
			tcase_init(&c, OP_ARGMAX, 1, 1);
			c.in[0] = &x;
			c.out[0] = &out;
			c.capture = dt == PLAN_DTYPE_F16 && s == 0;
			snprintf(c.what, sizeof c.what, "argmax %s [%lld,%lld]", dtype_name(dt),
			         (long long)rows, (long long)cols);
			tcase_run(e, &c);
			tbuf_free(&x);
			tbuf_free(&out);
		}
	}
}

/* --- positions and ids ------------------------------------------------------- */

static void test_rope(struct env *e)
{
	/* heads, head_dim, largest position, f32 bound. The angle is pos *
	 * theta^(-2i/d), whose last-ulp differences between CUDA's powf and
	 * the host's grow with the position: far positions get a wider bound
	 * (still far below a wrong rotation's error). */
	static const struct { int64_t heads, head_dim; int32_t maxpos; double tol; } cfg[] = {
		{ 4, 64, 16, 1e-5 }, { 2, 128, 16, 1e-5 }, { 3, 7, 16, 1e-5 }, { 2, 64, 4096, 1e-2 },
	};
	const int64_t T = 5;
	struct tbuf x, pos, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < 4; k++) {
			for (int inplace = 0; inplace < 2; inplace++) {
				int64_t width = cfg[k].heads * cfg[k].head_dim;
				tbuf_init(&x, dt, 2, (const int64_t[]){ T, width }, 0);
				tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T, 0);
				tbuf_random(e, &x, 1.0f);
				for (int64_t t = 0; t < T; t++)
					((int32_t *)pos.host)[t] = env_int(e, 0, cfg[k].maxpos);
				tcase_init(&c, OP_ROPE, 2, 1);
				c.in[0] = &x;
				c.in[1] = &pos;
				if (inplace) {
					c.out[0] = &x;
				} else {
					tbuf_init(&out, dt, 2, (const int64_t[]){ T, width }, 0);
					c.out[0] = &out;
				}
				c.attr[ROPE_HEADS].i = cfg[k].heads;
				c.attr[ROPE_HEAD_DIM].i = cfg[k].head_dim;
				c.attr[ROPE_THETA].f = 10000.0;
				c.tol = tol_for(dt, cfg[k].tol);
				c.capture = dt == PLAN_DTYPE_F16 && k == 0 && !inplace;
				snprintf(c.what, sizeof c.what,
				         "rope %s heads %lld head_dim %lld positions < %d%s", dtype_name(dt),
				         (long long)cfg[k].heads, (long long)cfg[k].head_dim,
				         (int)cfg[k].maxpos, inplace ? ", in place" : "");
				tcase_run(e, &c);
				if (!inplace)
					tbuf_free(&out);
				tbuf_free(&x);
				tbuf_free(&pos);
			}
		}
	}
}

static void test_embedding(struct env *e)
{
	const int64_t V = 50, H = 96, T = 9;
	struct tbuf table, ids, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		for (int o = 0; o < N_FLOAT_DTYPES; o++) {
			int dt = float_dtypes[d], odt = float_dtypes[o];
			if (dt != odt && odt != PLAN_DTYPE_F32)
				continue;               /* same dtype, or widening to f32 */
			tbuf_init(&table, dt, 2, (const int64_t[]){ V, H }, 0);
			tbuf_init(&ids, PLAN_DTYPE_I32, 1, &T, 0);
			tbuf_init(&out, odt, 2, (const int64_t[]){ T, H }, 0);
			tbuf_random(e, &table, 2.0f);
			for (int64_t t = 0; t < T; t++)
				((int32_t *)ids.host)[t] = env_int(e, 0, (int32_t)V);
			((int32_t *)ids.host)[2] = -1;          /* out of range: zeros */
			((int32_t *)ids.host)[5] = (int32_t)V;
			((int32_t *)ids.host)[7] = INT32_MAX;
			tcase_init(&c, OP_EMBEDDING, 2, 1);
			c.in[0] = &table;
			c.in[1] = &ids;
			c.out[0] = &out;
			c.capture = dt == PLAN_DTYPE_F16 && odt == dt;
			snprintf(c.what, sizeof c.what, "embedding %s -> %s, ids out of range included",
			         dtype_name(dt), dtype_name(odt));
			tcase_run(e, &c);
			tbuf_free(&table);
			tbuf_free(&ids);
			tbuf_free(&out);
		}
	}
}

static void test_kv_write(struct env *e)
{
	const int64_t S = 40, W = 64, T = 6;
	struct tbuf x, pos, cache;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		tbuf_init(&x, dt, 2, (const int64_t[]){ T, W }, 0);
		tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T, 0);
		tbuf_init(&cache, dt, 2, (const int64_t[]){ S, W }, 0);
		tbuf_random(e, &x, 1.0f);
		tbuf_random(e, &cache, 1.0f);           /* rows not written must survive */
		/* Distinct positions (the winner of two equal ones is not
		 * specified), and two outside [0, S). */
		int32_t first = env_int(e, 0, (int32_t)S - 4);
		int32_t *p = pos.host;
		p[0] = first;
		p[1] = first + 3;
		p[2] = -3;
		p[3] = first + 1;
		p[4] = (int32_t)S;
		p[5] = (int32_t)S - 1;                  /* first + 3 < S - 1 */
		tcase_init(&c, OP_KV_WRITE, 2, 1);
		c.in[0] = &x;
		c.in[1] = &pos;
		c.out[0] = &cache;
		c.keep_out = 1;
		c.capture = dt == PLAN_DTYPE_F16;
		snprintf(c.what, sizeof c.what, "kv_write %s, positions out of range included",
		         dtype_name(dt));
		tcase_run(e, &c);
		tbuf_free(&x);
		tbuf_free(&pos);
		tbuf_free(&cache);
	}
}

/* --- attention ------------------------------------------------------------- */

struct attn_cfg {
	int64_t T, H, KVH, D, S;
	double  scale;          /* 0: 1/sqrt(D) */
	size_t  shift;          /* misalign q, k, v by this many bytes */
};

struct attn_bufs {
	struct tbuf q, k, v, out;
	int32_t *kv_dev;        /* the device mirror of kv_len */
};

static void attn_bufs_init(struct env *e, struct attn_bufs *ab, int dt,
                           const struct attn_cfg *cfg)
{
	tbuf_init(&ab->q, dt, 2, (const int64_t[]){ cfg->T, cfg->H * cfg->D }, cfg->shift);
	tbuf_init(&ab->k, dt, 2, (const int64_t[]){ cfg->S, cfg->KVH * cfg->D }, cfg->shift);
	tbuf_init(&ab->v, dt, 2, (const int64_t[]){ cfg->S, cfg->KVH * cfg->D }, cfg->shift);
	tbuf_init(&ab->out, dt, 2, (const int64_t[]){ cfg->T, cfg->H * cfg->D }, 0);
	/* q larger than k so that the softmax is far from flat. */
	tbuf_random(e, &ab->q, 4.0f);
	tbuf_random(e, &ab->k, 1.0f);
	tbuf_random(e, &ab->v, 1.0f);
	CK(cudaMalloc((void **)&ab->kv_dev, sizeof(int32_t)));
}

static void attn_bufs_free(struct attn_bufs *ab)
{
	tbuf_free(&ab->q);
	tbuf_free(&ab->k);
	tbuf_free(&ab->v);
	tbuf_free(&ab->out);
	CK(cudaFree(ab->kv_dev));
}

static void attn_case_init(struct tcase *c, struct attn_bufs *ab, const struct attn_cfg *cfg,
                           int64_t kv_len, int graph_safe)
{
	tcase_init(c, OP_ATTENTION, 3, 1);
	c->in[0] = &ab->q;
	c->in[1] = &ab->k;
	c->in[2] = &ab->v;
	c->out[0] = &ab->out;
	c->attr[ATTN_HEADS].i = cfg->H;
	c->attr[ATTN_KV_HEADS].i = cfg->KVH;
	c->attr[ATTN_HEAD_DIM].i = cfg->D;
	c->attr[ATTN_KV_LEN].i = kv_len;
	c->attr[ATTN_SCALE].f = cfg->scale;
	c->graph_safe = graph_safe;
	if (graph_safe)
		c->attr_dev[ATTN_KV_LEN] = ab->kv_dev;
	c->tol = tol_for(ab->q.dtype, 1e-4);
}

static size_t attn_scratch(const struct tcase *c)
{
	struct op_call call;

	tcase_call(c, &call, 1);
	return cuda_attention_scratch_bytes(&call);
}

static void test_attention(struct env *e)
{
	static const struct attn_cfg cfgs[] = {
		{ 1, 8, 8, 128, 1024, 0.0, 0 },         /* MHA, vector loads */
		{ 3, 8, 2, 64, 1024, 0.0, 0 },          /* GQA 4:1 */
		{ 2, 4, 1, 80, 300, 0.0, 0 },           /* head_dim not 32 * 2^k */
		{ 1, 2, 2, 256, 513, 0.05, 0 },         /* explicit scale */
		{ 4, 4, 2, 32, 100, 0.0, 0 },
		{ 2, 4, 2, 128, 700, 0.0, 4 },          /* misaligned: element loads */
		{ 1, 2, 1, 512, 200, 0.0, 0 },
		{ 1, 1, 1, 128, 8192, 0.0, 0 },         /* the most splits */
	};
	static const int64_t kvs[] = { 0, 1, 7, 64, 65, 1000, 5000, -1 /* S */, -2 /* S + 100 */ };
	const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]), nkv = (int)(sizeof kvs / sizeof kvs[0]);
	struct attn_bufs ab;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < ncfg; k++) {
			const struct attn_cfg *cfg = &cfgs[k];
			attn_bufs_init(e, &ab, dt, cfg);
			for (int gs = 0; gs < 2; gs++) {
				for (int smi = 0; smi < 2; smi++) {
					for (int j = 0; j < nkv; j++) {
						int64_t kv = kvs[j] == -1 ? cfg->S : kvs[j] == -2 ? cfg->S + 100 : kvs[j];
						if (kvs[j] >= 0 && kvs[j] > cfg->S)
							continue;
						int32_t kv32 = (int32_t)kv;
						CK(cudaMemcpy(ab.kv_dev, &kv32, sizeof kv32, cudaMemcpyHostToDevice));
						attn_case_init(&c, &ab, cfg, kv, gs);
						c.sm_count = smi ? 1 : 0;
						c.scratch = attn_scratch(&c);
						snprintf(c.what, sizeof c.what,
						         "attention %s %s T %lld heads %lld/%lld head_dim %lld "
						         "S %lld kv_len %lld%s%s", gs ? "graph-safe" : "eager",
						         dtype_name(dt), (long long)cfg->T, (long long)cfg->H,
						         (long long)cfg->KVH, (long long)cfg->D, (long long)cfg->S,
						         (long long)kv, smi ? " sm_count 1" : "",
						         cfg->shift ? " misaligned" : "");
						tcase_run(e, &c);
					}
				}
			}
			attn_bufs_free(&ab);
		}
	}
}

/* The graph-safe form captured once (with a host kv_len it must ignore)
 * and replayed as the device kv_len changes. */
static void test_attention_graph(struct env *e)
{
	static const struct attn_cfg cfgs[] = {
		{ 3, 8, 2, 64, 1024, 0.0, 0 },
		{ 1, 8, 8, 128, 1024, 0.0, 0 },
		{ 1, 1, 1, 128, 8192, 0.0, 0 },
	};
	static const int32_t kvs[] = { 1000, 1, 7, 64, 1024, 0, 3000, 513, 8192, 1000 };
	const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]), nkv = (int)(sizeof kvs / sizeof kvs[0]);

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < ncfg; k++) {
			const struct attn_cfg *cfg = &cfgs[k];
			struct attn_bufs ab;
			struct tcase c;
			struct op_call dcall, hcall;
			struct cuda_op_ctx ctx = e->ctx;
			cudaGraph_t graph = NULL;
			cudaGraphExec_t exec = NULL;
			char msg[256] = "";
			void *scratch = NULL;
			int rc;

			attn_bufs_init(e, &ab, dt, cfg);
			tbuf_upload(&ab.q);
			tbuf_upload(&ab.k);
			tbuf_upload(&ab.v);
			attn_case_init(&c, &ab, cfg, 3, 1);
			c.scratch = attn_scratch(&c);
			if (c.scratch > 0) {
				CK(cudaMalloc(&scratch, c.scratch));
				CK(cudaMemset(scratch, POISON_DEV, c.scratch));
			}
			ctx.scratch = scratch;
			ctx.scratch_bytes = c.scratch;
			tcase_call(&c, &dcall, 1);
			CK(cudaDeviceSynchronize());

			CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
			rc = cuda_kernel(OP_ATTENTION)(&dcall, &ctx, msg, sizeof msg);
			cudaError_t err = cudaStreamEndCapture(e->stream, &graph);
			if (rc == 0 && err != cudaSuccess) {
				snprintf(msg, sizeof msg, "cudaStreamEndCapture: %s", cudaGetErrorString(err));
				rc = -1;
			}
			if (rc == 0 && (err = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess) {
				snprintf(msg, sizeof msg, "cudaGraphInstantiate: %s", cudaGetErrorString(err));
				rc = -1;
			}
			ok(rc == 0, "attention graph-safe %s S %lld head_dim %lld: captured once",
			   dtype_name(dt), (long long)cfg->S, (long long)cfg->D);
			if (rc != 0) {
				diag("  %s", msg);
				tap_skip(nkv, "no graph to replay");
			}
			for (int j = 0; rc == 0 && j < nkv; j++) {
				int32_t kv32 = kvs[j];
				char why[256] = "";
				int pass;

				CK(cudaMemcpyAsync(ab.kv_dev, &kv32, sizeof kv32, cudaMemcpyHostToDevice,
				                   e->stream));
				CK(cudaMemsetAsync(ab.out.dev, POISON_DEV, ab.out.bytes, e->stream));
				err = cudaGraphLaunch(exec, e->stream);
				if (err == cudaSuccess)
					err = cudaStreamSynchronize(e->stream);
				c.attr[ATTN_KV_LEN].i = kv32;
				memset(ab.out.host, POISON_DEV, ab.out.bytes);
				tcase_call(&c, &hcall, 0);
				host_kernel(OP_ATTENTION)(&hcall);
				if (err != cudaSuccess) {
					snprintf(why, sizeof why, "replay: %s", cudaGetErrorString(err));
					pass = 0;
				} else {
					void *got = malloc(ab.out.bytes);
					if (!got)
						bail("out of memory");
					CK(cudaMemcpy(got, ab.out.dev, ab.out.bytes, cudaMemcpyDeviceToHost));
					pass = tbuf_compare(&ab.out, got, c.tol, why, sizeof why);
					free(got);
				}
				ok(pass, "attention graph-safe %s S %lld: replay with device kv_len %d",
				   dtype_name(dt), (long long)cfg->S, (int)kv32);
				if (!pass)
					diag("  %s", why);
			}
			if (exec)
				CK(cudaGraphExecDestroy(exec));
			if (graph)
				CK(cudaGraphDestroy(graph));
			if (scratch)
				CK(cudaFree(scratch));
			attn_bufs_free(&ab);
		}
	}
}

/* --- initializers ------------------------------------------------------------ */

static void test_init(struct env *e)
{
	static const int dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16,
	                              PLAN_DTYPE_I32 };
	struct plan_init inits[] = {
		{ .kind = PLAN_INIT_NONE },
		{ .kind = PLAN_INIT_ZEROS },
		{ .kind = PLAN_INIT_ONES },
		{ .kind = PLAN_INIT_CONST, .value = -2.718281828459045 },
		{ .kind = PLAN_INIT_CONST, .value = 1e10 },
		{ .kind = PLAN_INIT_CONST, .value = -1e10 },
		{ .kind = PLAN_INIT_RANDOM, .seed = e->seed ^ 0x5eedu, .scale = 0.37 },
		{ .kind = PLAN_INIT_RANDOM, .seed = e->seed + 1, .scale = 1000.0 },
		{ .kind = PLAN_INIT_ARANGE, .value = -3.25, .scale = 0.37 },
		{ .kind = PLAN_INIT_ARANGE, .value = 1e6, .scale = 1e-3 },
		{ .kind = PLAN_INIT_ARANGE, .value = 0.0, .scale = 1.0 },
	};
	static const uint64_t counts[] = { 10007, 1 };
	const int ninit = (int)(sizeof inits / sizeof inits[0]);

	for (int d = 0; d < 4; d++) {
		for (int k = 0; k < ninit; k++) {
			for (int n = 0; n < 2; n++) {
				struct tbuf b;
				char msg[256] = "";
				int64_t count = (int64_t)counts[n];
				void *got;
				int rc, same;

				tbuf_init(&b, dtypes[d], 1, &count, 0);
				/* The same bytes on both sides: NONE must leave them. */
				memset(b.host, 0xAB, b.bytes);
				CK(cudaMemset(b.dev, 0xAB, b.bytes));
				CK(cudaDeviceSynchronize());    /* e.stream does not wait for it */
				host_init_tensor(b.host, dtypes[d], counts[n], &inits[k]);
				rc = cuda_init_tensor(b.dev, dtypes[d], counts[n], &inits[k], e->stream, msg,
				                      sizeof msg);
				CK(cudaStreamSynchronize(e->stream));
				got = malloc(b.bytes);
				if (!got)
					bail("out of memory");
				CK(cudaMemcpy(got, b.dev, b.bytes, cudaMemcpyDeviceToHost));
				same = memcmp(got, b.host, b.bytes) == 0;
				ok(rc == 0 && same, "init %s kind %d value %g scale %g, %llu elements: "
				   "the host's bytes", dtype_name(dtypes[d]), inits[k].kind, inits[k].value,
				   inits[k].scale, (unsigned long long)counts[n]);
				if (rc != 0)
					diag("  %s", msg);
				for (int64_t i = 0; rc == 0 && !same && i < count; i++) {
					size_t es = dtype_size(dtypes[d]);
					if (memcmp((char *)got + i * es, (char *)b.host + i * es, es) != 0) {
						struct op_tensor hv = tbuf_view(&b, 0), gv = hv;
						gv.data = got;
						diag("  first difference at %lld: got %.9g, want %.9g", (long long)i,
						     (double)host_load(&gv, i), (double)host_load(&hv, i));
						break;
					}
				}
				free(got);
				tbuf_free(&b);
			}
		}
	}
}

/* --- errors -------------------------------------------------------------------- */

static void test_errors(struct env *e)
{
	const struct attn_cfg cfg = { 1, 1, 1, 128, 8192, 0.0, 0 };
	struct attn_bufs ab;
	struct tcase c;
	struct op_call call;
	struct cuda_op_ctx ctx = e->ctx;
	struct plan_init bad = { .kind = 99 };
	char msg[256] = "";
	int rc, missing = 0;

	ok(cuda_kernel(OP_COUNT) == NULL, "no launcher past the last op");
	for (int id = 0; id < OP_COUNT; id++)
		missing += cuda_kernel((enum op_id)id) == NULL;
	is_int(missing, 0, "every op kind has a launcher");

	attn_bufs_init(e, &ab, PLAN_DTYPE_F32, &cfg);
	attn_case_init(&c, &ab, &cfg, 8000, 0);
	tcase_call(&c, &call, 1);
	ok(cuda_attention_scratch_bytes(&call) > 0, "attention over 8192 rows needs scratch");
	ctx.scratch = NULL;
	ctx.scratch_bytes = 0;
	rc = cuda_kernel(OP_ATTENTION)(&call, &ctx, msg, sizeof msg);
	ok(rc == -1 && strstr(msg, "scratch") != NULL,
	   "attention without its scratch fails and says so");
	diag("  message: %s", msg);
	c.attr[ATTN_HEAD_DIM].i = 1024;
	tcase_call(&c, &call, 1);
	msg[0] = '\0';
	rc = cuda_kernel(OP_ATTENTION)(&call, &ctx, msg, sizeof msg);
	ok(rc == -1 && msg[0] != '\0', "attention refuses a head_dim it cannot hold");
	attn_bufs_free(&ab);

	msg[0] = '\0';
	rc = cuda_init_tensor(NULL, PLAN_DTYPE_F32, 10, &bad, e->stream, msg, sizeof msg);
	ok(rc == -1 && msg[0] != '\0', "an unknown initializer fails");
	CK(cudaGetLastError());
}

/* --- main --------------------------------------------------------------------- */

static uint64_t pick_seed(void)
{
	const char *s = getenv("BCG_TEST_SEED");
	struct timespec ts;

	if (s && *s)
		return strtoull(s, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
}

int main(void)
{
	struct env e;
	int ndev = 0, sms = 0;
	cublasStatus_t st;
	const size_t workspace_bytes = 32u << 20;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
		tap_skip_all("no CUDA device");
	memset(&e, 0, sizeof e);
	e.seed = pick_seed();
	diag("seed %llu (BCG_TEST_SEED=%llu repeats this run)", (unsigned long long)e.seed,
	     (unsigned long long)e.seed);

	/* The context as the engine sets it up: a stream, a cuBLAS handle
	 * bound to it with its own workspace, so that cuBLAS never allocates
	 * inside a capture. */
	CK(cudaSetDevice(0));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CK(cudaStreamCreateWithFlags(&e.stream, cudaStreamNonBlocking));
	CK(cudaMalloc(&e.workspace, workspace_bytes));
	if ((st = cublasCreate(&e.cublas)) != CUBLAS_STATUS_SUCCESS)
		bail("cublasCreate: %s", cublasGetStatusString(st));
	if ((st = cublasSetStream(e.cublas, e.stream)) != CUBLAS_STATUS_SUCCESS)
		bail("cublasSetStream: %s", cublasGetStatusString(st));
	if ((st = cublasSetWorkspace(e.cublas, e.workspace, workspace_bytes)) != CUBLAS_STATUS_SUCCESS)
		bail("cublasSetWorkspace: %s", cublasGetStatusString(st));
	e.ctx.stream = e.stream;
	e.ctx.cublas = e.cublas;
	e.ctx.sm_count = sms;

	diag("device 0: %d multiprocessors", sms);

	test_fill(&e);
	test_copy(&e);
	test_binary(&e);
	test_unary(&e);
	test_matmul(&e);
	test_matmul_replays(&e);
	test_rows(&e);
	test_argmax(&e);
	test_rope(&e);
	test_embedding(&e);
	test_kv_write(&e);
	test_attention(&e);
	test_attention_graph(&e);
	test_init(&e);
	test_errors(&e);

	cublasDestroy(e.cublas);
	CK(cudaFree(e.workspace));
	CK(cudaStreamDestroy(e.stream));
	return tap_done();
}
