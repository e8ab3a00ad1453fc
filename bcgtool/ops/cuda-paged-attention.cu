/*
 * cuda-paged-attention.cu - paged attention: each query row of a batch of
 * requests over its request's blocks of the paged caches, on the split-K
 * core of cuda-attention-core.h (lane groups, online softmax, split plan
 * and merge, shared with attention over one contiguous cache).
 *
 * A block computes one (row t, head h, split). It first finds the request
 * of row t (the first r with query_start[r] <= t < query_start[r + 1],
 * every thread testing some r) and the row's length L_t = seq_lens[r] - n_r
 * + 1 + i, clamped to [0, MB * BS] (op.h). Position j is row j % BS of
 * block block_table[r, j / BS]; a block id outside [0, NB) makes the
 * position absent, so no metadata makes a block read outside the caches.
 * A row of no request, or of no position, gives zeros.
 *
 * The two forms share the kernels and differ in the launch: the eager form
 * sizes the split by the host's longest sequence (call->batch), so its
 * shape follows the batch; the graph-safe form by MB * BS, the most a
 * request can hold, and one captured launch serves every batch: the
 * splits past a row's length exit at once. Either way a row is cut into
 * chunks of at most ATTN_CORE_MAX_CHUNK positions, so the longest request
 * of a batch does not hold the launch up behind one block.
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "cuda-attention-core.h"

/* --- device side ---------------------------------------------------------- */

/* Position j of one request: row j % BS of block table[j / BS], or none
 * when that block id is outside [0, NB); then the row named is block 0's,
 * which exists (the kernel takes NB >= 1) and which the core masks. The
 * ids are read from IDS[j / BS - FIRST]: the block's chunk's ids staged in
 * shared memory, or, when they do not fit, the table itself (FIRST 0), by
 * one generic load either way. With BS a power of two (SHIFT >= 0) the
 * block of j is j >> SHIFT, not a division. */
template <typename T>
struct pattn_rows {
	const T *k, *v;                 /* the kv head's columns of row 0 */
	const int32_t *ids;
	uint32_t first;
	uint32_t BS;                    /* positions below MB * BS < 2^31 */
	int shift;
	int64_t NB, stride;

	__device__ __forceinline__ bool at(int64_t j, const T *&kp, const T *&vp) const
	{
		const uint32_t jj = (uint32_t)j, bi = shift >= 0 ? jj >> shift : jj / BS;
		const int64_t blk = ids[bi - first];
		const bool valid = blk >= 0 && blk < NB;
		const int64_t row = (valid ? blk : 0) * (int64_t)BS + (jj - bi * BS);

		kp = k + row * stride;
		vp = v + row * stride;
		return valid;
	}
};

/* The most block ids a chunk stages in shared memory. */
#define PATTN_STAGED_IDS 64

struct pattn_args {
	const int32_t *table, *seq_lens, *query_start;
	int64_t H, KVH, R, MB, NB, BS;
	int bs_shift;                   /* log2 BS, or -1 */
	int D;
	int nsplit;
	int64_t chunk;                  /* split and twopass: positions a split */
	float scale;
	int64_t T;                      /* staged: rows */
	int P;                          /* and positions a piece */
};

/* Row T's request (INT_MAX: none, *REQ) and its length L_t, clamped to
 * [0, MB * BS], 0 without any block (the top of this file): every thread
 * tests some r. Every thread of the block calls it; SH_REQ is a __shared__
 * int. */
__device__ __forceinline__ int64_t pattn_row_length(const struct pattn_args &a, int64_t t,
                                                    int *sh_req, int64_t *req)
{
	if (threadIdx.x == 0)
		*sh_req = INT_MAX;
	__syncthreads();
	for (int64_t r = threadIdx.x; r < a.R; r += blockDim.x)
		if (a.query_start[r] <= t && t < a.query_start[r + 1])
			atomicMin(sh_req, (int)r);
	__syncthreads();
	const int64_t r = *sh_req;
	int64_t L = 0;
	if (r != INT_MAX) {
		const int64_t qa = a.query_start[r], n = a.query_start[r + 1] - qa;
		L = (int64_t)a.seq_lens[r] - n + 1 + (t - qa);
		const int64_t cap = a.MB * a.BS;
		L = L < 0 ? 0 : L > cap ? cap : L;
	}
	if (a.NB < 1)
		L = 0;                  /* no block: no position */
	*req = r;
	return L;
}

