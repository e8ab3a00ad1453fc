/*
 * cuda-paged-attention.cu - paged attention: each query row of a batch of
 * requests over its request's blocks of the paged caches, split along the
 * KV length ("flash decoding", as cuda-attention.cu does for one sequence).
 *
 * One block of PATTN_WARPS warps computes one (row t, head h, split). It
 * first finds the request of row t (the first r with query_start[r] <= t <
 * query_start[r + 1], every thread testing some r) and the row's length
 * L_t = seq_lens[r] - n_r + 1 + i, clamped to [0, MB * BS] (op.h). Its
 * split covers positions [split * chunk, split * chunk + chunk) below L_t;
 * position j is row j % BS of block block_table[r, j / BS], and a block id
 * outside [0, NB) makes the position absent, so no metadata makes a block
 * read outside the caches. The warps take KB positions at a time in turn,
 * keep the online-softmax state (max m, sum l, acc) in registers, each
 * lane holding EPL elements of the head, and the block merges them. With
 * one split it writes out = acc / l; with several, (m, l, acc) go to
 * scratch and are merged in split order, by the last block of (t, h) to
 * finish ("split", a counter per (t, h)) or by a second kernel
 * ("twopass"). A row of no request, or of no position, gives zeros.
 *
 * The two forms share the kernels and differ in the launch: the eager form
 * sizes the split by the host's longest sequence (call->batch), so its
 * shape follows the batch; the graph-safe form by MB * BS, the most a
 * request can hold, and one captured launch serves every batch. Every sum
 * is in f32. Both kernels are PDL-aware: they wait before reading anything
 * and trigger after their stores.
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "cuda-internal.h"

#define PATTN_WARPS          4
#define PATTN_THREADS        (PATTN_WARPS * 32)
#define PATTN_COMBINE_THREADS 128
#define PATTN_MAX_SPLITS     128
#define PATTN_MIN_CHUNK      64
#define PATTN_CHUNK_ROUND    16
#define PATTN_BLOCKS_CAP     1024
#define PATTN_MAX_HEAD_DIM   512

/* --- device side ---------------------------------------------------------- */

/* Lane LANE's EPL elements of ROW, widened; past D they read as 0. VEC:
 * D == 32 * EPL and ROW aligned for 16-byte (or EPL-element) loads. */
template <typename T, int EPL, bool VEC>
__device__ __forceinline__ void pattn_load(const T *row, int lane, int D, float (&r)[EPL])
{
	const int d0 = lane * EPL;

	if constexpr (VEC) {
		constexpr int BYTES = EPL * (int)sizeof(T);
		constexpr int CH = BYTES >= 16 ? 16 : BYTES;
		constexpr int PER = CH / (int)sizeof(T);
		static_assert(CH == 16 || CH == 8 || CH == 4, "vector chunk of 4, 8 or 16 bytes");
#pragma unroll
		for (int c = 0; c < BYTES / CH; c++) {
			T tmp[PER];
			const T *p = row + d0 + c * PER;
			if constexpr (CH == 16) {
				uint4 u = *reinterpret_cast<const uint4 *>(p);
				memcpy(tmp, &u, sizeof u);
			} else if constexpr (CH == 8) {
				uint2 u = *reinterpret_cast<const uint2 *>(p);
				memcpy(tmp, &u, sizeof u);
			} else {
				uint32_t u = *reinterpret_cast<const uint32_t *>(p);
				memcpy(tmp, &u, sizeof u);
			}
#pragma unroll
			for (int i = 0; i < PER; i++)
				r[c * PER + i] = cuda_to_f32(tmp[i]);
		}
	} else {
#pragma unroll
		for (int e = 0; e < EPL; e++)
			r[e] = d0 + e < D ? cuda_to_f32(row[d0 + e]) : 0.0f;
	}
}

