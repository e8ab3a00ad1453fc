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
 * Kinds with several implementations (cuda_impl_count) run each usable
 * one, and the usable set is asserted against what the shape allows. A
 * case's scratch is poisoned but for its counters, which are zeroed once
 * as the engine does, and must be zero again after every launch. The
 * fused kinds are checked against host_kernel() of the kind; where this
 * build has none yet, against their unfused sequence run by the host
 * kernels (the definition op.h gives). rope_kv_write and
 * rope_paged_kv_write with q_w and k_w are also held bit for bit to the
 * device's own qk_norm then the kind without them. PDL on and off must
 * give the same bits, and a capture with PDL must hold programmatic edges.
 *
 * Without a usable CUDA device the whole program is skipped.
 * BCG_TEST_ONLY=WORD[,WORD...] runs only the groups whose name holds one
 * of the words. make check runs the program as four shards side by side
 * (BCG_TEST_SHARD: products, norms, attention, rest; t/unit/cuda-ops-*.sh).
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

#include <cuda_runtime_api.h>

#include "ops/cuda.h"
#include "ops/host.h"
#include "ops/numeric.h"
#include "ops/rope-scaling.h"
#include "tap.h"

#define POISON_DEV      0xFF
#define POISON_HOST_I32 0x7F

static const int float_dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16 };
#define N_FLOAT_DTYPES ((int)(sizeof float_dtypes / sizeof float_dtypes[0]))

struct env {
	cudaStream_t       stream;
	struct cuda_lt    *lt;
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
	unsigned           exact_outs;   /* bit o: out[o] bit for bit whatever tol */
	size_t             scratch;      /* scratch bytes to give the launcher */
	int                sm_count;     /* 0: the device's */
	int                impl;         /* implementation index; -1: the first usable */
	int                pdl;          /* launch with programmatic serialization */
	unsigned           const_in;     /* op_call.const_in: the inputs that are weights */
	unsigned           ready_in;     /* op_call.ready_in: the inputs in place before the step */
	const struct op_batch *batch;    /* the host's view of a serving batch */
	void              *got[OP_MAX_OUT]; /* when set: receives the device's bytes */
	struct kernel_shape gemv_shape;  /* the context's shapes (zero: the defaults) */
	struct kernel_shape moe_gu_shape;
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
	c->impl = -1;
}

/* A kind for cuda_impl_usable, which reads call->kind->id only (the
 * registry is not linked into this program). */
static const struct op_kind *kind_stub(enum op_id id)
{
	static struct op_kind kinds[OP_COUNT];

	kinds[id].id = id;
	return &kinds[id];
}

static int first_usable(enum op_id id, const struct op_call *dcall)
{
	struct op_call q = *dcall;

	q.kind = kind_stub(id);
	for (int i = 0; i < cuda_impl_count(id); i++)
		if (cuda_impl_usable(&q, i))
			return i;
	return -1;
}

/* The index of implementation NAME of kind ID: the one plans store. */
static int impl_named(enum op_id id, const char *name)
{
	for (int i = 0; i < cuda_impl_count(id); i++)
		if (strcmp(cuda_impl_name(id, i), name) == 0)
			return i;
	bail("op kind %d: no CUDA implementation \"%s\"", (int)id, name);
	return -1;
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
	call->batch = c->batch;
	call->impl = 0;
	if (dev) {
		call->const_in = c->const_in;
		call->ready_in = c->ready_in;
		call->impl = c->impl >= 0 ? c->impl : first_usable(c->id, call);
	}
}

/* The scratch C's call needs, as the engine asks for it. */
static size_t op_scratch(const struct tcase *c)
{
	struct op_call call;

	tcase_call(c, &call, 1);
	call.kind = kind_stub(c->id);
	return cuda_op_scratch_bytes(&call);
}

/* Scratch as the engine gives it: poisoned data behind zeroed counters. */
static void *scratch_alloc(size_t bytes)
{
	void *p = NULL;

	if (bytes == 0)
		return NULL;
	CK(cudaMalloc(&p, bytes));
	CK(cudaMemset(p, POISON_DEV, bytes));
	CK(cudaMemset(p, 0, bytes < CUDA_OP_SCRATCH_COUNTER_BYTES ? bytes :
	                    CUDA_OP_SCRATCH_COUNTER_BYTES));
	return p;
}

/* Whether the counters at the start of SCRATCH are all zero again. */
static int scratch_counters_zero(const void *scratch, size_t bytes)
{
	size_t n = bytes < CUDA_OP_SCRATCH_COUNTER_BYTES ? bytes : CUDA_OP_SCRATCH_COUNTER_BYTES;
	unsigned char *h;
	int zero = 1;

	if (!scratch || n == 0)
		return 1;
	h = malloc(n);
	if (!h)
		bail("out of memory");
	CK(cudaMemcpy(h, scratch, n, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		zero &= h[i] == 0;
	free(h);
	return zero;
}

static int tcase_is_input(const struct tcase *c, const struct tbuf *b)
{
	for (int i = 0; i < c->nin; i++)
		if (c->in[i] == b)
			return 1;
	return 0;
}

/* --- references --------------------------------------------------------------- */

static int64_t tensor_numel(const struct op_tensor *t)
{
	int64_t n = 1;

	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	return n;
}

/* A zeroed host tensor; its data is freed with free(). */
static struct op_tensor host_tensor(int dtype, int64_t rows, int64_t cols)
{
	struct op_tensor t;

	memset(&t, 0, sizeof t);
	t.dtype = dtype;
	t.rank = 2;
	t.dim[0] = rows;
	t.dim[1] = cols;
	t.data = calloc((size_t)(rows * cols) + 4, dtype_size(dtype));
	if (!t.data)
		bail("out of memory");
	return t;
}

/* Run host kernel ID on INS -> OUTS with attributes ATTR (may be NULL). */
static void host_run(enum op_id id, const struct op_tensor *ins, int nin,
                     const struct op_tensor *outs, int nout, const union op_value *attr)
{
	struct op_call call;
	host_kernel_fn fn = host_kernel(id);

	if (!fn)
		bail("no host kernel for op %d", (int)id);
	memset(&call, 0, sizeof call);
	call.nin = nin;
	call.nout = nout;
	for (int i = 0; i < nin; i++)
		call.in[i] = ins[i];
	for (int o = 0; o < nout; o++)
		call.out[o] = outs[o];
	if (attr)
		memcpy(call.attr, attr, sizeof call.attr);
	fn(&call);
}

/* out[r, j] = x[r, start + j]: a move, as bits when the dtypes agree. */
static void ref_slice(const struct op_tensor *x, const struct op_tensor *out, int64_t start)
{
	int64_t C = x->dim[x->rank - 1], W = out->dim[out->rank - 1];
	int64_t rows = W > 0 ? tensor_numel(out) / W : 0;
	size_t es = dtype_size(x->dtype);

	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < W; j++) {
			if (x->dtype == out->dtype)
				memcpy((char *)out->data + (size_t)(r * W + j) * es,
				       (const char *)x->data + (size_t)(r * C + start + j) * es, es);
			else
				host_store(out, r * W + j, host_load(x, r * C + start + j));
		}
	}
}

/* The reference of CALL (host addresses): the kind's host kernel, or, for
 * the kinds this build has none of yet, the unfused sequence op.h defines
 * them by, each intermediate stored in the dtype the sequence stores it. */
static void ref_run(enum op_id id, const struct op_call *call)
{
	host_kernel_fn ref = host_kernel(id);
	union op_value attr[OP_MAX_ATTRS];
	struct op_tensor t[3], u[3];

	if (ref) {
		ref(call);
		return;
	}
	memset(attr, 0, sizeof attr);
	switch (id) {
	case OP_SLICE:
		ref_slice(&call->in[0], &call->out[0], call->attr[SLICE_START].i);
		return;
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL: {
		const struct op_tensor *out = &call->out[0];
		int silu = id == OP_MATMUL_SILU_MUL, base = silu ? 0 : 1;
		struct op_tensor tmp = host_tensor(out->dtype, out->dim[0],
		                                   (silu ? 2 : 1) * out->dim[1]);
		t[0] = call->in[base];
		t[1] = call->in[base + 1];
		attr[MATMUL_TRANS_A] = call->attr[MATMUL_TRANS_A];
		attr[MATMUL_TRANS_B] = call->attr[MATMUL_TRANS_B];
		host_run(OP_MATMUL, t, 2, &tmp, 1, attr);
		if (silu) {
			host_run(OP_SILU_MUL, &tmp, 1, out, 1, NULL);
		} else {
			t[0] = call->in[0];
			t[1] = tmp;
			host_run(OP_ADD, t, 2, out, 1, NULL);
		}
		free(tmp.data);
		return;
	}
	case OP_ADD_RMSNORM:
		host_run(OP_ADD, call->in, 2, &call->out[0], 1, NULL);
		t[0] = call->out[0];
		t[1] = call->in[2];
		attr[NORM_EPS] = call->attr[NORM_EPS];
		host_run(OP_RMSNORM, t, 2, &call->out[1], 1, attr);
		return;
	case OP_ROPE_KV_WRITE: {
		const struct op_tensor *qkv = &call->in[0];
		int64_t H = call->attr[RKV_HEADS].i, KVH = call->attr[RKV_KV_HEADS].i;
		int64_t D = call->attr[RKV_HEAD_DIM].i, T = tensor_numel(&call->in[1]);
		struct op_tensor tq = host_tensor(qkv->dtype, T, H * D);
		struct op_tensor tk = host_tensor(qkv->dtype, T, KVH * D);
		struct op_tensor tv = host_tensor(qkv->dtype, T, KVH * D);
		ref_slice(qkv, &tq, 0);
		ref_slice(qkv, &tk, H * D);
		ref_slice(qkv, &tv, (H + KVH) * D);
		attr[ROPE_HEAD_DIM] = call->attr[RKV_HEAD_DIM];
		attr[ROPE_THETA] = call->attr[RKV_THETA];
		attr[ROPE_HEADS] = call->attr[RKV_HEADS];
		u[0] = tq;
		u[1] = call->in[1];
		host_run(OP_ROPE, u, 2, &call->out[0], 1, attr);
		attr[ROPE_HEADS] = call->attr[RKV_KV_HEADS];
		u[0] = tk;
		host_run(OP_ROPE, u, 2, &tk, 1, attr);
		host_run(OP_KV_WRITE, u, 2, &call->out[1], 1, NULL);
		u[0] = tv;
		host_run(OP_KV_WRITE, u, 2, &call->out[2], 1, NULL);
		free(tq.data);
		free(tk.data);
		free(tv.data);
		return;
	}
	default:
		bail("no host reference for op %d", (int)id);
	}
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

/* What DCALL (C's, for the device) needs made before its launch on CTX
 * (cuda_op_prepare: mma_packed's copy of its weight), as a trial that
 * cuda_packs_trim frees; 0 or -1 with MSG. */
static int tcase_prepare(const struct tcase *c, const struct op_call *dcall,
                         const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	struct op_call q = *dcall;

	q.kind = kind_stub(c->id);
	return cuda_op_prepare(&q, ctx, 0, msg, len);
}

/* Run C once, eagerly or captured, and report one TAP result. */
static void tcase_run_once(struct env *e, const struct tcase *c, int captured)
{
	struct op_call dcall, hcall;
	struct cuda_op_ctx ctx = e->ctx;
	cuda_kernel_fn fn = cuda_kernel(c->id);
	char msg[256] = "", why[320] = "";
	void *scratch = NULL;
	int rc, pass = 1;

	if (!fn)
		bail("no kernel for op %d", (int)c->id);
	for (int i = 0; i < c->nin; i++)
		tbuf_upload(c->in[i]);
	for (int o = 0; o < c->nout; o++) {
		if (c->keep_out)
			tbuf_upload(c->out[o]);
		else if (!tcase_is_input(c, c->out[o]))
			tbuf_poison(c->out[o]);
	}
	scratch = scratch_alloc(c->scratch);
	ctx.scratch = scratch;
	ctx.scratch_bytes = c->scratch;
	ctx.pdl = c->pdl;
	if (c->sm_count > 0)
		ctx.sm_count = c->sm_count;
	ctx.gemv_shape = c->gemv_shape;
	ctx.moe_gu_shape = c->moe_gu_shape;
	tcase_call(c, &dcall, 1);
	tcase_call(c, &hcall, 0);

	/* The uploads and poisoning above ran on the legacy default stream,
	 * which e->stream (non-blocking) does not wait for. */
	CK(cudaDeviceSynchronize());
	rc = tcase_prepare(c, &dcall, &ctx, msg, sizeof msg);
	if (rc == 0 && captured) {
		rc = launch_captured(e, fn, &dcall, &ctx, msg, sizeof msg);
	} else if (rc == 0) {
		rc = fn(&dcall, &ctx, msg, sizeof msg);
		if (rc == 0) {
			cudaError_t err = cudaStreamSynchronize(e->stream);
			if (err != cudaSuccess) {
				snprintf(msg, sizeof msg, "the kernel failed: %s", cudaGetErrorString(err));
				rc = -1;
			}
		}
	}
	ref_run(c->id, &hcall);

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
		pass = tbuf_compare(b, got, (c->exact_outs >> o) & 1 ? 0.0 : c->tol, why, sizeof why);
		if (c->got[o])
			memcpy(c->got[o], got, b->bytes);
		free(got);
	}
	if (pass && !scratch_counters_zero(scratch, c->scratch)) {
		pass = 0;
		snprintf(why, sizeof why, "the scratch counters are not zero after the launch");
	}
	/* The case's buffers go; a copy of them must not outlive them. */
	cuda_packs_trim(ctx.packs);
	ok(pass, "%s%s%s%s%s", c->what, dcall.impl >= 0 && cuda_impl_count(c->id) > 1 ? " [" : "",
	   dcall.impl >= 0 && cuda_impl_count(c->id) > 1 ? cuda_impl_name(c->id, dcall.impl) : "",
	   dcall.impl >= 0 && cuda_impl_count(c->id) > 1 ? "]" : "",
	   captured ? " (captured)" : c->pdl ? " (pdl)" : "");
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
					c.scratch = op_scratch(&c);
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

/* The token classes cuBLASLt's algorithms are chosen for (cuda.h). */
static void test_lt_classes(void)
{
	static const int64_t cases[][2] = {
		{ 1, 1 },     { 8, 8 },     { 16, 16 },   { 17, 24 },   { 24, 24 },
		{ 25, 32 },   { 33, 48 },   { 40, 48 },   { 48, 48 },   { 49, 64 },
		{ 64, 64 },   { 65, 96 },   { 97, 128 },  { 129, 192 }, { 200, 256 },
		{ 257, 384 }, { 496, 512 }, { 512, 512 }, { 513, 768 },
		{ 1073741825, 1610612736 }, { 1610612737, 1610612737 },
		{ 2147483647, 2147483647 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ok(cuda_lt_class(cases[i][0]) == cases[i][1], "cuBLASLt token class of %lld: %lld",
		   (long long)cases[i][0], (long long)cases[i][1]);
}

/* --- row reductions ---------------------------------------------------------- */

static void test_rows(struct env *e)
{
	/* The last four, rmsnorm only: a decode row, a 2048-wide row, a row
	 * that is not a multiple of the block, more rows than one grid. */
	static const int64_t shapes[][2] = {
		{ 5, 300 }, { 3, 4096 }, { 2, 1 }, { 70000, 3 },
		{ 64, 1024 }, { 7, 2048 }, { 9, 264 }, { 300000, 8 },
	};
	const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
	static const enum op_id ids[] = { OP_RMSNORM, OP_LAYERNORM, OP_SOFTMAX };
	static const char *const names[] = { "rmsnorm", "layernorm", "softmax" };
	static const int nins[] = { 2, 3, 1 };
	struct tbuf x, w, b, out;
	struct tcase c;

	for (int k = 0; k < 3; k++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int s = 0; s < nshapes; s++) {
				for (int inplace = 0; inplace < 2; inplace++) {
					int64_t rows = shapes[s][0], cols = shapes[s][1];
					if (s >= 4 && ids[k] != OP_RMSNORM)
						continue;
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
					c.capture = (dt == PLAN_DTYPE_F16 || dt == PLAN_DTYPE_BF16) &&
					            (s == 0 || s == 4) && !inplace;
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
			for (int impl = 0; impl < 2; impl++) {
				tcase_init(&c, OP_ARGMAX, 1, 1);
				c.in[0] = &x;
				c.out[0] = &out;
				c.impl = impl;
				c.scratch = op_scratch(&c);
				c.capture = dt == PLAN_DTYPE_F16 && s == 0;
				snprintf(c.what, sizeof c.what, "argmax %s [%lld,%lld]", dtype_name(dt),
				         (long long)rows, (long long)cols);
				tcase_run(e, &c);
			}
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
		{ 1, 16, 16, 64, 2048, 0.0, 0 },        /* llama-decode's: dsplit's chunks of one round */
	};
	static const int64_t kvs[] = { 0, 1, 7, 64, 65, 1000, 5000, -1 /* S */, -2 /* S + 100 */ };
	/* 0, 1: split, at the device's size and at one multiprocessor; then
	 * the others */
	static const char *const names[] = { "split", "split", "twopass", "cluster",
		                             "split_early", "cluster_early", "cluster4",
		                             "cluster2", "cluster8", "dsplit", "dsplit_early" };
	const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]), nkv = (int)(sizeof kvs / sizeof kvs[0]);
	const int nnames = (int)(sizeof names / sizeof names[0]);
	struct attn_bufs ab;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < ncfg; k++) {
			const struct attn_cfg *cfg = &cfgs[k];
			attn_bufs_init(e, &ab, dt, cfg);
			for (int gs = 0; gs < 2; gs++) {
				for (int smi = 0; smi < nnames; smi++) {
					for (int j = 0; j < nkv; j++) {
						int64_t kv = kvs[j] == -1 ? cfg->S : kvs[j] == -2 ? cfg->S + 100 : kvs[j];
						if (kvs[j] >= 0 && kvs[j] > cfg->S)
							continue;
						int32_t kv32 = (int32_t)kv;
						CK(cudaMemcpy(ab.kv_dev, &kv32, sizeof kv32, cudaMemcpyHostToDevice));
						attn_case_init(&c, &ab, cfg, kv, gs);
						c.sm_count = smi == 1 ? 1 : 0;
						c.impl = impl_named(OP_ATTENTION, names[smi]);
						c.scratch = attn_scratch(&c);
						snprintf(c.what, sizeof c.what,
						         "attention %s %s %s T %lld heads %lld/%lld head_dim %lld "
						         "S %lld kv_len %lld%s%s",
						         cuda_impl_name(OP_ATTENTION, c.impl),
						         gs ? "graph-safe" : "eager",
						         dtype_name(dt), (long long)cfg->T, (long long)cfg->H,
						         (long long)cfg->KVH, (long long)cfg->D, (long long)cfg->S,
						         (long long)kv, smi == 1 ? " sm_count 1" : "",
						         cfg->shift ? " misaligned" : "");
						tcase_run(e, &c);
					}
				}
			}
			attn_bufs_free(&ab);
		}
	}
}

/* --- paged attention -------------------------------------------------------- */

/*
 * A serving batch over a paged cache, made from the case's seed: NREQ
 * requests (the first NDECODE decoding one row, then prefill chunks of
 * several rows, then one padded request with no rows), PAD padded rows
 * at the end. Lengths reach MB * BS, so long rows take several splits.
 * Blocks are handed out from a shuffled pool; every position no request
 * owns -- free blocks, owned blocks past their request's length -- holds
 * NaN, and table entries past a request's blocks are -1, an id past NB or
 * a block of the pool (free, or a later request's): a kernel that reads
 * anything it should not, or spreads it, fails the comparison (NaN never
 * passes).
 */
struct pattn_cfg {
	int64_t H, KVH, D, NB, BS, MB;
	int     ndecode, nprefill, pad;
	size_t  shift;          /* misalign q and the caches by this many bytes */
};

struct pattn_bufs {
	struct tbuf q, k, v, table, seq, qs, out;
	struct op_batch batch;
	int64_t R, T;
};

static void pattn_bufs_init(struct env *e, struct pattn_bufs *pb, int dt,
                            const struct pattn_cfg *cfg)
{
	const int64_t W = cfg->KVH * cfg->D, cap = cfg->MB * cfg->BS;
	const int64_t R = cfg->ndecode + cfg->nprefill + 1;
	int64_t *pool = malloc((size_t)cfg->NB * sizeof *pool), npool = cfg->NB, rows = 0;
	int32_t *tab, *seq, *qs;

	if (!pool)
		bail("out of memory");
	memset(pb, 0, sizeof *pb);
	pb->R = R;
	for (int64_t b = 0; b < cfg->NB; b++)
		pool[b] = b;
	for (int64_t b = cfg->NB - 1; b > 0; b--) {     /* shuffle */
		int64_t j = env_int(e, 0, (int32_t)b + 1), t = pool[b];
		pool[b] = pool[j];
		pool[j] = t;
	}
	tbuf_init(&pb->table, PLAN_DTYPE_I32, 2, (const int64_t[]){ R, cfg->MB }, 0);
	tbuf_init(&pb->seq, PLAN_DTYPE_I32, 1, (const int64_t[]){ R }, 0);
	tbuf_init(&pb->qs, PLAN_DTYPE_I32, 1, (const int64_t[]){ R + 1 }, 0);
	tab = pb->table.host;
	seq = pb->seq.host;
	qs = pb->qs.host;
	for (int64_t r = 0; r < R; r++) {
		int64_t n = r < cfg->ndecode ? 1 : r < R - 1 ? env_int(e, 2, 9) : 0;
		/* Request 0 holds the whole table; the rest anything up to it. */
		int64_t len = r == R - 1 ? 0 : r == 0 ? cap : env_int(e, (int32_t)n, (int32_t)cap + 1);
		int64_t nblk = (len + cfg->BS - 1) / cfg->BS;
		qs[r] = (int32_t)rows;
		seq[r] = (int32_t)len;
		rows += n;
		for (int64_t j = 0; j < cfg->MB; j++) {
			if (j < nblk) {
				if (npool == 0)
					bail("paged attention case: %lld blocks are too few", (long long)cfg->NB);
				tab[r * cfg->MB + j] = (int32_t)pool[--npool];
			} else {
				static const int32_t junk[] = { -1, 1 << 30, -7 };
				int32_t pick = junk[env_int(e, 0, 3)];
				tab[r * cfg->MB + j] = pick == -7 && npool > 0 ? (int32_t)pool[0] : pick;
			}
		}
		if (len > pb->batch.max_seq_len)
			pb->batch.max_seq_len = (uint32_t)len;
		if ((uint32_t)n > pb->batch.max_query_len)
			pb->batch.max_query_len = (uint32_t)n;
	}
	qs[R] = (int32_t)rows;
	pb->batch.tokens = (uint32_t)rows;
	pb->batch.requests = (uint32_t)(R - 1);
	pb->T = rows + cfg->pad;
	free(pool);

	tbuf_init(&pb->q, dt, 2, (const int64_t[]){ pb->T, cfg->H * cfg->D }, cfg->shift);
	tbuf_init(&pb->k, dt, 3, (const int64_t[]){ cfg->NB, cfg->BS, W }, cfg->shift);
	tbuf_init(&pb->v, dt, 3, (const int64_t[]){ cfg->NB, cfg->BS, W }, cfg->shift);
	tbuf_init(&pb->out, dt, 2, (const int64_t[]){ pb->T, cfg->H * cfg->D }, 0);
	tbuf_random(e, &pb->q, 4.0f);
	{
		struct op_tensor kt = tbuf_view(&pb->k, 0), vt = tbuf_view(&pb->v, 0);
		for (int64_t i = 0; i < pb->k.numel; i++) {
			host_store(&kt, i, NAN);
			host_store(&vt, i, NAN);
		}
		for (int64_t r = 0; r < R; r++)
			for (int64_t j = 0; j < seq[r]; j++) {
				int64_t row = (int64_t)tab[r * cfg->MB + j / cfg->BS] * cfg->BS + j % cfg->BS;
				for (int64_t c = 0; c < W; c++) {
					host_store(&kt, row * W + c, env_uniform(e));
					host_store(&vt, row * W + c, env_uniform(e));
				}
			}
	}
}

static void pattn_bufs_free(struct pattn_bufs *pb)
{
	tbuf_free(&pb->q);
	tbuf_free(&pb->k);
	tbuf_free(&pb->v);
	tbuf_free(&pb->table);
	tbuf_free(&pb->seq);
	tbuf_free(&pb->qs);
	tbuf_free(&pb->out);
}

