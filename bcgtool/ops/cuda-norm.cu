/*
 * cuda-norm.cu - the CUDA kernels of the ops that reduce each row: rmsnorm,
 * add_rmsnorm, layernorm, softmax and argmax.
 *
 * One block per row (a row loop beyond 65535 rows), each thread striding
 * over the columns, block reductions from cuda-internal.h. A row's
 * statistics are complete, behind the reduction's barrier, before any of
 * it is written, and the last pass reads each x[j] just before the same
 * thread writes out[j]: the ops work in place. The arithmetic follows the
 * host's formulas; only the order of the sums differs.
 *
 * add_rmsnorm stores sum = x + r rounded to sum's dtype, then normalizes
 * what it stored, read back by the thread that wrote it: exactly add then
 * rmsnorm, and sum may be x or r, out may be any of them.
 *
 * argmax has two implementations: "split" cuts each row into chunks, one
 * block each (a long vocabulary row at T = 1 is otherwise one block's
 * work), and the last block of a row to finish (cuda_last_block) picks the
 * best of the chunks' winners; "row" is one block per row. The winner is
 * the same either way: "better" below is a total order, so the best of
 * any grouping is the same element.
 *
 * rmsnorm, add_rmsnorm and argmax are PDL-aware: they wait before reading
 * anything (their inputs are activations) and trigger after their stores.
 */
#include "config.h"

#include <limits.h>

#include "cuda-internal.h"

/* Columns a thread holds in registers (x and w, read together in one
 * pass) when the row is at most this many times the block. */
#define RMSNORM_HELD 4

__global__ void bcg_rmsnorm_kernel(const void *x, int dtx, const void *w, int dtw,
                                   void *out, int dto, int64_t rows, int64_t cols, float eps)
{
	__shared__ float red[32];
	const bool held = cols <= (int64_t)RMSNORM_HELD * blockDim.x;

	cuda_pdl_begin();
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float sum = 0.0f;
		if (held) {
			/* x and w in one round of loads; every read of x is behind
			 * the reduction's barrier before any store, so in place
			 * holds. The sums and the formula are the loop's below. */
			float xv[RMSNORM_HELD], wv[RMSNORM_HELD];
#pragma unroll
			for (int k = 0; k < RMSNORM_HELD; k++) {
				const int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				xv[k] = j < cols ? cuda_ld(x, dtx, base + j) : 0.0f;
				wv[k] = j < cols ? cuda_ld(w, dtw, j) : 0.0f;
				if (j < cols)
					sum += xv[k] * xv[k];
			}
			sum = cuda_block_sum(sum, red);
			float rms = sqrtf(sum / (float)cols + eps);
#pragma unroll
			for (int k = 0; k < RMSNORM_HELD; k++) {
				const int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
				if (j < cols)
					cuda_st(out, dto, base + j, xv[k] / rms * wv[k]);
			}
			continue;
		}
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			float v = cuda_ld(x, dtx, base + j);
			sum += v * v;
		}
		sum = cuda_block_sum(sum, red);
		float rms = sqrtf(sum / (float)cols + eps);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			cuda_st(out, dto, base + j, cuda_ld(x, dtx, base + j) / rms * cuda_ld(w, dtw, j));
	}
}

/* sum = x + r (r broadcast when it holds NR < rows * cols elements), then
 * out = rmsnorm(sum, w), as cuda_rmsnorm_kernel on the stored sum. */
__global__ void bcg_add_rmsnorm_kernel(const void *x, int dtx, const void *rr, int dtr,
                                       int64_t nr, const void *w, int dtw, void *sum, int dts,
                                       void *out, int dto, int64_t rows, int64_t cols, float eps)
{
	__shared__ float red[32];

	cuda_pdl_begin();
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float sq = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			int64_t i = base + j;
			float v = cuda_round_to(dts, cuda_ld(x, dtx, i) + cuda_ld(rr, dtr, i % nr));
			cuda_st(sum, dts, i, v);
			sq += v * v;
		}
		sq = cuda_block_sum(sq, red);
		float rms = sqrtf(sq / (float)cols + eps);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			cuda_st(out, dto, base + j, cuda_ld(sum, dts, base + j) / rms * cuda_ld(w, dtw, j));
	}
}

