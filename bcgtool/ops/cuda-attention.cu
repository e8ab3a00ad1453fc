/*
 * cuda-attention.cu - decode attention of T query tokens over one
 * contiguous KV cache, split along the cache ("flash decoding"), on the
 * core of cuda-attention-core.h (lane groups, online softmax, split plan
 * and merge, shared with paged attention).
 *
 * Token t, head h attends to the first L = min(kv_len, S) cache rows
 * (causal: L - (T - 1 - t)); head h reads kv head h * kv_heads / heads.
 *
 * Three implementations merge the splits: "split" (the last block of each
 * (t, h), up to CUDA_SCRATCH_COUNTERS pairs) and "twopass" (a second
 * kernel; any size), both in cuda-attention-core.h, and "cluster" (sm_90):
 * the splits of a (t, h) are one thread block cluster, and its first block
 * merges the others' parts from their shared memory, so no part goes
 * through global memory and no block waits on a counter. The cluster
 * holds the launch's splits up to CUDA_ATTN_CLUSTER_MAX; where the plan
 * wants more, each takes a longer chunk. Its merge sums in the order of
 * "split"'s, but the two kernels are compiled apart, and the H100 showed
 * f16 and bf16 outputs a rounding apart: its bits are its own. The forms
 * differ in the launch:
 *  - eager (graph_safe 0): the split follows L, from the host's kv_len;
 *    the launch shape changes as the cache fills.
 *  - graph-safe (graph_safe 1): the number of splits follows S alone,
 *    and every block reads kv_len from device memory
 *    (attr_dev[ATTN_KV_LEN]) and cuts its row into chunks for that length
 *    (attn_core_chunk_for): a short row spreads over as many splits as
 *    chunks of 64 positions give, and the blocks of the splits past it
 *    exit at once. One captured launch is then right for every kv_len.
 *
 * Two more implementations, "split_early" and "cluster_early", are
 * "split" and "cluster" that ask L2 for the cache rows below kv_len - T
 * before their PDL wait: the rows earlier steps wrote, while the kernel
 * before (the q|k|v product that writes the step's T new rows) still
 * runs; after the wait their loads of them hit L2 instead of HBM. A
 * prefetch reads nothing (cuda-internal.h's rule (a)): kv_len there is
 * the host's value or its device mirror, which the host writes before the
 * step. Of the blocks that share rows (a kv head's query heads, the tokens
 * of a step), the last token's blocks of each query head of the kv head
 * ask, each for its share of the lines (attn_prefetch_chunk). Whether the
 * prefetch pays depends on what it overlaps, and alone (L2 emptied) it
 * only costs: 8.3 us against split's 7.4 on llama-decode's shape. So it
 * is a choice that capture --tune-step confirms in the step, never the
 * default. Measured on an H100 (bench/RESULTS.md, twenty-first session),
 * --tune-step against the tree without it: llama-decode took
 * cluster_early, its step 1.1 to 1.4% faster; llama-decode-fuse and the
 * 1B kept cluster and split (1.0001). Copying the rows into shared memory
 * instead, by cp.async, lost 1.6 to 3.1% (twentieth session).
 *
 * "cluster4" is "cluster" in clusters of at most 4 blocks: the same work
 * for rows up to 256 positions (at most 4 chunks of the 64 a block's round
 * covers), longer chunks beyond. A graph-safe launch is sized for the
 * whole cache, so "cluster" keeps up to 16 blocks a row, most of which a
 * short row leaves idle; idle, they still pass the cluster's barriers and
 * hold their registers until the row is merged, while the kernel after
 * (the o projection, loading its weights before its PDL wait) waits for
 * room on the multiprocessors. cluster4 holds a quarter of the blocks.
 * "cluster2" and "cluster8" are the same at 2 and 8 blocks (the same work
 * up to 128 and 512 positions). On an H200 (bench/RESULTS.md, twenty-sixth
 * session), the 1B at positions 32..159 tuned at kv_len 96: cluster 8.83
 * us alone, cluster8 8.16, cluster4 7.87, cluster2 7.84; the step 2.7%
 * faster with cluster4 than with cluster; cluster2's 0.2% more is within
 * the spread of two builds' plans of the same choices.
 *
 * "dsplit" splits a short row along the head's dims instead of its
 * positions: two blocks a (t, h), each over the whole row, each writing
 * half of the head's dims, so nothing is merged (no scratch, no cluster).
 * Every block computes all the row's scores and reads half of each v row.
 * A row of up to one round (256 positions at head_dim 64 in f16/bf16) is
 * loaded at once, the rows that earlier steps wrote into registers before
 * the PDL wait, while the q|k|v product before it runs. A longer row is
 * split's, in the same launch (sized for both, as split's graph-safe
 * launch is): its blocks take chunks after the wait and the last merges
 * them. Without that, a plan tuned at a script's first kv_len replayed
 * one block's loop over rows of 1000 positions (26% slower). With it,
 * such plans were still 10 to 11% slower at positions 108..1108, so the
 * tuner weighs dsplit only with capture --tune-var (cuda_impl_windowed).
 * On an H200 (bench/RESULTS.md, twenty-seventh session) the 1B tuned at
 * positions 32..159 took dsplit in every layer, its step 0.9% faster than
 * with cluster2 (1.9% without the split path, attention 3.8 us exposed a
 * layer against 5.0; the launch then had 2 blocks a row, now split's).
 * Its blocks are numbered split-major, so that a short row's two working
 * blocks are among the launch's first: the step, same choices, 1.3% faster
 * (twenty-eighth session, with the feed writes, which alone gave 0.1%),
 * attention 2.8 us a step less exposed and o and down 11.3 us less.
 *
 * "dsplit_early" is dsplit whose long rows, where the launch cuts them in
 * chunks of one round of the core's loads (64 positions at head_dim 64:
 * every row of a 2048-position cache at 16 heads on 132 multiprocessors),
 * load the rows earlier steps wrote before the PDL wait as a short row
 * does (attn_dsplit_chunk), the same bits as dsplit's. Whether that pays
 * depends on the kernel before, so the tuner decides in the step. On an
 * H200 (bench/RESULTS.md, thirty-fourth session), one plan each with every
 * layer on one form, at positions 108..1108: llama-decode-fuse (after the
 * fused q|k|v, norm and rope product, 7.7 us) 2.5% faster than with
 * dsplit; llama-decode (after rope_kv_write's 2.6 us) 1.5% slower, its
 * attention 0.23 us a layer more exposed and o's rows kernel 0.09. Tuned
 * over the whole window, both samples then took cluster_early.
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include <type_traits>

#include <cooperative_groups.h>

#include "cuda-attention-core.h"

/* The most blocks of a cluster: 16 where the device allows clusters past
 * the portable 8 (an H100 does), else 8. */