/* --- split and twopass ------------------------------------------------------ */

/* Block (t, h, split) = blockIdx.x as (t * H + h) * nsplit + split, on the
 * core's lane groups (cuda-attention-core.h). */
template <typename T, int LPR, int EPL, bool VEC>
__global__ void __launch_bounds__(ATTN_CORE_THREADS)
bcg_paged_attention_kernel(const T *q, const T *k, const T *v, T *out,
                           struct attn_core_scratch sc, unsigned *counters, struct pattn_args a)
{
	__shared__ int sh_req;
	const int64_t bid = blockIdx.x;
	const int nsplit = a.nsplit, D = a.D;
	const int split = (int)(bid % nsplit);
	const int64_t th = bid / nsplit;                /* t * H + h */
	const int64_t h = th % a.H, t = th / a.H;
	const int64_t g = h * a.KVH / a.H;

	cuda_pdl_begin();
	int64_t r;
	const int64_t L = pattn_row_length(a, t, &sh_req, &r);
	const int nact = attn_core_active(L, a.chunk, nsplit);
	if (split >= nact)
		return;                 /* past the row: nothing to do, nothing to merge */
	__shared__ int32_t sh_ids[PATTN_STAGED_IDS];
	const int32_t *table = a.table + (r != INT_MAX ? r : 0) * a.MB;
	const int64_t j0 = (int64_t)split * a.chunk, j1 = j0 + a.chunk < L ? j0 + a.chunk : L;
	uint32_t first = (uint32_t)(j0 / a.BS);
	const int64_t nids = L > 0 ? (j1 - 1) / a.BS - first + 1 : 0;
	const int32_t *ids = table;
	if (nids <= PATTN_STAGED_IDS) {
		for (int i = threadIdx.x; i < nids; i += ATTN_CORE_THREADS)
			sh_ids[i] = table[first + i];
		__syncthreads();
		ids = sh_ids;
	} else {
		first = 0;
	}
	const struct pattn_rows<T> src = { k + g * D, v + g * D, ids, first, (uint32_t)a.BS,
	                                   a.bs_shift, a.NB, a.KVH * D };

	attn_core_block<T, LPR, EPL, VEC>(src, q + th * D, L, a.chunk, split, nsplit, th, D, a.scale,
	                                  out, sc, counters);
}

/* --- staged ---------------------------------------------------------------- */

/*
 * Implementation "staged": a block computes every head of one row t over
 * one range of the row's positions, split SPLIT of the launch's NSPLIT.
 * Blocks go split-major (blockIdx.x = split * T + t): the first split of
 * every row is scheduled first, and the splits past the rows' lengths,
 * which exit at once, last.
 *
 * The positions go by pieces of P, a divisor of BS, so that a piece never
 * straddles two cache blocks: a piece's K rows, every kv head, are P * KVH
 * * D contiguous elements of k_cache, and its V rows as many of v_cache.
 * Thread 0 has the copy engine bring both into a stage of shared memory
 * (two cuda_bulk_copy calls, counted on the stage's mbarrier; an absent
 * block brings nothing and its positions are masked) and keeps PST_STAGES
 * pieces in flight, refilling each stage once the block has read it.
 * Where the split kernel reads a head's 128-byte row a lane group, here a
 * row's cache arrives in runs of P rows of every head, by one thread.
 *
 * Warp w takes heads w, w + PST_WARPS, ... (HPW at most); in a warp,
 * groups of LPR lanes read a position's row of the head's kv head, EPL
 * elements (16 bytes) a lane, GPW = 32 / LPR positions at a time, with
 * the online softmax of cuda-attention-core.h a group (base 2, masked
 * positions by selects, so a NaN in a masked row is never used). The
 * groups then merge by xor shuffles. With one active split the block
 * writes out; with more, each writes its part (m, l and acc a head) to
 * the scratch and the last of the row's blocks (counters[t]) merges the
 * parts in split order. A row of no position writes zeros.
 *
 * The chunk is planned on the device from the row's length: the row's
 * pieces over the launch's NSPLIT splits, at least PST_MIN_PIECES a
 * split, so a short row in a launch sized for the captured bound takes as
 * many splits as its pieces give. The bits depend on L and NSPLIT.
 */