static void test_paged_attention(struct env *e)
{
	static const struct pattn_cfg cfgs[] = {
		{ 16, 16, 64, 400, 16, 64, 5, 1, 3, 0 },   /* f16/bf16: 8 lanes a row */
		{ 8, 2, 128, 300, 16, 32, 3, 2, 0, 0 },    /* GQA 4:1, 16 lanes a row */
		{ 4, 1, 80, 200, 8, 24, 4, 1, 2, 0 },      /* head_dim not 8 * 2^k */
		{ 4, 2, 64, 200, 16, 16, 2, 1, 1, 4 },     /* misaligned: element loads */
		{ 2, 2, 256, 100, 16, 8, 1, 1, 0, 0 },
		{ 4, 4, 64, 200, 12, 40, 3, 1, 1, 0 },     /* BS not a power of two */
		/* BS 2: at sm_count 1, a row is one chunk of up to 600 positions
		 * over up to 300 block ids, more than the kernel stages in shared
		 * memory */
		{ 2, 2, 64, 1300, 2, 300, 2, 1, 1, 0 },
		{ 40, 8, 64, 200, 16, 8, 2, 1, 0, 0 },     /* 40 heads, GQA 5:1 */
		{ 24, 8, 128, 300, 12, 24, 4, 2, 1, 0 },   /* GQA 3:1, 4 KiB cache rows */
		/* 1280 positions a request: at sm_count 1 request 0's rows are
		 * two chunks, the kernel's longest (PATTN_MAX_CHUNK) and the
		 * rest, merged */
		{ 4, 2, 64, 300, 16, 80, 2, 1, 0, 0 },
	};
	const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]);
	struct pattn_bufs pb;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < ncfg; k++) {
			const struct pattn_cfg *cfg = &cfgs[k];
			pattn_bufs_init(e, &pb, dt, cfg);
			for (int gs = 0; gs < 2; gs++) {
				for (int smi = 0; smi < 6; smi++) {
					/* smi 3 to 5: smi 0 to 2 with the metadata marked as
					 * fed before the step (op_call.ready_in), launched with
					 * PDL: the kernel reads it before its PDL wait, in
					 * either block order (split-major: few pairs on the
					 * device's multiprocessors; pair-major: sm_count 1) */
					const int early = smi >= 3;
					tcase_init(&c, OP_PAGED_ATTENTION, 6, 1);
					c.in[PATTN_Q] = &pb.q;
					c.in[PATTN_K] = &pb.k;
					c.in[PATTN_V] = &pb.v;
					c.in[PATTN_TABLE] = &pb.table;
					c.in[PATTN_SEQ_LENS] = &pb.seq;
					c.in[PATTN_QUERY_START] = &pb.qs;
					c.out[0] = &pb.out;
					c.attr[PATTN_HEADS].i = cfg->H;
					c.attr[PATTN_KV_HEADS].i = cfg->KVH;
					c.attr[PATTN_HEAD_DIM].i = cfg->D;
					c.attr[PATTN_SCALE].f = 0.0;
					c.graph_safe = gs;
					c.batch = gs ? NULL : &pb.batch;
					c.capture = gs;
					c.tol = tol_for(dt, 1e-4);
					/* smi 1: few splits; smi 2: merged by a second kernel */
					c.sm_count = smi % 3 == 1 ? 1 : 0;
					c.impl = smi % 3 == 2 ? 1 : 0;
					c.ready_in = early ? 1u << PATTN_TABLE | 1u << PATTN_SEQ_LENS |
					                     1u << PATTN_QUERY_START : 0;
					c.pdl = early;
					c.scratch = op_scratch(&c);
					snprintf(c.what, sizeof c.what,
					         "paged_attention %s %s heads %lld/%lld head_dim %lld, %lld "
					         "rows of %lld requests, longest %u%s%s%s", gs ? "graph-safe" : "eager",
					         dtype_name(dt), (long long)cfg->H, (long long)cfg->KVH,
					         (long long)cfg->D, (long long)pb.T, (long long)pb.R,
					         pb.batch.max_seq_len, smi % 3 == 1 ? " sm_count 1" : "",
					         cfg->shift ? " misaligned" : "",
					         early ? ", metadata marked ready, pdl" : "");
					tcase_run(e, &c);
				}
			}
			pattn_bufs_free(&pb);
		}
	}
}

/* Each implementation's graph-safe form captured once (with a host kv_len
 * it must ignore) and replayed for every kv_len in device memory, against
 * the host. With the device's size fixed at 132 multiprocessors the plan
 * gives the first two shapes 16 splits, which a cluster holds whole, the
 * third 128, which it does not, and the fourth (llama-decode's heads)
 * chunks of 64 positions for every row, one round of the core's loads:
 * dsplit_early's rows loaded before the wait, whose bits must be dsplit's
 * (it runs just after it). */
static void test_attention_graph(struct env *e)
{
	static const struct attn_cfg cfgs[] = {
		{ 3, 8, 2, 64, 1024, 0.0, 0 },
		{ 1, 8, 8, 128, 1024, 0.0, 0 },
		{ 1, 1, 1, 128, 8192, 0.0, 0 },
		{ 1, 16, 16, 64, 2048, 0.0, 0 },
	};
	static const int32_t kvs[] = { 1000, 1, 7, 64, 1024, 0, 3000, 513, 8192, 1000 };
	static const char *const inames[] = { "split", "cluster", "split_early", "cluster_early",
		                              "cluster4", "cluster2", "cluster8", "dsplit",
		                              "dsplit_early" };
	enum { NKV = sizeof kvs / sizeof kvs[0] };
	const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]), nkv = NKV;
	const int nimpl = (int)(sizeof inames / sizeof inames[0]);
	void *dsplit_out[NKV];          /* dsplit's outputs, for dsplit_early's bits */

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < ncfg; k++) {
			const struct attn_cfg *cfg = &cfgs[k];
			struct attn_bufs ab;

			attn_bufs_init(e, &ab, dt, cfg);
			tbuf_upload(&ab.q);
			tbuf_upload(&ab.k);
			tbuf_upload(&ab.v);
			memset(dsplit_out, 0, sizeof dsplit_out);
			for (int ii = 0; ii < nimpl; ii++) {
				const char *iname = inames[ii];
				const int impl = impl_named(OP_ATTENTION, iname);
				struct tcase c;
				struct op_call dcall, hcall;
				struct cuda_op_ctx ctx = e->ctx;
				cudaGraph_t graph = NULL;
				cudaGraphExec_t exec = NULL;
				char msg[256] = "";
				void *scratch = NULL;
				int rc;

				attn_case_init(&c, &ab, cfg, 3, 1);
				c.impl = impl;
				c.scratch = attn_scratch(&c);
				scratch = scratch_alloc(c.scratch);
				ctx.scratch = scratch;
				ctx.scratch_bytes = c.scratch;
				ctx.sm_count = 132;
				tcase_call(&c, &dcall, 1);
				CK(cudaDeviceSynchronize());

				CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
				rc = cuda_kernel(OP_ATTENTION)(&dcall, &ctx, msg, sizeof msg);
				cudaError_t err = cudaStreamEndCapture(e->stream, &graph);
				if (rc == 0 && err != cudaSuccess) {
					snprintf(msg, sizeof msg, "cudaStreamEndCapture: %s",
					         cudaGetErrorString(err));
					rc = -1;
				}
				if (rc == 0 && (err = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess) {
					snprintf(msg, sizeof msg, "cudaGraphInstantiate: %s",
					         cudaGetErrorString(err));
					rc = -1;
				}
				ok(rc == 0, "attention graph-safe %s %s S %lld head_dim %lld: captured once",
				   iname, dtype_name(dt), (long long)cfg->S, (long long)cfg->D);
				if (rc != 0) {
					diag("  %s", msg);
					/* dsplit_early's replays and their bits */
					tap_skip(strcmp(iname, "dsplit_early") == 0 ? 2 * nkv : nkv,
					         "no graph to replay");
				}
				for (int j = 0; rc == 0 && j < nkv; j++) {
					int32_t kv32 = kvs[j];
					char why[256] = "";
					int pass;

					CK(cudaMemcpyAsync(ab.kv_dev, &kv32, sizeof kv32,
					                   cudaMemcpyHostToDevice, e->stream));
					CK(cudaMemsetAsync(ab.out.dev, POISON_DEV, ab.out.bytes, e->stream));
					err = cudaGraphLaunch(exec, e->stream);
					if (err == cudaSuccess)
						err = cudaStreamSynchronize(e->stream);
					c.attr[ATTN_KV_LEN].i = kv32;
					memset(ab.out.host, POISON_DEV, ab.out.bytes);
					tcase_call(&c, &hcall, 0);
					host_kernel(OP_ATTENTION)(&hcall);
					void *got = calloc(1, ab.out.bytes);
					if (!got)
						bail("out of memory");
					if (err != cudaSuccess) {
						snprintf(why, sizeof why, "replay: %s", cudaGetErrorString(err));
						pass = 0;
					} else {
						CK(cudaMemcpy(got, ab.out.dev, ab.out.bytes,
						              cudaMemcpyDeviceToHost));
						pass = tbuf_compare(&ab.out, got, c.tol, why, sizeof why);
					}
					if (pass && !scratch_counters_zero(scratch, c.scratch)) {
						pass = 0;
						snprintf(why, sizeof why, "the scratch counters are not zero");
					}
					ok(pass, "attention graph-safe %s %s S %lld: replay with device "
					   "kv_len %d", iname, dtype_name(dt), (long long)cfg->S, (int)kv32);
					if (!pass)
						diag("  %s", why);
					if (err != cudaSuccess) {
						free(got);
						got = NULL;
					}
					if (strcmp(iname, "dsplit") == 0) {
						dsplit_out[j] = got;
						continue;
					}
					if (strcmp(iname, "dsplit_early") == 0) {
						ok(got != NULL && dsplit_out[j] != NULL &&
						   memcmp(got, dsplit_out[j], ab.out.bytes) == 0,
						   "attention graph-safe dsplit_early %s S %lld heads %lld: "
						   "dsplit's bits at device kv_len %d", dtype_name(dt),
						   (long long)cfg->S, (long long)cfg->H, (int)kv32);
					}
					free(got);
				}
				if (exec)
					CK(cudaGraphExecDestroy(exec));
				if (graph)
					CK(cudaGraphDestroy(graph));
				if (scratch)
					CK(cudaFree(scratch));
			}
			for (int j = 0; j < nkv; j++)
				free(dsplit_out[j]);
			attn_bufs_free(&ab);
		}
	}
}

/* --- small-M products and their fused kinds ---------------------------------- */

/* Whether IMPL can run Q (C's call), after checking that
 * cuda_impl_usable says WANT; when it cannot, a launch of it anyway must
 * fail and name it. WHAT names the case. */
static int usable_as_expected(struct env *e, const struct tcase *c, const struct op_call *q,
                              int impl, int want, const char *what)
{
	int have = cuda_impl_usable(q, impl);

	ok(have == want, "%s: %s %s usable", what, cuda_impl_name(c->id, impl),
	   want ? "is" : "is not");
	if (!have) {
		char msg[256] = "";
		struct op_call dcall;
		tcase_call(c, &dcall, 1);
		dcall.impl = impl;
		int rc = cuda_kernel(c->id)(&dcall, &e->ctx, msg, sizeof msg);
		ok(rc == -1 && strstr(msg, cuda_impl_name(c->id, impl)) != NULL,
		   "%s: launching %s fails", what, cuda_impl_name(c->id, impl));
	}
	return have;
}

/* Whether the device runs sm_90a code (compute capability 9.0): wgmma's. */
static int device_sm90a(void)
{
	int dev = 0, major = 0, minor = 0;

	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
	CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
	return major == 9 && minor == 0;
}

/* What cuda_impl_usable must say of a product of kind K (0..2, as
 * product_ids): mma wants f16/bf16, [N, K] weights, M <= 32, K % 8 == 0
 * and 16-byte aligned operands; mma_packed (4) the same, b marked a
 * weight (WEIGHT); gemv [N, K] weights and M <= 8; wgmma and wgmma_whole
 * (5, 6) f16/bf16 with out of that dtype (ODT), [N, K] weights,
 * 16 <= M <= 64, K % 128 == 0, N % 8 == 0, aligned operands, a weight,
 * on a device of compute capability 9.0; rows (7) matmul_add of one token
 * of f16/bf16 on a weight, [N, K], K % 8 == 0 within 2048 pieces, aligned
 * operands (N within the scratch's 4096 counters of 2 columns where K
 * splits: every shape here); cublas takes everything here. */
static int product_expect_usable(int impl, int k, int dt, int odt, int64_t M, int64_t N,
                                 int64_t K, int tb, int aligned, int weight)
{
	switch (impl) {
	case 7:
		return k == 1 && M == 1 && dt != PLAN_DTYPE_F32 && tb && K > 0 && K % 8 == 0 &&
		       K / 8 <= 2048 && aligned && weight;
	case 0:
		return dt != PLAN_DTYPE_F32 && tb && M <= 32 && K % 8 == 0 && aligned;
	case 4:
		return weight && product_expect_usable(0, k, dt, odt, M, N, K, tb, aligned, weight);
	case 1:
		return tb && M <= 8;
	case 5:
	case 6:
		return dt != PLAN_DTYPE_F32 && odt == dt && tb && M >= 16 && M <= 64 && K > 0 &&
		       K % 128 == 0 && N > 0 && N % 8 == 0 && aligned && weight && device_sm90a();
	default:
		return 1;
	}
}

static const char *const product_names[] = { "matmul", "matmul_add", "matmul_silu_mul" };
static const enum op_id product_ids[] = { OP_MATMUL, OP_MATMUL_ADD, OP_MATMUL_SILU_MUL };

struct product_bufs {
	struct tbuf x, a, b, out;
};

/* Operands of product kind K (0..2) at M, N, K, weights [NB, K] when TB. */
static void product_bufs_init(struct env *e, struct product_bufs *pb, int k, int dt, int odt,
                              int64_t M, int64_t N, int64_t K, int tb, size_t shift)
{
	int64_t NB = k == 2 ? 2 * N : N;

	memset(pb, 0, sizeof *pb);
	tbuf_init(&pb->a, dt, 2, (const int64_t[]){ M, K }, shift);
	tbuf_init(&pb->b, dt, 2, tb ? (const int64_t[]){ NB, K } : (const int64_t[]){ K, NB },
	          shift);
	tbuf_init(&pb->out, odt, 2, (const int64_t[]){ M, N }, 0);
	tbuf_random(e, &pb->a, 1.0f);
	tbuf_random(e, &pb->b, 1.0f);
	if (k == 1) {
		tbuf_init(&pb->x, odt, 2, (const int64_t[]){ M, N }, 0);
		tbuf_random(e, &pb->x, 4.0f);
	}
}

static void product_bufs_free(struct product_bufs *pb)
{
	tbuf_free(&pb->a);
	tbuf_free(&pb->b);
	tbuf_free(&pb->out);
	if (pb->x.host)
		tbuf_free(&pb->x);
}

/* INPLACE: matmul_add's out is its x. */
static void product_case_init(struct tcase *c, struct product_bufs *pb, int k, int tb,
                              int inplace)
{
	tcase_init(c, product_ids[k], k == 1 ? 3 : 2, 1);
	if (k == 1) {
		c->in[0] = &pb->x;
		c->in[1] = &pb->a;
		c->in[2] = &pb->b;
	} else {
		c->in[0] = &pb->a;
		c->in[1] = &pb->b;
	}
	c->out[0] = k == 1 && inplace ? &pb->x : &pb->out;
	c->attr[MATMUL_TRANS_B].i = tb;
	c->tol = tol_for(c->out[0]->dtype, 1e-4);
	/* silu(gate) * up in bf16: gate and up are each rounded to 8 bits of
	 * mantissa before the product, which is rounded again, so two
	 * summation orders of K = 4096 can land 3 roundings (~1.2%) apart; seen
	 * on the H100 (element off by 32 of 2416, seed 7711326954447964303). */
	if (k == 2 && c->out[0]->dtype == PLAN_DTYPE_BF16)
		c->tol = 2e-2;
	/* x + (a @ b) in bf16: the product is rounded to bf16 before the add,
	 * which rounds again, so two summation orders can land one rounding of
	 * each apart: 2 ulps, up to 2^-6 of the largest value (seen on the
	 * H100: 43 against 43.5 of at most 45.75, cuBLAS at M 128, K 1024). */
	if (k == 1 && c->out[0]->dtype == PLAN_DTYPE_BF16)
		c->tol = 2e-2;
}

static void test_products(struct env *e)
{
	/* M, N, K: decode shapes; odd N; K short, long (split along K), not a
	 * multiple of 32 or of 8; N small against K (few column groups); the
	 * serving sizes past mma's 32 tokens (cuBLAS), up to 129. */
	static const int64_t mnk[][3] = {
		{ 1, 1024, 1024 }, { 2, 77, 264 }, { 3, 50, 100 }, { 5, 31, 4096 },
		{ 8, 1024, 2816 }, { 9, 130, 512 }, { 16, 257, 1024 }, { 17, 64, 2048 },
		{ 32, 300, 520 }, { 4, 8000, 64 }, { 1, 5, 8 }, { 2, 3, 0 }, { 33, 40, 64 },
		{ 1, 2816, 11264 }, { 64, 1024, 1024 }, { 48, 130, 2824 }, { 96, 77, 520 },
		{ 128, 300, 1024 }, { 100, 64, 4104 }, { 129, 70, 256 }, { 57, 2816, 200 },
		/* wgmma's: 16 to 64 tokens, K % 128 == 0 (weights on the even
		 * rows): a split along K, a partial tile (silu: 136 = 4 x 32 + 8),
		 * M not a multiple of 8, half the serving q|k|v */
		{ 9, 24, 64 }, { 40, 520, 1280 }, { 2, 8, 16 }, { 64, 136, 2816 },
		{ 5, 16, 32 }, { 23, 1000, 512 }, { 1, 8, 8 }, { 16, 1536, 1024 },
		/* one token, K past rows' 2048 k a split: not a weight, then a
		 * weight (rows splits K in 5, the last split one piece short) */
		{ 1, 3, 2056 }, { 1, 77, 8392 },
	};
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);
	struct product_bufs pb;
	struct tcase c;

	for (int k = 0; k < 3; k++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int s = 0; s < nshapes; s++) {
				int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
				for (int variant = 0; variant < 4; variant++) {
					/* 0: plain; 1: misaligned operands; 2: out f32 (f16/bf16
					 * in) or, for matmul_add, out in place of x; 3: [K, N]
					 * weights */
					/* misaligned: by one element, off 16 bytes */
					int tb = variant != 3, shift = variant == 1 ? (int)dtype_size(dt) : 0;
					int inplace = variant == 2 && k == 1;
					int odt = variant == 2 && k != 1 && dt != PLAN_DTYPE_F32 ?
					          PLAN_DTYPE_F32 : dt;
					if (variant == 2 && !inplace && odt == dt)
						continue;
					if ((variant == 1 || variant == 3) && s % 3 != 1)
						continue;       /* a few shapes are enough */
					/* b a weight (op_call.const_in) on even shapes */
					int weight = s % 2 == 0;
					product_bufs_init(e, &pb, k, dt, odt, M, N, K, tb, (size_t)shift);
					product_case_init(&c, &pb, k, tb, inplace);
					c.const_in = weight ? 1u << (k == 1 ? 2 : 1) : 0;
					struct op_call q;
					tcase_call(&c, &q, 1);
					q.kind = kind_stub(c.id);
					for (int impl = 0; impl < cuda_impl_count(c.id); impl++) {
						int want = product_expect_usable(impl, k, dt, odt, M, N, K, tb,
						                                 shift == 0, weight);
						char what[160];
						snprintf(what, sizeof what, "%s %s -> %s M %lld N %lld K %lld%s%s%s",
						         product_names[k], dtype_name(dt), dtype_name(odt),
						         (long long)M, (long long)N, (long long)K,
						         tb ? "" : " b [K,N]", shift ? " misaligned" : "",
						         inplace ? " out = x" : "");
						if (!usable_as_expected(e, &c, &q, impl, want, what))
							continue;
						c.impl = impl;
						c.scratch = op_scratch(&c);
						c.sm_count = (s + impl) % 4 == 3 ? 1 : 0;   /* other splits */
						c.capture = s == 4 || s == 3;
						snprintf(c.what, sizeof c.what, "%s%s", what,
						         c.sm_count ? " sm_count 1" : "");
						if (inplace)
							tbuf_random(e, &pb.x, 4.0f);    /* the last run wrote it */
						tcase_run(e, &c);
					}
					product_bufs_free(&pb);
				}
			}
		}
	}
}

/* CALL (kind ID) launched once uncaptured, OUT's bytes kept; then captured
 * twice in one graph with PDL off, and again with PDL on, each graph
 * replayed four times over a poisoned OUT. 1 when every replay gives the
 * uncaptured bytes. Each launch's status is or-ed into *RC (MSG: the
 * last error); after a failed one nothing more is captured. */
static int replays_give_uncaptured(struct env *e, enum op_id id, const struct op_call *call,
                                   struct cuda_op_ctx *ctx, const struct tbuf *out, int *rc,
                                   char *msg, size_t len)
{
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	void *want = malloc(out->bytes), *got = malloc(out->bytes);
	int same = 1;

	if (!want || !got)
		bail("out of memory");
	CK(cudaDeviceSynchronize());
	*rc |= cuda_kernel(id)(call, ctx, msg, len);
	CK(cudaStreamSynchronize(e->stream));
	CK(cudaMemcpy(want, out->dev, out->bytes, cudaMemcpyDeviceToHost));
	for (int pdl = 0; pdl < 2 && *rc == 0; pdl++) {
		ctx->pdl = pdl;
		CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
		*rc |= cuda_kernel(id)(call, ctx, msg, len);
		*rc |= cuda_kernel(id)(call, ctx, msg, len);
		CK(cudaStreamEndCapture(e->stream, &graph));
		CK(cudaGraphInstantiate(&exec, graph, 0));
		for (int i = 0; i < 4; i++) {
			CK(cudaMemsetAsync(out->dev, POISON_DEV, out->bytes, e->stream));
			CK(cudaGraphLaunch(exec, e->stream));
			CK(cudaStreamSynchronize(e->stream));
			CK(cudaMemcpy(got, out->dev, out->bytes, cudaMemcpyDeviceToHost));
			same &= memcmp(got, want, out->bytes) == 0;
		}
		CK(cudaGraphExecDestroy(exec));
		CK(cudaGraphDestroy(graph));
	}
	free(want);
	free(got);
	return same;
}

/* One graph holding each small-M kernel with a split along K, replayed:
 * every replay gives the eager launch's bits (a fixed order of sums, and
 * counters that come back to zero), with PDL on as off. */
static void test_product_replays(struct env *e)
{
	static const int64_t mnk[][3] = {
		{ 8, 1024, 2816 }, { 3, 31, 4096 }, { 1, 2816, 11264 }, { 32, 1024, 2816 },
		{ 24, 300, 1024 }, { 64, 520, 1280 },
	};
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);

	for (int k = 0; k < 3; k++) {
		for (int s = 0; s < nshapes; s++) {
			/* mma, gemv, mma_packed, wgmma (split along K over a
			 * cluster), wgmma_whole, rows */
			static const int impls[] = { 0, 1, 4, 5, 6, 7 };
			for (int ii = 0; ii < (int)(sizeof impls / sizeof impls[0]); ii++) {
				int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
				int impl = impls[ii];
				if (impl == 1 && M > 8)
					continue;       /* gemv takes at most 8 tokens */
				if (impl == 7 && (k != 1 || M != 1))
					continue;       /* rows: matmul_add of one token */
				if ((impl == 0 || impl == 4) && M > 32)
					continue;       /* mma takes at most 32 */
				const int wg = impl == 5 || impl == 6;
				if (wg && (M < 16 || K % 128 != 0 || N % 8 != 0))
					continue;       /* wgmma's shapes */
				if (wg && !device_sm90a()) {
					tap_skip(1, "wgmma runs on compute capability 9.0 only");
					continue;
				}
				struct product_bufs pb;
				struct tcase c;
				struct op_call call;
				struct cuda_op_ctx ctx = e->ctx;
				char msg[256] = "";
				int same, rc = 0;

				product_bufs_init(e, &pb, k, PLAN_DTYPE_BF16, PLAN_DTYPE_BF16, M, N, K, 1, 0);
				tbuf_upload(&pb.a);
				tbuf_upload(&pb.b);
				if (k == 1)
					tbuf_upload(&pb.x);
				product_case_init(&c, &pb, k, 1, 0);
				c.impl = impl;
				c.const_in = 1u << (k == 1 ? 2 : 1);
				c.scratch = op_scratch(&c);
				tcase_call(&c, &call, 1);
				ctx.scratch = scratch_alloc(c.scratch);
				ctx.scratch_bytes = c.scratch;
				CK(cudaDeviceSynchronize());    /* the uploads, on the legacy stream */
				rc = tcase_prepare(&c, &call, &ctx, msg, sizeof msg);
				same = rc == 0 && replays_give_uncaptured(e, c.id, &call, &ctx, &pb.out, &rc,
				                                          msg, sizeof msg);
				cuda_packs_trim(ctx.packs);
				same &= scratch_counters_zero(ctx.scratch, c.scratch);
				ok(rc == 0 && same, "%s bf16 M %lld N %lld K %lld [%s], %zu bytes of scratch: "
				   "graph replays, PDL off and on, give the eager bits%s%s", product_names[k],
				   (long long)M, (long long)N, (long long)K, cuda_impl_name(c.id, impl),
				   c.scratch, rc ? ": " : "", rc ? msg : "");
				if (ctx.scratch)
					CK(cudaFree(ctx.scratch));
				product_bufs_free(&pb);
			}
		}
	}
}

/* A silu_mul of bf16 at M, N, K with b a weight, its operands uploaded,
 * into PB, C and Q (kind set); CTX E's with packs of its own. */