#define CUDA_ATTN_CLUSTER_MAX      16
#define CUDA_ATTN_CLUSTER_PORTABLE 8

/* --- device side ---------------------------------------------------------- */

/* Position j of a contiguous cache: row j of k and of v. */
template <typename T>
struct attn_rows {
	const T *k, *v;                 /* the kv head's first row */
	int64_t stride;                 /* elements from one row to the next */

	__device__ __forceinline__ bool at(int64_t j, const T *&kp, const T *&vp) const
	{
		kp = k + j * stride;
		vp = v + j * stride;
		return true;
	}
};

/* The longest row of a launch whose kv_len is KV: KV within [0, S]. */
__host__ __device__ __forceinline__ int64_t attn_kv_clamp(int64_t kv, int64_t S)
{
	return kv < 0 ? 0 : kv > S ? S : kv;
}

/* The length block row TH attends to: kv_len clamped to [0, S], less the
 * later tokens' rows where causal. */
__device__ __forceinline__ int64_t attn_row_len(int64_t kv, int64_t S, int64_t causal_rows,
                                                int64_t th, int64_t H)
{
	int64_t L = attn_kv_clamp(kv, S);

	if (causal_rows > 0) {          /* token t of T sees L - (T - 1 - t) keys */
		L -= causal_rows - 1 - th / H;
		L = L < 0 ? 0 : L;
	}
	return L;
}

/* Whether the blocks of row TH = t * H + h ask L2 for their rows, and for
 * which share: the last token's (the longest row: causal rows see fewer),
 * each query head of kv head g for 1 / (g's query heads) of the lines, so
 * that a line is asked for once, by as many blocks as share it. Query
 * head h reads kv head h * KVH / H: g's heads are ceil(g * H / KVH) up to
 * ceil((g + 1) * H / KVH) - 1. */
__device__ __forceinline__ bool attn_prefetch_share(int64_t th, int64_t H, int64_t KVH,
                                                    int64_t T, int &share, int &nshare)
{
	const int64_t h = th % H, g = h * KVH / H;
	const int64_t first = (g * H + KVH - 1) / KVH, end = ((g + 1) * H + KVH - 1) / KVH;

	share = (int)(h - first);
	nshare = (int)(end - first);
	return th / H == T - 1;
}

/* The "_early" implementations, before the PDL wait: the block's chunk
 * rows below kv - NEW_ROWS (the rows the step has not written), of kv
 * head rows K and V, asked of L2 a 128-byte line at a time (k's, then
 * v's), lines share, share + nshare, ... (attn_prefetch_share): after the
 * wait the loads of them hit L2 instead of going to HBM. */
template <typename T>
__device__ __forceinline__ void attn_prefetch_chunk(const T *k, const T *v, int64_t th, int64_t H,
                                                    int64_t KVH, int64_t kv, int64_t L,
                                                    int64_t chunk, int split, int nsplit,
                                                    int64_t new_rows, int D)
{
	int share, nshare;

	if (!attn_prefetch_share(th, H, KVH, new_rows, share, nshare) ||
	    split >= attn_core_active(L, chunk, nsplit))
		return;
	const int64_t a = (int64_t)split * chunk, stride = KVH * D;
	int64_t b = a + chunk < L ? a + chunk : L;
	b = b < kv - new_rows ? b : kv - new_rows;
	const int lines = (int)((D * (int64_t)sizeof(T) + 127) / 128);
	const int64_t total = (b - a) * 2 * lines;
	for (int64_t i = share + (int64_t)threadIdx.x * nshare; i < total;
	     i += (int64_t)blockDim.x * nshare) {
		const int64_t r = a + i / (2 * lines);
		const int c = (int)(i % (2 * lines));
		const T *row = (c < lines ? k : v) + r * stride;
		cuda_prefetch_l2(reinterpret_cast<const char *>(row) + (int64_t)(c % lines) * 128);
	}
}

/* Block (t, h, split) = blockIdx.x as (t * H + h) * nsplit + split, over
 * keys [split * chunk, min(split * chunk + chunk, L)). KV_LEN_DEV, when not
 * NULL, gives kv_len; else KV_LEN does. EARLY: "split_early". */