#define PST_WARPS      8
#define PST_THREADS    (PST_WARPS * 32)
#define PST_STAGES     3
#define PST_STAGE      (32 * 1024)     /* bytes a stage holds: a piece's K and V */
#define PST_PER_SM     2               /* blocks a multiprocessor holds */
#define PST_MIN_PIECES 2
#define PST_MAX_HPW    4               /* heads a warp: heads <= 32 */
#define PST_KB         2               /* positions in flight a lane group */
#define PST_IDS        64              /* block ids a split stages */
#define PST_BLOCKS_CAP 1024            /* the most blocks a launch aims at */
#define PST_SMEM       (PST_STAGES * PST_STAGE + PST_STAGES * 8)

struct pst_scratch {
	float2   *ml;                   /* [T][nsplit][H]: m, l */
	float    *acc;                  /* [T][nsplit][H][D] */
	unsigned *counters;             /* [T] */
};

template <typename T, int LPR, int HPW>
__global__ void __launch_bounds__(PST_THREADS, PST_PER_SM)
bcg_paged_attention_staged_kernel(const T *q, const T *k, const T *v, T *out,
                                  struct pst_scratch sc, struct pattn_args a)
{
	constexpr int EPL = 16 / (int)sizeof(T), GPW = 32 / LPR, KB = PST_KB;
	extern __shared__ __align__(128) unsigned char pst_smem[];
	__shared__ int sh_req, sh_ok[PST_STAGES], flag;
	__shared__ int32_t sh_ids[PST_IDS];
	T *stage = reinterpret_cast<T *>(pst_smem);
	uint64_t *full = reinterpret_cast<uint64_t *>(pst_smem + PST_STAGES * PST_STAGE);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int grp = lane / LPR, sub = lane % LPR;
	const int64_t t = blockIdx.x % a.T;
	const int split = (int)(blockIdx.x / a.T);
	const int D = a.D, P = a.P;
	const int64_t W = a.KVH * D, piece = (int64_t)P * W;   /* elements of a piece's K */
	constexpr int64_t stage_elems = PST_STAGE / (int64_t)sizeof(T);

	if (tid == 0) {
		for (int st = 0; st < PST_STAGES; st++)
			cuda_bar_init(&full[st]);
		cuda_bar_init_fence();
	}
	cuda_pdl_begin();
	int64_t r;
	const int64_t L = pattn_row_length(a, t, &sh_req, &r);  /* its barriers publish the inits */
	const int64_t npc = (L + P - 1) / P;                    /* the row's pieces */
	int64_t chunk = (npc + a.nsplit - 1) / a.nsplit;
	chunk = chunk < PST_MIN_PIECES ? PST_MIN_PIECES : chunk;
	const int nact = npc > 0 ? (int)((npc + chunk - 1) / chunk) : 1;
	if (split >= nact)
		return;                 /* past the row: nothing to do, nothing to merge */
	const int64_t pc0 = (int64_t)split * chunk;
	const int npieces = (int)((pc0 + chunk < npc ? pc0 + chunk : npc) - pc0);
	const int32_t *table = a.table + (r != INT_MAX ? r : 0) * a.MB;
	const int64_t b0 = pc0 * P / a.BS;
	const int64_t nids = npieces > 0 ? ((pc0 + npieces) * P - 1) / a.BS - b0 + 1 : 0;
	const bool staged_ids = nids <= PST_IDS;
	if (staged_ids) {
		for (int i = tid; i < nids; i += PST_THREADS)
			sh_ids[i] = table[b0 + i];
		__syncthreads();
	}

