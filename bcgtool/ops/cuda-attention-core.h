/*
 * cuda-attention-core.h - the split-K ("flash decoding") core that both
 * attention kinds launch: cuda-attention.cu over one contiguous KV cache,
 * cuda-paged-attention.cu over a paged one. Private to those two files.
 *
 * One block of ATTN_CORE_WARPS warps computes one (row t, head h, split):
 * the positions [split * chunk, min(split * chunk + chunk, L)) of the
 * row's KV length L. Where position j lies is the caller's KV source (a
 * functor: `bool at(j, &k_row, &v_row)`, false for a position that has no
 * row, such as a paged cache's absent block; even then it names rows that
 * are safe to read, whose values the core masks).
 *
 * Lane geometry. A KV row of D elements is read by a group of LPR lanes,
 * EPL elements a lane: with VEC, D == LPR * EPL and each lane reads 16
 * bytes at a time (f16, D = 64: groups of 8 lanes, so a warp reads four
 * positions with one load instruction a lane and reduces each dot product
 * over 8 lanes instead of 32); without VEC (odd or misaligned head dims)
 * LPR is 32 and lanes read element by element. Each group keeps KB
 * positions in flight and its own online-softmax state in registers:
 * running max m, sum l of exp(s - m), acc = sum exp(s - m) v, in f32.
 *
 * Merging. The groups of a warp merge by xor shuffles, the warps of a
 * block in shared memory, in a fixed order: the bits depend only on the
 * row's length and the chunk. Scores are kept in base 2 (the scale
 * times log2 e, once a block; then exp2f, the hardware's base-2
 * exponential, where expf first multiplies by log2 e with an extra-precise
 * split), so every m below, in registers, shared memory and the scratch,
 * is a base-2 exponent. Of a launch's NSPLIT splits a row of L
 * positions uses the first n = attn_core_active(L, chunk, nsplit) (at
 * least one); the blocks of the others return at once, touching nothing,
 * which is what makes a launch sized for the captured bound cheap. With
 * n = 1 the block writes out = acc / l (zeros where l is 0: a row with no
 * position). With more, each block writes its part (m, l) and, when it
 * holds any position, acc, to scratch; a part with no position has m =
 * -inf, weight 0, and its acc is never read. The n parts of each (t, h)
 * are merged in split order, by the last of the n blocks to finish
 * (implementation "split", counters in the scratch) or by
 * bcg_attention_combine_kernel ("twopass"), which reads n from the scratch:
 * split 0 always records it. Both give the same bits.
 *
 * Splitting (attn_core_plan). Rows are cut into chunks of at most
 * ATTN_CORE_MAX_CHUNK positions (or the caller's own bound: paged
 * attention's is longer) whatever the number of (t, h) pairs, so a long
 * row never holds the launch up behind one block; when there are few
 * pairs, into smaller chunks (down to ATTN_CORE_MIN_CHUNK) to give the
 * device about four blocks a multiprocessor. A launch sized for more
 * positions than a row has (the graph-safe forms, sized by the captured
 * bound) costs one early exit per empty split.
 *
 * PDL: the kernels wait before reading anything and trigger after their
 * last store (cuda-internal.h).
 */
#ifndef BCG_OPS_CUDA_ATTENTION_CORE_H
#define BCG_OPS_CUDA_ATTENTION_CORE_H

#include "cuda-internal.h"

#define ATTN_CORE_WARPS           4
#define ATTN_CORE_THREADS         (ATTN_CORE_WARPS * 32)
#define ATTN_CORE_COMBINE_THREADS 128
#define ATTN_CORE_MAX_SPLITS      128
#define ATTN_CORE_MIN_CHUNK       64
#define ATTN_CORE_MAX_CHUNK       256
#define ATTN_CORE_CHUNK_ROUND     16
#define ATTN_CORE_BLOCKS_CAP      1024
#define ATTN_CORE_MAX_HEAD_DIM    512
#define ATTN_CORE_LOG2E           1.4426950408889634f