template <typename T, int LPR, int EPL, bool VEC, bool EARLY>
__global__ void __launch_bounds__(ATTN_CORE_THREADS)
bcg_attention_split_kernel(const T *q, const T *k, const T *v, T *out,
                           struct attn_core_scratch sc, unsigned *counters, int64_t H,
                           int64_t KVH, int D, int64_t S, int64_t kv_len,
                           const int32_t *kv_len_dev, int nsplit,
                           int64_t chunk, float scale, int64_t causal_rows,
                           int64_t new_rows)
{
	const int64_t bid = blockIdx.x;
	const int split = (int)(bid % nsplit);
	const int64_t th = bid / nsplit;                /* t * H + h */
	const int64_t g = (th % H) * KVH / H;
	const struct attn_rows<T> src = { k + g * D, v + g * D, KVH * D };

	if constexpr (!EARLY)
		cuda_pdl_begin();
	/* EARLY reads kv_len before the wait: the host's, or its device
	 * mirror, which the host writes before the step's first kernel */
	const int64_t kv = kv_len_dev ? (int64_t)*kv_len_dev : kv_len;
	const int64_t L = attn_row_len(kv, S, causal_rows, th, H);
	if (kv_len_dev != NULL)
		chunk = attn_core_chunk_for(L, nsplit);
	if constexpr (EARLY) {
		attn_prefetch_chunk<T>(src.k, src.v, th, H, KVH, kv, L, chunk, split, nsplit, new_rows,
		                       D);
		cuda_pdl_begin();
	}
	attn_core_block<T, LPR, EPL, VEC>(src, q + th * D, L, chunk, split, nsplit, th, D, scale, out,
	                                  sc, counters);
}

/* "cluster": block (t, h, split) = blockIdx.x as (t * H + h) * nsplit +
 * split, where nsplit is the cluster's size and split the block's rank in
 * it. The row's chunk follows L on the device in every form, as the
 * graph-safe launch of the other forms plans it. Each block leaves its
 * part (m, l, acc) in its shared memory; after the cluster's barrier the
 * first block merges the active parts in rank order into out[t, h], and a
 * second barrier keeps every part alive until it has been read. Every
 * block, active or not, passes both barriers. */
template <typename T, int LPR, int EPL, bool VEC, bool EARLY>
__global__ void __launch_bounds__(ATTN_CORE_THREADS)
bcg_attention_cluster_kernel(const T *q, const T *k, const T *v, T *out, int64_t H,
                             int64_t KVH, int D, int64_t S, int64_t kv_len,
                             const int32_t *kv_len_dev, float scale, int64_t causal_rows,
                             int64_t new_rows)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	namespace cg = cooperative_groups;
	__shared__ float part_m, part_l;
	__shared__ float part_acc[LPR * EPL];
	cg::cluster_group cl = cg::this_cluster();
	const int split = (int)cl.block_rank(), nsplit = (int)cl.num_blocks();
	const int64_t th = blockIdx.x / nsplit;
	const int64_t g = (th % H) * KVH / H;
	const struct attn_rows<T> src = { k + g * D, v + g * D, KVH * D };

	if constexpr (!EARLY)
		cuda_pdl_begin();
	/* EARLY ("cluster_early"): as the split kernel's */
	const int64_t kv = kv_len_dev ? (int64_t)*kv_len_dev : kv_len;
	const int64_t L = attn_row_len(kv, S, causal_rows, th, H);
	const int64_t chunk = attn_core_chunk_for(L, nsplit);
	if constexpr (EARLY) {
		attn_prefetch_chunk<T>(src.k, src.v, th, H, KVH, kv, L, chunk, split, nsplit, new_rows,
		                       D);
		cuda_pdl_begin();
	}
	const int nact = attn_core_active(L, chunk, nsplit);
	float acc[EPL], m = -INFINITY, l = 0.0f;
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = 0.0f;
	if (split < nact) {
		const int64_t start = (int64_t)split * chunk;
		const int64_t end = start + chunk < L ? start + chunk : L;
		float qr[EPL];
		attn_core_load<T, EPL, VEC>(q + th * D, (threadIdx.x & 31) % LPR, D, qr);
		attn_core_accumulate<T, LPR, EPL, VEC>(src, qr, start, end, D,
		                                       scale * ATTN_CORE_LOG2E, m, l, acc);
	}
	float M, lsum;
	attn_core_reduce<LPR, EPL>(m, l, acc, D, true, M, lsum,
	                           [&](int d, float a) { part_acc[d] = a; });
	if (threadIdx.x == 0) {
		part_m = M;
		part_l = lsum;
	}
	cl.sync();
	if (split == 0) {
		/* attn_core_combine's sums, in its order; every remote load
		 * of a round is issued before any is used */
		__shared__ float pm[CUDA_ATTN_CLUSTER_MAX], pl[CUDA_ATTN_CLUSTER_MAX];
		if (threadIdx.x < nact) {
			pm[threadIdx.x] = *cl.map_shared_rank(&part_m, threadIdx.x);
			pl[threadIdx.x] = *cl.map_shared_rank(&part_l, threadIdx.x);
		}
		__syncthreads();
		float Mx = -INFINITY;
		for (int r = 0; r < nact; r++)
			Mx = fmaxf(Mx, pm[r]);
		for (int d = threadIdx.x; d < D; d += ATTN_CORE_THREADS) {
			float pa[CUDA_ATTN_CLUSTER_MAX], ls = 0.0f, a = 0.0f;
#pragma unroll
			for (int r = 0; r < CUDA_ATTN_CLUSTER_MAX; r++)
				pa[r] = r < nact && pm[r] != -INFINITY
				        ? cl.map_shared_rank(part_acc, (unsigned)r)[d] : 0.0f;
#pragma unroll
			for (int r = 0; r < CUDA_ATTN_CLUSTER_MAX; r++) {
				if (r >= nact)
					break;
				const float w = pm[r] == -INFINITY ? 0.0f : exp2f(pm[r] - Mx);
				ls += w * pl[r];
				if (w != 0.0f)
					a += w * pa[r];
			}
			out[th * D + d] = cuda_from_f32<T>(ls > 0.0f ? a / ls : 0.0f);
		}
	}
	cl.sync();