/* Merge the NSPLIT parts of (t, h) = TH into out, in split order. */
template <typename T>
__device__ void pattn_combine(const float *part_acc, const float2 *part_ml, T *out, int64_t th,
                              int nsplit, int D, float *sm, float *sl, float *sw)
{
	const float2 *ml = part_ml + th * nsplit;
	const float *acc = part_acc + th * nsplit * D;

	for (int s = threadIdx.x; s < nsplit; s += blockDim.x) {
		float2 p = __ldcg(ml + s);
		sm[s] = p.x;
		sl[s] = p.y;
	}
	__syncthreads();
	float M = -INFINITY;
	for (int s = 0; s < nsplit; s++)
		M = fmaxf(M, sm[s]);
	for (int s = threadIdx.x; s < nsplit; s += blockDim.x)
		sw[s] = sm[s] == -INFINITY ? 0.0f : expf(sm[s] - M);
	__syncthreads();
	float lsum = 0.0f;
	for (int s = 0; s < nsplit; s++)
		lsum += sw[s] * sl[s];
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.0f;
		for (int s = 0; s < nsplit; s++)
			a += sw[s] * __ldcg(acc + (int64_t)s * D + d);
		out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
	}
}

struct pattn_args {
	const int32_t *table, *seq_lens, *query_start;
	int64_t H, KVH, R, MB, NB, BS;
	int D;
	int nsplit;
	int64_t chunk;
	float scale;
};