	/* piece I of the split into stage I % PST_STAGES (thread 0) */
	auto issue = [&](int i) {
		const int st = i % PST_STAGES;
		const int64_t j = (pc0 + i) * P, bi = j / a.BS;
		const int64_t blk = staged_ids ? sh_ids[bi - b0] : table[bi];
		const bool ok = blk >= 0 && blk < a.NB;
		sh_ok[st] = ok;         /* published by the arrival below */
		if (ok) {
			const int64_t row = blk * a.BS + (j - bi * a.BS);
			const unsigned bytes = (unsigned)(piece * (int64_t)sizeof(T));
			cuda_bar_expect(&full[st], 2 * bytes);
			cuda_bulk_copy(stage + st * stage_elems, k + row * W, bytes, &full[st]);
			cuda_bulk_copy(stage + st * stage_elems + piece, v + row * W, bytes, &full[st]);
		} else {
			cuda_bar_expect(&full[st], 0u);
		}
	};
	if (tid == 0)
		for (int i = 0; i < PST_STAGES && i < npieces; i++)
			issue(i);

	float qr[HPW][EPL], acc[HPW][EPL], m[HPW], l[HPW];
	const float scale2 = a.scale * ATTN_CORE_LOG2E;
#pragma unroll
	for (int hi = 0; hi < HPW; hi++) {
		const int64_t h = warp + (int64_t)hi * PST_WARPS;
		m[hi] = -INFINITY;
		l[hi] = 0.0f;
#pragma unroll
		for (int e = 0; e < EPL; e++) {
			acc[hi][e] = 0.0f;
			qr[hi][e] = 0.0f;
		}
		if (h < a.H)
			attn_core_load<T, EPL, true>(q + (t * a.H + h) * D, sub, D, qr[hi]);
	}

	for (int i = 0; i < npieces; i++) {
		const int st = i % PST_STAGES;
		cuda_bar_wait(&full[st], (unsigned)(i / PST_STAGES) & 1u);
		const bool ok = sh_ok[st];
		const int64_t jb = (pc0 + i) * P;               /* the piece's first position */
		const T *ks = stage + st * stage_elems, *vs = ks + piece;
#pragma unroll
		for (int hi = 0; hi < HPW; hi++) {
			const int64_t h = warp + (int64_t)hi * PST_WARPS;
			if (h >= a.H)
				break;          /* the same for the whole warp */
			const int64_t g = h * a.KVH / a.H;
			for (int p0 = 0; p0 < P; p0 += GPW * KB) {
				T kr[KB][EPL], vr[KB][EPL];
				float s[KB];
				bool okb[KB];
#pragma unroll
				for (int b = 0; b < KB; b++) {
					const int p = p0 + b * GPW + grp, pp = p < P ? p : P - 1;
					okb[b] = ok && p < P && jb + p < L;
					attn_core_load_raw<T, EPL, true>(ks + pp * W + g * D, sub, D, kr[b]);
					attn_core_load_raw<T, EPL, true>(vs + pp * W + g * D, sub, D, vr[b],
					                                 okb[b]);
				}
#pragma unroll
				for (int b = 0; b < KB; b++) {
					float d = 0.0f;
#pragma unroll
					for (int e = 0; e < EPL; e++)
						d += qr[hi][e] * cuda_to_f32(kr[b][e]);
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
					if (okb[b])
						mb = fmaxf(mb, s[b]);
				}
				if (mb == -INFINITY)
					continue;       /* none of the group's positions here */
				const float mn = fmaxf(m[hi], mb);
				const float corr = exp2f(m[hi] - mn);  /* m = -inf: 0 */
				l[hi] *= corr;
#pragma unroll
				for (int e = 0; e < EPL; e++)
					acc[hi][e] *= corr;
#pragma unroll
				for (int b = 0; b < KB; b++) {
					const float pb = okb[b] ? exp2f(s[b] - mn) : 0.0f;
					l[hi] += pb;
#pragma unroll
					for (int e = 0; e < EPL; e++)
						acc[hi][e] += pb * cuda_to_f32(vr[b][e]);
				}
				m[hi] = mn;
			}
		}
		__syncthreads();        /* the stage is read: refill it */
		if (tid == 0 && i + PST_STAGES < npieces)
			issue(i + PST_STAGES);
	}