namespace {

/* --- device side ---------------------------------------------------------- */

/* A T of all-zero bits (+0 in every float dtype), made without the
 * conversion's inline assembly, so that a choice between it and a loaded
 * value stays a select and does not become a branch. */
template <typename T>
__device__ __forceinline__ T attn_core_zero()
{
	T z;

	memset(&z, 0, sizeof z);
	return z;
}

/* Lane SUB's EPL elements [SUB * EPL, SUB * EPL + EPL) of ROW as stored;
 * past D, or everywhere when not KEEP, they read as 0 (ROW is read
 * either way: it must be a row safe to read). VEC: D == LPR * EPL, ROW
 * 16-byte aligned and EPL elements a multiple of 16 bytes. Kept narrow in
 * registers until used, so that more blocks fit on a multiprocessor. */
template <typename T, int EPL, bool VEC>
__device__ __forceinline__ void attn_core_load_raw(const T *row, int sub, int D, T (&r)[EPL],
                                                   bool keep = true)
{
	const int d0 = sub * EPL;

	if constexpr (VEC) {
		constexpr int PER = 16 / (int)sizeof(T);
		static_assert(EPL % PER == 0, "whole 16-byte chunks a lane");
#pragma unroll
		for (int c = 0; c < EPL / PER; c++) {
			uint4 u = *reinterpret_cast<const uint4 *>(row + d0 + c * PER);
			if (!keep)
				u = make_uint4(0u, 0u, 0u, 0u);
			memcpy(&r[c * PER], &u, sizeof u);
		}
	} else {
#pragma unroll
		for (int e = 0; e < EPL; e++)
			r[e] = d0 + e < D ? row[d0 + e] : attn_core_zero<T>();
#pragma unroll
		for (int e = 0; e < EPL; e++)
			r[e] = keep ? r[e] : attn_core_zero<T>();
	}
}

/* The same, widened to f32. */
template <typename T, int EPL, bool VEC>
__device__ __forceinline__ void attn_core_load(const T *row, int sub, int D, float (&r)[EPL])
{
	T raw[EPL];

	attn_core_load_raw<T, EPL, VEC>(row, sub, D, raw);
#pragma unroll
	for (int e = 0; e < EPL; e++)
		r[e] = cuda_to_f32(raw[e]);
}

/* (m, l, acc) merged with (m2, l2, acc2). Symmetric to the bit: both lanes
 * of an xor shuffle end with the same state. */
template <int EPL>
__device__ __forceinline__ void attn_core_merge(float &m, float &l, float (&acc)[EPL], float m2,
                                                float l2, const float (&acc2)[EPL])
{
	const float M = fmaxf(m, m2);

	if (M == -INFINITY)
		return;                 /* both empty */
	const float w1 = m == -INFINITY ? 0.0f : exp2f(m - M);
	const float w2 = m2 == -INFINITY ? 0.0f : exp2f(m2 - M);
	l = w1 * l + w2 * l2;
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = w1 * acc[e] + w2 * acc2[e];
	m = M;
}

/*
 * KB positions held by the calling lane's group (rows KR, the v elements
 * VR the lane accumulates, EA of them; OK[b]: slot b holds a position of
 * the range) into the group's online-softmax state (m, l, acc): the dot
 * products with the query QR (the lane's EPL elements) reduced over the
 * group's LPR lanes, times SCALE2 (the scale in base 2). Every lane of the
 * warp calls it (its shuffles run with all 32).
 */
template <typename T, int LPR, int KB, int EPL, int EA>
__device__ __forceinline__ void attn_core_update(const float (&qr)[EPL], const T (&kr)[KB][EPL],
                                                 const T (&vr)[KB][EA], const bool (&ok)[KB],
                                                 float scale2, float &m, float &l,
                                                 float (&acc)[EA])
{
	float s[KB];

#pragma unroll
	for (int b = 0; b < KB; b++) {
		float d = 0.0f;
#pragma unroll
		for (int e = 0; e < EPL; e++)
			d += qr[e] * cuda_to_f32(kr[b][e]);
		s[b] = d;
	}
#pragma unroll
	for (int off = LPR / 2; off > 0; off >>= 1)
#pragma unroll
		for (int b = 0; b < KB; b++)
			s[b] += __shfl_xor_sync(0xffffffffu, s[b], off);
	float mb = -INFINITY;
#pragma unroll
	for (int b = 0; b < KB; b++) {
		s[b] *= scale2;
		if (ok[b])
			mb = fmaxf(mb, s[b]);
	}
	if (mb == -INFINITY)
		return;         /* none of the group's positions here */
	const float mn = fmaxf(m, mb);
	const float corr = exp2f(m - mn);       /* m = -inf: 0 */
	l *= corr;
#pragma unroll
	for (int e = 0; e < EA; e++)
		acc[e] *= corr;
#pragma unroll
	for (int b = 0; b < KB; b++) {
		const float p = ok[b] ? exp2f(s[b] - mn) : 0.0f;
		l += p;
#pragma unroll
		for (int e = 0; e < EA; e++)
			acc[e] += p * cuda_to_f32(vr[b][e]);
	}
	m = mn;
}

/* attn_core_accumulate's loop for groups of LPR lanes holding EPL
 * elements each: KB positions in flight a group, GPW groups a warp, STEP
 * positions a warp an iteration, ROUND positions the block's warps an
 * iteration (one round of its loads). */
template <int LPR, int EPL>
struct attn_core_geom {
	static constexpr int KB = EPL <= 8 ? 4 : 2;
	static constexpr int GPW = 32 / LPR;
	static constexpr int STEP = GPW * KB;
	static constexpr int ROUND = STEP * ATTN_CORE_WARPS;
};

/*
 * The calling lane's group's share of positions [START, END) against the
 * query QR (its lane's elements), into (m, l, acc), scores times SCALE2
 * (the scale in base 2). The loop bounds are the same for the whole warp,
 * so every shuffle runs with all 32 lanes.
 */
template <typename T, int LPR, int EPL, bool VEC, typename Src>
__device__ __forceinline__ void attn_core_accumulate(const Src &src, const float (&qr)[EPL],
                                                     int64_t start, int64_t end, int D,
                                                     float scale2, float &m, float &l,
                                                     float (&acc)[EPL])
{
	using G = attn_core_geom<LPR, EPL>;
	constexpr int KB = G::KB, GPW = G::GPW, STEP = G::STEP;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int grp = lane / LPR, sub = lane % LPR;

	for (int64_t j0 = start + (int64_t)warp * STEP; j0 < end;
	     j0 += (int64_t)G::ROUND) {
		T kr[KB][EPL], vr[KB][EPL];
		bool ok[KB];
		/* Every lane loads, whatever its position: one past the range
		 * reads the range's last row, an absent one the row the source
		 * names for it; either is then masked (no branch in the loop). */
#pragma unroll
		for (int b = 0; b < KB; b++) {
			const int64_t j = j0 + b * GPW + grp;
			const T *kp, *vp;
			ok[b] = src.at(j < end ? j : end - 1, kp, vp) && j < end;
			attn_core_load_raw<T, EPL, VEC>(kp, sub, D, kr[b]);
			/* a masked row's v may be NaN, and p * NaN is NaN */
			attn_core_load_raw<T, EPL, VEC>(vp, sub, D, vr[b], ok[b]);
		}
		attn_core_update<T, LPR, KB, EPL, EPL>(qr, kr, vr, ok, scale2, m, l, acc);
	}
}

/* The splits a row of L positions uses: chunks of CHUNK, at least one (a
 * row of none writes zeros), at most NSPLIT. */
__host__ __device__ __forceinline__ int attn_core_active(int64_t L, int64_t chunk, int nsplit)
{
	if (L < 1 || chunk < 1)
		return 1;
	const int64_t n = (L + chunk - 1) / chunk;
	return n < nsplit ? (int)n : nsplit;
}

/* A graph-safe launch's chunk, planned on the device once a row's length
 * L is known: the launch keeps the NSPLIT splits its captured bound gave
 * it, and the row is cut into as many of them as chunks of at least
 * ATTN_CORE_MIN_CHUNK positions (one round of a block's four warps) give,
 * instead of the bound's chunks, of which a short row would fill only the
 * first few, each taking several rounds one after the other. */
__device__ __forceinline__ int64_t attn_core_chunk_for(int64_t L, int nsplit)
{
	int64_t c = (L + nsplit - 1) / nsplit;

	c = (c + ATTN_CORE_CHUNK_ROUND - 1) / ATTN_CORE_CHUNK_ROUND * ATTN_CORE_CHUNK_ROUND;
	return c < ATTN_CORE_MIN_CHUNK ? ATTN_CORE_MIN_CHUNK : c;
}

/* The scratch of a launch of NSPLIT splits over TH pairs (none for one
 * split): per (t, h), NSPLIT (m, l) pairs; the count of parts split 0
 * records; NSPLIT f32 accumulators of D. Each array from a 256-byte
 * boundary. */
struct attn_core_scratch {
	float2 *ml;
	int *count;
	float *acc;
};

__host__ __device__ __forceinline__ size_t attn_core_align256(size_t b)
{
	return (b + 255) & ~(size_t)255;
}

/* Merge the first N parts of (t, h) = TH (STRIDE parts a pair: the
 * launch's split count) into OUT in split order; parts of weight 0 are
 * skipped, their acc unread. Every thread of the block calls it; SM, SL,
 * SW are shared arrays of ATTN_CORE_MAX_SPLITS floats. */
template <typename T>
__device__ void attn_core_combine(const struct attn_core_scratch &sc, T *out, int64_t th,
                                  int stride, int n, int D, float *sm, float *sl, float *sw)
{
	const float2 *ml = sc.ml + th * stride;
	const float *acc = sc.acc + th * stride * D;

	for (int s = threadIdx.x; s < n; s += blockDim.x) {
		float2 p = __ldcg(ml + s);
		sm[s] = p.x;
		sl[s] = p.y;
	}
	__syncthreads();
	float M = -INFINITY;
	for (int s = 0; s < n; s++)
		M = fmaxf(M, sm[s]);
	for (int s = threadIdx.x; s < n; s += blockDim.x)
		sw[s] = sm[s] == -INFINITY ? 0.0f : exp2f(sm[s] - M);
	__syncthreads();
	float lsum = 0.0f;
	for (int s = 0; s < n; s++)
		lsum += sw[s] * sl[s];
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.0f;
		for (int s = 0; s < n; s++)
			if (sw[s] != 0.0f)
				a += sw[s] * __ldcg(acc + (int64_t)s * D + d);
		out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
	}
}