#endif
}

/* "dsplit", a row of one round: blocks (t, h, 0) and (t, h, 1) write the
 * head's dims [p0, p0 + Dp) of part 0 and 1 (the first ceil(D / 2), then
 * the rest). Both compute every score (the dot products over all D) and
 * read only their part of each v row, so nothing is merged between
 * blocks. The lane geometry is the core's for k (a row's D elements over
 * LPR lanes, EPL a lane); for v a lane holds EPL / 2 of the part.
 * Positions go to the warps in turn, GPW a warp (one a lane group), KB a
 * group in flight: a round of R = KB * ATTN_CORE_WARPS * GPW positions is
 * loaded whole. Its rows below kv_len - T (the rows earlier steps wrote)
 * are loaded into registers before the PDL wait, kv_len read as the early
 * forms read it (cuda-internal.h's rule (a)); after the wait, the query
 * and the round's newer rows. Positions past the row are never read;
 * their registers are zeros. */
template <typename T, int EH, bool VEC>
__device__ __forceinline__ void attn_dsplit_load_part(const T *row, int sub, int Dp,
                                                      T (&r)[EH])
{
	const int d0 = sub * EH;

	if constexpr (VEC) {
		/* 16 bytes at a time where a lane's share is whole 16-byte
		 * pieces, else 8 (EH * sizeof(T) is a multiple of 8 under VEC:
		 * half of EPL's whole 16-byte pieces) */
		using V = typename std::conditional<(EH * sizeof(T)) % 16 == 0, uint4, uint2>::type;
		constexpr int PER = (int)(sizeof(V) / sizeof(T));
		static_assert(EH % PER == 0, "whole pieces a lane");
#pragma unroll
		for (int c = 0; c < EH / PER; c++) {
			const V u = *reinterpret_cast<const V *>(row + d0 + c * PER);
			memcpy(&r[c * PER], &u, sizeof u);
		}
	} else {
#pragma unroll
		for (int e = 0; e < EH; e++)
			r[e] = d0 + e < Dp ? row[d0 + e] : attn_core_zero<T>();
	}
}

/* Positions in flight a lane group: about 256 bytes of k rows a lane
 * (128 element by element, whose loads take a register each), 2 to 16. */
template <typename T, int EPL, bool VEC>
__host__ __device__ constexpr int attn_dsplit_kb()
{
	constexpr int n = (VEC ? 256 : 128) / (EPL * (int)sizeof(T));

	return n < 2 ? 2 : n > 16 ? 16 : n;
}

template <typename T, int LPR, int EPL, bool VEC>
struct attn_dsplit_round {
	static constexpr int EH = EPL / 2, KB = attn_dsplit_kb<T, EPL, VEC>(), GPW = 32 / LPR;
	static constexpr int R = KB * ATTN_CORE_WARPS * GPW;

	T kr[KB][EPL], vr[KB][EH];

	/* Position of slot B of the calling lane. */
	__device__ __forceinline__ static int64_t pos(int b)
	{
		const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
		return ((int64_t)b * ATTN_CORE_WARPS + warp) * GPW + lane / LPR;
	}

	__device__ __forceinline__ void clear()
	{
#pragma unroll
		for (int b = 0; b < KB; b++) {
#pragma unroll
			for (int e = 0; e < EPL; e++)
				kr[b][e] = attn_core_zero<T>();
#pragma unroll
			for (int e = 0; e < EH; e++)
				vr[b][e] = attn_core_zero<T>();
		}
	}

	/* The round's positions in [LO, HI): k rows whole, v rows' part
	 * from P0 (Dp elements). */
	__device__ __forceinline__ void load(const struct attn_rows<T> &src, int64_t lo,
	                                     int64_t hi, int D, int p0, int Dp)
	{
		const int sub = (threadIdx.x & 31) % LPR;
#pragma unroll
		for (int b = 0; b < KB; b++) {
			const int64_t j = pos(b);
			const T *kp, *vp;
			if (j >= lo && j < hi && src.at(j, kp, vp)) {
				attn_core_load_raw<T, EPL, VEC>(kp, sub, D, kr[b]);
				attn_dsplit_load_part<T, EH, VEC>(vp + p0, sub, Dp, vr[b]);
			}
		}
	}

	/* The round's positions below END into the group's (m, l, acc). */
	__device__ __forceinline__ void accumulate(int64_t end, const float (&qr)[EPL],
	                                           float scale2, float &m, float &l,
	                                           float (&acc)[EH]) const
	{
		bool ok[KB];
#pragma unroll
		for (int b = 0; b < KB; b++)
			ok[b] = pos(b) < end;
		attn_core_update<T, LPR, KB, EPL, EH>(qr, kr, vr, ok, scale2, m, l, acc);
	}
};

/* Split SPLIT of NACT (of NSPLIT) of a row of L positions, whose chunk
 * (CHUNK positions) is one round of attn_core_accumulate: the same
 * positions a lane, the same update and the same finish as
 * attn_core_block, so the same bits; but the rows below OLD (those that
 * earlier steps wrote) are loaded before the PDL wait, the others after
 * it. Every thread of the block calls it, before the wait. */