	/* the groups of each head, then out or this split's part */
#pragma unroll
	for (int hi = 0; hi < HPW; hi++) {
		const int64_t h = warp + (int64_t)hi * PST_WARPS;
		if (h >= a.H)
			break;
#pragma unroll
		for (int off = LPR; off < 32; off <<= 1) {
			float a2[EPL];
			const float m2 = __shfl_xor_sync(0xffffffffu, m[hi], off);
			const float l2 = __shfl_xor_sync(0xffffffffu, l[hi], off);
#pragma unroll
			for (int e = 0; e < EPL; e++)
				a2[e] = __shfl_xor_sync(0xffffffffu, acc[hi][e], off);
			attn_core_merge<EPL>(m[hi], l[hi], acc[hi], m2, l2, a2);
		}
		if (grp != 0)
			continue;
		if (nact == 1) {
			float o[EPL];
#pragma unroll
			for (int e = 0; e < EPL; e++)
				o[e] = l[hi] > 0.0f ? acc[hi][e] / l[hi] : 0.0f;
			*reinterpret_cast<uint4 *>(out + (t * a.H + h) * D + sub * EPL) =
				cuda_narrow16<T>(o);
		} else {
			const int64_t part = (t * a.nsplit + split) * a.H + h;
#pragma unroll
			for (int e = 0; e < EPL; e++)
				sc.acc[part * D + sub * EPL + e] = acc[hi][e];
			if (sub == 0)
				sc.ml[part] = make_float2(m[hi], l[hi]);
		}
	}
	if (nact == 1 || !cuda_last_block(&sc.counters[t], (unsigned)nact, &flag))
		return;
	for (int64_t h = warp; h < a.H; h += PST_WARPS) {
		const int64_t part0 = t * a.nsplit * a.H + h;   /* split s: part0 + s H */
		float M = -INFINITY;
		for (int s = 0; s < nact; s++)
			M = fmaxf(M, __ldcg(sc.ml + part0 + s * a.H).x);
		for (int d = lane; d < D; d += 32) {
			float num = 0.0f, den = 0.0f;
			for (int s = 0; s < nact; s++) {
				const int64_t part = part0 + s * a.H;
				const float2 ml = __ldcg(sc.ml + part);
				const float w = ml.x == -INFINITY ? 0.0f : exp2f(ml.x - M);
				den += w * ml.y;
				if (w != 0.0f)
					num += w * __ldcg(sc.acc + part * D + d);
			}
			out[(t * a.H + h) * D + d] = cuda_from_f32<T>(den > 0.0f ? num / den : 0.0f);
		}
	}
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
	if (sh->D > ATTN_CORE_MAX_HEAD_DIM)
		return cuda_fail(msg, len, "paged_attention: head_dim %lld above the CUDA kernel's %d",
		                 (long long)sh->D, ATTN_CORE_MAX_HEAD_DIM);
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
	if (sh->cap > INT_MAX)
		return cuda_fail(msg, len, "paged_attention: %lld blocks of %lld positions a request "
		                 "is above the CUDA kernel's 2^31 - 1 positions", (long long)sh->MB,
		                 (long long)sh->BS);
	sh->th = sh->T * sh->H;
	if (sh->th > INT_MAX / ATTN_CORE_MAX_SPLITS)
		return cuda_fail(msg, len, "paged_attention: %lld rows x %lld heads is too many",
		                 (long long)sh->T, (long long)sh->H);
	return 0;
}

/* staged: the positions a piece for SH in elements of ES bytes (the
 * largest divisor of BS whose K and V rows fit a stage), or 0 when the
 * form cannot run the shape: 16-byte pieces of a head row for 4 to 32
 * lanes, at most PST_MAX_HPW heads a warp. */