/*
 * The block's state: the lanes' states (m, l, acc) merged by xor shuffles,
 * then the warps' in shared memory, in a fixed order. Sets M (the block's
 * max, -inf where it holds no position) and LSUM, then, unless M is -inf
 * and not ALWAYS, calls EMIT(d, a) once for every element d < D of the
 * merged acc. Every thread calls it, once.
 */
template <int LPR, int EPL, typename Emit>
__device__ __forceinline__ void attn_core_reduce(float m, float l, float (&acc)[EPL], int D,
                                                 bool always, float &M, float &lsum,
                                                 const Emit &emit)
{
	__shared__ float sh_m[ATTN_CORE_WARPS], sh_l[ATTN_CORE_WARPS];
	__shared__ float sh_acc[ATTN_CORE_WARPS][LPR * EPL];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

#pragma unroll
	for (int off = LPR; off < 32; off <<= 1) {
		float a2[EPL];
		const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
		const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
#pragma unroll
		for (int e = 0; e < EPL; e++)
			a2[e] = __shfl_xor_sync(0xffffffffu, acc[e], off);
		attn_core_merge<EPL>(m, l, acc, m2, l2, a2);
	}
	if (lane == 0) {
		sh_m[warp] = m;
		sh_l[warp] = l;
	}
	if (lane < LPR) {
#pragma unroll
		for (int e = 0; e < EPL; e++)
			sh_acc[warp][lane * EPL + e] = acc[e];
	}
	__syncthreads();

	float wt[ATTN_CORE_WARPS];
	M = -INFINITY;
	lsum = 0.0f;
#pragma unroll
	for (int w = 0; w < ATTN_CORE_WARPS; w++)
		M = fmaxf(M, sh_m[w]);
#pragma unroll
	for (int w = 0; w < ATTN_CORE_WARPS; w++) {
		wt[w] = sh_m[w] == -INFINITY ? 0.0f : exp2f(sh_m[w] - M);
		lsum += wt[w] * sh_l[w];
	}
	if (!always && M == -INFINITY)
		return;
	for (int d = threadIdx.x; d < D; d += ATTN_CORE_THREADS) {
		float a = 0.0f;
#pragma unroll
		for (int w = 0; w < ATTN_CORE_WARPS; w++)
			a += wt[w] * sh_acc[w][d];
		emit(d, a);
	}
}