static void packed_case_open(struct env *e, struct product_bufs *pb, struct tcase *c,
                             struct op_call *q, struct cuda_op_ctx *ctx, int64_t M, int64_t N,
                             int64_t K)
{
	*ctx = e->ctx;
	ctx->packs = cuda_packs_new();
	if (ctx->packs == NULL)
		bail("out of memory");
	product_bufs_init(e, pb, 2, PLAN_DTYPE_BF16, PLAN_DTYPE_BF16, M, N, K, 1, 0);
	tbuf_upload(&pb->a);
	tbuf_upload(&pb->b);
	CK(cudaDeviceSynchronize());
	product_case_init(c, pb, 2, 1, 0);
	c->const_in = 1u << 1;
	tcase_call(c, q, 1);
}

/* mma_packed's copies (cuda_op_prepare, ctx->packs): their bytes, one
 * copy a weight, trials freed by a trim and kept ones not, and the
 * errors: a launch before its copy exists, a copy asked for inside a
 * capture, a b that is not a weight. */
static void test_packed_copies(struct env *e)
{
	struct product_bufs pb;
	struct tcase c;
	struct op_call q;
	struct cuda_op_ctx ctx;
	char msg[256] = "";
	int rc;

	/* silu_mul: b [2 x 77, 264]: two halves of ceil(77 / 16) = 5 tiles,
	 * ceil(264 / 32) = 9 units, 1 KiB a tile and unit */
	packed_case_open(e, &pb, &c, &q, &ctx, 8, 77, 264);
	c.impl = q.impl = 4;
	c.scratch = op_scratch(&c);
	ctx.scratch = scratch_alloc(c.scratch);
	ctx.scratch_bytes = c.scratch;

	rc = cuda_kernel(c.id)(&q, &ctx, msg, sizeof msg);
	ok(rc == -1 && strstr(msg, "no packed copy") != NULL,
	   "mma_packed launched before its copy exists fails: %s", msg);

	q.kind = kind_stub(c.id);
	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc = cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg);
	cudaGraph_t graph = NULL;
	CK(cudaStreamEndCapture(e->stream, &graph));
	if (graph)
		CK(cudaGraphDestroy(graph));
	ok(rc == -1 && strstr(msg, "captured") != NULL && cuda_packs_bytes(ctx.packs) == 0,
	   "a copy asked for inside a capture is refused: %s", msg);

	ok(cuda_op_prepare(&q, &ctx, 0, msg, sizeof msg) == 0 &&
	   cuda_packs_bytes(ctx.packs) == 2 * 5 * 9 * 1024,
	   "a trial copy of b [154, 264] holds 2 x 5 x 9 KiB (%llu bytes)",
	   (unsigned long long)cuda_packs_bytes(ctx.packs));
	ok(cuda_op_prepare(&q, &ctx, 0, msg, sizeof msg) == 0 &&
	   cuda_packs_bytes(ctx.packs) == 2 * 5 * 9 * 1024,
	   "asking again makes no second copy");
	cuda_packs_trim(ctx.packs);
	ok(cuda_packs_bytes(ctx.packs) == 0, "a trim frees a copy only trials asked for");
	ok(cuda_op_prepare(&q, &ctx, 0, msg, sizeof msg) == 0 &&
	   cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg) == 0, "a trial, then a kept call");
	cuda_packs_trim(ctx.packs);
	ok(cuda_packs_bytes(ctx.packs) == 2 * 5 * 9 * 1024, "a trim keeps a kept copy");
	rc = cuda_kernel(c.id)(&q, &ctx, msg, sizeof msg);
	ok(rc == 0 && cudaStreamSynchronize(e->stream) == cudaSuccess,
	   "mma_packed launches on its copy%s%s", rc ? ": " : "", rc ? msg : "");

	q.const_in = 0;
	rc = cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg);
	ok(rc == -1 && strstr(msg, "mma_packed cannot run") != NULL,
	   "no copy of a b that is not a weight: %s", msg);
	q.impl = 0;
	ok(cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg) == 0 &&
	   cuda_packs_bytes(ctx.packs) == 2 * 5 * 9 * 1024, "mma needs nothing made");

	cuda_packs_free(ctx.packs);
	if (ctx.scratch)
		CK(cudaFree(ctx.scratch));
	product_bufs_free(&pb);

	/* wgmma's layout: a copy of its own beside mma_packed's of the same
	 * weight, which wgmma_whole shares. silu_mul b [2 x 40, 256]: tiles of
	 * 32 gate and 32 up rows, ceil(40 / 32) = 2 of them, 64 rows x 256 k
	 * of bf16 each; mma_packed's: 2 halves x 3 tiles x 8 units x 1 KiB. */
	if (!device_sm90a()) {
		tap_skip(4, "wgmma runs on compute capability 9.0 only");
		return;
	}
	packed_case_open(e, &pb, &c, &q, &ctx, 16, 40, 256);
	q.kind = kind_stub(c.id);
	q.impl = 5;
	rc = cuda_kernel(c.id)(&q, &ctx, msg, sizeof msg);
	ok(rc == -1 && strstr(msg, "wgmma has no packed copy") != NULL,
	   "wgmma launched before its copy exists fails: %s", msg);
	ok(cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg) == 0 &&
	   cuda_packs_bytes(ctx.packs) == 2 * 64 * 256 * 2,
	   "wgmma's copy of b [80, 256] holds 2 tiles of 64 x 256 (%llu bytes)",
	   (unsigned long long)cuda_packs_bytes(ctx.packs));
	q.impl = 6;
	rc = cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg);
	q.impl = 4;
	rc |= cuda_op_prepare(&q, &ctx, 1, msg, sizeof msg);
	ok(rc == 0 && cuda_packs_bytes(ctx.packs) == 2 * 64 * 256 * 2 + 2 * 3 * 8 * 1024,
	   "wgmma_whole shares it; mma_packed's is another (%llu bytes)",
	   (unsigned long long)cuda_packs_bytes(ctx.packs));
	q.impl = 6;
	rc = cuda_kernel(c.id)(&q, &ctx, msg, sizeof msg);
	ok(rc == 0 && cudaStreamSynchronize(e->stream) == cudaSuccess,
	   "wgmma_whole launches on the shared copy%s%s", rc ? ": " : "", rc ? msg : "");
	cuda_packs_free(ctx.packs);
	product_bufs_free(&pb);
}

/* --- block shapes (BCG_GEMV_SHAPE, BCG_MOE_GU_SHAPE) ------------------------- */

/* The shapes kernel-shape.h lists for KIND, then auto (gemv): *N of them. */
static int shapes_of(enum kernel_shape_kind kind, struct kernel_shape *out)
{
	int n = 0;

	for (int g = 2; g <= 16; g *= 2)
		for (int u = 1; u <= 4; u *= 2)
			if (kernel_shape_valid(kind, g, u))
				out[n++] = (struct kernel_shape){ g, u };
	if (kind == KERNEL_SHAPE_GEMV)
		out[n++] = (struct kernel_shape){ KERNEL_SHAPE_AUTO, 0 };
	return n;
}

static const char *shape_name(struct kernel_shape sh, char *buf, size_t len)
{
	if (sh.g == KERNEL_SHAPE_AUTO)
		snprintf(buf, len, "auto");
	else
		snprintf(buf, len, "g%du%d", sh.g, sh.u);
	return buf;
}

/* gemv in every shape: against the host reference (eager and captured)
 * and bit for bit against the default shape's bytes. N = 37 is a multiple
 * of no shape's columns; K = 264 runs the 16-byte loads, K = 101 (odd) the
 * element loads, K = 4096 a split along K (the same split in every shape:
 * at N = 37 each is held to its fewest units a split), so the default's
 * bytes are every shape's. M 1 to 8 on the vector path, 1, 2, 5 and 8 on
 * the others. */
static void test_gemv_shapes(struct env *e)
{
	static const int64_t nk[][2] = { { 37, 264 }, { 37, 101 }, { 37, 4096 } };
	struct kernel_shape shapes[16];
	const int nsh = shapes_of(KERNEL_SHAPE_GEMV, shapes);
	char sn[16];

	for (int k = 0; k < 3; k++)
		for (int d = 0; d < N_FLOAT_DTYPES; d++)
			for (int q = 0; q < 3; q++)
				for (int64_t M = 1; M <= 8; M++) {
					const int dt = float_dtypes[d];
					const int64_t N = nk[q][0], K = nk[q][1];
					struct product_bufs pb;
					struct tcase c;
					void *want, *got;
					if (q > 0 && M != 1 && M != 2 && M != 5 && M != 8)
						continue;
					product_bufs_init(e, &pb, k, dt, dt, M, N, K, 1, 0);
					product_case_init(&c, &pb, k, 1, 0);
					c.impl = 1;                     /* gemv */
					c.scratch = op_scratch(&c);
					want = malloc(pb.out.bytes + 16);
					got = malloc(pb.out.bytes + 16);
					if (!want || !got)
						bail("out of memory");
					c.got[0] = want;
					snprintf(c.what, sizeof c.what, "%s %s M %lld N %lld K %lld, gemv default "
					         "shape", product_names[k], dtype_name(dt), (long long)M,
					         (long long)N, (long long)K);
					tcase_run_once(e, &c, 0);
					c.got[0] = got;
					c.capture = 1;
					for (int i = 0; i < nsh; i++) {
						c.gemv_shape = shapes[i];
						snprintf(c.what, sizeof c.what, "%s %s M %lld N %lld K %lld, gemv "
						         "shape %s", product_names[k], dtype_name(dt), (long long)M,
						         (long long)N, (long long)K, shape_name(shapes[i], sn,
						                                                 sizeof sn));
						tcase_run(e, &c);
						ok(memcmp(got, want, pb.out.bytes) == 0, "%s: the default shape's "
						   "bytes", c.what);
					}
					free(want);
					free(got);
					product_bufs_free(&pb);
				}
}

/* --- rmsnorm_matmul ------------------------------------------------------------ */

struct rnm_bufs {
	struct tbuf x, w, b, out;
};

/* x [M, K] (scale 3), w [K] around 1, b [NB, K] (or [K, NB] without TB),
 * NB = 2N with the silu_mul epilogue; out [M, N]. */
static void rnm_bufs_init(struct env *e, struct rnm_bufs *rb, int dt, int64_t M, int64_t N,
                          int64_t K, int silu, int tb, size_t shift)
{
	int64_t NB = silu ? 2 * N : N;

	memset(rb, 0, sizeof *rb);
	tbuf_init(&rb->x, dt, 2, (const int64_t[]){ M, K }, shift);
	tbuf_init(&rb->w, dt, 1, &K, shift);
	tbuf_init(&rb->b, dt, 2, tb ? (const int64_t[]){ NB, K } : (const int64_t[]){ K, NB },
	          shift);
	tbuf_init(&rb->out, dt, 2, (const int64_t[]){ M, N }, 0);
	tbuf_random(e, &rb->x, 3.0f);
	tbuf_random(e, &rb->w, 1.0f);
	tbuf_random(e, &rb->b, 1.0f);
}

static void rnm_bufs_free(struct rnm_bufs *rb)
{
	tbuf_free(&rb->x);
	tbuf_free(&rb->w);
	tbuf_free(&rb->b);
	tbuf_free(&rb->out);
}

static void rnm_case_init(struct tcase *c, struct rnm_bufs *rb, int silu, int tb)
{
	tcase_init(c, OP_RMSNORM_MATMUL, 3, 1);
	c->in[0] = &rb->x;
	c->in[1] = &rb->w;
	c->in[2] = &rb->b;
	c->out[0] = &rb->out;
	c->attr[RNM_EPS].f = 1e-5;
	c->attr[RNM_TRANS_B].i = tb;
	c->attr[RNM_EPILOGUE].i = silu ? RNM_EPI_SILU_MUL : RNM_EPI_NONE;
	/* The products' bounds, and for f16/bf16 one more: the kernels sum
	 * the squares in another order than the host, so an element of h
	 * may round to the neighbouring f16/bf16 value (2^-8 of it in bf16)
	 * before the product; the rows kernel (one token) does not round h
	 * at all, where the host does. */
	c->tol = rb->out.dtype == PLAN_DTYPE_F32 ? 1e-4 : 2e-2;
}

/* Whether gemv's normalized tokens fit its shared memory: M rounded up to
 * 1, 2, 4 or 8 tokens of K / (16 / dtype size) vectors each, 1024 vectors
 * (16 KiB) for up to two tokens, 2048 beyond (cuda-smallm.cu, RNM_XS_VECS). */
static int rnm_tokens_fit(int dt, int64_t M, int64_t K)
{
	const int64_t mt = M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : 8;

	return mt * (K / (16 / (int64_t)dtype_size(dt))) <= (mt <= 2 ? 1024 : 2048);
}

/* What cuda_impl_usable must say: gemv wants [N, K] weights, M <= 8, K a
 * multiple of the 16-byte vector, the tokens within its shared memory and
 * 16-byte aligned operands; rows the same at one token of f16 or bf16
 * with K within its 2048 pieces; rows_scaled rows' where b and w are
 * both marked weights (MARKED); split runs whatever some product
 * implementation runs (cuBLAS: everything here). */
static int rnm_expect_usable(int impl, int dt, int64_t M, int64_t K, int tb, int aligned,
                             int marked)
{
	if (impl == 0)
		return tb && M <= 8 && K % (16 / (int64_t)dtype_size(dt)) == 0 &&
		       rnm_tokens_fit(dt, M, K) && aligned;
	if (impl == 2 || impl == 3)
		return tb && M == 1 && (dt == PLAN_DTYPE_F16 || dt == PLAN_DTYPE_BF16) &&
		       K % 8 == 0 && K / 8 <= 2048 && aligned && (impl == 2 || marked);
	return 1;
}

static void test_rmsnorm_matmul(struct env *e)
{
	/* M, N, K: decode shapes (the 1B's q|k|v and gate|up halves, hidden
	 * 1024's gate|up half: the rows kernel's shape 0), split along K, odd
	 * N, K short or not a multiple of the vector (K 1000: 125 pieces, a
	 * thread's last past the row), and M past gemv's 8 for split */
	static const int64_t mnk[][3] = {
		{ 1, 3072, 2048 }, { 2, 77, 264 }, { 3, 50, 128 }, { 5, 31, 4096 },
		{ 8, 1024, 2816 }, { 1, 8192, 2048 }, { 4, 8000, 64 }, { 7, 3, 8 },
		{ 2, 40, 100 }, { 9, 130, 512 }, { 33, 64, 2048 }, { 100, 300, 1024 },
		{ 1, 2816, 1024 }, { 1, 37, 1000 },
	};
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);
	struct rnm_bufs rb;
	struct tcase c;

	for (int silu = 0; silu < 2; silu++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int s = 0; s < nshapes; s++) {
				int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
				for (int variant = 0; variant < 4; variant++) {
					/* 0: plain; 1: misaligned operands; 2: [K, N] weights;
					 * 3: b and w marked weights (rows_scaled's copy) */
					int tb = variant != 2, shift = variant == 1 ? (int)dtype_size(dt) : 0;
					int marked = variant == 3;
					if (variant != 0 && s % 4 != 1 && !(marked && M == 1))
						continue;
					rnm_bufs_init(e, &rb, dt, M, N, K, silu, tb, (size_t)shift);
					rnm_case_init(&c, &rb, silu, tb);
					c.const_in = marked ? 1u << 1 | 1u << 2 : 0;
					struct op_call q;
					tcase_call(&c, &q, 1);
					q.kind = kind_stub(c.id);
					for (int impl = 0; impl < cuda_impl_count(c.id); impl++) {
						int want = rnm_expect_usable(impl, dt, M, K, tb, shift == 0, marked);
						char what[160];
						snprintf(what, sizeof what, "rmsnorm_matmul %s %s M %lld N %lld K "
						         "%lld%s%s%s", silu ? "silu_mul" : "none", dtype_name(dt),
						         (long long)M, (long long)N, (long long)K,
						         tb ? "" : " b [K,N]", shift ? " misaligned" : "",
						         marked ? " weights marked" : "");
						if (!usable_as_expected(e, &c, &q, impl, want, what))
							continue;
						c.impl = impl;
						c.scratch = op_scratch(&c);
						c.sm_count = (s + impl) % 4 == 3 ? 1 : 0;   /* other splits */
						c.capture = s == 0 || s == 4 || s == 10;
						c.pdl = s == 3;
						snprintf(c.what, sizeof c.what, "%s%s", what,
						         c.sm_count ? " sm_count 1" : "");
						tcase_run(e, &c);
					}
					rnm_bufs_free(&rb);
				}
			}
		}
	}

	/* Too little scratch for split: refused, saying how much it needs. */
	rnm_bufs_init(e, &rb, PLAN_DTYPE_BF16, 16, 64, 256, 0, 1, 0);
	rnm_case_init(&c, &rb, 0, 1);
	{
		struct op_call dcall;
		struct cuda_op_ctx ctx = e->ctx;
		char msg[256] = "";
		tcase_call(&c, &dcall, 1);
		dcall.impl = 1;
		ctx.scratch = NULL;
		ctx.scratch_bytes = 0;
		int rc = cuda_kernel(c.id)(&dcall, &ctx, msg, sizeof msg);
		ok(rc == -1 && strstr(msg, "rmsnorm_matmul: needs ") != NULL &&
		   strstr(msg, "bytes of scratch") != NULL,
		   "rmsnorm_matmul split without scratch fails and says why (%s)", msg);
		ok(op_scratch(&c) >= (size_t)16 * 256 * 2 + CUDA_OP_SCRATCH_COUNTER_BYTES,
		   "rmsnorm_matmul's scratch holds h [16, 256] bf16 behind the counters");
	}
	rnm_bufs_free(&rb);
}

/* rmsnorm_matmul in one graph, twice, replayed: every replay gives the
 * eager launch's bits, PDL off and on, under every implementation. */
static void test_rmsnorm_matmul_replays(struct env *e)
{
	/* gemv: 8 tokens at the most K its shared memory holds, one token
	 * over more column groups than fit on the device at once (each block
	 * takes several), a K split */
	static const int64_t mnk[][3] = {
		{ 8, 1024, 2816 }, { 8, 1024, 2048 }, { 3, 31, 4096 }, { 1, 3072, 2048 },
		{ 1, 8192, 2048 }, { 1, 40, 8192 }, { 24, 300, 1024 },
	};
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);

	for (int silu = 0; silu < 2; silu++) {
		for (int s = 0; s < nshapes; s++) {
			for (int impl = 0; impl < cuda_impl_count(OP_RMSNORM_MATMUL); impl++) {
				int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
				if (impl == 0 && (M > 8 || !rnm_tokens_fit(PLAN_DTYPE_BF16, M, K)))
					continue;       /* gemv: at most 8 tokens, in its shared memory */
				if (impl >= 2 && M != 1)
					continue;       /* rows, rows_scaled: one token */
				struct rnm_bufs rb;
				struct tcase c;
				struct op_call call;
				struct cuda_op_ctx ctx = e->ctx;
				char msg[256] = "";
				int same, rc = 0;

				rnm_bufs_init(e, &rb, PLAN_DTYPE_BF16, M, N, K, silu, 1, 0);
				tbuf_upload(&rb.x);
				tbuf_upload(&rb.w);
				tbuf_upload(&rb.b);
				rnm_case_init(&c, &rb, silu, 1);
				c.impl = impl;
				c.scratch = op_scratch(&c);
				/* rows_scaled's weights marked: it reads their copy */
				c.const_in = impl == 3 ? 1u << 1 | 1u << 2 : 0;
				tcase_call(&c, &call, 1);
				ctx.scratch = scratch_alloc(c.scratch);
				ctx.scratch_bytes = c.scratch;
				rc = tcase_prepare(&c, &call, &ctx, msg, sizeof msg);
				same = rc == 0 && replays_give_uncaptured(e, c.id, &call, &ctx, &rb.out,
				                                          &rc, msg, sizeof msg);
				cuda_packs_trim(ctx.packs);
				same &= scratch_counters_zero(ctx.scratch, c.scratch);
				ok(rc == 0 && same, "rmsnorm_matmul %s bf16 M %lld N %lld K %lld [%s], %zu "
				   "bytes of scratch: graph replays, PDL off and on, give the eager bits%s%s",
				   silu ? "silu_mul" : "none", (long long)M, (long long)N, (long long)K,
				   cuda_impl_name(c.id, impl), c.scratch, rc ? ": " : "", rc ? msg : "");
				if (ctx.scratch)
					CK(cudaFree(ctx.scratch));
				rnm_bufs_free(&rb);
			}
		}
	}
}

/* --- rmsnorm_matmul_argmax --------------------------------------------------- */

/* The kernel nodes of CALL's launch captured on E's stream, or -1. */
static int captured_kernel_nodes(struct env *e, enum op_id id, const struct op_call *call,
                                 const struct cuda_op_ctx *ctx)
{
	cudaGraph_t graph = NULL;
	cudaGraphNode_t nodes[16];
	size_t n = 16;
	char msg[256];
	int rc, kernels = 0;

	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc = cuda_kernel(id)(call, ctx, msg, sizeof msg);
	CK(cudaStreamEndCapture(e->stream, &graph));
	if (rc == 0 && cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess && n <= 16) {
		for (size_t i = 0; i < n; i++) {
			enum cudaGraphNodeType t;
			CK(cudaGraphNodeGetType(nodes[i], &t));
			kernels += t == cudaGraphNodeTypeKernel;
		}
	} else {
		kernels = -1;
	}
	CK(cudaGraphDestroy(graph));
	return kernels;
}

/* C's launch on the device with implementation IMPL, eager: its index
 * (M of them) into GOT; 0, or -1 with MSG. */
static int rna_index_on_gpu(struct env *e, struct tcase *c, int impl, int32_t *got, char *msg,
                            size_t len)
{
	struct cuda_op_ctx ctx = e->ctx;
	struct op_call call;
	int rc;

	for (int i = 0; i < c->nin; i++)
		tbuf_upload(c->in[i]);
	tbuf_poison(c->out[1]);
	c->impl = impl;
	c->scratch = op_scratch(c);
	ctx.scratch = scratch_alloc(c->scratch);
	ctx.scratch_bytes = c->scratch;
	tcase_call(c, &call, 1);
	CK(cudaDeviceSynchronize());
	rc = cuda_kernel(c->id)(&call, &ctx, msg, len);
	if (rc == 0 && cudaStreamSynchronize(e->stream) != cudaSuccess) {
		snprintf(msg, len, "the kernel failed");
		rc = -1;
	}
	if (rc == 0)
		CK(cudaMemcpy(got, c->out[1]->dev, c->out[1]->bytes, cudaMemcpyDeviceToHost));
	if (rc == 0 && !scratch_counters_zero(ctx.scratch, c->scratch)) {
		snprintf(msg, len, "the scratch counters are not zero after the launch");
		rc = -1;
	}
	if (ctx.scratch)
		CK(cudaFree(ctx.scratch));
	return rc;
}

/* rmsnorm_matmul_argmax: out as rmsnorm_matmul's within its bounds, index
 * bit for bit. So that the index cannot depend on those bounds, each
 * token's largest column is planted: b row j holds sign(x[m] w), so that
 * token m's product there is the sum of |h|, far above any other; with
 * one token the same row twice, at N/3 and N - 1 (in blocks far apart:
 * the first must win the tie), and, in some cases, a NaN at row N/2 of b
 * before both, which wins over every number. With one token, a third
 * form makes every column negative: b's rows hold -sign(h) times 0.5 to
 * 1, the planted rows 0.05 times, so that they are the least negative
 * (the picks' keys order negatives below positives, flipped). One token
 * of f16 or bf16 with b marked a weight is the bulk kernel's, where
 * "gemv" picks in its epilogue: one kernel in a graph, where gemv_apart
 * is two and split three. */