__global__ void bcg_layernorm_kernel(const void *x, int dtx, const void *w, int dtw,
                                     const void *b, int dtb, void *out, int dto,
                                     int64_t rows, int64_t cols, float eps)
{
	__shared__ float red[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float sum = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			sum += cuda_ld(x, dtx, base + j);
		float mean = cuda_block_sum(sum, red) / (float)cols;
		float sq = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			float d = cuda_ld(x, dtx, base + j) - mean;
			sq += d * d;
		}
		sq = cuda_block_sum(sq, red);
		float sd = sqrtf(sq / (float)cols + eps);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			/* __fmul_rn: rounded before the add, as on the host, not fused. */
			float y = __fmul_rn((cuda_ld(x, dtx, base + j) - mean) / sd, cuda_ld(w, dtw, j));
			cuda_st(out, dto, base + j, y + cuda_ld(b, dtb, j));
		}
	}
}

/* The exponentials are computed again in the last pass, as on the host:
 * nothing is written before the sum is known. */
__global__ void bcg_softmax_kernel(const void *x, int dtx, void *out, int dto,
                                   int64_t rows, int64_t cols)
{
	__shared__ float red[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float max = -INFINITY;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			max = fmaxf(max, cuda_ld(x, dtx, base + j));
		max = cuda_block_max(max, red);
		float sum = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			sum += expf(cuda_ld(x, dtx, base + j) - max);
		sum = cuda_block_sum(sum, red);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			cuda_st(out, dto, base + j, expf(cuda_ld(x, dtx, base + j) - max) / sum);
	}
}

/* The best (BV, BI) of a block's elements [j0, j1) of row R, in thread 0.
 * -inf at an impossible index loses every tie to a real element. A
 * thread asks for ARGMAX_LOADS elements before it compares any, so that
 * their latencies overlap. */
#define ARGMAX_LOADS 4
__device__ void cuda_argmax_block(const void *x, int dtx, int64_t base, int64_t j0, int64_t j1,
                                  float *red_v, int64_t *red_i, float *bv_out, int64_t *bi_out)
{
	float bv = -INFINITY;
	int64_t bi = INT64_MAX;
	const int64_t step = (int64_t)blockDim.x;

	for (int64_t j = j0 + threadIdx.x; j < j1; j += ARGMAX_LOADS * step) {
		float v[ARGMAX_LOADS];
#pragma unroll
		for (int u = 0; u < ARGMAX_LOADS; u++)
			v[u] = j + u * step < j1 ? cuda_ld(x, dtx, base + j + u * step) : -INFINITY;
#pragma unroll
		for (int u = 0; u < ARGMAX_LOADS; u++) {
			if (j + u * step < j1 && cuda_argmax_better(v[u], j + u * step, bv, bi)) {
				bv = v[u];
				bi = j + u * step;
			}
		}
	}
	cuda_argmax_reduce(bv, bi, red_v, red_i, bv_out, bi_out);
}

__global__ void bcg_argmax_kernel(const void *x, int dtx, int32_t *out, int64_t rows,
                                  int64_t cols)
{
	__shared__ float red_v[32];
	__shared__ int64_t red_i[32];
	float bv;
	int64_t bi;

	cuda_pdl_begin();
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		cuda_argmax_block(x, dtx, r * cols, 0, cols, red_v, red_i, &bv, &bi);
		if (threadIdx.x == 0)
			out[r] = bi == INT64_MAX ? 0 : (int32_t)bi;     /* empty row: 0 */
	}
}

/* Block (chunk c, row r) = (blockIdx.x, blockIdx.y): the best of
 * [c * chunk, (c + 1) * chunk) into PV, PI [r * nblk + c]; the row's last
 * block picks the best of the NBLK in chunk order. NBLK 1: straight out. */
__global__ void bcg_argmax_split_kernel(const void *x, int dtx, int32_t *out, int64_t cols,
                                        int nblk, int64_t chunk, float *pv, int64_t *pi,
                                        unsigned *counters)
{
	__shared__ float red_v[32];
	__shared__ int64_t red_i[32];
	__shared__ int flag;
	const int64_t r = blockIdx.y, c = blockIdx.x;
	const int64_t j0 = c * chunk, j1 = j0 + chunk < cols ? j0 + chunk : cols;
	float bv;
	int64_t bi;

	cuda_pdl_begin();
	cuda_argmax_block(x, dtx, r * cols, j0, j1, red_v, red_i, &bv, &bi);
	if (nblk > 1) {
		if (threadIdx.x == 0) {
			pv[r * nblk + c] = bv;
			pi[r * nblk + c] = bi;
		}
		if (!cuda_last_block(&counters[r], (unsigned)nblk, &flag))
			return;
		/* The NBLK parts, a thread each: the rule is a total order, so
		 * the order of the merge does not change its winner. */
		float v = -INFINITY;
		int64_t i = INT64_MAX;
		for (int k = threadIdx.x; k < nblk; k += blockDim.x) {
			float kv = __ldcg(pv + r * nblk + k);
			int64_t ki = __ldcg(reinterpret_cast<const long long *>(pi) + r * nblk + k);
			if (cuda_argmax_better(kv, ki, v, i)) {
				v = kv;
				i = ki;
			}
		}
		cuda_argmax_reduce(v, i, red_v, red_i, &bv, &bi);
	}
	if (threadIdx.x == 0)
		out[r] = bi == INT64_MAX ? 0 : (int32_t)bi;         /* empty row: 0 */
}