/*
 * The end of every core block of an active split (SPLIT < NACT, the row's
 * active splits of the launch's NSPLIT): merge the lanes' states, then
 * write out[t, h] (NACT 1) or this split's part, and with COUNTERS
 * ("split") merge the NACT parts in the last of their blocks. Every thread
 * calls it, once. TAG is a type of the calling kernel's own (its KV
 * source's): kernels of one file that called one instance would share its
 * shared-memory variables, which nvcc then declares for the whole module,
 * and that changes the machine code of every such kernel.
 */
template <typename T, int LPR, int EPL, typename Tag>
__device__ __forceinline__ void attn_core_finish(float m, float l, float (&acc)[EPL], int64_t th,
                                                 int split, int nact, int nsplit, int D, T *out,
                                                 const struct attn_core_scratch &sc,
                                                 unsigned *counters)
{
	__shared__ float sh_cm[ATTN_CORE_MAX_SPLITS], sh_cl[ATTN_CORE_MAX_SPLITS];
	__shared__ float sh_cw[ATTN_CORE_MAX_SPLITS];
	__shared__ int flag;
	float M, lsum;

	attn_core_reduce<LPR, EPL>(m, l, acc, D, nact == 1, M, lsum, [&](int d, float a) {
		if (nact == 1)
			out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
		else
			sc.acc[(th * nsplit + split) * D + d] = a;
	});
	if (nsplit > 1 && threadIdx.x == 0) {
		if (split == 0)
			sc.count[th] = nact;
		if (nact > 1)
			sc.ml[th * nsplit + split] = make_float2(M, lsum);
	}
	if (nact > 1 && counters) {
		if (!cuda_last_block(&counters[th], (unsigned)nact, &flag))
			return;
		attn_core_combine<T>(sc, out, th, nsplit, nact, D, sh_cm, sh_cl, sh_cw);
	}
}