static void test_rmsnorm_matmul_argmax(struct env *e)
{
	/* M, N, K: the 1B's lm-head; a grid of 264 blocks of a few rows;
	 * fewer rows than blocks; more tokens (the argmax kernel follows) */
	static const int64_t mnk[][3] = {
		{ 1, 128256, 2048 }, { 1, 3001, 512 }, { 1, 600, 2048 }, { 1, 100, 256 },
		{ 3, 777, 256 }, { 8, 1000, 2048 },
	};
	const int nshapes = (int)(sizeof mnk / sizeof mnk[0]);

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int s = 0; s < nshapes; s++) {
			for (int form = 0; form < 3; form++) {
				int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
				const int nan = form == 1, neg = form == 2;
				if ((nan && dt == PLAN_DTYPE_F32) || (neg && M != 1))
					continue;
				struct rnm_bufs rb;
				struct tbuf index;
				struct tcase c;
				struct op_tensor x, w, b;
				int64_t win[8];

				rnm_bufs_init(e, &rb, dt, M, N, K, 0, 1, 0);
				tbuf_init(&index, PLAN_DTYPE_I32, 1, &M, 0);
				x = tbuf_view(&rb.x, 0);
				w = tbuf_view(&rb.w, 0);
				b = tbuf_view(&rb.b, 0);
				if (neg) {
					/* row j's scale 0.5 to 1, drawn from j and k; the
					 * sign of x w, element k's, once a k */
					float *sg = (float *)malloc((size_t)K * sizeof *sg);
					if (sg == NULL)
						bail("out of memory");
					for (int64_t k = 0; k < K; k++)
						sg[k] = host_load(&x, k) * host_load(&w, k) < 0.0f ? -1.0f
						                                                     : 1.0f;
					for (int64_t j = 0; j < N; j++)
						for (int64_t k = 0; k < K; k++) {
							float r = 0.5f + (float)((j * 131 + k * 31) % 97) / 194.0f;
							host_store(&b, j * K + k, -sg[k] * r);
						}
					free(sg);
				}
				for (int64_t m = 0; m < M; m++) {
					win[m] = M == 1 ? N / 3 : (m * 7919 + 13) % N;
					for (int64_t k = 0; k < K; k++) {
						float sg = host_load(&x, m * K + k) * host_load(&w, k) < 0.0f
						           ? -1.0f : 1.0f;
						if (neg)
							sg *= -0.05f;
						host_store(&b, win[m] * K + k, sg);
						if (M == 1)
							host_store(&b, (N - 1) * K + k, sg);
					}
				}
				if (nan)
					host_store(&b, (N / 2) * K + K / 2, NAN);
				tcase_init(&c, OP_RMSNORM_MATMUL_ARGMAX, 3, 2);
				c.in[0] = &rb.x;
				c.in[1] = &rb.w;
				c.in[2] = &rb.b;
				c.out[0] = &rb.out;
				c.out[1] = &index;
				c.attr[RNA_EPS].f = 1e-5;
				c.attr[RNA_TRANS_B].i = 1;
				c.tol = dt == PLAN_DTYPE_F32 ? 1e-4 : 2e-2;
				c.exact_outs = 1u << 1;
				c.const_in = 1u << 1 | 1u << 2;
				struct op_call q;
				tcase_call(&c, &q, 1);
				q.kind = kind_stub(c.id);
				for (int impl = 0; impl < cuda_impl_count(c.id); impl++) {
					/* gemv and gemv_apart: rmsnorm_matmul's gemv; split: any */
					int want = strcmp(cuda_impl_name(c.id, impl), "split") == 0 ||
					           rnm_expect_usable(0, dt, M, K, 1, 1, 1);
					char what[160];
					snprintf(what, sizeof what, "rmsnorm_matmul_argmax %s M %lld N %lld K "
					         "%lld%s", dtype_name(dt), (long long)M, (long long)N,
					         (long long)K, nan ? " NaN" : neg ? " negative" : "");
					if (!usable_as_expected(e, &c, &q, impl, want, what))
						continue;
					if (nan) {
						/* out holds a NaN, which no bound compares: the
						 * index alone, which must be the NaN's column */
						int32_t got[8];
						char msg[256] = "";
						int rc = rna_index_on_gpu(e, &c, impl, got, msg, sizeof msg);
						int right = rc == 0;
						for (int64_t m = 0; right && m < M; m++)
							right = got[m] == N / 2;
						ok(right, "%s [%s]: the index is the NaN's column, %lld%s%s", what,
						   cuda_impl_name(c.id, impl), (long long)(N / 2), rc ? ": " : "",
						   rc ? msg : "");
						continue;
					}
					c.impl = impl;
					c.scratch = op_scratch(&c);
					c.capture = s == 1 || s == 4;
					c.pdl = s == 2;
					snprintf(c.what, sizeof c.what, "%s", what);
					tcase_run(e, &c);
				}
				/* The index the planting fixed, as the host reference
				 * must give it too: no bound above decides it. */
				struct op_call h;
				tcase_call(&c, &h, 0);
				ref_run(c.id, &h);
				const int32_t *got = (const int32_t *)index.host;
				int planted = 1;
				for (int64_t m = 0; m < M; m++)
					planted &= got[m] == (nan ? N / 2 : win[m]);
				ok(planted, "rmsnorm_matmul_argmax %s M %lld N %lld%s: the host gives the "
				   "planted %s", dtype_name(dt), (long long)M, (long long)N,
				   neg ? " negative" : "",
				   nan ? "NaN's row" : M == 1 ? "first of the two tied rows" : "rows");

				if (M == 1 && dt == PLAN_DTYPE_BF16 && form == 0) {
					/* gemv fuses into one kernel, gemv_apart is two,
					 * split three (the norm's, the product's, argmax's) */
					struct cuda_op_ctx ctx = e->ctx;
					struct op_call call;
					int k[3];
					c.scratch = op_scratch(&c);
					ctx.scratch = scratch_alloc(c.scratch);
					ctx.scratch_bytes = c.scratch;
					for (int impl = 0; impl < 3; impl++) {
						c.impl = impl;
						tcase_call(&c, &call, 1);
						k[impl] = captured_kernel_nodes(e, c.id, &call, &ctx);
					}
					ok(k[0] == 1 && k[1] == 2 && k[2] == 3,
					   "rmsnorm_matmul_argmax bf16 M 1 N %lld K %lld: gemv one kernel in a "
					   "graph (%d), gemv_apart two (%d), split three (%d)", (long long)N,
					   (long long)K, k[0], k[1], k[2]);
					CK(cudaFree(ctx.scratch));
				}
				rnm_bufs_free(&rb);
				tbuf_free(&index);
			}
		}
	}
}

/* --- rmsnorm_matmul_rope_kv_write -------------------------------------------- */

struct rrk_bufs {
	struct tbuf x, w, b, pos, q, kc, vc;
};

/* x [M, K] (scale 3), w [K], b [QKV, K] (or [K, QKV] without TB), QKV =
 * (H + 2 KVH) D; pos [M] distinct, two outside [0, S) when M > 1; q
 * poisoned (every element written), the caches [S, KVH D] random (rows at
 * no position must survive). */
static void rrk_bufs_init(struct env *e, struct rrk_bufs *rb, int dt, int64_t M, int64_t K,
                          int64_t H, int64_t KVH, int64_t D, int tb, size_t shift)
{
	const int64_t QKV = (H + 2 * KVH) * D, S = M + 12;

	memset(rb, 0, sizeof *rb);
	tbuf_init(&rb->x, dt, 2, (const int64_t[]){ M, K }, shift);
	tbuf_init(&rb->w, dt, 1, &K, shift);
	tbuf_init(&rb->b, dt, 2, tb ? (const int64_t[]){ QKV, K } : (const int64_t[]){ K, QKV },
	          shift);
	tbuf_init(&rb->pos, PLAN_DTYPE_I32, 1, &M, 0);
	tbuf_init(&rb->q, dt, 2, (const int64_t[]){ M, H * D }, 0);
	tbuf_init(&rb->kc, dt, 2, (const int64_t[]){ S, KVH * D }, 0);
	tbuf_init(&rb->vc, dt, 2, (const int64_t[]){ S, KVH * D }, 0);
	tbuf_random(e, &rb->x, 3.0f);
	tbuf_random(e, &rb->w, 1.0f);
	tbuf_random(e, &rb->b, 1.0f);
	tbuf_random(e, &rb->kc, 1.0f);
	tbuf_random(e, &rb->vc, 1.0f);
	memset(rb->q.host, POISON_DEV, rb->q.bytes);
	int32_t *p = rb->pos.host, first = env_int(e, 0, 10);
	for (int64_t t = 0; t < M; t++)
		p[t] = first + (int32_t)t;
	if (M > 1) {
		p[1] = -3;
		p[M - 1] = (int32_t)S;
	}
}

static void rrk_bufs_free(struct rrk_bufs *rb)
{
	tbuf_free(&rb->x);
	tbuf_free(&rb->w);
	tbuf_free(&rb->b);
	tbuf_free(&rb->pos);
	tbuf_free(&rb->q);
	tbuf_free(&rb->kc);
	tbuf_free(&rb->vc);
}

static void rrk_case_init(struct tcase *c, struct rrk_bufs *rb, int64_t H, int64_t KVH,
                          int64_t D, int tb, const union op_value *scaling)
{
	tcase_init(c, OP_RMSNORM_MATMUL_ROPE_KV_WRITE, 4, 3);
	c->in[RRK_X] = &rb->x;
	c->in[RRK_W] = &rb->w;
	c->in[RRK_B] = &rb->b;
	c->in[RRK_POS] = &rb->pos;
	c->out[0] = &rb->q;
	c->out[1] = &rb->kc;
	c->out[2] = &rb->vc;
	c->keep_out = 1;
	c->attr[RKV_HEADS].i = H;
	c->attr[RKV_KV_HEADS].i = KVH;
	c->attr[RKV_HEAD_DIM].i = D;
	c->attr[RKV_THETA].f = 500000.0;
	if (scaling != NULL)
		memcpy(&c->attr[RKV_SCALING], scaling, RS_COUNT * sizeof *scaling);
	else
		c->attr[RKV_SCALING + RS_FACTOR].f = 1.0;
	c->attr[RRK_EPS].f = 1e-5;
	c->attr[RRK_TRANS_B].i = tb;
	/* rmsnorm_matmul's bounds (the products', and an element of h or of
	 * qkv that rounds to its f16/bf16 neighbour), which cover
	 * rope_kv_write's (1e-5 in f32, 1e-2 else): the rotation of values
	 * within them by cos and sin of magnitude at most 1 */
	c->tol = rb->q.dtype == PLAN_DTYPE_F32 ? 1e-4 : 2e-2;
}

/* gemv: [QKV, K] weights, M <= 8, K a multiple of the 16-byte vector,
 * the tokens within its shared memory, aligned operands, head_dim a
 * multiple of 4 (a block's two pairs); rows_scaled: rmsnorm_matmul's at
 * head_dim a multiple of 4 (MARKED: w and b weights); split: everything
 * here. */
static int rrk_expect_usable(int impl, int dt, int64_t M, int64_t K, int64_t D, int tb,
                             int aligned, int marked)
{
	if (impl == 0)
		return tb && M <= 8 && K % (16 / (int64_t)dtype_size(dt)) == 0 &&
		       rnm_tokens_fit(dt, M, K) && aligned && D % 4 == 0;
	if (impl == 2)
		return rnm_expect_usable(3, dt, M, K, tb, aligned, marked) && D % 4 == 0;
	return 1;
}

static void test_rmsnorm_matmul_rope_kv_write(struct env *e)
{
	/* H, KVH, D, K: the 1B's attention input, GQA and MHA, one kv head,
	 * head_dim 6 (not gemv's), K not a multiple of the vector, split
	 * along K (K 4096) */
	static const int64_t cfg[][4] = {
		{ 32, 8, 64, 2048 }, { 4, 2, 16, 264 }, { 3, 1, 8, 128 }, { 2, 2, 6, 64 },
		{ 8, 2, 128, 100 }, { 4, 4, 32, 4096 },
	};
	static const int64_t Ms[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 20 };
	union op_value llama3[RS_COUNT];
	struct rrk_bufs rb;
	struct tcase c;

	memset(llama3, 0, sizeof llama3);
	llama3[RS_TYPE].i = ROPE_TYPE_LLAMA3;
	llama3[RS_FACTOR].f = 32;
	llama3[RS_LOW_FREQ_FACTOR].f = 1;
	llama3[RS_HIGH_FREQ_FACTOR].f = 4;
	llama3[RS_ORIGINAL_MAX].i = 8192;
	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < (int)(sizeof cfg / sizeof cfg[0]); k++) {
			int64_t H = cfg[k][0], KVH = cfg[k][1], D = cfg[k][2], K = cfg[k][3];
			for (int mi = 0; mi < (int)(sizeof Ms / sizeof Ms[0]); mi++) {
				int64_t M = Ms[mi];
				for (int variant = 0; variant < 4; variant++) {
					/* 0: plain; 1: misaligned operands; 2: [K, QKV] weights;
					 * 3: w and b marked weights (rows_scaled's copy) */
					int tb = variant != 2, shift = variant == 1 ? (int)dtype_size(dt) : 0;
					int marked = variant == 3;
					const union op_value *sc = (mi + k) % 2 ? llama3 : NULL;
					if (variant != 0 && mi % 4 != 1 && !(marked && M == 1))
						continue;
					rrk_bufs_init(e, &rb, dt, M, K, H, KVH, D, tb, (size_t)shift);
					rrk_case_init(&c, &rb, H, KVH, D, tb, sc);
					c.const_in = marked ? 1u << RRK_W | 1u << RRK_B : 0;
					struct op_call q;
					tcase_call(&c, &q, 1);
					q.kind = kind_stub(c.id);
					for (int impl = 0; impl < cuda_impl_count(c.id); impl++) {
						int want = rrk_expect_usable(impl, dt, M, K, D, tb, shift == 0,
						                             marked);
						char what[176];
						snprintf(what, sizeof what, "rmsnorm_matmul_rope_kv_write %s M %lld "
						         "K %lld heads %lld/%lld x %lld%s%s%s%s", dtype_name(dt),
						         (long long)M, (long long)K, (long long)H, (long long)KVH,
						         (long long)D, sc ? " llama3" : "", tb ? "" : " b [K,QKV]",
						         shift ? " misaligned" : "", marked ? " weights marked" : "");
						if (!usable_as_expected(e, &c, &q, impl, want, what))
							continue;
						c.impl = impl;
						c.scratch = op_scratch(&c);
						c.sm_count = (mi + impl) % 4 == 3 ? 1 : 0;   /* other splits */
						c.capture = mi == 0 || mi == 7;
						c.pdl = mi == 2;
						snprintf(c.what, sizeof c.what, "%s%s", what,
						         c.sm_count ? " sm_count 1" : "");
						tcase_run(e, &c);
					}
					rrk_bufs_free(&rb);
				}
			}
		}
	}

	/* Too little scratch for split: refused, saying how much it needs. */
	rrk_bufs_init(e, &rb, PLAN_DTYPE_BF16, 16, 256, 4, 2, 16, 1, 0);
	rrk_case_init(&c, &rb, 4, 2, 16, 1, NULL);
	{
		struct op_call dcall;
		struct cuda_op_ctx ctx = e->ctx;
		char msg[256] = "";
		tcase_call(&c, &dcall, 1);
		dcall.impl = 1;
		ctx.scratch = NULL;
		ctx.scratch_bytes = 0;
		int rc = cuda_kernel(c.id)(&dcall, &ctx, msg, sizeof msg);
		ok(rc == -1 && strstr(msg, "rmsnorm_matmul_rope_kv_write: needs ") != NULL &&
		   strstr(msg, "bytes of scratch") != NULL,
		   "rmsnorm_matmul_rope_kv_write split without scratch fails and says why (%s)", msg);
		ok(op_scratch(&c) >= (size_t)16 * 256 * 2 + (size_t)16 * 128 * 2 +
		                     CUDA_OP_SCRATCH_COUNTER_BYTES,
		   "rmsnorm_matmul_rope_kv_write's scratch holds h [16, 256] and qkv [16, 128] bf16 "
		   "behind the counters");
	}
	rrk_bufs_free(&rb);
}

/* --- decoder_layer ------------------------------------------------------------ */

/* The operands of a decoder_layer: one layer's weights, x, pos, out and
 * the caches (random, kept: only row pos is written), and kv_len on the
 * device for the graph-safe form. */
struct dl_bufs {
	struct tbuf x, an, wqkv, wo, fn, wgu, wd, pos, out, kc, vc;
	int32_t *kv_dev;
};

static void dl_bufs_init(struct env *e, struct dl_bufs *b, int dt, int64_t T, int64_t H,
                         int64_t NH, int64_t KVH, int64_t D, int64_t F, int64_t S,
                         int32_t kv_len, int32_t pos0)
{
	const int64_t QKV = (NH + 2 * KVH) * D;
	const int64_t dx[2] = { T, H }, dn[1] = { H }, dq[2] = { QKV, H }, dw[2] = { H, NH * D };
	const int64_t dg[2] = { 2 * F, H }, dd[2] = { H, F }, dp[1] = { T }, dc[2] = { S, KVH * D };

	tbuf_init(&b->x, dt, 2, dx, 0);
	tbuf_init(&b->an, dt, 1, dn, 0);
	tbuf_init(&b->wqkv, dt, 2, dq, 0);
	tbuf_init(&b->wo, dt, 2, dw, 0);
	tbuf_init(&b->fn, dt, 1, dn, 0);
	tbuf_init(&b->wgu, dt, 2, dg, 0);
	tbuf_init(&b->wd, dt, 2, dd, 0);
	tbuf_init(&b->pos, PLAN_DTYPE_I32, 1, dp, 0);
	tbuf_init(&b->out, dt, 2, dx, 0);
	tbuf_init(&b->kc, dt, 2, dc, 0);
	tbuf_init(&b->vc, dt, 2, dc, 0);
	tbuf_random(e, &b->x, 1.0f);
	tbuf_random(e, &b->an, 0.5f);
	tbuf_random(e, &b->fn, 0.5f);
	for (int64_t i = 0; i < H; i++) {         /* norm weights near 1 */
		struct op_tensor an = tbuf_view(&b->an, 0), fn = tbuf_view(&b->fn, 0);
		host_store(&an, i, 1.0f + host_load(&an, i));
		host_store(&fn, i, 1.0f + host_load(&fn, i));
	}
	tbuf_random(e, &b->wqkv, 1.0f / sqrtf((float)H));
	tbuf_random(e, &b->wo, 1.0f / sqrtf((float)(NH * D)));
	tbuf_random(e, &b->wgu, 1.0f / sqrtf((float)H));
	tbuf_random(e, &b->wd, 1.0f / sqrtf((float)F));
	tbuf_random(e, &b->kc, 1.0f);
	tbuf_random(e, &b->vc, 1.0f);
	for (int64_t t = 0; t < T; t++)
		((int32_t *)b->pos.host)[t] = pos0 + (int32_t)t;
	CK(cudaMalloc((void **)&b->kv_dev, sizeof(int32_t)));
	CK(cudaMemcpy(b->kv_dev, &kv_len, sizeof kv_len, cudaMemcpyHostToDevice));
}

static void dl_bufs_free(struct dl_bufs *b)
{
	struct tbuf *all[] = { &b->x, &b->an, &b->wqkv, &b->wo, &b->fn, &b->wgu, &b->wd, &b->pos,
	                       &b->out, &b->kc, &b->vc };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tbuf_free(all[i]);
	CK(cudaFree(b->kv_dev));
}

static void dl_case_init(struct tcase *c, struct dl_bufs *b, int64_t NH, int64_t KVH, int64_t D,
                         int32_t kv_len, int graph_safe, int in_place)
{
	tcase_init(c, OP_DECODER_LAYER, 8, 3);
	c->in[DL_X] = &b->x;
	c->in[DL_ATTN_NORM] = &b->an;
	c->in[DL_W_QKV] = &b->wqkv;
	c->in[DL_W_O] = &b->wo;
	c->in[DL_FFN_NORM] = &b->fn;
	c->in[DL_W_GATE_UP] = &b->wgu;
	c->in[DL_W_DOWN] = &b->wd;
	c->in[DL_POS] = &b->pos;
	c->out[DL_OUT] = in_place ? &b->x : &b->out;
	c->out[DL_K_CACHE] = &b->kc;
	c->out[DL_V_CACHE] = &b->vc;
	c->keep_out = 1;
	c->attr[RKV_HEADS].i = NH;
	c->attr[RKV_KV_HEADS].i = KVH;
	c->attr[RKV_HEAD_DIM].i = D;
	c->attr[RKV_THETA].f = 500000.0;
	c->attr[RKV_SCALING + RS_FACTOR].f = 1.0;
	c->attr[DL_EPS].f = 1e-5;
	c->attr[DL_KV_LEN].i = kv_len;
	c->attr[DL_SCALE].f = 0.0;
	c->attr[DL_CAUSAL].i = 0;
	c->graph_safe = graph_safe;
	if (graph_safe)
		c->attr_dev[DL_KV_LEN] = b->kv_dev;
	/* Eight roundings deep: the products' bound, and an intermediate
	 * element of f16/bf16 that rounds to its neighbour, carried through
	 * the softmax and two residual products. */
	c->tol = b->x.dtype == PLAN_DTYPE_F32 ? 2e-4 : 3e-2;
}

/* persistent: one token, f16 or bf16, head_dim 64 or 128, at most 4 query
 * heads a kv head (every H and F here fits its shared memory); split:
 * everything. */
static int dl_expect_usable(int impl, int dt, int64_t T, int64_t NH, int64_t KVH, int64_t D)
{
	if (impl == 0)
		return T == 1 && dt != PLAN_DTYPE_F32 && (D == 64 || D == 128) && NH / KVH <= 4;
	return 1;
}

static void test_decoder_layer(struct env *e)
{
	/* H, NH, KVH, D, F, S: the 1B's layer, small GQA, head_dim 128, MHA,
	 * 8 query heads a kv head and head_dim 32 (split only), a long F */
	static const int64_t cfg[][6] = {
		{ 2048, 32, 8, 64, 8192, 256 }, { 256, 4, 2, 64, 512, 64 },
		{ 1024, 8, 2, 128, 2048, 128 }, { 512, 8, 8, 64, 1024, 64 },
		{ 512, 8, 1, 64, 1024, 64 }, { 256, 8, 4, 32, 512, 64 },
		{ 512, 4, 4, 64, 12288, 32 },
	};
	static const int64_t Ts[] = { 1, 3 };

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < (int)(sizeof cfg / sizeof cfg[0]); k++) {
			int64_t H = cfg[k][0], NH = cfg[k][1], KVH = cfg[k][2], D = cfg[k][3];
			int64_t F = cfg[k][4], S = cfg[k][5];
			for (int ti = 0; ti < 2; ti++) {
				int64_t T = Ts[ti];
				/* kv_len with the new token's position at its end; none;
				 * the whole cache; above it with pos outside the cache */
				const int32_t lens[][2] = { { 37, 36 }, { 0, 0 }, { (int32_t)S, (int32_t)S - 1 },
				                            { (int32_t)S + 5, (int32_t)S } };
				for (int li = 0; li < 4; li++) {
					int32_t L = lens[li][0], p0 = lens[li][1];
					if (L > S + 5 || (k > 1 && li % 2 == 1) || p0 + T > S + T)
						continue;
					if (p0 + T > S && li != 3)
						p0 = (int32_t)(S - T);
					struct dl_bufs b;
					struct tcase c;
					struct op_call q;
					int gs = li != 1, inp = (k + li) % 2;
					dl_bufs_init(e, &b, dt, T, H, NH, KVH, D, F, S, L, p0);
					dl_case_init(&c, &b, NH, KVH, D, L, gs, inp);
					tcase_call(&c, &q, 1);
					q.kind = kind_stub(c.id);
					if (li == 0)
						ok(cuda_impl_default(&q) == 1, "decoder_layer %s T %lld H %lld: "
						   "split is the default", dtype_name(dt), (long long)T, (long long)H);
					for (int impl = 0; impl < cuda_impl_count(c.id); impl++) {
						int want = dl_expect_usable(impl, dt, T, NH, KVH, D);
						char what[176];
						snprintf(what, sizeof what, "decoder_layer %s T %lld H %lld heads "
						         "%lld/%lld x %lld F %lld kv_len %d pos %d%s%s", dtype_name(dt),
						         (long long)T, (long long)H, (long long)NH, (long long)KVH,
						         (long long)D, (long long)F, (int)L, (int)p0,
						         gs ? " graph-safe" : "", inp ? " in place" : "");
						if (!usable_as_expected(e, &c, &q, impl, want, what))
							continue;
						c.impl = impl;
						c.scratch = op_scratch(&c);
						c.capture = li == 0;
						c.pdl = li == 2;
						snprintf(c.what, sizeof c.what, "%s", what);
						tcase_run(e, &c);
					}
					dl_bufs_free(&b);
				}
			}
		}
	}
}

/* The persistent kernel's clock stamps of its last launch (block 0's,
 * cuda-layer.cu's DLS_* order, the scratch's last 256 bytes) as a
 * diagnostic: where a layer's time goes. */
static void dl_stamps_diag(const struct cuda_op_ctx *ctx, size_t scratch, int64_t H)
{
	static const char *const names[] = { "wait", "norm", "q|k|v", "barrier 1", "attention",
	                                     "barrier 2", "o", "barrier 3", "gate|up", "barrier 4",
	                                     "down" };
	unsigned long long t[12];
	char line[400];
	int n = 0;

	CK(cudaMemcpy(t, (char *)ctx->scratch + scratch - 256, sizeof t, cudaMemcpyDeviceToHost));
	n += snprintf(line + n, sizeof line - (size_t)n, "decoder_layer H %lld, block 0 (us):",
	              (long long)H);
	for (int i = 1; i < 12 && n < (int)sizeof line; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %s %.2f", names[i - 1],
		              (double)(t[i] - t[i - 1]) / 1e3);
	if (n < (int)sizeof line)
		snprintf(line + n, sizeof line - (size_t)n, "; all %.2f", (double)(t[11] - t[0]) / 1e3);
	diag("%s", line);
}

/* Three decoder_layer launches in a row on one stream (x -> out -> x ->
 * out), PDL off and on, eagerly and captured in one graph replayed four
 * times with new kv_len on the device: every launch gives the first eager
 * run's bits (the persistent kernel's grid barriers, its counters and its
 * overlap with the next layer's launch), and the result stays within the
 * bound of the host's three layers. */