/* --- launchers ------------------------------------------------------------ */

/* The checks every row op shares: float dtypes, out shaped like x. */
static int cuda_row_check(const char *name, const struct op_tensor *x,
                          const struct op_tensor *out, char *msg, size_t len)
{
	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "%s: unsupported dtypes %s -> %s", name,
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(out->dtype));
	if (cuda_numel(out) != cuda_numel(x))
		return cuda_fail(msg, len, "%s: out has %lld elements, x %lld", name,
		                 (long long)cuda_numel(out), (long long)cuda_numel(x));
	return 0;
}

static int cuda_vec_check(const char *name, const char *what, const struct op_tensor *v,
                          int64_t cols, char *msg, size_t len)
{
	if (!cuda_is_float_dtype(v->dtype))
		return cuda_fail(msg, len, "%s: %s has unsupported dtype %s", name, what,
		                 cuda_dtype_name(v->dtype));
	if (cuda_numel(v) < cols)
		return cuda_fail(msg, len, "%s: %s has %lld elements, fewer than the %lld cols",
		                 name, what, (long long)cuda_numel(v), (long long)cols);
	return 0;
}

extern "C" int cuda_run_rmsnorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	if (cuda_row_check("rmsnorm", x, out, msg, len) ||
	    cuda_vec_check("rmsnorm", "w", w, cols, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	return cuda_launch(ctx, "bcg_rmsnorm_kernel", bcg_rmsnorm_kernel, dim3(cuda_row_blocks(rows)),
	                   dim3(cuda_row_threads(cols)), msg, len, (const void *)x->data, x->dtype,
	                   (const void *)w->data, w->dtype, out->data, out->dtype, rows, cols, eps);
}

/* add_rmsnorm (x, r, w) -> (sum, out). */
extern "C" int cuda_run_add_rmsnorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                    char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *r = &call->in[1], *w = &call->in[2];
	const struct op_tensor *sum = &call->out[0], *out = &call->out[1];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x), nr = cuda_numel(r);
	float eps = (float)call->attr[NORM_EPS].f;

	if (cuda_row_check("add_rmsnorm", x, sum, msg, len) ||
	    cuda_row_check("add_rmsnorm", x, out, msg, len) ||
	    cuda_vec_check("add_rmsnorm", "w", w, cols, msg, len))
		return -1;
	if (!cuda_is_float_dtype(r->dtype) || nr < 1 || nr > rows * cols || (rows * cols) % nr != 0)
		return cuda_fail(msg, len, "add_rmsnorm: r (%s, %lld elements) must be a float shaped "
		                 "like x or a trailing part of it", cuda_dtype_name(r->dtype),
		                 (long long)nr);
	if (rows <= 0 || cols <= 0)
		return 0;
	return cuda_launch(ctx, "bcg_add_rmsnorm_kernel", bcg_add_rmsnorm_kernel,
	                   dim3(cuda_row_blocks(rows)), dim3(cuda_row_threads(cols)), msg, len,
	                   (const void *)x->data, x->dtype, (const void *)r->data, r->dtype, nr,
	                   (const void *)w->data, w->dtype, sum->data, sum->dtype, out->data,
	                   out->dtype, rows, cols, eps);
}

extern "C" int cuda_run_layernorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1], *b = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	if (cuda_row_check("layernorm", x, out, msg, len) ||
	    cuda_vec_check("layernorm", "w", w, cols, msg, len) ||
	    cuda_vec_check("layernorm", "b", b, cols, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	bcg_layernorm_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, w->data, w->dtype, b->data, b->dtype, out->data, out->dtype,
		rows, cols, eps);
	return cuda_check_launch("bcg_layernorm_kernel", msg, len);
}

extern "C" int cuda_run_softmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);

	if (cuda_row_check("softmax", x, out, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	bcg_softmax_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, out->data, out->dtype, rows, cols);
	return cuda_check_launch("bcg_softmax_kernel", msg, len);
}