/*
 * The body of every core kernel once it knows its row's length L: split
 * SPLIT of the row against the query row Q_ROW, from the load of the query
 * to out[t, h] or this split's part. A split past the row returns at once.
 * Every thread of the block calls it.
 */
template <typename T, int LPR, int EPL, bool VEC, typename Src>
__device__ __forceinline__ void attn_core_block(const Src &src, const T *q_row, int64_t L,
                                                int64_t chunk, int split, int nsplit,
                                                int64_t th, int D, float scale, T *out,
                                                const struct attn_core_scratch &sc,
                                                unsigned *counters)
{
	const int nact = attn_core_active(L, chunk, nsplit);

	if (split >= nact)
		return;                 /* past the row: nothing to do, nothing to merge */
	const int64_t start = (int64_t)split * chunk;
	const int64_t end = start + chunk < L ? start + chunk : L;
	float qr[EPL], acc[EPL];
	attn_core_load<T, EPL, VEC>(q_row, (threadIdx.x & 31) % LPR, D, qr);
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = 0.0f;
	float m = -INFINITY, l = 0.0f;
	attn_core_accumulate<T, LPR, EPL, VEC>(src, qr, start, end, D, scale * ATTN_CORE_LOG2E, m, l,
	                                       acc);
	attn_core_finish<T, LPR, EPL, Src>(m, l, acc, th, split, nact, nsplit, D, out, sc, counters);
}