static void test_decoder_layer_chain(struct env *e)
{
	static const int64_t cfg[][6] = {   /* H, NH, KVH, D, F, S */
		{ 2048, 32, 8, 64, 8192, 512 }, { 1024, 8, 2, 128, 2048, 128 },
	};

	for (int k = 0; k < (int)(sizeof cfg / sizeof cfg[0]); k++) {
		for (int impl = 0; impl < 2; impl++) {
			int64_t H = cfg[k][0], NH = cfg[k][1], KVH = cfg[k][2], D = cfg[k][3];
			int64_t F = cfg[k][4], S = cfg[k][5];
			int32_t L = (int32_t)(S / 2);
			struct dl_bufs b;
			struct tcase c;
			struct op_call call[2];
			struct cuda_op_ctx ctx = e->ctx;
			char msg[256] = "", why[320] = "";
			int rc = 0, same = 1, close = 1;

			dl_bufs_init(e, &b, PLAN_DTYPE_BF16, 1, H, NH, KVH, D, F, S, L, L - 1);
			dl_case_init(&c, &b, NH, KVH, D, L, 1, 0);
			for (int i = 0; i < c.nin; i++)
				tbuf_upload(c.in[i]);
			c.impl = impl;
			c.scratch = op_scratch(&c);
			tcase_call(&c, &call[0], 1);
			call[1] = call[0];                 /* out -> x, in place */
			call[1].in[DL_X] = call[0].out[DL_OUT];
			call[1].out[DL_OUT] = call[0].out[DL_OUT];
			ctx.scratch = scratch_alloc(c.scratch);
			ctx.scratch_bytes = c.scratch;

			/* The host: three layers on out, from x. */
			struct op_call h;
			tcase_call(&c, &h, 0);
			struct op_tensor hx = tbuf_view(&b.x, 0), ho = tbuf_view(&b.out, 0);
			void *x0 = malloc(b.x.bytes), *want = malloc(b.x.bytes), *got = malloc(b.x.bytes);
			void *first = malloc(b.x.bytes), *kc0 = malloc(b.kc.bytes), *vc0 = malloc(b.vc.bytes);
			if (!x0 || !want || !got || !first || !kc0 || !vc0)
				bail("out of memory");
			memcpy(x0, b.x.host, b.x.bytes);
			memcpy(kc0, b.kc.host, b.kc.bytes);
			memcpy(vc0, b.vc.host, b.vc.bytes);
			h.in[DL_X] = hx;
			h.out[DL_OUT] = ho;
			ref_run(OP_DECODER_LAYER, &h);
			h.in[DL_X] = ho;
			for (int i = 0; i < 2; i++)
				ref_run(OP_DECODER_LAYER, &h);
			memcpy(want, b.out.host, b.x.bytes);

			for (int mode = 0; mode < 4; mode++) {   /* eager, eager pdl, graph, graph pdl */
				cudaGraph_t graph = NULL;
				cudaGraphExec_t exec = NULL;
				ctx.pdl = mode % 2;
				if (mode >= 2)
					CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
				for (int rounds = mode >= 2 ? 1 : 2; rounds > 0; rounds--) {
					if (mode < 2) {
						CK(cudaMemcpy(b.x.dev, x0, b.x.bytes, cudaMemcpyHostToDevice));
						CK(cudaMemcpy(b.kc.dev, kc0, b.kc.bytes, cudaMemcpyHostToDevice));
						CK(cudaMemcpy(b.vc.dev, vc0, b.vc.bytes, cudaMemcpyHostToDevice));
						CK(cudaDeviceSynchronize());
					}
					rc |= cuda_kernel(c.id)(&call[0], &ctx, msg, sizeof msg);
					rc |= cuda_kernel(c.id)(&call[1], &ctx, msg, sizeof msg);
					rc |= cuda_kernel(c.id)(&call[1], &ctx, msg, sizeof msg);
					if (mode >= 2)
						break;
					CK(cudaStreamSynchronize(e->stream));
					CK(cudaMemcpy(got, b.out.dev, b.x.bytes, cudaMemcpyDeviceToHost));
					if (mode == 0 && rounds == 2)
						memcpy(first, got, b.x.bytes);
					if (mode == 1 && rounds == 1 && impl == 0)
						dl_stamps_diag(&ctx, c.scratch, H);
					same &= memcmp(got, first, b.x.bytes) == 0;
				}
				if (mode < 2)
					continue;
				CK(cudaStreamEndCapture(e->stream, &graph));
				CK(cudaGraphInstantiate(&exec, graph, 0));
				for (int i = 0; i < 4; i++) {
					/* kv_len moves on the device; the bits at L are the first's */
					int32_t li = i == 3 ? L : L - 3 + i;
					CK(cudaMemcpy(b.kv_dev, &li, sizeof li, cudaMemcpyHostToDevice));
					CK(cudaMemcpy(b.x.dev, x0, b.x.bytes, cudaMemcpyHostToDevice));
					CK(cudaMemcpy(b.kc.dev, kc0, b.kc.bytes, cudaMemcpyHostToDevice));
					CK(cudaMemcpy(b.vc.dev, vc0, b.vc.bytes, cudaMemcpyHostToDevice));
					CK(cudaDeviceSynchronize());
					CK(cudaGraphLaunch(exec, e->stream));
					CK(cudaStreamSynchronize(e->stream));
					CK(cudaMemcpy(got, b.out.dev, b.x.bytes, cudaMemcpyDeviceToHost));
					if (li == L)
						same &= memcmp(got, first, b.x.bytes) == 0;
				}
				CK(cudaGraphExecDestroy(exec));
				CK(cudaGraphDestroy(graph));
			}
			memcpy(b.out.host, want, b.x.bytes);
			close = tbuf_compare(&b.out, first, 3e-2, why, sizeof why);
			same &= scratch_counters_zero(ctx.scratch, c.scratch);
			ok(rc == 0 && same && close, "decoder_layer bf16 H %lld heads %lld/%lld x %lld F "
			   "%lld [%s]: three layers in a row, eager and graph replays, PDL off and on, "
			   "give one result, within the host's%s%s%s%s", (long long)H, (long long)NH,
			   (long long)KVH, (long long)D, (long long)F, cuda_impl_name(c.id, impl),
			   rc ? ": " : "", rc ? msg : "", close ? "" : ": ", close ? "" : why);
			free(x0);
			free(want);
			free(got);
			free(first);
			free(kc0);
			free(vc0);
			CK(cudaFree(ctx.scratch));
			dl_bufs_free(&b);
		}
	}
}

/* rmsnorm_matmul_rope_kv_write in one graph, twice, replayed (the caches
 * restored before each launch): every replay gives the eager launch's
 * bits in q and both caches, PDL off and on, under both implementations. */
static void test_rmsnorm_matmul_rope_kv_write_replays(struct env *e)
{
	static const int64_t cfg[][5] = {   /* M, K, H, KVH, D */
		{ 8, 2048, 32, 8, 64 }, { 1, 2048, 32, 8, 64 }, { 3, 264, 4, 2, 16 },
		{ 5, 4096, 4, 4, 32 }, { 2, 4096, 4, 4, 32 }, { 1, 4096, 64, 8, 128 },
		{ 20, 512, 8, 2, 64 },
	};

	for (int s = 0; s < (int)(sizeof cfg / sizeof cfg[0]); s++) {
		for (int impl = 0; impl < 3; impl++) {
			int64_t M = cfg[s][0], K = cfg[s][1], H = cfg[s][2], KVH = cfg[s][3];
			int64_t D = cfg[s][4];
			if (impl == 0 && (M > 8 || !rnm_tokens_fit(PLAN_DTYPE_BF16, M, K)))
				continue;       /* gemv: at most 8 tokens, in its shared memory */
			if (impl == 2 && M != 1)
				continue;       /* rows_scaled: one token */
			struct rrk_bufs rb;
			struct tcase c;
			struct op_call call;
			struct cuda_op_ctx ctx = e->ctx;
			cudaGraph_t graph;
			cudaGraphExec_t exec;
			struct tbuf *outs[3];
			void *want[3], *got[3];
			char msg[256] = "";
			int same = 1, rc = 0;

			rrk_bufs_init(e, &rb, PLAN_DTYPE_BF16, M, K, H, KVH, D, 1, 0);
			outs[0] = &rb.q;
			outs[1] = &rb.kc;
			outs[2] = &rb.vc;
			tbuf_upload(&rb.x);
			tbuf_upload(&rb.w);
			tbuf_upload(&rb.b);
			tbuf_upload(&rb.pos);
			rrk_case_init(&c, &rb, H, KVH, D, 1, NULL);
			c.impl = impl;
			c.scratch = op_scratch(&c);
			/* rows_scaled's weights marked: it reads their copy */
			c.const_in = impl == 2 ? 1u << RRK_W | 1u << RRK_B : 0;
			tcase_call(&c, &call, 1);
			ctx.scratch = scratch_alloc(c.scratch);
			ctx.scratch_bytes = c.scratch;
			rc |= tcase_prepare(&c, &call, &ctx, msg, sizeof msg);
			for (int o = 0; o < 3; o++) {
				want[o] = malloc(outs[o]->bytes);
				got[o] = malloc(outs[o]->bytes);
				if (!want[o] || !got[o])
					bail("out of memory");
				tbuf_upload(outs[o]);
			}
			CK(cudaDeviceSynchronize());
			rc |= cuda_kernel(c.id)(&call, &ctx, msg, sizeof msg);
			CK(cudaStreamSynchronize(e->stream));
			for (int o = 0; o < 3; o++)
				CK(cudaMemcpy(want[o], outs[o]->dev, outs[o]->bytes, cudaMemcpyDeviceToHost));
			for (int pdl = 0; pdl < 2; pdl++) {
				ctx.pdl = pdl;
				CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
				rc |= cuda_kernel(c.id)(&call, &ctx, msg, sizeof msg);
				rc |= cuda_kernel(c.id)(&call, &ctx, msg, sizeof msg);
				CK(cudaStreamEndCapture(e->stream, &graph));
				CK(cudaGraphInstantiate(&exec, graph, 0));
				for (int i = 0; i < 4; i++) {
					CK(cudaMemsetAsync(rb.q.dev, POISON_DEV, rb.q.bytes, e->stream));
					CK(cudaMemcpyAsync(rb.kc.dev, rb.kc.host, rb.kc.bytes,
					                   cudaMemcpyHostToDevice, e->stream));
					CK(cudaMemcpyAsync(rb.vc.dev, rb.vc.host, rb.vc.bytes,
					                   cudaMemcpyHostToDevice, e->stream));
					CK(cudaGraphLaunch(exec, e->stream));
					CK(cudaStreamSynchronize(e->stream));
					for (int o = 0; o < 3; o++) {
						CK(cudaMemcpy(got[o], outs[o]->dev, outs[o]->bytes,
						              cudaMemcpyDeviceToHost));
						same &= memcmp(got[o], want[o], outs[o]->bytes) == 0;
					}
				}
				CK(cudaGraphExecDestroy(exec));
				CK(cudaGraphDestroy(graph));
			}
			same &= scratch_counters_zero(ctx.scratch, c.scratch);
			ok(rc == 0 && same, "rmsnorm_matmul_rope_kv_write bf16 M %lld K %lld heads "
			   "%lld/%lld x %lld [%s], %zu bytes of scratch: graph replays, PDL off and on, "
			   "give the eager bits%s%s", (long long)M, (long long)K, (long long)H,
			   (long long)KVH, (long long)D, cuda_impl_name(c.id, impl), c.scratch,
			   rc ? ": " : "", rc ? msg : "");
			for (int o = 0; o < 3; o++) {
				free(want[o]);
				free(got[o]);
			}
			if (ctx.scratch)
				CK(cudaFree(ctx.scratch));
			cuda_packs_trim(ctx.packs);     /* rows_scaled's copy of rb.b */
			rrk_bufs_free(&rb);
		}
	}
}


/* --- one token: gemv's rows kernel ----------------------------------------- */

/* C (its weights the inputs WEIGHTS marks) run four ways, each against
 * the host: unmarked and eager; then marked as op_call.const_in marks
 * weights (the rows kernel loads them before its PDL wait, or the bulk
 * kernel takes the product), with PDL: eager, captured in a graph, and
 * eager with a grid for 3 multiprocessors. The captured launch must give
 * the marked eager launch's bytes, and so must the 3-multiprocessor one
 * unless LOOPS (the looping kernel takes the product, whose K split
 * follows the device's size): in the rows and bulk kernels a row's sum
 * does not depend on the block that makes it, nor on how many rows a
 * block owns. */
static void rows_marked_case(struct env *e, struct tcase *c, unsigned weights, int loops,
                             const char *what)
{
	void *want[OP_MAX_OUT], *got[OP_MAX_OUT];
	int same = 1;

	for (int o = 0; o < c->nout; o++) {
		want[o] = malloc(c->out[o]->bytes + 16);
		got[o] = malloc(c->out[o]->bytes + 16);
		if (!want[o] || !got[o])
			bail("out of memory");
	}
	c->const_in = 0;
	c->pdl = 0;
	c->scratch = op_scratch(c);
	snprintf(c->what, sizeof c->what, "%s", what);
	tcase_run_once(e, c, 0);
	c->const_in = weights;
	c->pdl = 1;
	for (int o = 0; o < c->nout; o++)
		c->got[o] = want[o];
	snprintf(c->what, sizeof c->what, "%s, weights marked", what);
	tcase_run_once(e, c, 0);
	for (int o = 0; o < c->nout; o++)
		c->got[o] = got[o];
	for (int run = 0; run < 2; run++) {
		snprintf(c->what, sizeof c->what, "%s, weights marked, %s", what,
		         run == 0 ? "captured" : "3 multiprocessors");
		c->sm_count = run == 0 ? 0 : 3;
		for (int o = 0; o < c->nout; o++)
			memset(got[o], 0xa5, c->out[o]->bytes);
		tcase_run_once(e, c, run == 0);
		for (int o = 0; o < c->nout && !(run == 1 && loops); o++)
			same &= memcmp(got[o], want[o], c->out[o]->bytes) == 0;
	}
	c->sm_count = 0;
	ok(same, "%s: with the weights marked, captured%s, the marked eager launch's bytes", what,
	   loops ? "" : " and on 3 multiprocessors");
	for (int o = 0; o < c->nout; o++) {
		c->got[o] = NULL;
		free(want[o]);
		free(got[o]);
	}
}

/* Whether the looping kernel, not the rows or bulk kernel, takes a one-token
 * product of N rows over K: K past 16384 (K / 8 pieces past 2048), or more
 * than 16384 column groups of two rows. */
static int rows_loop(int64_t N, int64_t K)
{
	return K / 8 > 2048 || (N + 1) / 2 > 16384;
}

/* gemv at one token of f16 or bf16 runs the rows kernel in each of its
 * shapes (K / 8 pieces up to 128, 256, 512, 1024 and 2048: 16 (the SiLU
 * form's thin shapes), 32, 64 or 128 threads a row, 4, 8 or 16 pieces a
 * thread, pieces past K where they do not divide) and hands over to the
 * looping kernel past them (K / 8 of 2049; more than 16384 column
 * groups): matmul, matmul_add and matmul_silu_mul, rmsnorm_matmul with
 * both epilogues and rmsnorm_matmul_rope_kv_write, each through
 * rows_marked_case. With the
 * weights marked the bulk kernel takes matmul_add and both rmsnorm_matmul
 * forms, in each of its token widths (K / 8 pieces up to 256, 512, 1024,
 * 2048 a block of 256 threads), with stages of 1 to 16 rows (K 16384 to
 * 64; 1 for the SiLU form at K 8192), and N below the grid (3 rows). */
static void test_gemv_rows(struct env *e)
{
	static const int64_t nk[][2] = {
		{ 37, 64 }, { 300, 2048 }, { 77, 4096 }, { 50, 6000 }, { 130, 8200 },
		{ 64, 16384 }, { 3, 16392 }, { 33000, 16 }, { 3, 2048 }, { 1000, 12288 },
		{ 2816, 1024 }, { 45, 1000 },
	};
	static const int64_t rnm_nk[][2] = {
		{ 3072, 2048 }, { 100, 8192 }, { 20000, 64 }, { 40000, 64 }, { 45, 1000 },
	};
	static const int64_t rrk_cfg[][4] = {
		{ 32, 8, 64, 2048 }, { 4, 2, 16, 264 }, { 8, 2, 128, 8192 },
	};
	char what[200];

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		const int dt = float_dtypes[d];
		if (dt == PLAN_DTYPE_F32)
			continue;                        /* the rows kernel is f16/bf16's */
		for (int k = 0; k < 3; k++)
			for (int s = 0; s < (int)(sizeof nk / sizeof nk[0]); s++) {
				struct product_bufs pb;
				struct tcase c;
				product_bufs_init(e, &pb, k, dt, dt, 1, nk[s][0], nk[s][1], 1, 0);
				product_case_init(&c, &pb, k, 1, 0);
				c.impl = 1;                     /* gemv */
				snprintf(what, sizeof what, "gemv rows: %s %s M 1 N %lld K %lld",
				         product_names[k], dtype_name(dt), (long long)nk[s][0],
				         (long long)nk[s][1]);
				rows_marked_case(e, &c, 1u << (k == 1 ? 2 : 1), rows_loop(nk[s][0], nk[s][1]),
				                 what);
				product_bufs_free(&pb);
			}
		for (int silu = 0; silu < 2; silu++)
			for (int s = 0; s < (int)(sizeof rnm_nk / sizeof rnm_nk[0]); s++) {
				struct rnm_bufs rb;
				struct tcase c;
				rnm_bufs_init(e, &rb, dt, 1, rnm_nk[s][0], rnm_nk[s][1], silu, 1, 0);
				rnm_case_init(&c, &rb, silu, 1);
				c.impl = 0;                     /* gemv */
				snprintf(what, sizeof what, "gemv rows: rmsnorm_matmul %s %s M 1 N %lld K %lld",
				         silu ? "silu_mul" : "none", dtype_name(dt),
				         (long long)rnm_nk[s][0], (long long)rnm_nk[s][1]);
				rows_marked_case(e, &c, 1u << 1 | 1u << 2,
				                 rows_loop(rnm_nk[s][0], rnm_nk[s][1]), what);
				rnm_bufs_free(&rb);
			}
		for (int s = 0; s < (int)(sizeof rrk_cfg / sizeof rrk_cfg[0]); s++) {
			const int64_t H = rrk_cfg[s][0], KVH = rrk_cfg[s][1], D = rrk_cfg[s][2];
			const int64_t K = rrk_cfg[s][3];
			struct rrk_bufs rb;
			struct tcase c;
			rrk_bufs_init(e, &rb, dt, 1, K, H, KVH, D, 1, 0);
			rrk_case_init(&c, &rb, H, KVH, D, 1, NULL);
			c.impl = 0;                     /* gemv */
			snprintf(what, sizeof what, "gemv rows: rmsnorm_matmul_rope_kv_write %s M 1 K %lld "
			         "heads %lld/%lld x %lld", dtype_name(dt), (long long)K, (long long)H,
			         (long long)KVH, (long long)D);
			rows_marked_case(e, &c, 1u << RRK_W | 1u << RRK_B, 0, what);
			rrk_bufs_free(&rb);
		}
	}
}
/* --- fused row and position kinds, slice ------------------------------------- */

static void test_add_rmsnorm(struct env *e)
{
	static const int64_t shapes[][2] = { { 1, 1024 }, { 5, 300 }, { 3, 4096 }, { 2, 1 },
	                                     { 32, 1024 } };
	struct tbuf x, r, w, sum, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int s = 0; s < 5; s++) {
			for (int alias = 0; alias < 3; alias++) {
				/* 0: separate outputs; 1: sum is x; 2: sum is r, out is x */
				int64_t cols = shapes[s][1];
				tbuf_init(&x, dt, 2, shapes[s], 0);
				tbuf_init(&r, dt, 2, shapes[s], 0);
				tbuf_init(&w, dt, 1, &cols, 0);
				tbuf_init(&sum, dt, 2, shapes[s], 0);
				tbuf_init(&out, dt, 2, shapes[s], 0);
				tbuf_random(e, &x, 2.0f);
				tbuf_random(e, &r, 2.0f);
				tbuf_random(e, &w, 1.5f);
				tcase_init(&c, OP_ADD_RMSNORM, 3, 2);
				c.in[0] = &x;
				c.in[1] = &r;
				c.in[2] = &w;
				c.out[0] = alias == 1 ? &x : alias == 2 ? &r : &sum;
				c.out[1] = alias == 2 ? &x : &out;
				c.attr[NORM_EPS].f = 1e-6;
				c.tol = tol_for(dt, 1e-5);
				c.exact_outs = 1u;              /* the sum: one rounding */
				c.capture = dt == PLAN_DTYPE_F16 && s == 1 && alias == 0;
				c.pdl = s == 4;
				snprintf(c.what, sizeof c.what, "add_rmsnorm %s [%lld,%lld]%s", dtype_name(dt),
				         (long long)shapes[s][0], (long long)cols,
				         alias == 1 ? ", sum is x" : alias == 2 ? ", sum is r, out is x" : "");
				tcase_run(e, &c);
				tbuf_free(&x);
				tbuf_free(&r);
				tbuf_free(&w);
				tbuf_free(&sum);
				tbuf_free(&out);
			}
		}
	}
}

/* rope_kv_write, and (PAGED) rope_paged_kv_write over caches [NB, BS, W]
 * with slots scattered over the blocks and the pad slot -1. SHIFT moves
 * q|k|v off its 16-byte alignment, so that v goes element by element. */
static void rope_kv_write_case(struct env *e, int dt, int64_t H, int64_t KVH, int64_t D,
                               int32_t maxpos, double tol, int T, int paged, size_t shift,
                               int capture, int pdl, const union op_value *scaling)
{
	const int64_t S = 40, BS = 4;
	int64_t T64 = T, Sk = maxpos > S ? maxpos : S;
	struct tbuf qkv, pos, slots, q, kc, vc;
	struct tcase c;

	Sk = (Sk + BS - 1) / BS * BS;
	tbuf_init(&qkv, dt, 2, (const int64_t[]){ T64, (H + 2 * KVH) * D }, shift);
	tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T64, 0);
	tbuf_init(&q, dt, 2, (const int64_t[]){ T64, H * D }, 0);
	if (paged) {
		tbuf_init(&kc, dt, 3, (const int64_t[]){ Sk / BS, BS, KVH * D }, 0);
		tbuf_init(&vc, dt, 3, (const int64_t[]){ Sk / BS, BS, KVH * D }, 0);
	} else {
		tbuf_init(&kc, dt, 2, (const int64_t[]){ Sk, KVH * D }, 0);
		tbuf_init(&vc, dt, 2, (const int64_t[]){ Sk, KVH * D }, 0);
	}
	tbuf_random(e, &qkv, 1.0f);
	tbuf_random(e, &kc, 1.0f);      /* rows not written must survive */
	tbuf_random(e, &vc, 1.0f);
	memset(q.host, POISON_DEV, q.bytes);     /* every element written */
	/* Distinct positions (two equal ones race), and for T > 1 two outside
	 * [0, S): for the paged kind they only rotate; its rows are the slots,
	 * distinct, a stride apart that crosses blocks, one the pad slot. */
	int32_t *p = pos.host;
	int32_t first = env_int(e, 0, (int32_t)Sk - T - 1);
	for (int t = 0; t < T; t++)
		p[t] = first + t;
	if (T > 1) {
		p[1] = -3;
		p[T - 1] = (int32_t)Sk;
	}
	if (paged) {
		tbuf_init(&slots, PLAN_DTYPE_I32, 1, &T64, 0);
		int32_t *sl = slots.host, s0 = env_int(e, 0, (int32_t)Sk - 1);
		for (int t = 0; t < T; t++)
			sl[t] = (int32_t)((s0 + 7 * (int64_t)t) % Sk);  /* 7 is prime to Sk */
		if (T > 1)
			sl[T / 2] = -1;
	}
	tcase_init(&c, paged ? OP_ROPE_PAGED_KV_WRITE : OP_ROPE_KV_WRITE, paged ? 3 : 2, 3);
	c.in[0] = &qkv;
	c.in[1] = &pos;
	if (paged)
		c.in[2] = &slots;
	c.out[0] = &q;
	c.out[1] = &kc;
	c.out[2] = &vc;
	c.keep_out = 1;
	c.attr[RKV_HEADS].i = H;
	c.attr[RKV_KV_HEADS].i = KVH;
	c.attr[RKV_HEAD_DIM].i = D;
	c.attr[RKV_THETA].f = 10000.0;
	if (scaling != NULL)
		memcpy(&c.attr[RKV_SCALING], scaling, RS_COUNT * sizeof *scaling);
	c.tol = tol_for(dt, tol);
	c.exact_outs = 4u;              /* v moves as it is */
	c.capture = capture;
	c.pdl = pdl;
	snprintf(c.what, sizeof c.what, "%s %s%s%s T %d heads %lld/%lld head_dim %lld S %lld%s",
	         paged ? "rope_paged_kv_write" : "rope_kv_write", dtype_name(dt),
	         scaling ? " " : "", scaling ? rope_type_names[scaling[RS_TYPE].i] : "", T,
	         (long long)H, (long long)KVH, (long long)D, (long long)Sk,
	         shift ? " misaligned" : "");
	tcase_run(e, &c);
	tbuf_free(&qkv);
	tbuf_free(&pos);
	if (paged)
		tbuf_free(&slots);
	tbuf_free(&q);
	tbuf_free(&kc);
	tbuf_free(&vc);
}