/* The split argmax: chunks of at least ARGMAX_MIN_CHUNK elements, about
 * two blocks per multiprocessor over all rows (at most ARGMAX_SM_CAP
 * multiprocessors assumed, for the scratch bound), ARGMAX_MAX_BLOCKS a
 * row at most. */
#define ARGMAX_THREADS    256
#define ARGMAX_MIN_CHUNK  1024
#define ARGMAX_MAX_BLOCKS 256
#define ARGMAX_SM_CAP     256

static int64_t argmax_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int argmax_blocks(int64_t rows, int64_t cols, int sm_count)
{
	int64_t sms = sm_count > 0 && sm_count < ARGMAX_SM_CAP ? sm_count : ARGMAX_SM_CAP;
	int64_t nb = argmax_ceil_div(2 * sms, rows < 1 ? 1 : rows);
	int64_t by_len = argmax_ceil_div(cols, ARGMAX_MIN_CHUNK);

	if (nb > by_len)
		nb = by_len;
	if (nb > ARGMAX_MAX_BLOCKS)
		nb = ARGMAX_MAX_BLOCKS;
	return nb < 1 ? 1 : (int)nb;
}

/* Scratch layout for PARTS chunk winners: values, then indexes from a
 * 256-byte boundary, all behind the counters. */
static size_t argmax_values_bytes(int64_t parts)
{
	return ((size_t)parts * sizeof(float) + 255) & ~(size_t)255;
}

static size_t argmax_parts_bytes(int64_t parts)
{
	return argmax_values_bytes(parts) + (size_t)parts * sizeof(int64_t);
}

/* A bound that grows with the rows: rows * blocks a row is at most
 * 2 * ARGMAX_SM_CAP + rows, and at most rows * the cap by length. */
size_t cuda_argmax_scratch_bytes(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);

	if (rows < 1)
		return 0;
	int64_t by_len = argmax_ceil_div(cols, ARGMAX_MIN_CHUNK);
	if (by_len > ARGMAX_MAX_BLOCKS)
		by_len = ARGMAX_MAX_BLOCKS;
	if (by_len <= 1)
		return 0;
	int64_t parts = rows * by_len, cap = 2 * ARGMAX_SM_CAP + rows;
	return cuda_scratch_with_counters(argmax_parts_bytes(parts < cap ? parts : cap));
}

int cuda_argmax_usable(const struct op_call *call, int impl)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x);

	if (!cuda_is_float_dtype(x->dtype) || out->dtype != PLAN_DTYPE_I32 ||
	    cuda_numel(out) != rows)
		return 0;
	switch (impl) {
	case CUDA_IMPL_ARGMAX_SPLIT:
		return rows <= CUDA_SCRATCH_COUNTERS && rows <= 65535;
	case CUDA_IMPL_ARGMAX_ROW:
		return 1;
	}
	return 0;
}

extern "C" int cuda_run_argmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                               char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	int32_t *op = static_cast<int32_t *>(out->data);

	if (!cuda_is_float_dtype(x->dtype) || out->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "argmax: dtypes %s -> %s, want a float -> i32",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(out->dtype));
	if (cuda_numel(out) != rows)
		return cuda_fail(msg, len, "argmax: out has %lld elements for %lld rows",
		                 (long long)cuda_numel(out), (long long)rows);
	if (call->impl != CUDA_IMPL_ARGMAX_SPLIT && call->impl != CUDA_IMPL_ARGMAX_ROW)
		return cuda_fail(msg, len, "argmax: no implementation %d on CUDA", call->impl);
	if (!cuda_argmax_usable(call, call->impl))
		return cuda_fail(msg, len, "argmax: implementation split cannot run %lld rows",
		                 (long long)rows);
	if (rows <= 0)
		return 0;
	/* An empty row still gets its 0: the kernels run for cols = 0 too. */
	if (call->impl == CUDA_IMPL_ARGMAX_ROW)
		return cuda_launch(ctx, "bcg_argmax_kernel", bcg_argmax_kernel,
		                   dim3(cuda_row_blocks(rows)), dim3(cuda_row_threads(cols)), msg, len,
		                   (const void *)x->data, x->dtype, op, rows, cols);

	int nblk = argmax_blocks(rows, cols, ctx->sm_count);
	int64_t chunk = argmax_ceil_div(cols, nblk);
	float *pv = NULL;
	int64_t *pi = NULL;
	unsigned *counters = NULL;
	if (nblk > 1) {
		size_t need = cuda_scratch_with_counters(argmax_parts_bytes(rows * nblk));
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "argmax: needs %zu bytes of scratch, the context has "
			                 "%zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		counters = cuda_scratch_counters(ctx);
		pv = static_cast<float *>(cuda_scratch_data(ctx));
		pi = reinterpret_cast<int64_t *>(static_cast<char *>(cuda_scratch_data(ctx)) +
		                                 argmax_values_bytes(rows * nblk));
	}
	return cuda_launch(ctx, "bcg_argmax_split_kernel", bcg_argmax_split_kernel,
	                   dim3((unsigned)nblk, (unsigned)rows), dim3(ARGMAX_THREADS), msg, len,
	                   (const void *)x->data, x->dtype, op, cols, nblk, chunk, pv, pi,
	                   counters);
}