template <typename T, int LPR, int EPL, bool VEC, typename Src>
__device__ __forceinline__ void attn_dsplit_chunk(const Src &src, const T *q_row, int64_t L,
                                                  int64_t old, int64_t chunk, int split,
                                                  int nact, int nsplit, int64_t th, int D,
                                                  float scale, T *out,
                                                  const struct attn_core_scratch &sc,
                                                  unsigned *counters)
{
	using G = attn_core_geom<LPR, EPL>;
	constexpr int KB = G::KB, GPW = G::GPW, STEP = G::STEP;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int grp = lane / LPR, sub = lane % LPR;
	const int64_t start = (int64_t)split * chunk;
	const int64_t end = start + chunk < L ? start + chunk : L;
	const int64_t j0 = start + (int64_t)warp * STEP;
	T kr[KB][EPL], vr[KB][EPL];
	bool ok[KB], early[KB];

#pragma unroll
	for (int b = 0; b < KB; b++) {
		const int64_t j = j0 + b * GPW + grp;
		const T *kp = NULL, *vp = NULL;
		ok[b] = j < end && src.at(j, kp, vp);
		early[b] = ok[b] && j < old;
		if (early[b]) {
			attn_core_load_raw<T, EPL, VEC>(kp, sub, D, kr[b]);
			attn_core_load_raw<T, EPL, VEC>(vp, sub, D, vr[b]);
		}
	}
	cuda_pdl_begin();
#pragma unroll
	for (int b = 0; b < KB; b++) {
		const int64_t j = j0 + b * GPW + grp;
		const T *kp, *vp;
		if (early[b])
			continue;
		if (ok[b] && src.at(j, kp, vp)) {
			attn_core_load_raw<T, EPL, VEC>(kp, sub, D, kr[b]);
			attn_core_load_raw<T, EPL, VEC>(vp, sub, D, vr[b]);
		} else {
#pragma unroll
			for (int e = 0; e < EPL; e++)
				kr[b][e] = vr[b][e] = attn_core_zero<T>();
		}
	}
	float qr[EPL], acc[EPL], m = -INFINITY, l = 0.0f;
	attn_core_load<T, EPL, VEC>(q_row, sub, D, qr);
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = 0.0f;
	attn_core_update<T, LPR, KB, EPL, EPL>(qr, kr, vr, ok, scale * ATTN_CORE_LOG2E, m, l, acc);
	attn_core_finish<T, LPR, EPL, Src>(m, l, acc, th, split, nact, nsplit, D, out, sc, counters);
}

/* Blocks a multiprocessor holds at least, for groups of LPR lanes: at 8
 * (head_dim 64 in f16/bf16) 3, which keeps ptxas to 168 registers a
 * thread without a spill, where the round and split's path beside it took
 * 220 (the round alone 168); wider groups spilled under 3, so 2. */
#define ATTN_DSPLIT_MIN_BLOCKS(LPR) ((LPR) <= 8 ? 3 : 2)

/* A row of at most R positions (attn_dsplit_round's) is one round: blocks
 * (t, h, 0) and (t, h, 1) of the launch's NBLK a row are its two parts,
 * the others return at once, reading nothing. Blocks are numbered
 * split-major (split * T * H + t * H + h), as paged attention's are, so
 * the working blocks of short rows come first in the launch. A longer
 * row is "split"'s: its active splits of NSPLIT (at most NBLK) take
 * chunks of it and the last to finish merges them (attn_core_block, the
 * scratch and the counters), so a row past the round is not one block's
 * loop; the other blocks return before the wait. EARLY ("dsplit_early"):
 * a chunk of one round of the core's loads (attn_core_geom's ROUND: 64
 * positions at head_dim 64, the chunk a graph-safe launch cuts wherever
 * its splits are enough: on 132 multiprocessors, at 16 heads for every
 * row of a 2048-position cache, at 32 heads up to 1024) loads the rows
 * earlier steps wrote before the wait, as a short row does
 * (attn_dsplit_chunk); a longer one loads after it. The launch is sized
 * for both (cuda_run_attention). */