static void test_rope_kv_write(struct env *e)
{
	static const struct { int64_t H, KVH, D; int32_t maxpos; double tol; } cfg[] = {
		{ 4, 4, 64, 16, 1e-5 }, { 8, 2, 128, 32, 1e-5 }, { 3, 1, 7, 16, 1e-5 },
		{ 2, 2, 64, 4096, 1e-2 }, { 32, 8, 64, 40, 1e-5 }, { 16, 16, 64, 64, 1e-5 },
	};

	for (int paged = 0; paged < 2; paged++) {
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int k = 0; k < 6; k++) {
				for (int T = 1; T <= 9; T += 4) {
					rope_kv_write_case(e, dt, cfg[k].H, cfg[k].KVH, cfg[k].D,
					                   cfg[k].maxpos, cfg[k].tol, T, paged, 0,
					                   dt == PLAN_DTYPE_F16 && k == 1, k == 4, NULL);
					if (k == 0 || k == 5)
						rope_kv_write_case(e, dt, cfg[k].H, cfg[k].KVH, cfg[k].D,
						                   cfg[k].maxpos, cfg[k].tol, T, paged,
						                   dtype_size(dt), 0, 0, NULL);
				}
			}
		}
	}
	/* Many tokens: rows of the grid past the first wave. */
	rope_kv_write_case(e, PLAN_DTYPE_F16, 16, 16, 64, 4096, 1e-2, 700, 1, 0, 0, 0, NULL);
}

/* Every rope_type on the device against the host. Both rotate by the same
 * f32 frequencies (rope-scaling.c, computed on the host for the launch),
 * so only sincosf's last ulp differs from the host's cosf and sinf: the
 * bound stays 1e-5 out to position 4096. */
static void test_rope_scaling(struct env *e)
{
	static const int types[] = { ROPE_TYPE_LINEAR, ROPE_TYPE_DYNAMIC, ROPE_TYPE_YARN,
	                             ROPE_TYPE_LLAMA3 };
	const int64_t T = 5;

	for (size_t n = 0; n < sizeof types / sizeof types[0]; n++) {
		union op_value sc[RS_COUNT];
		memset(sc, 0, sizeof sc);
		sc[RS_TYPE].i = types[n];
		sc[RS_FACTOR].f = types[n] == ROPE_TYPE_LLAMA3 ? 32 : 4;
		sc[RS_LOW_FREQ_FACTOR].f = 1;
		sc[RS_HIGH_FREQ_FACTOR].f = 4;
		/* llama3's bands and yarn's ramp inside head_dim 64 and 128;
		 * dynamic exact (not NaN) for every position tested */
		sc[RS_ORIGINAL_MAX].i = types[n] == ROPE_TYPE_DYNAMIC ? 8192 : 256;
		sc[RS_BETA_FAST].f = 32;
		sc[RS_BETA_SLOW].f = 1;
		sc[RS_TRUNCATE].i = 1;
		for (int d = 0; d < N_FLOAT_DTYPES; d++) {
			int dt = float_dtypes[d];
			for (int64_t hd = 64; hd <= 128; hd *= 2) {
				struct tbuf x, pos, out;
				struct tcase c;
				tbuf_init(&x, dt, 2, (const int64_t[]){ T, 4 * hd }, 0);
				tbuf_init(&out, dt, 2, (const int64_t[]){ T, 4 * hd }, 0);
				tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T, 0);
				tbuf_random(e, &x, 1.0f);
				for (int64_t t = 0; t < T; t++)
					((int32_t *)pos.host)[t] = env_int(e, 0, 4096);
				tcase_init(&c, OP_ROPE, 2, 1);
				c.in[0] = &x;
				c.in[1] = &pos;
				c.out[0] = &out;
				c.attr[ROPE_HEADS].i = 4;
				c.attr[ROPE_HEAD_DIM].i = hd;
				c.attr[ROPE_THETA].f = 500000.0;
				memcpy(&c.attr[ROPE_SCALING], sc, sizeof sc);
				c.tol = tol_for(dt, 1e-5);
				c.capture = dt == PLAN_DTYPE_F32 && hd == 64;
				snprintf(c.what, sizeof c.what, "rope %s %s head_dim %lld positions < 4096",
				         rope_type_names[types[n]], dtype_name(dt), (long long)hd);
				tcase_run(e, &c);
				tbuf_free(&x);
				tbuf_free(&out);
				tbuf_free(&pos);
			}
			for (int paged = 0; paged < 2; paged++)
				rope_kv_write_case(e, dt, 8, 2, 128, 300, 1e-5, 5, paged, 0,
				                   dt == PLAN_DTYPE_BF16, paged, sc);
		}
	}
}

/* dynamic past its original context: the device writes NaN rows there, as
 * the host does, and exact ones before (tcase_run would call the NaN a
 * mismatch, so this compares by hand). */
static void test_rope_dynamic_limit(struct env *e)
{
	const int64_t T = 3, W = 2 * 64;
	const int32_t p[3] = { 63, 64, 1000 };
	struct tbuf x, pos, out;
	struct tcase c;
	struct op_call call;
	struct cuda_op_ctx ctx = e->ctx;
	char msg[256] = "";
	float got[3 * 128];
	int rc, nan_rows = 1, first_finite = 1;

	tbuf_init(&x, PLAN_DTYPE_F32, 2, (const int64_t[]){ T, W }, 0);
	tbuf_init(&out, PLAN_DTYPE_F32, 2, (const int64_t[]){ T, W }, 0);
	tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T, 0);
	tbuf_random(e, &x, 1.0f);
	memcpy(pos.host, p, sizeof p);
	tcase_init(&c, OP_ROPE, 2, 1);
	c.in[0] = &x;
	c.in[1] = &pos;
	c.out[0] = &out;
	c.attr[ROPE_HEADS].i = 2;
	c.attr[ROPE_HEAD_DIM].i = 64;
	c.attr[ROPE_THETA].f = 10000.0;
	c.attr[ROPE_SCALING + RS_TYPE].i = ROPE_TYPE_DYNAMIC;
	c.attr[ROPE_SCALING + RS_FACTOR].f = 2;
	c.attr[ROPE_SCALING + RS_ORIGINAL_MAX].i = 64;
	tbuf_upload(&x);
	tbuf_upload(&pos);
	tbuf_poison(&out);
	tcase_call(&c, &call, 1);
	CK(cudaDeviceSynchronize());
	rc = cuda_kernel(OP_ROPE)(&call, &ctx, msg, sizeof msg);
	if (rc == 0)
		CK(cudaStreamSynchronize(e->stream));
	CK(cudaMemcpy(got, out.dev, sizeof got, cudaMemcpyDeviceToHost));
	for (int64_t j = 0; j < W; j++)
		first_finite &= isfinite(got[j]);
	for (int64_t j = W; j < T * W; j++)
		nan_rows &= isnan(got[j]);
	ok(rc == 0 && first_finite && nan_rows,
	   "rope dynamic f32 on the device: position 63 of 64 rotated, 64 and 1000 NaN%s%s",
	   rc ? ": " : "", msg);
	tbuf_free(&x);
	tbuf_free(&out);
	tbuf_free(&pos);
}

/* B's device bytes equal C's. */
static int dev_same(const struct tbuf *b, const struct tbuf *c)
{
	void *x = malloc(b->bytes + 16), *y = malloc(c->bytes + 16);
	int same;

	if (!x || !y)
		bail("out of memory");
	CK(cudaMemcpy(x, b->dev, b->bytes, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(y, c->dev, c->bytes, cudaMemcpyDeviceToHost));
	same = b->bytes == c->bytes && memcmp(x, y, b->bytes) == 0;
	free(x);
	free(y);
	return same;
}

/* rope_kv_write and (PAGED) rope_paged_kv_write with q_w and k_w, one
 * case: against the host kernel of the kind within the bound (eager and
 * captured), and bit for bit against the device's own two kernels,
 * qk_norm in place on a copy of qkv then the kind without the weights:
 * eager, with PDL, and captured in a graph. Positions and slots as
 * rope_kv_write_case's: distinct, two outside the caches, the pad slot. */
static void rope_kv_norm_case(struct env *e, int dt, int64_t H, int64_t KVH, int64_t D, int T,
                              int paged, int capture_host)
{
	const int64_t S = 40, BS = 4, T64 = T, QKV = (H + 2 * KVH) * D;
	struct tbuf qkv, normed, pos, slots, qw, kw, q0, kc0, vc0, q1, kc1, vc1;
	struct cuda_op_ctx ctx = e->ctx;
	struct op_call seq[2], fused;
	struct tcase c;
	char msg[256] = "", what[160];
	int rc = 0;
	int64_t cache[3] = { S / BS, BS, KVH * D }, flat[2] = { S, KVH * D };

	tbuf_init(&qkv, dt, 2, (const int64_t[]){ T64, QKV }, 0);
	tbuf_init(&normed, dt, 2, (const int64_t[]){ T64, QKV }, 0);
	tbuf_init(&pos, PLAN_DTYPE_I32, 1, &T64, 0);
	tbuf_init(&slots, PLAN_DTYPE_I32, 1, &T64, 0);
	tbuf_init(&qw, dt, 1, &D, 0);
	tbuf_init(&kw, dt, 1, &D, 0);
	tbuf_init(&q0, dt, 2, (const int64_t[]){ T64, H * D }, 0);
	tbuf_init(&q1, dt, 2, (const int64_t[]){ T64, H * D }, 0);
	tbuf_init(&kc0, dt, paged ? 3 : 2, paged ? cache : flat, 0);
	tbuf_init(&vc0, dt, paged ? 3 : 2, paged ? cache : flat, 0);
	tbuf_init(&kc1, dt, paged ? 3 : 2, paged ? cache : flat, 0);
	tbuf_init(&vc1, dt, paged ? 3 : 2, paged ? cache : flat, 0);
	tbuf_random(e, &qkv, 3.0f);
	tbuf_random(e, &qw, 1.5f);
	tbuf_random(e, &kw, 1.5f);
	tbuf_random(e, &kc0, 1.0f);     /* rows not written must survive */
	tbuf_random(e, &vc0, 1.0f);
	memcpy(kc1.host, kc0.host, kc0.bytes);
	memcpy(vc1.host, vc0.host, vc0.bytes);
	memset(q0.host, POISON_DEV, q0.bytes);
	int32_t *p = pos.host, *sl = slots.host;
	int32_t first = env_int(e, 0, (int32_t)S - T - 1), s0 = env_int(e, 0, (int32_t)S - 1);
	for (int t = 0; t < T; t++) {
		p[t] = first + t;
		sl[t] = (int32_t)((s0 + 7 * (int64_t)t) % S);
	}
	if (T > 1) {
		p[1] = -3;
		p[T - 1] = (int32_t)S;
		sl[T / 2] = -1;
	}
	snprintf(what, sizeof what, "%s with q_w, k_w %s T %d heads %lld/%lld head_dim %lld",
	         paged ? "rope_paged_kv_write" : "rope_kv_write", dtype_name(dt), T, (long long)H,
	         (long long)KVH, (long long)D);

	/* against the host's fused kernel */
	tcase_init(&c, paged ? OP_ROPE_PAGED_KV_WRITE : OP_ROPE_KV_WRITE, paged ? 5 : 4, 3);
	c.in[0] = &qkv;
	c.in[1] = &pos;
	if (paged)
		c.in[RPKV_SLOTS] = &slots;
	c.in[paged ? RPKV_Q_W : RKV_Q_W] = &qw;
	c.in[paged ? RPKV_K_W : RKV_K_W] = &kw;
	c.out[0] = &q0;
	c.out[1] = &kc0;
	c.out[2] = &vc0;
	c.keep_out = 1;
	c.attr[RKV_HEADS].i = H;
	c.attr[RKV_KV_HEADS].i = KVH;
	c.attr[RKV_HEAD_DIM].i = D;
	c.attr[RKV_THETA].f = 1000000.0;
	c.attr[RKV_EPS].f = 1e-6;
	c.tol = tol_for(dt, 1e-5);
	c.exact_outs = 4u;              /* v moves as it is */
	c.capture = capture_host;
	snprintf(c.what, sizeof c.what, "%s: the host's", what);
	tcase_run(e, &c);

	/* the device's sequence into q0, kc0, vc0 (restored) */
	tbuf_upload(&qkv);
	tbuf_upload(&pos);
	tbuf_upload(&slots);
	tbuf_upload(&qw);
	tbuf_upload(&kw);
	memcpy(kc0.host, kc1.host, kc0.bytes);
	memcpy(vc0.host, vc1.host, vc0.bytes);
	tbuf_upload(&kc0);
	tbuf_upload(&vc0);
	tbuf_poison(&q0);
	CK(cudaMemcpy(normed.dev, qkv.dev, qkv.bytes, cudaMemcpyDeviceToDevice));
	CK(cudaDeviceSynchronize());
	memset(seq, 0, sizeof seq);
	seq[0].nin = 3;
	seq[0].nout = 1;
	seq[0].in[0] = tbuf_view(&normed, 1);
	seq[0].in[1] = tbuf_view(&qw, 1);
	seq[0].in[2] = tbuf_view(&kw, 1);
	seq[0].out[0] = tbuf_view(&normed, 1);
	seq[0].attr[QKN_HEADS].i = H;
	seq[0].attr[QKN_KV_HEADS].i = KVH;
	seq[0].attr[QKN_HEAD_DIM].i = D;
	seq[0].attr[QKN_EPS].f = 1e-6;
	seq[1].nin = paged ? 3 : 2;
	seq[1].nout = 3;
	seq[1].in[0] = tbuf_view(&normed, 1);
	seq[1].in[1] = tbuf_view(&pos, 1);
	seq[1].in[RPKV_SLOTS] = tbuf_view(&slots, 1);
	seq[1].out[0] = tbuf_view(&q0, 1);
	seq[1].out[1] = tbuf_view(&kc0, 1);
	seq[1].out[2] = tbuf_view(&vc0, 1);
	memcpy(seq[1].attr, c.attr, sizeof seq[1].attr);
	ctx.scratch = NULL;
	ctx.scratch_bytes = 0;
	ctx.pdl = 0;
	rc |= cuda_kernel(OP_QK_NORM)(&seq[0], &ctx, msg, sizeof msg);
	rc |= cuda_kernel(c.id)(&seq[1], &ctx, msg, sizeof msg);
	CK(cudaStreamSynchronize(e->stream));

	/* the fused kernel into q1, kc1, vc1: eager, with PDL, captured */
	fused = seq[1];
	fused.nin = c.nin;
	fused.in[0] = tbuf_view(&qkv, 1);
	fused.in[paged ? RPKV_Q_W : RKV_Q_W] = tbuf_view(&qw, 1);
	fused.in[paged ? RPKV_K_W : RKV_K_W] = tbuf_view(&kw, 1);
	fused.out[0] = tbuf_view(&q1, 1);
	fused.out[1] = tbuf_view(&kc1, 1);
	fused.out[2] = tbuf_view(&vc1, 1);
	for (int form = 0; form < 3; form++) {
		int frc = rc;
		tbuf_upload(&kc1);
		tbuf_upload(&vc1);
		tbuf_poison(&q1);
		CK(cudaDeviceSynchronize());
		ctx.pdl = form == 1;
		if (form == 2) {
			frc |= launch_captured(e, cuda_kernel(c.id), &fused, &ctx, msg, sizeof msg);
		} else {
			frc |= cuda_kernel(c.id)(&fused, &ctx, msg, sizeof msg);
			CK(cudaStreamSynchronize(e->stream));
		}
		ok(frc == 0 && dev_same(&q1, &q0) && dev_same(&kc1, &kc0) && dev_same(&vc1, &vc0),
		   "%s%s: the device's qk_norm then %s, bit for bit", what,
		   form == 1 ? " (pdl)" : form == 2 ? " (captured)" : "",
		   paged ? "rope_paged_kv_write" : "rope_kv_write");
		if (frc != 0)
			diag("  launcher: %s", msg);
	}
	tbuf_free(&qkv);
	tbuf_free(&normed);
	tbuf_free(&pos);
	tbuf_free(&slots);
	tbuf_free(&qw);
	tbuf_free(&kw);
	tbuf_free(&q0);
	tbuf_free(&kc0);
	tbuf_free(&vc0);
	tbuf_free(&q1);
	tbuf_free(&kc1);
	tbuf_free(&vc1);
}

static void test_rope_kv_norm(struct env *e)
{
	static const struct { int64_t H, KVH, D; } cfg[] = {
		{ 4, 4, 64 }, { 8, 2, 64 }, { 32, 4, 128 }, { 6, 2, 128 }, { 2, 1, 256 },
	};

	for (int paged = 0; paged < 2; paged++)
		for (int d = 0; d < N_FLOAT_DTYPES; d++)
			for (int k = 0; k < 5; k++)
				for (int T = 1; T <= 33; T = T == 1 ? 7 : T + 26)
					rope_kv_norm_case(e, float_dtypes[d], cfg[k].H, cfg[k].KVH, cfg[k].D,
					                  T, paged, k == 2 && T == 1);
}

/* qk_norm: one warp a head, against the host's rmsnorm of each head. */
static void test_qk_norm(struct env *e)
{
	static const struct { int64_t H, KVH, D, C; } cfg[] = {
		{ 4, 2, 64, (4 + 2 * 2) * 64 },    /* q|k|v: v copied */
		{ 16, 8, 128, (16 + 8) * 128 },    /* q|k only */
		{ 3, 1, 7, (3 + 2 * 1) * 7 },      /* odd head_dim, fewer lanes than a warp */
		{ 32, 8, 128, (32 + 2 * 8) * 128 }, /* Qwen3-8B-shaped */
	};

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int k = 0; k < 4; k++) {
			for (int64_t T = 1; T <= 65; T += 32) {
				for (int inplace = 0; inplace < 2; inplace++) {
					struct tbuf x, qw, kw, out;
					struct tcase c;
					tbuf_init(&x, dt, 2, (const int64_t[]){ T, cfg[k].C }, 0);
					tbuf_init(&qw, dt, 1, &cfg[k].D, 0);
					tbuf_init(&kw, dt, 1, &cfg[k].D, 0);
					tbuf_random(e, &x, 3.0f);
					tbuf_random(e, &qw, 1.0f);
					tbuf_random(e, &kw, 1.0f);
					tcase_init(&c, OP_QK_NORM, 3, 1);
					c.in[0] = &x;
					c.in[1] = &qw;
					c.in[2] = &kw;
					if (inplace) {
						c.out[0] = &x;
					} else {
						tbuf_init(&out, dt, 2, (const int64_t[]){ T, cfg[k].C }, 0);
						c.out[0] = &out;
					}
					c.attr[QKN_HEADS].i = cfg[k].H;
					c.attr[QKN_KV_HEADS].i = cfg[k].KVH;
					c.attr[QKN_HEAD_DIM].i = cfg[k].D;
					c.attr[QKN_EPS].f = 1e-6;
					c.tol = tol_for(dt, 1e-5);
					c.capture = k == 3 && T == 1 && !inplace;
					c.pdl = k == 0 && T == 33;
					snprintf(c.what, sizeof c.what, "qk_norm %s T %lld heads %lld/%lld "
					         "head_dim %lld of %lld columns%s", dtype_name(dt), (long long)T,
					         (long long)cfg[k].H, (long long)cfg[k].KVH, (long long)cfg[k].D,
					         (long long)cfg[k].C, inplace ? ", in place" : "");
					tcase_run(e, &c);
					if (!inplace)
						tbuf_free(&out);
					tbuf_free(&x);
					tbuf_free(&qw);
					tbuf_free(&kw);
				}
			}
		}
	}
}

static void test_slice(struct env *e)
{
	static const int dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16,
	                              PLAN_DTYPE_I32 };
	/* rows, C, start, W */
	static const int64_t cfg[][4] = { { 7, 96, 32, 40 }, { 3, 3072, 0, 2048 },
	                                  { 3, 3072, 2048, 1024 }, { 5, 33, 32, 1 },
	                                  { 1, 17, 0, 17 } };
	struct tbuf x, out;
	struct tcase c;

	for (int d = 0; d < 4; d++) {
		for (int k = 0; k < 5; k++) {
			for (int shift = 0; shift < 2; shift++) {
				int64_t rows = cfg[k][0], C = cfg[k][1], start = cfg[k][2], W = cfg[k][3];
				tbuf_init(&x, dtypes[d], 2, (const int64_t[]){ rows, C }, shift ? 4 : 0);
				tbuf_init(&out, dtypes[d], 2, (const int64_t[]){ rows, W }, 0);
				if (dtypes[d] == PLAN_DTYPE_I32) {
					for (int64_t i = 0; i < x.numel; i++)
						((int32_t *)x.host)[i] = env_int(e, -100000, 100000);
				} else {
					tbuf_random(e, &x, 3.0f);
				}
				tcase_init(&c, OP_SLICE, 1, 1);
				c.in[0] = &x;
				c.out[0] = &out;
				c.attr[SLICE_START].i = start;
				c.capture = dtypes[d] == PLAN_DTYPE_F16 && k == 0;
				c.pdl = k == 1;
				snprintf(c.what, sizeof c.what, "slice %s [%lld,%lld] columns [%lld,%lld)%s",
				         dtype_name(dtypes[d]), (long long)rows, (long long)C,
				         (long long)start, (long long)(start + W), shift ? " misaligned" : "");
				tcase_run(e, &c);
				tbuf_free(&x);
				tbuf_free(&out);
			}
		}
	}
}

/* argmax over long rows, split across blocks: ties between elements of
 * different blocks go to the first, a NaN anywhere wins, the first NaN
 * first, whatever block finishes last. */
static void test_argmax_split(struct env *e)
{
	static const int64_t shapes[][2] = { { 1, 128256 }, { 3, 32000 }, { 2, 5000 },
	                                     { 1, 1025 } };
	struct tbuf x, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		for (int s = 0; s < 4; s++) {
			for (int pattern = 0; pattern < 4; pattern++) {
				int64_t rows = shapes[s][0], cols = shapes[s][1];
				tbuf_init(&x, dt, 2, shapes[s], 0);
				tbuf_init(&out, PLAN_DTYPE_I32, 1, &rows, 0);
				tbuf_random(e, &x, 1.0f);
				struct op_tensor t = tbuf_view(&x, 0);
				for (int64_t r = 0; r < rows; r++) {
					int64_t b = r * cols;
					/* equal maxima spread over the row, the last first */
					int64_t at[] = { cols - 1, cols / 2 + 1, 1023, 1024, cols / 3, 1017 };
					for (int i = 0; i < 6; i++) {
						if (at[i] >= cols)
							continue;
						if (pattern == 0)
							host_store(&t, b + at[i], 7.0f);
						else if (pattern == 1 && i % 2 == 0)
							host_store(&t, b + at[i], NAN);
						else if (pattern == 2)
							host_store(&t, b + at[i], i == 0 ? INFINITY : 5.0f);
					}
					if (pattern == 3) {
						for (int64_t j = 0; j < cols; j++)
							host_store(&t, b + j, -INFINITY);
					}
				}
				for (int smi = 0; smi < 2; smi++) {
					tcase_init(&c, OP_ARGMAX, 1, 1);
					c.in[0] = &x;
					c.out[0] = &out;
					c.impl = 0;
					c.scratch = op_scratch(&c);
					c.sm_count = smi ? 7 : 0;
					c.pdl = smi;
					c.capture = s == 0 && pattern == 0;
					snprintf(c.what, sizeof c.what, "argmax %s [%lld,%lld] split, %s%s",
					         dtype_name(dt), (long long)rows, (long long)cols,
					         pattern == 0 ? "tied maxima across blocks" :
					         pattern == 1 ? "NaNs across blocks" :
					         pattern == 2 ? "one infinity" : "all -inf",
					         smi ? ", sm_count 7" : "");
					tcase_run(e, &c);
				}
				tbuf_free(&x);
				tbuf_free(&out);
			}
		}
	}
}

/* --- PDL ------------------------------------------------------------------------ */

/* A decode-like chain (embedding, rmsnorm, matmul, matmul_add,
 * add_rmsnorm, matmul_silu_mul, slice, argmax), eager and captured, with
 * PDL off and on: the four runs give the same bits, and the graph captured
 * with PDL holds programmatic edges while the other holds none. */
static int chain_run(struct env *e, struct op_call *calls, int n, void *scratch,
                     size_t scratch_bytes, int pdl, int captured, int *prog_edges, char *msg,
                     size_t len)
{
	struct cuda_op_ctx ctx = e->ctx;
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	int rc = 0;

	ctx.scratch = scratch;
	ctx.scratch_bytes = scratch_bytes;
	ctx.pdl = pdl;
	*prog_edges = 0;
	if (captured)
		CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; rc == 0 && i < n; i++)
		rc = cuda_kernel(calls[i].kind->id)(&calls[i], &ctx, msg, len);
	if (captured) {
		CK(cudaStreamEndCapture(e->stream, &graph));
		if (rc == 0) {
			size_t ne = 0;
			CK(cudaGraphGetEdges(graph, NULL, NULL, NULL, &ne));
			cudaGraphNode_t *from = calloc(ne + 1, sizeof *from), *to = calloc(ne + 1, sizeof *to);
			cudaGraphEdgeData *ed = calloc(ne + 1, sizeof *ed);
			if (!from || !to || !ed)
				bail("out of memory");
			CK(cudaGraphGetEdges(graph, from, to, ed, &ne));
			for (size_t i = 0; i < ne; i++)
				*prog_edges += ed[i].type == cudaGraphDependencyTypeProgrammatic;
			free(from);
			free(to);
			free(ed);
			CK(cudaGraphInstantiate(&exec, graph, 0));
			CK(cudaGraphLaunch(exec, e->stream));
			CK(cudaGraphExecDestroy(exec));
		}
		CK(cudaGraphDestroy(graph));
	}
	CK(cudaStreamSynchronize(e->stream));
	return rc;
}