static int pst_piece(const struct pattn_shape *sh, size_t es)
{
	const int64_t row = sh->KVH * sh->D * (int64_t)es;      /* bytes: every kv head */
	const int64_t lpr = sh->D * (int64_t)es / 16;
	int64_t p;

	if ((sh->D * (int64_t)es) % 16 != 0 || (lpr != 4 && lpr != 8 && lpr != 16 && lpr != 32) ||
	    sh->H > (int64_t)PST_WARPS * PST_MAX_HPW || row > PST_STAGE / 2)
		return 0;
	p = PST_STAGE / (2 * row);
	p = p < sh->BS ? p : sh->BS;
	while (sh->BS % p != 0)
		p--;
	return (int)p;
}

/* staged: the splits of a launch over rows of at most L positions, on
 * SM_COUNT multiprocessors (0: the most any device takes). */
static int pst_nsplit(const struct pattn_shape *sh, int P, int64_t L, int sm_count)
{
	int64_t target = sm_count > 0 ? (int64_t)PST_PER_SM * sm_count : PST_BLOCKS_CAP;
	int64_t most = (L + P - 1) / P, ns;

	target = target < PST_BLOCKS_CAP ? target : PST_BLOCKS_CAP;
	most = (most + PST_MIN_PIECES - 1) / PST_MIN_PIECES;
	ns = (target + sh->T - 1) / sh->T;
	ns = ns < most ? ns : most;
	return ns < 1 ? 1 : (int)ns;
}

/* staged: where its scratch's arrays start, for NSPLIT splits. */
static size_t pst_acc_at(const struct pattn_shape *sh, int nsplit)
{
	return attn_core_align256((size_t)(sh->T * nsplit * sh->H) * sizeof(float2));
}

static size_t pst_scratch_for(const struct pattn_shape *sh, int nsplit)
{
	if (nsplit <= 1)
		return 0;
	return pst_acc_at(sh, nsplit) + (size_t)(sh->T * nsplit * sh->H * sh->D) * sizeof(float);
}

static size_t pattn_es(const struct op_call *call)
{
	return cuda_dtype_size(call->in[PATTN_Q].dtype);
}