/* qk_norm (x, q_w, k_w) -> out: one warp per (row, head) of the q and k
 * parts, a warp sum of the squares, then x / rms * w as rmsnorm; the
 * columns after the q and k parts are copied (not when out is x). A warp
 * reads its whole head before the reduction and writes it after, so it
 * works in place. PDL-aware: it waits before reading x and triggers after
 * its stores. */
__global__ void bcg_qk_norm_kernel(const void *x, int dtx, const void *qw, int dtqw,
                                   const void *kw, int dtkw, void *out, int dto, int64_t rows,
                                   int64_t cols, int heads, int kv_heads, int hd, float eps,
                                   bool copy_rest)
{
	const int64_t items = rows * (heads + kv_heads);
	const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
	const int lane = threadIdx.x % 32;
	const int64_t normed = (int64_t)(heads + kv_heads) * hd;

	cuda_pdl_begin();
	for (int64_t n = warp; n < items; n += warps) {
		const int64_t r = n / (heads + kv_heads);
		const int h = (int)(n % (heads + kv_heads));
		const void *w = h < heads ? qw : kw;
		const int dtw = h < heads ? dtqw : dtkw;
		const int64_t base = r * cols + (int64_t)h * hd;
		float sum = 0.0f;
		for (int j = lane; j < hd; j += 32) {
			float v = cuda_ld(x, dtx, base + j);
			sum += v * v;
		}
		sum = cuda_warp_sum(sum);
		float rms = sqrtf(sum / (float)hd + eps);
		for (int j = lane; j < hd; j += 32)
			cuda_st(out, dto, base + j, cuda_ld(x, dtx, base + j) / rms * cuda_ld(w, dtw, j));
	}
	if (copy_rest && cols > normed) {
		const int64_t rest = cols - normed, total = rows * rest;
		for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
		     i += (int64_t)gridDim.x * blockDim.x) {
			const int64_t e = (i / rest) * cols + normed + i % rest;
			cuda_st(out, dto, e, cuda_ld(x, dtx, e));
		}
	}
}

extern "C" int cuda_run_qk_norm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *qw = &call->in[1], *kw = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t heads = call->attr[QKN_HEADS].i, kvh = call->attr[QKN_KV_HEADS].i;
	int64_t hd = call->attr[QKN_HEAD_DIM].i;
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	float eps = (float)call->attr[QKN_EPS].f;

	if (cuda_row_check("qk_norm", x, out, msg, len) ||
	    cuda_vec_check("qk_norm", "q_w", qw, hd, msg, len) ||
	    cuda_vec_check("qk_norm", "k_w", kw, hd, msg, len))
		return -1;
	if (heads < 1 || kvh < 1 || hd < 1 || hd > INT_MAX || heads > INT_MAX / hd ||
	    kvh > INT_MAX / hd || (heads + kvh) * hd > cols)
		return cuda_fail(msg, len, "qk_norm: %lld heads and %lld kv_heads of %lld do not fit "
		                 "the %lld columns of x", (long long)heads, (long long)kvh,
		                 (long long)hd, (long long)cols);
	if (rows <= 0)
		return 0;
	/* 8 warps a block; enough blocks for one warp a head, at most 4096. */
	const int64_t items = rows * (heads + kvh);
	const int64_t blocks = (items + 7) / 8;
	return cuda_launch(ctx, "bcg_qk_norm_kernel", bcg_qk_norm_kernel,
	                   dim3((unsigned)(blocks < 4096 ? blocks : 4096)), dim3(256), msg, len,
	                   (const void *)x->data, x->dtype, (const void *)qw->data, qw->dtype,
	                   (const void *)kw->data, kw->dtype, out->data, out->dtype, rows, cols,
	                   (int)heads, (int)kvh, (int)hd, eps, out->data != x->data);
}