template <typename T, int EPL, bool VEC>
__global__ void __launch_bounds__(PATTN_THREADS)
bcg_paged_attention_kernel(const T *q, const T *k, const T *v, T *out, float *part_acc,
                           float2 *part_ml, unsigned *counters, struct pattn_args a)
{
	constexpr int KB = EPL <= 8 ? 4 : 2;    /* positions in flight per warp */
	__shared__ float sh_m[PATTN_WARPS], sh_l[PATTN_WARPS];
	__shared__ float sh_acc[PATTN_WARPS][32 * EPL];
	__shared__ float sh_cm[PATTN_MAX_SPLITS], sh_cl[PATTN_MAX_SPLITS], sh_cw[PATTN_MAX_SPLITS];
	__shared__ int sh_req, flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t bid = blockIdx.x;
	const int nsplit = a.nsplit, D = a.D;
	const int split = (int)(bid % nsplit);
	const int64_t th = bid / nsplit;                /* t * H + h */
	const int64_t h = th % a.H, t = th / a.H;
	const int64_t g = h * a.KVH / a.H;
	const int64_t kstride = a.KVH * D;

	cuda_pdl_wait();
	if (threadIdx.x == 0)
		sh_req = INT_MAX;
	__syncthreads();
	for (int64_t r = threadIdx.x; r < a.R; r += PATTN_THREADS)
		if (a.query_start[r] <= t && t < a.query_start[r + 1])
			atomicMin(&sh_req, (int)r);
	__syncthreads();
	const int64_t r = sh_req;
	int64_t L = 0;
	if (r != INT_MAX) {
		const int64_t qa = a.query_start[r], n = a.query_start[r + 1] - qa;
		L = (int64_t)a.seq_lens[r] - n + 1 + (t - qa);
		const int64_t cap = a.MB * a.BS;
		L = L < 0 ? 0 : L > cap ? cap : L;
	}
	const int64_t start = (int64_t)split * a.chunk;
	const int64_t end = start + a.chunk < L ? start + a.chunk : L;
	const int32_t *row_table = a.table + (r != INT_MAX ? r : 0) * a.MB;

	float qr[EPL], acc[EPL];
	pattn_load<T, EPL, VEC>(q + th * D, lane, D, qr);
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = 0.0f;
	float m = -INFINITY, l = 0.0f;

	const T *kg = k + g * D, *vg = v + g * D;
	/* j0, end and the block ids are the same for the whole warp: the
	 * shuffles below run with every lane present. */
	for (int64_t j0 = start + (int64_t)warp * KB; j0 < end; j0 += (int64_t)PATTN_WARPS * KB) {
		float kr[KB][EPL], vr[KB][EPL], s[KB];
		bool ok[KB];
#pragma unroll
		for (int b = 0; b < KB; b++) {
			const int64_t j = j0 + b;
			int64_t blk = j < end ? (int64_t)row_table[j / a.BS] : -1;
			ok[b] = blk >= 0 && blk < a.NB;
			if (ok[b]) {
				const int64_t row = blk * a.BS + j % a.BS;
				pattn_load<T, EPL, VEC>(kg + row * kstride, lane, D, kr[b]);
				pattn_load<T, EPL, VEC>(vg + row * kstride, lane, D, vr[b]);
			} else {
#pragma unroll
				for (int e = 0; e < EPL; e++)
					kr[b][e] = vr[b][e] = 0.0f;
			}
		}
#pragma unroll
		for (int b = 0; b < KB; b++) {
			float d = 0.0f;
#pragma unroll
			for (int e = 0; e < EPL; e++)
				d += qr[e] * kr[b][e];
			s[b] = d;
		}
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
#pragma unroll
			for (int b = 0; b < KB; b++)
				s[b] += __shfl_xor_sync(0xffffffffu, s[b], off);
		float mb = -INFINITY;
#pragma unroll
		for (int b = 0; b < KB; b++) {
			s[b] *= a.scale;
			if (ok[b])
				mb = fmaxf(mb, s[b]);
		}
		if (mb == -INFINITY)
			continue;               /* no position here: nothing to add */
		float mn = fmaxf(m, mb);
		float corr = expf(m - mn);
		l *= corr;
#pragma unroll
		for (int e = 0; e < EPL; e++)
			acc[e] *= corr;
#pragma unroll
		for (int b = 0; b < KB; b++) {
			if (ok[b]) {
				float p = expf(s[b] - mn);
				l += p;
#pragma unroll
				for (int e = 0; e < EPL; e++)
					acc[e] += p * vr[b][e];
			}
		}
		m = mn;
	}

	if (lane == 0) {
		sh_m[warp] = m;
		sh_l[warp] = l;
	}
#pragma unroll
	for (int e = 0; e < EPL; e++)
		sh_acc[warp][lane * EPL + e] = acc[e];
	__syncthreads();

	float M = -INFINITY, wt[PATTN_WARPS], lsum = 0.0f;
#pragma unroll
	for (int w = 0; w < PATTN_WARPS; w++)
		M = fmaxf(M, sh_m[w]);
#pragma unroll
	for (int w = 0; w < PATTN_WARPS; w++) {
		wt[w] = sh_m[w] == -INFINITY ? 0.0f : expf(sh_m[w] - M);
		lsum += wt[w] * sh_l[w];
	}
	for (int d = threadIdx.x; d < D; d += PATTN_THREADS) {
		float acc_d = 0.0f;
#pragma unroll
		for (int w = 0; w < PATTN_WARPS; w++)
			acc_d += wt[w] * sh_acc[w][d];
		if (nsplit == 1)
			out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? acc_d / lsum : 0.0f);
		else
			part_acc[(th * nsplit + split) * D + d] = acc_d;
	}
	if (nsplit > 1 && threadIdx.x == 0)
		part_ml[th * nsplit + split] = make_float2(M, lsum);
	if (nsplit > 1 && counters) {
		if (!cuda_last_block(&counters[th], (unsigned)nsplit, &flag))
			return;
		pattn_combine<T>(part_acc, part_ml, out, th, nsplit, D, sh_cm, sh_cl, sh_cw);
	}
	cuda_pdl_trigger();
}

template <typename T>
__global__ void __launch_bounds__(PATTN_COMBINE_THREADS)
bcg_paged_attention_combine_kernel(const float *part_acc, const float2 *part_ml, T *out,
                                   int nsplit, int D)
{
	__shared__ float sm[PATTN_MAX_SPLITS], sl[PATTN_MAX_SPLITS], sw[PATTN_MAX_SPLITS];

	cuda_pdl_wait();
	pattn_combine<T>(part_acc, part_ml, out, (int64_t)blockIdx.x, nsplit, D, sm, sl, sw);
	cuda_pdl_trigger();
}

/* --- host side ------------------------------------------------------------ */

struct pattn_shape {
	int64_t T, H, KVH, D, NB, BS, R, MB;
	int64_t cap;                    /* MB * BS: the most positions of a request */
	int64_t th;                     /* T * H */
};