extern "C" size_t cuda_paged_attention_scratch_bytes(const struct op_call *call)
{
	struct pattn_shape sh = {};
	size_t split, staged = 0;
	int P;

	if (pattn_shape_of(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	/* The most splits any launch can take: the graph-safe form's, at the
	 * largest target, on any device; the most of either implementation. */
	split = attn_core_scratch_for(sh.th, attn_core_splits_bound(sh.cap, sh.th), sh.D);
	if ((P = pst_piece(&sh, pattn_es(call))) > 0)
		staged = pst_scratch_for(&sh, pst_nsplit(&sh, P, sh.cap, 0));
	return cuda_scratch_with_counters(split > staged ? split : staged);
}

/* Whether the operand at T is 16-byte aligned (or not yet placed). */
static int pattn_aligned16(const struct op_tensor *t)
{
	return t->data == NULL || (uintptr_t)t->data % 16 == 0;
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
	case CUDA_IMPL_ATTN_STAGED:
		return pst_piece(&sh, pattn_es(call)) > 0 && sh.T <= CUDA_SCRATCH_COUNTERS &&
		       sh.T * PST_BLOCKS_CAP <= INT_MAX && pattn_aligned16(&call->in[PATTN_Q]) &&
		       pattn_aligned16(&call->in[PATTN_K]) && pattn_aligned16(&call->in[PATTN_V]) &&
		       pattn_aligned16(&call->out[0]);
	}
	return 0;
}

struct pattn_launch {
	struct pattn_shape sh;
	struct pattn_args a;
	const void *q, *k, *v;
	void *out;
	struct attn_core_scratch sc;
	unsigned *counters;
	const struct cuda_op_ctx *ctx;
};

/* One launch at the lane geometry attn_core_dispatch picks. */
template <typename T>
struct pattn_launcher {
	const struct pattn_launch *pl;
	char *msg;
	size_t len;

	template <int LPR, int EPL, bool VEC>
	int run() const
	{
		T *out = static_cast<T *>(pl->out);
		int rc = cuda_launch(pl->ctx, "bcg_paged_attention_kernel",
		                     bcg_paged_attention_kernel<T, LPR, EPL, VEC>,
		                     dim3((unsigned)(pl->sh.th * pl->a.nsplit)),
		                     dim3(ATTN_CORE_THREADS), msg, len, static_cast<const T *>(pl->q),
		                     static_cast<const T *>(pl->k), static_cast<const T *>(pl->v), out,
		                     pl->sc, pl->counters, pl->a);
		return rc ? rc : attn_core_launch_merge<T>(pl->ctx, pl->sc, pl->counters, out,
		                                          pl->sh.th, pl->a.nsplit, pl->sh.D, msg, len);
	}
};

template <typename T>
static int pattn_launch_typed(const struct pattn_launch *pl, char *msg, size_t len)
{
	const pattn_launcher<T> l = { pl, msg, len };

	return attn_core_dispatch<T>(pl->sh.D, attn_core_aligned(pl->sh.D, sizeof(T), pl->q, pl->k,
	                                                         pl->v), l);
}

/* staged: the kernel for LPR lanes a head row and HPW heads a warp. */
template <typename T>
using pst_kernel_t = void (*)(const T *, const T *, const T *, T *, struct pst_scratch,
                              struct pattn_args);

template <typename T, int LPR>
static pst_kernel_t<T> pst_kernel_hpw(int64_t hpw)
{
	return hpw <= 1 ? bcg_paged_attention_staged_kernel<T, LPR, 1>
	       : hpw <= 2 ? bcg_paged_attention_staged_kernel<T, LPR, 2>
	                  : bcg_paged_attention_staged_kernel<T, LPR, 4>;
}

template <typename T>
static int pst_launch_typed(const struct pattn_launch *pl, const struct pst_scratch &sc,
                            char *msg, size_t len)
{
	const int64_t lpr = pl->sh.D * (int64_t)sizeof(T) / 16;
	const int64_t hpw = (pl->sh.H + PST_WARPS - 1) / PST_WARPS;
	const pst_kernel_t<T> kernel = lpr == 4 ? pst_kernel_hpw<T, 4>(hpw)
	                               : lpr == 8 ? pst_kernel_hpw<T, 8>(hpw)
	                               : lpr == 16 ? pst_kernel_hpw<T, 16>(hpw)
	                                           : pst_kernel_hpw<T, 32>(hpw);
	cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
	                                       PST_SMEM);

	if (err != cudaSuccess)
		return cuda_fail(msg, len, "bcg_paged_attention_staged_kernel: %d bytes of shared "
		                 "memory refused: %s (%s)", PST_SMEM, cudaGetErrorString(err),
		                 cudaGetErrorName(err));
	return cuda_launch_smem(pl->ctx, "bcg_paged_attention_staged_kernel", kernel,
	                        dim3((unsigned)(pl->sh.T * pl->a.nsplit)), dim3(PST_THREADS), PST_SMEM,
	                        msg, len, static_cast<const T *>(pl->q),
	                        static_cast<const T *>(pl->k), static_cast<const T *>(pl->v),
	                        static_cast<T *>(pl->out), sc, pl->a);
}