/* "twopass": block th = t * H + h merges the parts of (t, h) that split 0
 * counted into out[t, h]; with one, that block wrote out itself. */
template <typename T>
__global__ void __launch_bounds__(ATTN_CORE_COMBINE_THREADS)
bcg_attention_combine_kernel(struct attn_core_scratch sc, T *out, int nsplit, int D)
{
	__shared__ float sm[ATTN_CORE_MAX_SPLITS], sl[ATTN_CORE_MAX_SPLITS];
	__shared__ float sw[ATTN_CORE_MAX_SPLITS];
	const int64_t th = blockIdx.x;

	cuda_pdl_begin();
	const int n = __ldcg(sc.count + th);
	if (n > 1)
		attn_core_combine<T>(sc, out, th, nsplit, n, D, sm, sl, sw);
}

/* --- host side ------------------------------------------------------------ */

/* After a core launch of NSPLIT splits over TH pairs: the "twopass" merge,
 * when there is anything to merge (several splits and no counters). */
template <typename T>
int attn_core_launch_merge(const struct cuda_op_ctx *ctx, const struct attn_core_scratch &sc,
                           const unsigned *counters, T *out, int64_t th, int nsplit, int64_t D,
                           char *msg, size_t len)
{
	if (nsplit == 1 || counters)
		return 0;
	return cuda_launch(ctx, "bcg_attention_combine_kernel", bcg_attention_combine_kernel<T>,
	                   dim3((unsigned)th), dim3(ATTN_CORE_COMBINE_THREADS), msg, len, sc, out,
	                   nsplit, (int)D);
}

inline int64_t attn_core_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

inline int64_t attn_core_round_up(int64_t a, int64_t b)
{
	return attn_core_ceil_div(a, b) * b;
}

/* Splits and chunk for rows of at most L positions over TH (row, head)
 * pairs, aiming at TARGET blocks (top of file), chunks of at most
 * MAX_CHUNK positions (a multiple of ATTN_CORE_CHUNK_ROUND). L < 1: one
 * split of none, which writes zeros. The split count never falls as
 * TARGET grows, so the plan at ATTN_CORE_BLOCKS_CAP bounds every
 * device's. */
inline void attn_core_plan(int64_t L, int64_t th, int64_t target, int *nsplit, int64_t *chunk,
                           int64_t max_chunk = ATTN_CORE_MAX_CHUNK)
{
	int64_t ns, c;

	if (L < 1 || th < 1) {
		*nsplit = 1;
		*chunk = 0;
		return;
	}
	ns = attn_core_ceil_div(target, th);
	c = attn_core_round_up(attn_core_ceil_div(L, ns < 1 ? 1 : ns), ATTN_CORE_CHUNK_ROUND);
	if (c < ATTN_CORE_MIN_CHUNK)
		c = ATTN_CORE_MIN_CHUNK;
	if (c > max_chunk)
		c = max_chunk;
	if (attn_core_ceil_div(L, c) > ATTN_CORE_MAX_SPLITS)
		c = attn_core_round_up(attn_core_ceil_div(L, ATTN_CORE_MAX_SPLITS),
		                       ATTN_CORE_CHUNK_ROUND);
	*chunk = c;
	*nsplit = (int)attn_core_ceil_div(L, c);
}