/*
 * The step's new rows. A product that takes several microseconds (K =
 * 32768) writes the caches' rows kv_len - T .. kv_len - 1, which hold NaN
 * before it, and attention follows it under PDL: the attention kernel
 * starts while the product runs (the "_early" implementations ask L2 for
 * the rows below kv_len - T then). Its output, eager and captured, is the
 * bits of the same implementation launched without PDL over the same
 * caches, and no NaN: it read every new row after the product. 8 heads
 * over 8 kv heads and over 2 (four blocks share each row's lines), split,
 * cluster and their early forms and dsplit, graph-safe and eager, at
 * kv_len 700 and 100: dsplit loads its first round of positions (256 at
 * this head_dim) before the wait up to kv_len - T, so at 100 the new rows
 * are among the rows of a round it loads on both sides of the wait.
 */
static void test_attention_new_rows(struct env *e)
{
	const int64_t H = 8, D = 64, S = 1024, KB = 32768;
	const int dt = PLAN_DTYPE_F16;
	static const int64_t Ts[] = { 1, 3, 1, 3 }, KVHs[] = { 8, 8, 2, 2 }, kvs[] = { 700, 100 };
	const int nt = (int)(sizeof Ts / sizeof Ts[0]), nkv = (int)(sizeof kvs / sizeof kvs[0]);

	for (int ti = 0; ti < nt * nkv; ti++) {
		const int64_t kv = kvs[ti / nt];
		const int64_t T = Ts[ti % nt], KVH = KVHs[ti % nt], W = KVH * D;
		struct attn_cfg cfg = { T, H, KVH, D, S, 0.0, 0 };
		struct attn_bufs ab;
		struct tbuf x, wk, wv;
		const size_t es = 2, row0 = (size_t)(kv - T) * (size_t)W * es;
		const size_t newb = (size_t)T * (size_t)W * es;
		int32_t kv32 = (int32_t)kv;

		attn_bufs_init(e, &ab, dt, &cfg);
		tbuf_init(&x, dt, 2, (const int64_t[]){ T, KB }, 0);
		tbuf_init(&wk, dt, 2, (const int64_t[]){ W, KB }, 0);
		tbuf_init(&wv, dt, 2, (const int64_t[]){ W, KB }, 0);
		tbuf_random(e, &x, 0.05f);
		tbuf_random(e, &wk, 0.05f);
		tbuf_random(e, &wv, 0.05f);
		struct tbuf *ups[] = { &ab.q, &ab.k, &ab.v, &x, &wk, &wv };
		for (int i = 0; i < 6; i++)
			tbuf_upload(ups[i]);
		CK(cudaMemcpy(ab.kv_dev, &kv32, sizeof kv32, cudaMemcpyHostToDevice));

		static const char *const inames[] = { "split", "cluster", "split_early",
			                              "cluster_early", "cluster4", "cluster2",
			                              "cluster8", "dsplit", "dsplit_early" };
		for (int ii = 0; ii < (int)(sizeof inames / sizeof inames[0]); ii++) {
			const int impl = impl_named(OP_ATTENTION, inames[ii]);
			for (int gs = 0; gs < 2; gs++) {
				struct op_call calls[3];
				void *want = malloc(ab.out.bytes), *got = malloc(ab.out.bytes);
				char msg[256] = "";
				size_t scratch_bytes;
				void *scratch;
				int rc = 0, same = 1, finite = 1;

				if (want == NULL || got == NULL)
					bail("out of memory");
				memset(calls, 0, sizeof calls);
				for (int i = 0; i < 2; i++) {
					calls[i].kind = kind_stub(OP_MATMUL);
					calls[i].nin = 2;
					calls[i].nout = 1;
					calls[i].in[0] = tbuf_view(&x, 1);
					calls[i].in[1] = tbuf_view(i ? &wv : &wk, 1);
					calls[i].out[0] = tbuf_view(i ? &ab.v : &ab.k, 1);
					calls[i].out[0].dim[0] = T;
					calls[i].out[0].data = (char *)calls[i].out[0].data + row0;
					calls[i].attr[MATMUL_TRANS_B].i = 1;
					calls[i].const_in = 2u;
					calls[i].impl = first_usable(OP_MATMUL, &calls[i]);
				}
				calls[2].kind = kind_stub(OP_ATTENTION);
				calls[2].nin = 3;
				calls[2].nout = 1;
				calls[2].in[0] = tbuf_view(&ab.q, 1);
				calls[2].in[1] = tbuf_view(&ab.k, 1);
				calls[2].in[2] = tbuf_view(&ab.v, 1);
				calls[2].out[0] = tbuf_view(&ab.out, 1);
				calls[2].attr[ATTN_HEADS].i = H;
				calls[2].attr[ATTN_KV_HEADS].i = KVH;
				calls[2].attr[ATTN_HEAD_DIM].i = D;
				calls[2].attr[ATTN_KV_LEN].i = kv;
				calls[2].graph_safe = gs;
				if (gs)
					calls[2].attr_dev[ATTN_KV_LEN] = ab.kv_dev;
				calls[2].impl = impl;
				scratch_bytes = cuda_op_scratch_bytes(&calls[2]);
				for (int i = 0; i < 2; i++) {
					size_t b = cuda_op_scratch_bytes(&calls[i]);
					scratch_bytes = b > scratch_bytes ? b : scratch_bytes;
				}
				scratch = scratch_alloc(scratch_bytes);
				/* run 0: without PDL; 1, 2: under PDL, eager and
				 * captured; every run from NaN new rows */
				for (int run = 0; run < 3 && rc == 0; run++) {
					int prog = 0;
					CK(cudaMemset((char *)ab.k.dev + row0, 0xff, newb));
					CK(cudaMemset((char *)ab.v.dev + row0, 0xff, newb));
					CK(cudaMemset(ab.out.dev, POISON_DEV, ab.out.bytes));
					CK(cudaDeviceSynchronize());
					rc = chain_run(e, calls, 3, scratch, scratch_bytes, run > 0, run == 2,
					               &prog, msg, sizeof msg);
					CK(cudaMemcpy(run == 0 ? want : got, ab.out.dev, ab.out.bytes,
					              cudaMemcpyDeviceToHost));
					if (run > 0 && memcmp(want, got, ab.out.bytes) != 0) {
						struct op_tensor tw = tbuf_view(&ab.out, 0), tg = tw;
						int64_t n = 0, at = -1;
						tw.data = want;
						tg.data = got;
						for (int64_t i = 0; i < ab.out.numel; i++)
							if (host_load(&tw, i) != host_load(&tg, i) && (n++, at < 0))
								at = i;
						diag("run %d: %lld of %lld elements differ, the first %lld: %g "
						     "against %g", run, (long long)n, (long long)ab.out.numel,
						     (long long)at, at >= 0 ? host_load(&tg, at) : 0.0,
						     at >= 0 ? host_load(&tw, at) : 0.0);
						same = 0;
					}
				}
				for (int64_t i = 0; i < ab.out.numel; i++) {
					struct op_tensor t = tbuf_view(&ab.out, 0);
					t.data = want;
					finite &= isfinite(host_load(&t, i));
				}
				ok(rc == 0 && same && finite, "attention %s %s T %lld heads %lld/%lld after a "
				   "product that writes rows %lld..%lld: under PDL, eager and captured, the "
				   "bits without PDL%s%s%s", cuda_impl_name(OP_ATTENTION, impl),
				   gs ? "graph-safe" : "eager", (long long)T, (long long)H, (long long)KVH,
				   (long long)(kv - T), (long long)(kv - 1),
				   finite ? "" : " (the launch without PDL read NaN)", rc ? ": " : "",
				   rc ? msg : "");
				if (scratch)
					CK(cudaFree(scratch));
				free(want);
				free(got);
			}
		}
		tbuf_free(&x);
		tbuf_free(&wk);
		tbuf_free(&wv);
		attn_bufs_free(&ab);
	}
}

static void test_pdl(struct env *e)
{
	const int64_t T = 3, V = 500, H = 256, F = 512;
	struct tbuf table, ids, h, hn, wn, wq, q, wo, wgu, g, wd, res, sl, am;
	struct op_call calls[8];
	struct tbuf *outs[] = { &h, &hn, &q, &res, &g, &sl, &am };
	const int nouts = (int)(sizeof outs / sizeof outs[0]);
	void *want[8], *got;
	char msg[256] = "";
	size_t scratch_bytes = 0;
	void *scratch;
	int dt = PLAN_DTYPE_F16;

	tbuf_init(&table, dt, 2, (const int64_t[]){ V, H }, 0);
	tbuf_init(&ids, PLAN_DTYPE_I32, 1, &T, 0);
	tbuf_init(&h, dt, 2, (const int64_t[]){ T, H }, 0);
	tbuf_init(&hn, dt, 2, (const int64_t[]){ T, H }, 0);
	tbuf_init(&wn, dt, 1, &H, 0);
	tbuf_init(&wq, dt, 2, (const int64_t[]){ H, H }, 0);
	tbuf_init(&q, dt, 2, (const int64_t[]){ T, H }, 0);
	tbuf_init(&wo, dt, 2, (const int64_t[]){ H, H }, 0);
	tbuf_init(&res, dt, 2, (const int64_t[]){ T, H }, 0);
	tbuf_init(&wgu, dt, 2, (const int64_t[]){ 2 * F, H }, 0);
	tbuf_init(&g, dt, 2, (const int64_t[]){ T, F }, 0);
	tbuf_init(&wd, dt, 2, (const int64_t[]){ V, F }, 0);
	tbuf_init(&sl, dt, 2, (const int64_t[]){ T, 100 }, 0);
	tbuf_init(&am, PLAN_DTYPE_I32, 1, &T, 0);
	tbuf_random(e, &table, 1.0f);
	tbuf_random(e, &wn, 1.5f);
	tbuf_random(e, &wq, 0.1f);
	tbuf_random(e, &wo, 0.1f);
	tbuf_random(e, &wgu, 0.1f);
	tbuf_random(e, &wd, 0.1f);
	for (int64_t t = 0; t < T; t++)
		((int32_t *)ids.host)[t] = env_int(e, 0, (int32_t)V);
	struct tbuf *ups[] = { &table, &ids, &wn, &wq, &wo, &wgu, &wd };
	for (int i = 0; i < 7; i++)
		tbuf_upload(ups[i]);

	/* Operands by hand: tcase holds one launch. */
	memset(calls, 0, sizeof calls);
#define CALL(i, id_, ni, no) (calls[i].kind = kind_stub(id_), calls[i].nin = ni, calls[i].nout = no)
	CALL(0, OP_EMBEDDING, 2, 1);
	calls[0].in[0] = tbuf_view(&table, 1);
	calls[0].in[1] = tbuf_view(&ids, 1);
	calls[0].out[0] = tbuf_view(&h, 1);
	CALL(1, OP_RMSNORM, 2, 1);
	calls[1].in[0] = tbuf_view(&h, 1);
	calls[1].in[1] = tbuf_view(&wn, 1);
	calls[1].out[0] = tbuf_view(&hn, 1);
	calls[1].attr[NORM_EPS].f = 1e-6;
	CALL(2, OP_MATMUL, 2, 1);
	calls[2].in[0] = tbuf_view(&hn, 1);
	calls[2].in[1] = tbuf_view(&wq, 1);
	calls[2].out[0] = tbuf_view(&q, 1);
	calls[2].attr[MATMUL_TRANS_B].i = 1;
	CALL(3, OP_MATMUL_ADD, 3, 1);
	calls[3].in[0] = tbuf_view(&h, 1);
	calls[3].in[1] = tbuf_view(&q, 1);
	calls[3].in[2] = tbuf_view(&wo, 1);
	calls[3].out[0] = tbuf_view(&h, 1);
	calls[3].attr[MATMUL_TRANS_B].i = 1;
	CALL(4, OP_ADD_RMSNORM, 3, 2);
	calls[4].in[0] = tbuf_view(&h, 1);
	calls[4].in[1] = tbuf_view(&q, 1);
	calls[4].in[2] = tbuf_view(&wn, 1);
	calls[4].out[0] = tbuf_view(&res, 1);
	calls[4].out[1] = tbuf_view(&hn, 1);
	calls[4].attr[NORM_EPS].f = 1e-6;
	CALL(5, OP_MATMUL_SILU_MUL, 2, 1);
	calls[5].in[0] = tbuf_view(&hn, 1);
	calls[5].in[1] = tbuf_view(&wgu, 1);
	calls[5].out[0] = tbuf_view(&g, 1);
	calls[5].attr[MATMUL_TRANS_B].i = 1;
	CALL(6, OP_SLICE, 1, 1);
	calls[6].in[0] = tbuf_view(&g, 1);
	calls[6].out[0] = tbuf_view(&sl, 1);
	calls[6].attr[SLICE_START].i = 7;
	CALL(7, OP_ARGMAX, 1, 1);
	calls[7].in[0] = tbuf_view(&g, 1);
	calls[7].out[0] = tbuf_view(&am, 1);
#undef CALL
	for (int i = 0; i < 8; i++) {
		calls[i].impl = first_usable(calls[i].kind->id, &calls[i]);
		size_t b = cuda_op_scratch_bytes(&calls[i]);
		scratch_bytes = b > scratch_bytes ? b : scratch_bytes;
	}
	is_int(calls[2].impl, 0, "the chain's matmul runs on mma");
	scratch = scratch_alloc(scratch_bytes);

	for (int run = 0; run < 4; run++) {
		int pdl = run & 1, captured = run >> 1, prog = 0, rc, same = 1;
		for (int o = 0; o < nouts; o++)
			CK(cudaMemset(outs[o]->dev, POISON_DEV, outs[o]->bytes));
		CK(cudaDeviceSynchronize());
		rc = chain_run(e, calls, 8, scratch, scratch_bytes, pdl, captured, &prog, msg,
		               sizeof msg);
		for (int o = 0; o < nouts; o++) {
			got = malloc(outs[o]->bytes);
			if (!got)
				bail("out of memory");
			CK(cudaMemcpy(got, outs[o]->dev, outs[o]->bytes, cudaMemcpyDeviceToHost));
			if (run == 0)
				want[o] = got;
			else {
				same &= memcmp(got, want[o], outs[o]->bytes) == 0;
				free(got);
			}
		}
		same &= scratch_counters_zero(scratch, scratch_bytes);
		ok(rc == 0 && (run == 0 || same), "a decode-like chain, %s, PDL %s: %s%s%s",
		   captured ? "captured" : "eager", pdl ? "on" : "off",
		   run == 0 ? "runs" : "the same bits as eager without PDL", rc ? ": " : "",
		   rc ? msg : "");
		if (captured && pdl)
			ok(prog > 0, "the graph captured with PDL has programmatic edges (%d)", prog);
		if (captured && !pdl)
			is_int(prog, 0, "the graph captured without PDL has no programmatic edge");
	}
	/* The first run's values against the host running the same chain
	 * (argmax aside: a last-bit difference upstream may move a near tie). */
	{
		struct tbuf *all[] = { &table, &ids, &h, &hn, &wn, &wq, &q, &wo, &wgu, &g, &wd, &res,
		                       &sl, &am };
		struct tbuf *hs[] = { &h, &hn, &q, &res, &g, &sl };
		int pass = 1;
		char why[320] = "";
		for (int i = 0; i < 7; i++) {
			struct op_call hc = calls[i];
			for (int k = 0; k < hc.nin + hc.nout; k++) {
				struct op_tensor *t = k < hc.nin ? &hc.in[k] : &hc.out[k - hc.nin];
				for (int b = 0; b < 14; b++)
					if (t->data == all[b]->dev)
						t->data = all[b]->host;
			}
			hc.kind = NULL;
			ref_run(calls[i].kind->id, &hc);
		}
		for (int o = 0; pass && o < 6; o++)
			pass = tbuf_compare(hs[o], want[o], 3e-2, why, sizeof why);
		ok(pass, "the chain's values are the host's (within f16 bounds)");
		if (!pass)
			diag("  %s", why);
	}
	for (int o = 0; o < nouts; o++)
		free(want[o]);
	if (scratch)
		CK(cudaFree(scratch));
	struct tbuf *all[] = { &table, &ids, &h, &hn, &wn, &wq, &q, &wo, &wgu, &g, &wd, &res, &sl,
	                       &am };
	for (int i = 0; i < 14; i++)
		tbuf_free(all[i]);
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

/* A rank's share of a split tensor: the device computes the host's bytes
 * (host_init_range_slice, itself checked against the whole tensor in
 * t/unit/host-ops.c). [7, 24, 33] split on axis 1 in blocks 8 | 8 | 8 of
 * which the share holds 2..5, 6..7 and 0..2. */
static void test_init_slice(struct env *e)
{
	const int dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_I32 };
	struct bcg_slice s = { .inner = 33, .share = 4 + 2 + 3, .full = 24, .nblocks = 3,
	                       .at = { 0, 4, 6 }, .from = { 2, 8 + 6, 16 + 0 } };
	const struct plan_init inits[] = {
		{ .kind = PLAN_INIT_RANDOM, .seed = e->seed ^ 0x711u, .scale = 0.37 },
		{ .kind = PLAN_INIT_ARANGE, .value = -3.25, .scale = 0.37 },
		{ .kind = PLAN_INIT_CONST, .value = 1.5 },
	};
	int64_t count = 7 * 9 * 33;

	for (int d = 0; d < 4; d++)
		for (int k = 0; k < 3; k++) {
			struct tbuf b;
			char msg[256] = "";
			void *got;
			int rc;
			tbuf_init(&b, dtypes[d], 1, &count, 0);
			host_init_range_slice(b.host, dtypes[d], 0, (uint64_t)count, &inits[k], &s);
			rc = cuda_init_slice(b.dev, dtypes[d], (uint64_t)count, &inits[k], &s, e->stream,
			                     msg, sizeof msg);
			CK(cudaStreamSynchronize(e->stream));
			got = malloc(b.bytes);
			if (!got)
				bail("out of memory");
			CK(cudaMemcpy(got, b.dev, b.bytes, cudaMemcpyDeviceToHost));
			ok(rc == 0 && memcmp(got, b.host, b.bytes) == 0, "init of a share, %s kind %d: "
			   "the host's bytes%s%s", dtype_name(dtypes[d]), inits[k].kind, rc ? ": " : "",
			   rc ? msg : "");
			free(got);
			tbuf_free(&b);
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

/* --- mixture of experts ----------------------------------------------------- */

/* moe_router against host-moe.c: the ids bit for bit, the weights within
 * the bound. Shapes 3 and 4 plant ties: logits on a grid of halves, so
 * that many experts of a row share a value (equal logits give equal
 * weights on either side, so ties stay ties after the softmax), and -0
 * beside +0, which compare equal: the lower expert must win every tie. */
static void test_moe_router(struct env *e)
{
	static const int64_t shapes[][3] = {
		{ 37, 128, 8 }, { 5, 8, 2 }, { 1, 60, 16 }, { 1, 128, 8 }, { 16, 128, 8 },
	};
	struct tbuf lg, ids, w, slots;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++)
		for (int s = 0; s < 5; s++)
			for (int mode = 0; mode < 4; mode++) {
				int dt = float_dtypes[d], paged = s == 1 && mode == 1, ties = s >= 3;
				int64_t t = shapes[s][0], ne = shapes[s][1], k = shapes[s][2];
				tbuf_init(&lg, dt, 2, (const int64_t[]){ t, ne }, 0);
				tbuf_init(&ids, PLAN_DTYPE_I32, 2, (const int64_t[]){ t, k }, 0);
				tbuf_init(&w, PLAN_DTYPE_F32, 2, (const int64_t[]){ t, k }, 0);
				tbuf_init(&slots, PLAN_DTYPE_I32, 1, &t, 0);
				tbuf_random(e, &lg, 3.0f);
				if (ties) {
					struct op_tensor v = tbuf_view(&lg, 0);
					for (int64_t i = 0; i < lg.numel; i++) {
						float q = roundf(host_load(&v, i) * 2.0f) / 2.0f;
						host_store(&v, i, q == 0.0f ? (i % 2 ? -0.0f : 0.0f) : q);
					}
				}
				for (int64_t i = 0; i < t; i++)
					((int32_t *)slots.host)[i] = i % 2 ? -1 : (int32_t)i;
				tcase_init(&c, paged ? OP_MOE_ROUTER_PAGED : OP_MOE_ROUTER, paged ? 2 : 1, 2);
				c.in[0] = &lg;
				c.in[1] = &slots;
				c.out[0] = &ids;
				c.out[1] = &w;
				c.attr[MOE_TOP_K].i = k;
				c.attr[MOE_RENORM].i = mode & 1;
				c.attr[MOE_TOPK_FIRST].i = mode >> 1;
				c.tol = 1e-5;
				c.exact_outs = 1u;
				c.capture = (s == 0 || s == 3) && mode == 1;
				c.pdl = s >= 3 && mode >= 2;
				snprintf(c.what, sizeof c.what, "moe_router%s %s [%lld,%lld] top %lld renorm %d "
				         "topk_first %d%s", paged ? "_paged" : "", dtype_name(dt), (long long)t,
				         (long long)ne, (long long)k, mode & 1, mode >> 1,
				         ties ? ", ties planted" : "");
				tcase_run(e, &c);
				tbuf_free(&lg);
				tbuf_free(&ids);
				tbuf_free(&w);
				tbuf_free(&slots);
			}
}

/* The routers' NaN check: logits that give NaN weights flag their lowest
 * row, eagerly and from a captured graph; the check reads the flag once;
 * a padded row flags nothing, whatever its logits; clean logits none. */
static void test_moe_router_nan(struct env *e)
{
	struct tbuf lg, ids, w, slots;
	struct tcase c;
	struct op_call call;
	char msg[256] = "";
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	int rc;

	msg[0] = '\0';
	rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
	ok(rc == 0, "moe_router NaN check: nothing flagged by the clean routers before (%s)", msg);

	tbuf_init(&lg, PLAN_DTYPE_F32, 2, (const int64_t[]){ 6, 16 }, 0);
	tbuf_init(&ids, PLAN_DTYPE_I32, 2, (const int64_t[]){ 6, 4 }, 0);
	tbuf_init(&w, PLAN_DTYPE_F32, 2, (const int64_t[]){ 6, 4 }, 0);
	tbuf_init(&slots, PLAN_DTYPE_I32, 1, (const int64_t[]){ 6 }, 0);
	tbuf_random(e, &lg, 3.0f);
	tbuf_upload(&lg);
	tcase_init(&c, OP_MOE_ROUTER, 1, 2);
	c.in[0] = &lg;
	c.in[1] = &slots;
	c.out[0] = &ids;
	c.out[1] = &w;
	c.attr[MOE_TOP_K].i = 4;
	c.attr[MOE_RENORM].i = 1;
	tcase_call(&c, &call, 1);
	rc = cuda_kernel(OP_MOE_ROUTER)(&call, &e->ctx, msg, sizeof msg);
	ok(rc == 0, "moe_router NaN check: clean logits launch (%s)", msg);
	msg[0] = '\0';
	rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
	ok(rc == 0 && msg[0] == '\0', "moe_router NaN check: clean logits flag nothing (%s)", msg);

	/* NaN in rows 4 and 2 (softmax after top-k: NaN goes first) */
	((float *)lg.host)[4 * 16 + 7] = NAN;
	((float *)lg.host)[2 * 16 + 0] = NAN;
	tbuf_upload(&lg);
	for (int tf = 0; tf < 2; tf++) {
		c.attr[MOE_TOPK_FIRST].i = tf;
		tcase_call(&c, &call, 1);
		rc = cuda_kernel(OP_MOE_ROUTER)(&call, &e->ctx, msg, sizeof msg);
		ok(rc == 0, "moe_router NaN check: the launch itself succeeds (%s)", msg);
		msg[0] = '\0';
		rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
		ok(rc == -1 && strcmp(msg, "kernel fault: moe_router: the logits of row 2 give NaN "
		                           "weights (no expert can be chosen)") == 0,
		   "moe_router NaN check (topk_first %d): the lowest NaN row named", tf);
		diag("  message: %s", msg);
		msg[0] = '\0';
		rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
		ok(rc == 0, "moe_router NaN check: read once, then clear (%s)", msg);
	}

	/* paged: row 2 padded (its NaN routes nowhere), row 4 real */
	for (int64_t i = 0; i < 6; i++)
		((int32_t *)slots.host)[i] = i == 2 ? -1 : (int32_t)i;
	tbuf_upload(&slots);
	c.id = OP_MOE_ROUTER_PAGED;
	c.nin = 2;
	tcase_call(&c, &call, 1);
	CK(cudaStreamSynchronize(e->stream));
	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc = cuda_kernel(OP_MOE_ROUTER_PAGED)(&call, &e->ctx, msg, sizeof msg);
	CK(cudaStreamEndCapture(e->stream, &graph));
	ok(rc == 0, "moe_router_paged NaN check: the router captures (%s)", msg);
	CK(cudaGraphInstantiate(&exec, graph, 0));
	for (int rep = 0; rep < 2; rep++) {
		CK(cudaGraphLaunch(exec, e->stream));
		msg[0] = '\0';
		rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
		ok(rc == -1 && strcmp(msg, "kernel fault: moe_router_paged: the logits of row 4 give "
		                           "NaN weights (no expert can be chosen)") == 0,
		   "moe_router_paged NaN check: a graph launch %d flags row 4, not the padded row 2",
		   rep + 1);
		diag("  message: %s", msg);
	}
	((int32_t *)slots.host)[4] = -1;
	tbuf_upload(&slots);
	CK(cudaGraphLaunch(exec, e->stream));
	msg[0] = '\0';
	rc = cuda_moe_router_fault(e->stream, msg, sizeof msg);
	ok(rc == 0, "moe_router_paged NaN check: every NaN row padded, nothing flagged (%s)", msg);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	tbuf_free(&lg);
	tbuf_free(&ids);
	tbuf_free(&w);
	tbuf_free(&slots);
}

/* The expert ids of a moe_experts case: K a row, distinct in a row unless
 * REPEATS (then a row may name an expert several times, so that a group
 * holds more pairs than a chunk of the small path), row 2 routed nowhere
 * (ids -1, as moe_router_paged gives padded rows) when T > 2. */
static void moe_ids(struct env *e, struct tbuf *ids, int64_t t, int64_t ne, int64_t k,
                    int repeats)
{
	for (int64_t r = 0; r < t; r++)
		for (int64_t q = 0; q < k; q++) {
			int32_t id;
			int dup;
			do {
				id = env_int(e, 0, (int32_t)ne);
				dup = 0;
				for (int64_t p = 0; p < q && !repeats; p++)
					dup |= ((int32_t *)ids->host)[r * k + p] == id;
			} while (dup);
			((int32_t *)ids->host)[r * k + q] = t > 2 && r == 2 ? -1 : id;
		}
}

/* The shapes of the moe_experts cases: T, H, E, I, K, flags. T*K <= 64
 * with rows of whole 16-byte pieces runs the small path (gate_up_small,
 * down_small), the rest the grouped products and combine. */
#define MOE_REPEATS 1                   /* ids may repeat within a row */
#define MOE_PDL     2                   /* launched with PDL */
#define MOE_SHIFT   4                   /* x an element off 16 bytes: the grouped products */
static const int64_t moe_shapes[][6] = {
	{ 1, 256, 128, 96, 8, 0 },
	{ 1, 2048, 128, 768, 8, MOE_PDL },      /* the Qwen3-30B-A3B sample's layer */
	{ 1, 128, 8, 64, 8, MOE_REPEATS },      /* a group of several pairs at T=1 */
	{ 2, 512, 64, 128, 8, 0 },
	{ 2, 128, 4, 64, 4, MOE_REPEATS | MOE_PDL },
	{ 7, 64, 16, 48, 4, 0 },
	{ 8, 512, 64, 128, 8, MOE_PDL },        /* 64 pairs: the small path's last */
	{ 9, 512, 64, 128, 8, 0 },              /* 72 pairs: the grouped products */
	{ 64, 128, 32, 64, 8, MOE_PDL },
	{ 1, 256, 16, 64, 4, MOE_SHIFT },
	{ 3, 37, 3, 30, 2, 0 },                 /* rows no vector divides: the scalar loads */
};
#define N_MOE_SHAPES ((int)(sizeof moe_shapes / sizeof moe_shapes[0]))

struct moe_bufs {
	struct tbuf x, ids, w, gu, dn, out;
};

static void moe_bufs_init(struct env *e, struct moe_bufs *mb, int dt, const int64_t *sh)
{
	int64_t t = sh[0], h = sh[1], ne = sh[2], inter = sh[3], k = sh[4];

	tbuf_init(&mb->x, dt, 2, (const int64_t[]){ t, h }, sh[5] & MOE_SHIFT ? dtype_size(dt) : 0);
	tbuf_init(&mb->ids, PLAN_DTYPE_I32, 2, (const int64_t[]){ t, k }, 0);
	tbuf_init(&mb->w, PLAN_DTYPE_F32, 2, (const int64_t[]){ t, k }, 0);
	tbuf_init(&mb->gu, dt, 2, (const int64_t[]){ ne * 2 * inter, h }, 0);
	tbuf_init(&mb->dn, dt, 2, (const int64_t[]){ ne * h, inter }, 0);
	tbuf_init(&mb->out, dt, 2, (const int64_t[]){ t, h }, 0);
	tbuf_random(e, &mb->x, 1.0f);
	tbuf_random(e, &mb->w, 1.0f);
	tbuf_random(e, &mb->gu, 0.2f);
	tbuf_random(e, &mb->dn, 0.2f);
	moe_ids(e, &mb->ids, t, ne, k, (sh[5] & MOE_REPEATS) != 0);
}

static void moe_bufs_free(struct moe_bufs *mb)
{
	tbuf_free(&mb->x);
	tbuf_free(&mb->ids);
	tbuf_free(&mb->w);
	tbuf_free(&mb->gu);
	tbuf_free(&mb->dn);
	tbuf_free(&mb->out);
}

static void moe_case_init(struct tcase *c, struct moe_bufs *mb, int64_t ne, int form)
{
	tcase_init(c, OP_MOE_EXPERTS, 5, 1);
	c->in[0] = &mb->x;
	c->in[1] = &mb->ids;
	c->in[2] = &mb->w;
	c->in[3] = &mb->gu;
	c->in[4] = &mb->dn;
	c->out[0] = &mb->out;
	c->attr[MOE_EXPERTS].i = ne;
	c->graph_safe = form;
	c->scratch = op_scratch(c);
}

/* moe_experts in both forms against host-moe.c, and the two forms against
 * each other bit for bit; the graph-safe form also captured; some shapes
 * launched with PDL. */
static void test_moe_experts(struct env *e)
{
	struct moe_bufs mb;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++)
		for (int s = 0; s < N_MOE_SHAPES; s++) {
			const int64_t *sh = moe_shapes[s];
			int dt = float_dtypes[d];
			void *got[2];
			moe_bufs_init(e, &mb, dt, sh);
			for (int form = 0; form < 2; form++) {
				got[form] = malloc(mb.out.bytes + 16);
				if (!got[form])
					bail("out of memory");
				moe_case_init(&c, &mb, sh[2], form);
				c.capture = form == 1;
				c.pdl = (sh[5] & MOE_PDL) != 0;
				c.tol = tol_for(dt, 1e-5);
				c.got[0] = got[form];
				snprintf(c.what, sizeof c.what, "moe_experts %s T=%lld H=%lld E=%lld I=%lld "
				         "K=%lld%s%s, %s form", dtype_name(dt), (long long)sh[0],
				         (long long)sh[1], (long long)sh[2], (long long)sh[3],
				         (long long)sh[4], sh[5] & MOE_REPEATS ? ", ids repeating" : "",
				         sh[5] & MOE_SHIFT ? ", x misaligned" : "",
				         form ? "graph-safe" : "eager");
				tcase_run(e, &c);
			}
			ok(memcmp(got[0], got[1], mb.out.bytes) == 0, "moe_experts %s T=%lld H=%lld "
			   "E=%lld: the eager and the graph-safe form give the same bytes",
			   dtype_name(dt), (long long)sh[0], (long long)sh[1], (long long)sh[2]);
			free(got[0]);
			free(got[1]);
			moe_bufs_free(&mb);
		}
}