static int pattn_shape_of(const struct op_call *call, struct pattn_shape *sh, char *msg,
                          size_t len)
{
	const struct op_tensor *q = &call->in[PATTN_Q], *k = &call->in[PATTN_K];
	const struct op_tensor *v = &call->in[PATTN_V], *tab = &call->in[PATTN_TABLE];
	const struct op_tensor *seq = &call->in[PATTN_SEQ_LENS];
	const struct op_tensor *qs = &call->in[PATTN_QUERY_START], *out = &call->out[0];

	sh->H = call->attr[PATTN_HEADS].i;
	sh->KVH = call->attr[PATTN_KV_HEADS].i;
	sh->D = call->attr[PATTN_HEAD_DIM].i;
	if (sh->H < 1 || sh->KVH < 1 || sh->D < 1 || sh->H > INT_MAX || sh->KVH > INT_MAX)
		return cuda_fail(msg, len, "paged_attention: heads %lld, kv_heads %lld, head_dim "
		                 "%lld must be positive", (long long)sh->H, (long long)sh->KVH,
		                 (long long)sh->D);
	if (sh->D > PATTN_MAX_HEAD_DIM)
		return cuda_fail(msg, len, "paged_attention: head_dim %lld above the CUDA kernel's %d",
		                 (long long)sh->D, PATTN_MAX_HEAD_DIM);
	if (!cuda_is_float_dtype(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype ||
	    out->dtype != q->dtype)
		return cuda_fail(msg, len, "paged_attention: q, k_cache, v_cache, out must share one "
		                 "float dtype (%s, %s, %s, %s)", cuda_dtype_name(q->dtype),
		                 cuda_dtype_name(k->dtype), cuda_dtype_name(v->dtype),
		                 cuda_dtype_name(out->dtype));
	if (tab->dtype != PLAN_DTYPE_I32 || seq->dtype != PLAN_DTYPE_I32 ||
	    qs->dtype != PLAN_DTYPE_I32 || tab->rank != 2 || k->rank != 3 || v->rank != 3)
		return cuda_fail(msg, len, "paged_attention: block_table [R, MB], seq_lens [R] and "
		                 "query_start [R+1] must be i32, the caches [NB, BS, W]");
	sh->T = cuda_rows(q);
	sh->NB = k->dim[0];
	sh->BS = k->dim[1];
	sh->R = tab->dim[0];
	sh->MB = tab->dim[1];
	if (cuda_cols(q) != sh->H * sh->D || cuda_numel(out) != cuda_numel(q))
		return cuda_fail(msg, len, "paged_attention: q and out must be [T, %lld]",
		                 (long long)(sh->H * sh->D));
	if (k->dim[2] != sh->KVH * sh->D || v->dim[0] != sh->NB || v->dim[1] != sh->BS ||
	    v->dim[2] != k->dim[2])
		return cuda_fail(msg, len, "paged_attention: k_cache and v_cache must be "
		                 "[NB, BS, %lld] alike", (long long)(sh->KVH * sh->D));
	if (cuda_numel(seq) != sh->R || cuda_numel(qs) != sh->R + 1 || sh->R >= INT_MAX)
		return cuda_fail(msg, len, "paged_attention: seq_lens must be [%lld] and query_start "
		                 "[%lld]", (long long)sh->R, (long long)(sh->R + 1));
	sh->cap = sh->MB * sh->BS;
	sh->th = sh->T * sh->H;
	if (sh->th > INT_MAX / PATTN_MAX_SPLITS)
		return cuda_fail(msg, len, "paged_attention: %lld rows x %lld heads is too many",
		                 (long long)sh->T, (long long)sh->H);
	return 0;
}

static int64_t pattn_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int64_t pattn_splits_for(int64_t L, int64_t th, int64_t target)
{
	int64_t ns = pattn_ceil_div(target, th);
	int64_t by_len = pattn_ceil_div(L, PATTN_MIN_CHUNK);

	if (ns > by_len)
		ns = by_len;
	if (ns > PATTN_MAX_SPLITS)
		ns = PATTN_MAX_SPLITS;
	return ns < 1 ? 1 : ns;
}

/* Splits and chunk for at most L positions a row (L < 1: one split of
 * none, which writes zeros). */
static void pattn_plan(int64_t L, int64_t th, int sm_count, int *nsplit, int64_t *chunk)
{
	int64_t target = sm_count > 0 ? 4 * (int64_t)sm_count : PATTN_BLOCKS_CAP;

	if (target > PATTN_BLOCKS_CAP)
		target = PATTN_BLOCKS_CAP;
	if (L < 1) {
		*nsplit = 1;
		*chunk = 0;
		return;
	}
	int64_t ns = pattn_splits_for(L, th, target);
	int64_t c = pattn_ceil_div(L, ns);
	c = pattn_ceil_div(c, PATTN_CHUNK_ROUND) * PATTN_CHUNK_ROUND;
	*chunk = c;
	*nsplit = (int)pattn_ceil_div(L, c);
}

static size_t pattn_ml_bytes(int64_t th, int64_t nsplit)
{
	size_t b = (size_t)(th * nsplit) * sizeof(float2);
	return (b + 255) & ~(size_t)255;
}

static size_t pattn_scratch_for(const struct pattn_shape *sh, int64_t nsplit)
{
	if (nsplit <= 1)
		return 0;
	return pattn_ml_bytes(sh->th, nsplit) + (size_t)(sh->th * nsplit * sh->D) * sizeof(float);
}

extern "C" size_t cuda_paged_attention_scratch_bytes(const struct op_call *call)
{
	struct pattn_shape sh = {};

	if (pattn_shape_of(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	/* The most splits any launch can take: the graph-safe form's, at the
	 * largest target, on any device. */
	return cuda_scratch_with_counters(pattn_scratch_for(&sh,
	                                  pattn_splits_for(sh.cap, sh.th, PATTN_BLOCKS_CAP)));
}

int cuda_paged_attention_usable(const struct op_call *call, int impl)
{
	struct pattn_shape sh = {};

	if (pattn_shape_of(call, &sh, NULL, 0) != 0)
		return 0;
	switch (impl) {
	case CUDA_IMPL_ATTN_SPLIT:
		return sh.th <= CUDA_SCRATCH_COUNTERS;
	case CUDA_IMPL_ATTN_TWOPASS:
		return 1;
	}
	return 0;
}

struct pattn_launch {
	struct pattn_shape sh;
	struct pattn_args a;
	const void *q, *k, *v;
	void *out;
	float *part_acc;
	float2 *part_ml;
	unsigned *counters;
	const struct cuda_op_ctx *ctx;
};

template <typename T, int EPL>
static int pattn_launch_epl(const struct pattn_launch *pl, char *msg, size_t len)
{
	const T *q = static_cast<const T *>(pl->q), *k = static_cast<const T *>(pl->k);
	const T *v = static_cast<const T *>(pl->v);
	T *out = static_cast<T *>(pl->out);
	const size_t vec_bytes = EPL * sizeof(T) < 16 ? EPL * sizeof(T) : 16;
	bool vec = pl->sh.D == 32 * EPL && (uintptr_t)pl->q % vec_bytes == 0 &&
	           (uintptr_t)pl->k % vec_bytes == 0 && (uintptr_t)pl->v % vec_bytes == 0;
	unsigned blocks = (unsigned)(pl->sh.th * pl->a.nsplit);
	const char *name = "bcg_paged_attention_kernel";
	int rc;

	if (vec)
		rc = cuda_launch(pl->ctx, name, bcg_paged_attention_kernel<T, EPL, true>, dim3(blocks),
		                 dim3(PATTN_THREADS), msg, len, q, k, v, out, pl->part_acc,
		                 pl->part_ml, pl->counters, pl->a);
	else
		rc = cuda_launch(pl->ctx, name, bcg_paged_attention_kernel<T, EPL, false>, dim3(blocks),
		                 dim3(PATTN_THREADS), msg, len, q, k, v, out, pl->part_acc,
		                 pl->part_ml, pl->counters, pl->a);
	if (rc || pl->a.nsplit == 1 || pl->counters)
		return rc;
	return cuda_launch(pl->ctx, "bcg_paged_attention_combine_kernel",
	                   bcg_paged_attention_combine_kernel<T>, dim3((unsigned)pl->sh.th),
	                   dim3(PATTN_COMBINE_THREADS), msg, len, (const float *)pl->part_acc,
	                   (const float2 *)pl->part_ml, out, pl->a.nsplit, (int)pl->sh.D);
}

template <typename T>
static int pattn_launch_typed(const struct pattn_launch *pl, char *msg, size_t len)
{
	int64_t D = pl->sh.D;

	if (D <= 64)
		return pattn_launch_epl<T, 2>(pl, msg, len);
	if (D <= 128)
		return pattn_launch_epl<T, 4>(pl, msg, len);
	if (D <= 256)
		return pattn_launch_epl<T, 8>(pl, msg, len);
	return pattn_launch_epl<T, 16>(pl, msg, len);
}

extern "C" int cuda_run_paged_attention(const struct op_call *call,
                                        const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	struct pattn_launch pl;
	double scale = call->attr[PATTN_SCALE].f;
	int64_t L;
	size_t need;

	memset(&pl, 0, sizeof pl);
	if (pattn_shape_of(call, &pl.sh, msg, len))
		return -1;
	if (pl.sh.th < 1)
		return 0;
	if (call->impl != CUDA_IMPL_ATTN_SPLIT && call->impl != CUDA_IMPL_ATTN_TWOPASS)
		return cuda_fail(msg, len, "paged_attention: no implementation %d on CUDA", call->impl);
	if (!cuda_paged_attention_usable(call, call->impl))
		return cuda_fail(msg, len, "paged_attention: implementation split cannot run %lld "
		                 "(row, head) pairs, above the %lld scratch counters",
		                 (long long)pl.sh.th, (long long)CUDA_SCRATCH_COUNTERS);
	pl.q = call->in[PATTN_Q].data;
	pl.k = call->in[PATTN_K].data;
	pl.v = call->in[PATTN_V].data;
	pl.out = call->out[0].data;
	pl.ctx = ctx;
	pl.a.table = static_cast<const int32_t *>(call->in[PATTN_TABLE].data);
	pl.a.seq_lens = static_cast<const int32_t *>(call->in[PATTN_SEQ_LENS].data);
	pl.a.query_start = static_cast<const int32_t *>(call->in[PATTN_QUERY_START].data);
	pl.a.H = pl.sh.H;
	pl.a.KVH = pl.sh.KVH;
	pl.a.R = pl.sh.R;
	pl.a.MB = pl.sh.MB;
	pl.a.NB = pl.sh.NB;
	pl.a.BS = pl.sh.BS;
	pl.a.D = (int)pl.sh.D;
	pl.a.scale = scale == 0.0 ? 1.0f / sqrtf((float)pl.sh.D) : (float)scale;
	/* Graph-safe: the bound of every batch; eager: this batch's longest
	 * sequence, which bounds every row's length. */
	L = pl.sh.cap;
	if (!call->graph_safe && call->batch != NULL && (int64_t)call->batch->max_seq_len < L)
		L = call->batch->max_seq_len;
	pattn_plan(L, pl.sh.th, ctx->sm_count, &pl.a.nsplit, &pl.a.chunk);

	need = cuda_scratch_with_counters(pattn_scratch_for(&pl.sh, pl.a.nsplit));
	if (need > 0) {
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "paged_attention: needs %zu bytes of scratch, the "
			                 "context has %zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "paged_attention: scratch is not 16-byte aligned");
		char *data = static_cast<char *>(cuda_scratch_data(ctx));
		pl.part_ml = reinterpret_cast<float2 *>(data);
		pl.part_acc = reinterpret_cast<float *>(data + pattn_ml_bytes(pl.sh.th, pl.a.nsplit));
		if (call->impl == CUDA_IMPL_ATTN_SPLIT)
			pl.counters = cuda_scratch_counters(ctx);
	}

	switch (call->in[PATTN_Q].dtype) {
	case PLAN_DTYPE_F16:
		return pattn_launch_typed<__half>(&pl, msg, len);
	case PLAN_DTYPE_BF16:
		return pattn_launch_typed<__nv_bfloat16>(&pl, msg, len);
	default:
		return pattn_launch_typed<float>(&pl, msg, len);
	}
}