/* The device's target: about four blocks a multiprocessor. */
inline int64_t attn_core_target(int sm_count)
{
	int64_t target = sm_count > 0 ? 4 * (int64_t)sm_count : ATTN_CORE_BLOCKS_CAP;

	return target > ATTN_CORE_BLOCKS_CAP ? ATTN_CORE_BLOCKS_CAP : target;
}

/* The most splits any launch over at most L positions, in chunks of at
 * most MAX_CHUNK, can take on any device. */
inline int attn_core_splits_bound(int64_t L, int64_t th, int64_t max_chunk = ATTN_CORE_MAX_CHUNK)
{
	int nsplit;
	int64_t chunk;

	attn_core_plan(L, th, ATTN_CORE_BLOCKS_CAP, &nsplit, &chunk, max_chunk);
	return nsplit;
}

/* Where the count and the accumulators of that scratch start. */
inline size_t attn_core_count_at(int64_t th, int64_t nsplit)
{
	return attn_core_align256((size_t)(th * nsplit) * sizeof(float2));
}

inline size_t attn_core_acc_at(int64_t th, int64_t nsplit)
{
	return attn_core_count_at(th, nsplit) + attn_core_align256((size_t)th * sizeof(int));
}

/* Scratch bytes for NSPLIT splits over TH pairs of head_dim D. */
inline size_t attn_core_scratch_for(int64_t th, int64_t nsplit, int64_t D)
{
	if (nsplit <= 1)
		return 0;
	return attn_core_acc_at(th, nsplit) + (size_t)(th * nsplit * D) * sizeof(float);
}

/* The arrays of that scratch, from DATA (256-byte aligned). */
inline struct attn_core_scratch attn_core_scratch_at(void *data, int64_t th, int64_t nsplit)
{
	char *p = static_cast<char *>(data);
	struct attn_core_scratch sc;

	sc.ml = reinterpret_cast<float2 *>(p);
	sc.count = reinterpret_cast<int *>(p + attn_core_count_at(th, nsplit));
	sc.acc = reinterpret_cast<float *>(p + attn_core_acc_at(th, nsplit));
	return sc;
}

/* Calls L.template run<LPR, EPL, VEC>() with the lane geometry for head_dim
 * D in T: 16-byte loads when D is 8, 16, 32 or 64 such loads and the rows
 * are ALIGNED to 16 bytes; else element by element, 32 lanes a row. */
template <typename T, typename Launch>
int attn_core_dispatch(int64_t D, bool aligned, const Launch &l)
{
	constexpr int64_t E16 = 16 / (int64_t)sizeof(T);

	if (aligned) {
		if (D == 8 * E16)
			return l.template run<8, (int)E16, true>();
		if (D == 16 * E16)
			return l.template run<16, (int)E16, true>();
		if (D == 32 * E16)
			return l.template run<32, (int)E16, true>();
		if (D == 64 * E16)
			return l.template run<32, (int)(2 * E16), true>();
	}
	if (D <= 64)
		return l.template run<32, 2, false>();
	if (D <= 128)
		return l.template run<32, 4, false>();
	if (D <= 256)
		return l.template run<32, 8, false>();
	return l.template run<32, 16, false>();
}

/* Whether head rows of head_dim D in elements of ES bytes, at Q, K, V,
 * are all 16-byte aligned (rows are whole multiples of D apart). */
inline bool attn_core_aligned(int64_t D, size_t es, const void *q, const void *k, const void *v)
{
	return (D * (int64_t)es) % 16 == 0 && (uintptr_t)q % 16 == 0 && (uintptr_t)k % 16 == 0 &&
	       (uintptr_t)v % 16 == 0;
}

} /* namespace */

#endif