/* The scratch of NEED bytes, checked: its data, or NULL with MSG. */
static char *pattn_scratch(const struct cuda_op_ctx *ctx, size_t need, char *msg, size_t len)
{
	if (!ctx->scratch || ctx->scratch_bytes < need) {
		cuda_fail(msg, len, "paged_attention: needs %zu bytes of scratch, the context has %zu",
		          need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		return NULL;
	}
	if ((uintptr_t)ctx->scratch % 16 != 0) {
		cuda_fail(msg, len, "paged_attention: scratch is not 16-byte aligned");
		return NULL;
	}
	return static_cast<char *>(cuda_scratch_data(ctx));
}

/* staged, once pl->a holds all but the plan: plan, scratch, launch. */
static int pst_run(const struct op_call *call, struct pattn_launch *pl, int64_t L, char *msg,
                   size_t len)
{
	struct pst_scratch sc = {};
	size_t need;

	pl->a.T = pl->sh.T;
	pl->a.P = pst_piece(&pl->sh, pattn_es(call));
	pl->a.nsplit = pst_nsplit(&pl->sh, pl->a.P, L, pl->ctx->sm_count);
	need = pst_scratch_for(&pl->sh, pl->a.nsplit);
	if (need > 0) {
		char *data = pattn_scratch(pl->ctx, cuda_scratch_with_counters(need), msg, len);
		if (!data)
			return -1;
		sc.ml = reinterpret_cast<float2 *>(data);
		sc.acc = reinterpret_cast<float *>(data + pst_acc_at(&pl->sh, pl->a.nsplit));
		sc.counters = cuda_scratch_counters(pl->ctx);
	}
	switch (call->in[PATTN_Q].dtype) {
	case PLAN_DTYPE_F16:
		return pst_launch_typed<__half>(pl, sc, msg, len);
	case PLAN_DTYPE_BF16:
		return pst_launch_typed<__nv_bfloat16>(pl, sc, msg, len);
	default:
		return pst_launch_typed<float>(pl, sc, msg, len);
	}
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
	switch (call->impl) {
	case CUDA_IMPL_ATTN_SPLIT:
	case CUDA_IMPL_ATTN_TWOPASS:
		if (!cuda_paged_attention_usable(call, call->impl))
			return cuda_fail(msg, len, "paged_attention: implementation split cannot run "
			                 "%lld (row, head) pairs, above the %lld scratch counters",
			                 (long long)pl.sh.th, (long long)CUDA_SCRATCH_COUNTERS);
		break;
	case CUDA_IMPL_ATTN_STAGED:
		if (!cuda_paged_attention_usable(call, call->impl))
			return cuda_fail(msg, len, "paged_attention: implementation staged cannot run "
			                 "%lld heads of %lld (%s) over blocks of %lld x %lld and %lld rows: "
			                 "it needs head rows of 64, 128, 256 or 512 bytes, at most %d "
			                 "heads, a position's K and V in %d bytes, at most %lld rows and "
			                 "16-byte aligned operands", (long long)pl.sh.H,
			                 (long long)pl.sh.D, cuda_dtype_name(call->in[PATTN_Q].dtype),
			                 (long long)pl.sh.BS, (long long)(pl.sh.KVH * pl.sh.D),
			                 (long long)pl.sh.T, PST_WARPS * PST_MAX_HPW, PST_STAGE,
			                 (long long)CUDA_SCRATCH_COUNTERS);
		break;
	default:
		return cuda_fail(msg, len, "paged_attention: no implementation %d on CUDA", call->impl);
	}
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
	pl.a.bs_shift = -1;
	for (int b = 0; b < 31; b++)
		if (pl.sh.BS == (int64_t)1 << b)
			pl.a.bs_shift = b;
	pl.a.D = (int)pl.sh.D;
	pl.a.scale = scale == 0.0 ? 1.0f / sqrtf((float)pl.sh.D) : (float)scale;
	/* Graph-safe: the bound of every batch; eager: this batch's longest
	 * sequence, which bounds every row's length. */
	L = pl.sh.cap;
	if (!call->graph_safe && call->batch != NULL && (int64_t)call->batch->max_seq_len < L)
		L = call->batch->max_seq_len;
	if (call->impl == CUDA_IMPL_ATTN_STAGED)
		return pst_run(call, &pl, L, msg, len);
	attn_core_plan(L, pl.sh.th, attn_core_target(ctx->sm_count), &pl.a.nsplit, &pl.a.chunk);

	need = cuda_scratch_with_counters(attn_core_scratch_for(pl.sh.th, pl.a.nsplit, pl.sh.D));
	if (need > 0) {
		char *data = pattn_scratch(ctx, need, msg, len);
		if (!data)
			return -1;
		pl.sc = attn_core_scratch_at(data, pl.sh.th, pl.a.nsplit);
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