template <typename T, int LPR, int EPL, bool VEC, bool EARLY>
__global__ void __launch_bounds__(ATTN_CORE_THREADS, ATTN_DSPLIT_MIN_BLOCKS(LPR))
bcg_attention_dsplit_kernel(const T *q, const T *k, const T *v, T *out,
                            struct attn_core_scratch sc, unsigned *counters, int64_t H,
                            int64_t KVH, int D, int64_t S, int64_t kv_len,
                            const int32_t *kv_len_dev, int nsplit, int nblk, int64_t chunk,
                            float scale, int64_t causal_rows, int64_t new_rows)
{
	using Round = attn_dsplit_round<T, LPR, EPL, VEC>;
	constexpr int EH = Round::EH;
	/* split-major: the rows' first two splits, all a short row uses,
	 * are the launch's first blocks and are dispatched first */
	const int64_t nth = gridDim.x / nblk;
	const int split = (int)(blockIdx.x / nth);
	const int64_t th = blockIdx.x % nth;
	const int64_t g = (th % H) * KVH / H;
	const struct attn_rows<T> src = { k + g * D, v + g * D, KVH * D };

	/* before the wait: kv_len (the host's or its device mirror) */
	const int64_t kv = kv_len_dev ? (int64_t)*kv_len_dev : kv_len;
	const int64_t L = attn_row_len(kv, S, causal_rows, th, H);
	if (L > Round::R) {
		/* the blocks past the row's chunks leave before the wait, as
		 * a short row's past its two do: waiting, they would hold
		 * their registers (168 at head_dim 64) while the kernel after
		 * looks for room; EARLY: a chunk of one round loads its old
		 * rows before the wait, as a short row does */
		if (kv_len_dev != NULL)
			chunk = attn_core_chunk_for(L, nsplit);
		const int nact = attn_core_active(L, chunk, nsplit);
		if (split >= nact)
			return;
		if constexpr (EARLY) {
			if (chunk <= attn_core_geom<LPR, EPL>::ROUND) {
				int64_t old = kv - new_rows;
				old = old < 0 ? 0 : old;
				attn_dsplit_chunk<T, LPR, EPL, VEC>(src, q + th * D, L, old, chunk,
				                                    split, nact, nsplit, th, D, scale,
				                                    out, sc, counters);
				return;
			}
		}
		cuda_pdl_begin();
		attn_core_block<T, LPR, EPL, VEC>(src, q + th * D, L, chunk, split, nsplit, th, D,
		                                  scale, out, sc, counters);
		return;
	}
	if (split >= 2)
		return;
	const int part = split, half = (D + 1) / 2;
	const int p0 = part * half, Dp = part ? D - half : half;
	/* still before the wait: the round's rows that earlier steps wrote */
	int64_t old = kv - new_rows < L ? kv - new_rows : L;
	old = old < 0 ? 0 : old;
	Round rd;
	rd.clear();
	rd.load(src, 0, old, D, p0, Dp);
	cuda_pdl_begin();
	rd.load(src, old, L, D, p0, Dp);

	float qr[EPL], acc[EH], m = -INFINITY, l = 0.0f;
	attn_core_load<T, EPL, VEC>(q + th * D, (threadIdx.x & 31) % LPR, D, qr);
#pragma unroll
	for (int e = 0; e < EH; e++)
		acc[e] = 0.0f;
	rd.accumulate(L, qr, scale * ATTN_CORE_LOG2E, m, l, acc);
	float M, lsum;
	attn_core_reduce<LPR, EH>(m, l, acc, Dp, true, M, lsum, [&](int d, float a) {
		out[th * D + p0 + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
	});
}

/* --- host side ------------------------------------------------------------ */

struct attn_shape {
	int64_t T, H, KVH, D, S;
	int64_t th;                     /* T * H: (token, head) pairs */
};

/* One launch, planned. */
struct attn_launch {
	struct attn_shape sh;
	const void *q, *k, *v;
	void *out;
	int dtype;
	int64_t kv_len;                 /* the host's value */
	int64_t causal_rows;            /* causal: T; else 0 */
	const int32_t *kv_len_dev;      /* graph-safe: the device's, or NULL */
	int nsplit;
	int64_t chunk;
	float scale;
	struct attn_core_scratch sc;
	unsigned *counters;             /* "split": one per (t, h); NULL: "twopass" */
	unsigned cluster;               /* "cluster": its blocks (= nsplit); else 0 */
	bool dsplit;                    /* "dsplit": two blocks a short row, else split's */
	bool early;                     /* "_early": the old rows asked of L2 first;
	                                 * dsplit_early: a long row's chunks of one
	                                 * round load them before the wait */
	const struct cuda_op_ctx *ctx;
};

static int cuda_attention_shape(const struct op_call *call, struct attn_shape *sh,
                                char *msg, size_t len)
{
	const struct op_tensor *q = &call->in[0], *k = &call->in[1], *v = &call->in[2];
	const struct op_tensor *out = &call->out[0];

	sh->H = call->attr[ATTN_HEADS].i;
	sh->KVH = call->attr[ATTN_KV_HEADS].i;
	sh->D = call->attr[ATTN_HEAD_DIM].i;
	if (sh->H < 1 || sh->KVH < 1 || sh->D < 1 || sh->H > INT_MAX || sh->KVH > INT_MAX)
		return cuda_fail(msg, len, "attention: heads %lld, kv_heads %lld, head_dim %lld "
		                 "must be positive", (long long)sh->H, (long long)sh->KVH,
		                 (long long)sh->D);
	if (sh->D > ATTN_CORE_MAX_HEAD_DIM)
		return cuda_fail(msg, len, "attention: head_dim %lld above the CUDA kernel's %d",
		                 (long long)sh->D, ATTN_CORE_MAX_HEAD_DIM);
	if (!cuda_is_float_dtype(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype ||
	    out->dtype != q->dtype)
		return cuda_fail(msg, len, "attention: q, k, v, out must share one float dtype "
		                 "(%s, %s, %s, %s)", cuda_dtype_name(q->dtype),
		                 cuda_dtype_name(k->dtype), cuda_dtype_name(v->dtype),
		                 cuda_dtype_name(out->dtype));
	sh->T = cuda_rows(q);
	sh->S = cuda_rows(k);
	if (cuda_cols(q) != sh->H * sh->D || cuda_numel(out) != cuda_numel(q) ||
	    cuda_cols(out) != cuda_cols(q))
		return cuda_fail(msg, len, "attention: q and out must be [T, %lld]",
		                 (long long)(sh->H * sh->D));
	if (cuda_cols(k) != sh->KVH * sh->D || cuda_rows(v) != sh->S ||
	    cuda_cols(v) != cuda_cols(k))
		return cuda_fail(msg, len, "attention: k and v must be [S, %lld]",
		                 (long long)(sh->KVH * sh->D));
	sh->th = sh->T * sh->H;
	if (sh->th > INT_MAX / ATTN_CORE_MAX_SPLITS)
		return cuda_fail(msg, len, "attention: %lld tokens x %lld heads is too many",
		                 (long long)sh->T, (long long)sh->H);
	return 0;
}

extern "C" size_t cuda_attention_scratch_bytes(const struct op_call *call)
{
	struct attn_shape sh = {};

	if (cuda_attention_shape(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	return cuda_scratch_with_counters(attn_core_scratch_for(sh.th,
	                                  attn_core_splits_bound(sh.S, sh.th), sh.D));
}

/* The most blocks a cluster of IMPL (a cluster form) holds. */
static int attn_cluster_most(int impl)
{
	switch (impl) {
	case CUDA_IMPL_ATTN_CLUSTER2:
		return 2;
	case CUDA_IMPL_ATTN_CLUSTER4:
		return 4;
	case CUDA_IMPL_ATTN_CLUSTER8:
		return 8;
	default:
		return CUDA_ATTN_CLUSTER_MAX;
	}
}

/* The implementation IMPL without its "_early" or its narrower clusters:
 * split, twopass, cluster or dsplit. */
static int attn_base_impl(int impl)
{
	switch (impl) {
	case CUDA_IMPL_ATTN_SPLIT_EARLY:
		return CUDA_IMPL_ATTN_SPLIT;
	case CUDA_IMPL_ATTN_CLUSTER_EARLY:
	case CUDA_IMPL_ATTN_CLUSTER2:
	case CUDA_IMPL_ATTN_CLUSTER4:
	case CUDA_IMPL_ATTN_CLUSTER8:
		return CUDA_IMPL_ATTN_CLUSTER;
	case CUDA_IMPL_ATTN_DSPLIT_EARLY:
		return CUDA_IMPL_ATTN_DSPLIT;
	default:
		return impl;
	}
}

int cuda_attention_usable(const struct op_call *call, int impl)
{
	struct attn_shape sh = {};

	if (cuda_attention_shape(call, &sh, NULL, 0) != 0)
		return 0;
	switch (impl) {
	case CUDA_IMPL_ATTN_SPLIT:
	case CUDA_IMPL_ATTN_SPLIT_EARLY:
	case CUDA_IMPL_ATTN_DSPLIT:             /* split's counters past one round */
	case CUDA_IMPL_ATTN_DSPLIT_EARLY:
		return sh.th <= CUDA_SCRATCH_COUNTERS;
	case CUDA_IMPL_ATTN_TWOPASS:
		return 1;
	case CUDA_IMPL_ATTN_CLUSTER:
	case CUDA_IMPL_ATTN_CLUSTER_EARLY:
	case CUDA_IMPL_ATTN_CLUSTER2:
	case CUDA_IMPL_ATTN_CLUSTER4:
	case CUDA_IMPL_ATTN_CLUSTER8:
		return cuda_device_sm90();
	}
	return 0;
}

/* One launch at the lane geometry attn_core_dispatch picks. */
template <typename T>
struct attn_launcher {
	const struct attn_launch *al;
	char *msg;
	size_t len;

	template <int LPR, int EPL, bool VEC>
	int run() const
	{
		return al->early ? run_form<LPR, EPL, VEC, true>() : run_form<LPR, EPL, VEC, false>();
	}

	template <int LPR, int EPL, bool VEC, bool EARLY>
	int run_form() const
	{
		const struct attn_shape *sh = &al->sh;
		T *out = static_cast<T *>(al->out);
		if (al->dsplit)
			return run_dsplit<LPR, EPL, VEC, EARLY>();
		if (al->cluster > 0)
			return run_cluster<LPR, EPL, VEC, EARLY>();
		int rc = cuda_launch(al->ctx, "bcg_attention_split_kernel",
		                     bcg_attention_split_kernel<T, LPR, EPL, VEC, EARLY>,
		                     dim3((unsigned)(sh->th * al->nsplit)), dim3(ATTN_CORE_THREADS),
		                     msg, len, static_cast<const T *>(al->q),
		                     static_cast<const T *>(al->k), static_cast<const T *>(al->v), out,
		                     al->sc, al->counters, sh->H, sh->KVH, (int)sh->D, sh->S,
		                     al->kv_len, al->kv_len_dev, al->nsplit, al->chunk, al->scale,
		                     al->causal_rows, sh->T);
		return rc ? rc : attn_core_launch_merge<T>(al->ctx, al->sc, al->counters, out, sh->th,
		                                          al->nsplit, sh->D, msg, len);
	}

	template <int LPR, int EPL, bool VEC, bool EARLY>
	int run_dsplit() const
	{
		const struct attn_shape *sh = &al->sh;
		constexpr int R = attn_dsplit_round<T, LPR, EPL, VEC>::R;
		int nsplit = al->nsplit;
		int64_t chunk = al->chunk;

		/* eager: a row of at most R positions is one round, two
		 * blocks; graph-safe: as many blocks as split's plan for the
		 * cache, at least the round's two */
		if (al->kv_len_dev == NULL && attn_kv_clamp(al->kv_len, sh->S) <= R) {
			nsplit = 1;
			chunk = 0;
		}
		const int nblk = nsplit > 2 ? nsplit : 2;
		return cuda_launch(al->ctx, "bcg_attention_dsplit_kernel",
		                   bcg_attention_dsplit_kernel<T, LPR, EPL, VEC, EARLY>,
		                   dim3((unsigned)(sh->th * nblk)), dim3(ATTN_CORE_THREADS), msg, len,
		                   static_cast<const T *>(al->q), static_cast<const T *>(al->k),
		                   static_cast<const T *>(al->v), static_cast<T *>(al->out), al->sc,
		                   al->counters, sh->H, sh->KVH, (int)sh->D, sh->S, al->kv_len,
		                   al->kv_len_dev, nsplit, nblk, chunk, al->scale, al->causal_rows,
		                   sh->T);
	}

	template <int LPR, int EPL, bool VEC, bool EARLY>
	int run_cluster() const
	{
		static unsigned long long wide_set;
		const struct attn_shape *sh = &al->sh;
		void (*kernel)(const T *, const T *, const T *, T *, int64_t, int64_t, int, int64_t,
		               int64_t, const int32_t *, float, int64_t, int64_t) =
			bcg_attention_cluster_kernel<T, LPR, EPL, VEC, EARLY>;
		unsigned cl = al->cluster;

		/* Clusters past the portable size need the kernel's consent. */
		if (cl > CUDA_ATTN_CLUSTER_PORTABLE &&
		    cuda_func_attr_once(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1,
		                        &wide_set) != cudaSuccess) {
			(void)cudaGetLastError();
			cl = CUDA_ATTN_CLUSTER_PORTABLE;
		}
		return cuda_launch_ex(al->ctx, "bcg_attention_cluster_kernel", kernel,
		                      dim3((unsigned)(sh->th * cl)), dim3(ATTN_CORE_THREADS), 0, cl,
		                      msg, len,
		                      static_cast<const T *>(al->q), static_cast<const T *>(al->k),
		                      static_cast<const T *>(al->v), static_cast<T *>(al->out), sh->H,
		                      sh->KVH, (int)sh->D, sh->S, al->kv_len, al->kv_len_dev, al->scale,
		                      al->causal_rows, sh->T);
	}
};

template <typename T>
static int attn_launch_typed(const struct attn_launch *al, char *msg, size_t len)
{
	const attn_launcher<T> l = { al, msg, len };

	return attn_core_dispatch<T>(al->sh.D, attn_core_aligned(al->sh.D, sizeof(T), al->q, al->k,
	                                                         al->v), l);
}

extern "C" int cuda_run_attention(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	struct attn_launch al;
	double scale = call->attr[ATTN_SCALE].f;
	size_t need;

	memset(&al, 0, sizeof al);
	if (cuda_attention_shape(call, &al.sh, msg, len))
		return -1;
	if (al.sh.th < 1)
		return 0;
	al.q = call->in[0].data;
	al.k = call->in[1].data;
	al.v = call->in[2].data;
	al.out = call->out[0].data;
	al.dtype = call->in[0].dtype;
	al.kv_len = call->attr[ATTN_KV_LEN].i;
	al.causal_rows = call->attr[ATTN_CAUSAL].i ? al.sh.T : 0;
	al.ctx = ctx;
	const int base = attn_base_impl(call->impl);
	const char *iname = cuda_impl_name(OP_ATTENTION, call->impl);
	if (base != CUDA_IMPL_ATTN_SPLIT && base != CUDA_IMPL_ATTN_TWOPASS &&
	    base != CUDA_IMPL_ATTN_CLUSTER && base != CUDA_IMPL_ATTN_DSPLIT)
		return cuda_fail(msg, len, "attention: no implementation %d on CUDA", call->impl);
	if (!cuda_attention_usable(call, call->impl)) {
		if (base == CUDA_IMPL_ATTN_CLUSTER)
			return cuda_fail(msg, len, "attention: implementation %s needs an sm_90 "
			                 "device (thread block clusters)", iname);
		return cuda_fail(msg, len, "attention: implementation %s cannot run %lld (token, "
		                 "head) pairs, above the %lld scratch counters", iname,
		                 (long long)al.sh.th, (long long)CUDA_SCRATCH_COUNTERS);
	}
	al.early = call->impl == CUDA_IMPL_ATTN_SPLIT_EARLY ||
	           call->impl == CUDA_IMPL_ATTN_CLUSTER_EARLY ||
	           call->impl == CUDA_IMPL_ATTN_DSPLIT_EARLY;
	al.scale = scale == 0.0 ? 1.0f / sqrtf((float)al.sh.D) : (float)scale;
	if (call->graph_safe) {
		/* A literal kv_len has no device mirror; it is the same every
		 * step, so the host value serves. */
		al.kv_len_dev = call->attr_dev[ATTN_KV_LEN];
		attn_core_plan(al.sh.S, al.sh.th, attn_core_target(ctx->sm_count), &al.nsplit, &al.chunk);
	} else {
		attn_core_plan(attn_kv_clamp(al.kv_len, al.sh.S), al.sh.th,
		               attn_core_target(ctx->sm_count), &al.nsplit, &al.chunk);
	}

	al.dsplit = base == CUDA_IMPL_ATTN_DSPLIT;
	if (base == CUDA_IMPL_ATTN_CLUSTER) {
		/* the cluster holds the splits (cluster2, 4, 8: at most that many
		 * of them); no scratch */
		const int most = attn_cluster_most(call->impl);
		al.cluster = (unsigned)(al.nsplit < most ? al.nsplit : most);
		need = 0;
	} else {
		need = cuda_scratch_with_counters(attn_core_scratch_for(al.sh.th, al.nsplit,
		                                                        al.sh.D));
	}
	if (need > 0) {
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "attention: needs %zu bytes of scratch, the context "
			                 "has %zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "attention: scratch is not 16-byte aligned");
		char *data = static_cast<char *>(cuda_scratch_data(ctx));
		al.sc = attn_core_scratch_at(data, al.sh.th, al.nsplit);
		if (base == CUDA_IMPL_ATTN_SPLIT || base == CUDA_IMPL_ATTN_DSPLIT)
			al.counters = cuda_scratch_counters(ctx);
	}

	switch (al.dtype) {
	case PLAN_DTYPE_F16:
		return attn_launch_typed<__half>(&al, msg, len);
	case PLAN_DTYPE_BF16:
		return attn_launch_typed<__nv_bfloat16>(&al, msg, len);
	default:
		return attn_launch_typed<float>(&al, msg, len);
	}
}