/* moe_experts with its residual r, in both forms, out of place and in
 * place (out is r): the device's bytes are those of the device's
 * moe_experts without r, then add (r, moe) (the add kind's arithmetic,
 * run on the host over the device's moe bytes: one f32 add, rounded);
 * within the bounds of the host reference too. The graph-safe form is
 * also captured. Shapes of the small path (T*K <= 64) and of the grouped
 * products' combine. */
static void test_moe_experts_residual(struct env *e)
{
	static const int shapes[] = { 0, 1, 2, 4, 6, 7, 8, 9, 10 };

	for (int d = 0; d < N_FLOAT_DTYPES; d++)
		for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
			const int64_t *sh = moe_shapes[shapes[si]];
			int dt = float_dtypes[d];
			struct moe_bufs mb;
			struct tbuf r;
			struct tcase c;
			struct op_tensor ins[2], want;
			void *moe, *keep, *got;

			moe_bufs_init(e, &mb, dt, sh);
			tbuf_init(&r, dt, 2, (const int64_t[]){ sh[0], sh[1] }, 0);
			tbuf_random(e, &r, 4.0f);
			moe = malloc(mb.out.bytes + 16);
			keep = malloc(r.bytes + 16);
			got = malloc(r.bytes + 16);
			want.data = malloc(r.bytes + 16);
			if (!moe || !keep || !got || !want.data)
				bail("out of memory");
			memcpy(keep, r.host, r.bytes);
			for (int form = 0; form < 2; form++) {
				/* the unfused pair: the device's moe, then add on the host */
				moe_case_init(&c, &mb, sh[2], form);
				c.pdl = (sh[5] & MOE_PDL) != 0;
				c.tol = tol_for(dt, 1e-5);
				c.got[0] = moe;
				snprintf(c.what, sizeof c.what, "moe_experts %s T=%lld H=%lld E=%lld, %s "
				         "form: the unfused experts", dtype_name(dt), (long long)sh[0],
				         (long long)sh[1], (long long)sh[2], form ? "graph-safe" : "eager");
				tcase_run(e, &c);
				ins[0] = tbuf_view(&r, 0);
				ins[0].data = keep;
				ins[1] = tbuf_view(&mb.out, 0);
				ins[1].data = moe;
				want.dtype = dt;
				want.rank = 2;
				want.dim[0] = sh[0];
				want.dim[1] = sh[1];
				host_run(OP_ADD, ins, 2, &want, 1, NULL);
				for (int inplace = 0; inplace < 2; inplace++)
					for (int cap = 0; cap <= form; cap++) {
						memcpy(r.host, keep, r.bytes);
						moe_case_init(&c, &mb, sh[2], form);
						c.nin = 6;
						c.in[5] = &r;
						c.out[0] = inplace ? &r : &mb.out;
						c.pdl = (sh[5] & MOE_PDL) != 0;
						c.tol = tol_for(dt, 1e-5);
						c.got[0] = got;
						snprintf(c.what, sizeof c.what, "moe_experts %s T=%lld H=%lld E=%lld "
						         "with a residual%s, %s form", dtype_name(dt),
						         (long long)sh[0], (long long)sh[1], (long long)sh[2],
						         inplace ? " in place" : "", form ? "graph-safe" : "eager");
						tcase_run_once(e, &c, cap);
						ok(memcmp(got, want.data, r.bytes) == 0, "moe_experts %s T=%lld "
						   "H=%lld E=%lld with a residual%s, %s form%s: the bytes of "
						   "moe_experts then add", dtype_name(dt), (long long)sh[0],
						   (long long)sh[1], (long long)sh[2], inplace ? " in place" : "",
						   form ? "graph-safe" : "eager", cap ? " (captured)" : "");
					}
			}
			free(moe);
			free(keep);
			free(got);
			free(want.data);
			tbuf_free(&r);
			moe_bufs_free(&mb);
		}
}

/* The graph-safe form captured twice in one graph, PDL off and on, and the
 * graph replayed four times over a poisoned output: every replay gives the
 * bytes of an uncaptured launch, and the scratch counters end at zero. */
static void test_moe_replays(struct env *e)
{
	static const int shapes[] = { 0, 1, 3, 4, 6, 8 };      /* T = 1, 1, 2, 2, 8, 64 */
	static const int dts[] = { PLAN_DTYPE_BF16, PLAN_DTYPE_F32 };

	for (int d = 0; d < 2; d++)
		for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++) {
			const int64_t *sh = moe_shapes[shapes[s]];
			struct moe_bufs mb;
			struct tcase c;
			struct op_call call;
			struct cuda_op_ctx ctx = e->ctx;
			char msg[256] = "";
			int same, rc = 0;

			moe_bufs_init(e, &mb, dts[d], sh);
			tbuf_upload(&mb.x);
			tbuf_upload(&mb.ids);
			tbuf_upload(&mb.w);
			tbuf_upload(&mb.gu);
			tbuf_upload(&mb.dn);
			moe_case_init(&c, &mb, sh[2], 1);
			tcase_call(&c, &call, 1);
			ctx.scratch = scratch_alloc(c.scratch);
			ctx.scratch_bytes = c.scratch;
			same = replays_give_uncaptured(e, c.id, &call, &ctx, &mb.out, &rc, msg, sizeof msg);
			same &= scratch_counters_zero(ctx.scratch, c.scratch);
			ok(rc == 0 && same, "moe_experts graph-safe %s T=%lld H=%lld E=%lld I=%lld: graph "
			   "replays, PDL off and on, give the uncaptured launch's bytes%s%s",
			   dtype_name(dts[d]), (long long)sh[0], (long long)sh[1], (long long)sh[2],
			   (long long)sh[3], rc ? ": " : "", rc ? msg : "");
			if (ctx.scratch)
				CK(cudaFree(ctx.scratch));
			moe_bufs_free(&mb);
		}
}

/* The eager form reads counts on the host: inside a capture it refuses. */
static void test_moe_eager_capture(struct env *e)
{
	struct tbuf x, ids, w, gu, dn, out;
	struct tcase c;
	struct op_call call;
	struct cuda_op_ctx ctx = e->ctx;
	char msg[256] = "";
	cudaGraph_t graph = NULL;
	int rc;

	tbuf_init(&x, PLAN_DTYPE_F32, 2, (const int64_t[]){ 2, 32 }, 0);
	tbuf_init(&ids, PLAN_DTYPE_I32, 2, (const int64_t[]){ 2, 1 }, 0);
	tbuf_init(&w, PLAN_DTYPE_F32, 2, (const int64_t[]){ 2, 1 }, 0);
	tbuf_init(&gu, PLAN_DTYPE_F32, 2, (const int64_t[]){ 2 * 2 * 8, 32 }, 0);
	tbuf_init(&dn, PLAN_DTYPE_F32, 2, (const int64_t[]){ 2 * 32, 8 }, 0);
	tbuf_init(&out, PLAN_DTYPE_F32, 2, (const int64_t[]){ 2, 32 }, 0);
	tcase_init(&c, OP_MOE_EXPERTS, 5, 1);
	c.in[0] = &x;
	c.in[1] = &ids;
	c.in[2] = &w;
	c.in[3] = &gu;
	c.in[4] = &dn;
	c.out[0] = &out;
	c.attr[MOE_EXPERTS].i = 2;
	c.scratch = op_scratch(&c);
	ctx.scratch = scratch_alloc(c.scratch);
	ctx.scratch_bytes = c.scratch;
	tcase_call(&c, &call, 1);
	CK(cudaDeviceSynchronize());
	CK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
	rc = cuda_kernel(OP_MOE_EXPERTS)(&call, &ctx, msg, sizeof msg);
	cudaStreamEndCapture(e->stream, &graph);
	cudaGetLastError();
	if (graph)
		CK(cudaGraphDestroy(graph));
	ok(rc != 0 && strstr(msg, "cannot be captured") != NULL,
	   "moe_experts: the eager form refuses a capture (%s)", msg);
	CK(cudaFree(ctx.scratch));
	tbuf_free(&x);
	tbuf_free(&ids);
	tbuf_free(&w);
	tbuf_free(&gu);
	tbuf_free(&dn);
	tbuf_free(&out);
}

/* bcg_moe_gate_up_small_kernel in every shape (BCG_MOE_GU_SHAPE): the
 * eager form uncaptured and the graph-safe form captured, against
 * host-moe.c and bit for bit against the default shape's bytes; T 1 to 8
 * at top 8 of 16 experts (ids repeating at odd T: groups past a chunk),
 * I = 36 in f32 (a multiple of no 8 columns) and 40 in f16 and bf16 (rows
 * of whole 16-byte pieces: the small path). */
static void test_moe_gate_up_shapes(struct env *e)
{
	struct kernel_shape shapes[16];
	const int nsh = shapes_of(KERNEL_SHAPE_MOE_GU, shapes);
	char sn[16];

	for (int d = 0; d < N_FLOAT_DTYPES; d++)
		for (int64_t t = 1; t <= 8; t++) {
			const int dt = float_dtypes[d];
			const int64_t sh[6] = { t, 256, 16, dt == PLAN_DTYPE_F32 ? 36 : 40, 8,
			                        t % 2 ? MOE_REPEATS : 0 };
			struct moe_bufs mb;
			struct tcase c;
			void *want[2], *got;

			moe_bufs_init(e, &mb, dt, sh);
			got = malloc(mb.out.bytes + 16);
			if (!got)
				bail("out of memory");
			for (int form = 0; form < 2; form++) {
				want[form] = malloc(mb.out.bytes + 16);
				if (!want[form])
					bail("out of memory");
				moe_case_init(&c, &mb, sh[2], form);
				c.capture = form == 1;
				c.tol = tol_for(dt, 1e-5);
				c.got[0] = want[form];
				snprintf(c.what, sizeof c.what, "moe_experts %s T=%lld I=%lld, %s form, gate_up "
				         "default shape", dtype_name(dt), (long long)t, (long long)sh[3],
				         form ? "graph-safe" : "eager");
				tcase_run(e, &c);
				c.got[0] = got;
				for (int i = 0; i < nsh; i++) {
					c.moe_gu_shape = shapes[i];
					snprintf(c.what, sizeof c.what, "moe_experts %s T=%lld I=%lld, %s form, "
					         "gate_up shape %s", dtype_name(dt), (long long)t,
					         (long long)sh[3], form ? "graph-safe" : "eager",
					         shape_name(shapes[i], sn, sizeof sn));
					tcase_run(e, &c);
					ok(memcmp(got, want[form], mb.out.bytes) == 0, "%s: the default shape's "
					   "bytes", c.what);
				}
			}
			free(want[0]);
			free(want[1]);
			free(got);
			moe_bufs_free(&mb);
		}
}

static void test_gated_add(struct env *e)
{
	struct tbuf x, y, g, out;
	struct tcase c;

	for (int d = 0; d < N_FLOAT_DTYPES; d++) {
		int dt = float_dtypes[d];
		tbuf_init(&x, dt, 2, (const int64_t[]){ 5, 300 }, 0);
		tbuf_init(&y, dt, 2, (const int64_t[]){ 5, 300 }, 0);
		tbuf_init(&g, dt, 2, (const int64_t[]){ 5, 1 }, 0);
		tbuf_init(&out, dt, 2, (const int64_t[]){ 5, 300 }, 0);
		tbuf_random(e, &x, 2.0f);
		tbuf_random(e, &y, 2.0f);
		tbuf_random(e, &g, 4.0f);
		tcase_init(&c, OP_GATED_ADD, 3, 1);
		c.in[0] = &x;
		c.in[1] = &y;
		c.in[2] = &g;
		c.out[0] = &out;
		c.tol = tol_for(dt, 1e-6);
		c.capture = d == 0;
		snprintf(c.what, sizeof c.what, "gated_add %s [5,300]", dtype_name(dt));
		tcase_run(e, &c);
		tbuf_free(&x);
		tbuf_free(&y);
		tbuf_free(&g);
		tbuf_free(&out);
	}
}

/* Whether NAME holds one of the comma-separated words of LIST (empty
 * words never match). */
static int holds_word(const char *name, const char *list)
{
	for (const char *w = list; *w != '\0';) {
		const size_t n = strcspn(w, ",");
		char word[128];

		if (n > 0 && n < sizeof word) {
			memcpy(word, w, n);
			word[n] = '\0';
			if (strstr(name, word) != NULL)
				return 1;
		}
		w += n;
		if (*w == ',')
			w++;
	}
	return 0;
}

/* make check runs the program as shards side by side, one process each
 * (t/unit/cuda-ops-SHARD.sh, BCG_TEST_SHARD=SHARD): every group is in
 * exactly one, by GROUP's first argument. */
static const char *const shard_names[] = { "products", "norms", "attention", "rest" };
enum { SHARD_PRODUCTS, SHARD_NORMS, SHARD_ATTENTION, SHARD_REST };

/* Whether group NAME of shard SHARD runs: BCG_TEST_SHARD unset or naming
 * SHARD, and BCG_TEST_ONLY=WORD[,WORD...] unset or one of its words in
 * NAME (test_paged_attention(&e) for "paged"), to work on one kernel. */
static int group_wanted(int shard, const char *name)
{
	const char *only = getenv("BCG_TEST_ONLY"), *sh = getenv("BCG_TEST_SHARD");

	if (sh != NULL && *sh != '\0' && strcmp(sh, shard_names[shard]) != 0)
		return 0;
	if (only != NULL && *only != '\0' && !holds_word(name, only)) {
		diag("%s: not run (BCG_TEST_ONLY=%s)", name, only);
		return 0;
	}
	return 1;
}
#define GROUP(shard, call) do { if (group_wanted(SHARD_##shard, #call)) call; } while (0)

int main(void)
{
	struct env e;
	int ndev = 0, sms = 0;
	char msg[256];
	const size_t workspace_bytes = 32u << 20;

	const char *shard = getenv("BCG_TEST_SHARD");
	if (shard != NULL && *shard != '\0') {
		char names[128] = "";
		int known = 0;
		for (size_t i = 0; i < sizeof shard_names / sizeof shard_names[0]; i++) {
			known |= strcmp(shard, shard_names[i]) == 0;
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
			         i ? ", " : "", shard_names[i]);
		}
		if (!known)
			bail("BCG_TEST_SHARD=%s: no such shard (%s)", shard, names);
	}
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
		tap_skip_all("no CUDA device");
	memset(&e, 0, sizeof e);
	e.seed = pick_seed();
	diag("seed %llu (BCG_TEST_SEED=%llu repeats this run)", (unsigned long long)e.seed,
	     (unsigned long long)e.seed);

	/* The context as the engine sets it up: a stream, and cuBLASLt with
	 * its own workspace, so that cuBLAS never allocates inside a capture. */
	CK(cudaSetDevice(0));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CK(cudaStreamCreateWithFlags(&e.stream, cudaStreamNonBlocking));
	CK(cudaMalloc(&e.workspace, workspace_bytes));
	if (cuda_lt_open(&e.lt, msg, sizeof msg) != 0)
		bail("%s", msg);
	cuda_lt_workspace(e.lt, e.workspace, workspace_bytes);
	e.ctx.stream = e.stream;
	e.ctx.lt = e.lt;
	e.ctx.sm_count = sms;
	if ((e.ctx.packs = cuda_packs_new()) == NULL)
		bail("out of memory");

	diag("device 0: %d multiprocessors", sms);

	GROUP(PRODUCTS, test_fill(&e));
	GROUP(PRODUCTS, test_copy(&e));
	GROUP(PRODUCTS, test_binary(&e));
	GROUP(PRODUCTS, test_unary(&e));
	GROUP(PRODUCTS, test_matmul(&e));
	GROUP(PRODUCTS, test_matmul_replays(&e));
	GROUP(PRODUCTS, test_lt_classes());
	GROUP(PRODUCTS, test_products(&e));
	GROUP(PRODUCTS, test_product_replays(&e));
	GROUP(PRODUCTS, test_packed_copies(&e));
	GROUP(PRODUCTS, test_gemv_shapes(&e));
	GROUP(NORMS, test_rmsnorm_matmul(&e));
	GROUP(NORMS, test_rmsnorm_matmul_replays(&e));
	GROUP(NORMS, test_rmsnorm_matmul_argmax(&e));
	GROUP(NORMS, test_rmsnorm_matmul_rope_kv_write(&e));
	GROUP(NORMS, test_rmsnorm_matmul_rope_kv_write_replays(&e));
	GROUP(NORMS, test_gemv_rows(&e));
	GROUP(NORMS, test_rows(&e));
	GROUP(NORMS, test_add_rmsnorm(&e));
	GROUP(NORMS, test_argmax(&e));
	GROUP(NORMS, test_argmax_split(&e));
	GROUP(ATTENTION, test_rope(&e));
	GROUP(ATTENTION, test_rope_kv_write(&e));
	GROUP(ATTENTION, test_rope_scaling(&e));
	GROUP(ATTENTION, test_rope_dynamic_limit(&e));
	GROUP(ATTENTION, test_qk_norm(&e));
	GROUP(ATTENTION, test_rope_kv_norm(&e));
	GROUP(ATTENTION, test_slice(&e));
	GROUP(ATTENTION, test_embedding(&e));
	GROUP(ATTENTION, test_kv_write(&e));
	GROUP(ATTENTION, test_attention(&e));
	GROUP(ATTENTION, test_attention_graph(&e));
	GROUP(ATTENTION, test_attention_new_rows(&e));
	GROUP(ATTENTION, test_paged_attention(&e));
	GROUP(REST, test_moe_router(&e));
	GROUP(REST, test_moe_router_nan(&e));
	GROUP(REST, test_moe_experts(&e));
	GROUP(REST, test_moe_experts_residual(&e));
	GROUP(REST, test_moe_replays(&e));
	GROUP(REST, test_moe_eager_capture(&e));
	GROUP(REST, test_moe_gate_up_shapes(&e));
	GROUP(REST, test_gated_add(&e));
	GROUP(REST, test_decoder_layer(&e));
	GROUP(REST, test_decoder_layer_chain(&e));
	GROUP(REST, test_pdl(&e));
	GROUP(REST, test_init(&e));
	GROUP(REST, test_init_slice(&e));
	GROUP(REST, test_errors(&e));

	cuda_packs_free(e.ctx.packs);
	cuda_lt_close(e.lt);
	CK(cudaFree(e.workspace));
	CK(cudaStreamDestroy(e.stream));
	return tap_done();
}
