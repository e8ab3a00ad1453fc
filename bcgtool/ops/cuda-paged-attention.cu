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
 * chunks of at most PATTN_MAX_CHUNK positions, so the longest request of a
 * batch does not hold the launch up behind one block.
 *
 * Two orders of the blocks, chosen at launch (pattn_launcher::run):
 *  - pair-major (block = pair * nsplit + split): where the (row, head)
 *    pairs fill the device;
 *  - split-major (block = split * pairs + pair), so that the pairs' first
 *    splits spread over every multiprocessor, where the pairs are few
 *    (pattn_split_major).
 * Either reads the metadata before the PDL wait where the lengths, query
 * starts and block table are the host's feeds (op_call.ready_in): the
 * search, the length and the block ids then overlap the kernel before,
 * and the splits past a row exit without waiting; only q and the caches,
 * which the kernel before writes, wait. Otherwise everything is read
 * after the wait. Each form is its own instance of the core.
 *
 * Measured and not kept (bench/RESULTS.md, 2026-11-27, twelfth session;
 * the code is on the branch staged-attention): a block for every head of
 * one row, its cache rows of all heads brought into shared memory by the
 * copy engine in runs of whole positions, blocks split-major. In the
 * serving step at 64 requests it took 30.9 us a launch against this
 * kernel's 26.9; its stage sizes, stage counts and carveout changed
 * nothing, and the merge of a row's splits in its last block had cost it
 * 9 us more before that merge kept its loads in flight. Eighteenth
 * session: a graph-safe row's chunk planned on the device from its length
 * and the pairs short of the device's target (a short row over several
 * splits when the pairs are few): the serving step 1.000, 1.018, 1.015 of
 * the host's chunks at 16, 32, 64 requests, the decode-heavy trace 0.988.
 * Thirty-fifth session (bench/RESULTS.md; tags exp-pattn-pipe and
 * exp-pattn-c1024r): each round's loads issued before the round before is
 * scored, from two sets of registers (128 registers a thread, 4 blocks a
 * multiprocessor): the serving step 1.16 times as long at 64 requests,
 * the trace 0.90 of the tokens a second; a round's 16 positions' cache
 * block found once (80 registers; measured at 64, with launch bounds
 * asking for 8 blocks a multiprocessor): 1 to 2% slower at 16 and 32
 * requests, the trace 1.6% slower.
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
 * block of j is j >> SHIFT, not a division. MAJOR and EARLY are the
 * kernel's form: each form's own type, so that no two forms share an
 * instance of the core (attn_core_finish). */
template <typename T, bool MAJOR, bool EARLY>
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

/*
 * The longest chunk: a row of up to this many positions is one block,
 * with nothing to merge. Four times the core's ATTN_CORE_MAX_CHUNK: where
 * the pairs fill the device (64 requests of 16 heads) a graph-safe launch
 * sized for 1024 positions is then 1024 blocks, not 4096 of which three
 * in four exit after the search. Measured on an H200 (bench/RESULTS.md,
 * thirty-fifth session): the serving step at 64 requests 0.906 of the
 * step with chunks of 256 (the launch 15.4 us against 23.1 under Nsight
 * Compute, DRAM 36% busy against 24%), 0.969 and 0.980 at 16 and 32;
 * chunks of 512 gave 0.925 at 64.
 */
#define PATTN_MAX_CHUNK 1024

/* The most block ids a chunk stages in shared memory: a whole chunk's
 * where the cache's blocks hold 16 positions or more (a chunk starts at a
 * multiple of ATTN_CORE_CHUNK_ROUND, 16); beyond, the kernel reads the
 * table itself. */
#define PATTN_STAGED_IDS (PATTN_MAX_CHUNK / ATTN_CORE_CHUNK_ROUND)

struct pattn_args {
	const int32_t *table, *seq_lens, *query_start;
	int64_t H, KVH, R, MB, NB, BS;
	int bs_shift;                   /* log2 BS, or -1 */
	int D;
	int nsplit;
	int64_t chunk;
	float scale;
};

/* MAJOR: blocks split-major (pattn_split_major); EARLY: the table, lengths
 * and query starts are in place before the step (op_call.ready_in) and are
 * read before the PDL wait. Both fixed at compile time, so that the form
 * of each launch carries no branch of the others. */
template <typename T, int LPR, int EPL, bool VEC, bool MAJOR, bool EARLY>
__global__ void __launch_bounds__(ATTN_CORE_THREADS)
bcg_paged_attention_kernel(const T *q, const T *k, const T *v, T *out,
                           struct attn_core_scratch sc, unsigned *counters, struct pattn_args a)
{
	__shared__ int sh_req;
	const int64_t bid = blockIdx.x;
	const int nsplit = a.nsplit, D = a.D;
	const int split = MAJOR ? (int)(bid / (gridDim.x / nsplit)) : (int)(bid % nsplit);
	const int64_t th = MAJOR ? bid % (gridDim.x / nsplit) : bid / nsplit;   /* t * H + h */
	const int64_t h = th % a.H, t = th / a.H;
	const int64_t g = h * a.KVH / a.H;

	/* The metadata a feed wrote before the step can be read before the
	 * PDL wait: the search, the length and the block ids then overlap
	 * the kernel before, and the splits past a row exit without waiting
	 * for it. Only q and the caches (the rows just written) wait. */
	if (!EARLY)
		cuda_pdl_begin();
	if (threadIdx.x == 0)
		sh_req = INT_MAX;
	__syncthreads();
	for (int64_t r = threadIdx.x; r < a.R; r += ATTN_CORE_THREADS)
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
	if (a.NB < 1)
		L = 0;                  /* no block: no position */
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
	const struct pattn_rows<T, MAJOR, EARLY> src = { k + g * D, v + g * D, ids, first,
	                                                 (uint32_t)a.BS, a.bs_shift, a.NB,
	                                                 a.KVH * D };
	if (EARLY)
		cuda_pdl_begin();

	attn_core_block<T, LPR, EPL, VEC>(src, q + th * D, L, a.chunk, split, nsplit, th, D, a.scale,
	                                  out, sc, counters);
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

extern "C" size_t cuda_paged_attention_scratch_bytes(const struct op_call *call)
{
	struct pattn_shape sh = {};

	if (pattn_shape_of(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	/* The most splits any launch can take: the graph-safe form's, at the
	 * largest target, on any device. */
	return cuda_scratch_with_counters(attn_core_scratch_for(sh.th,
	                                  attn_core_splits_bound(sh.cap, sh.th, PATTN_MAX_CHUNK),
	                                  sh.D));
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
	case CUDA_IMPL_ATTN_CLUSTER:
		return 0;       /* cuda-attention.cu's, over a contiguous cache */
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
	bool early;                     /* the metadata is in place before the step */
};

/*
 * The block order of a launch of NPAIRS (row, head) pairs: split-major
 * (every pair's first split, then every pair's second, ...) when the pairs
 * fill at most half of the blocks the device holds at once (RESIDENT),
 * pair-major otherwise. Measured on the H100 (bench/RESULTS.md, eighteenth
 * session) on the serving sample, where a row's later splits are mostly
 * past its length and exit at once: pair-major, the first splits of 256
 * or 512 pairs take every fourth block and crowd onto a quarter of the
 * multiprocessors, and split-major was 2 to 3% faster a step; with 1024
 * pairs, one per slot of the device's 1056, split-major was 0.4% slower
 * a step and the decode-heavy trace 2.7% slower. The order changes which
 * block computes what, never what it computes: the bits are the same.
 */
static bool pattn_split_major(int64_t npairs, int64_t resident)
{
	return npairs * 2 <= resident;
}

/* The blocks of KERNEL a multiprocessor holds at once (ATTN_CORE_THREADS
 * threads, no dynamic shared memory), asked once a device; 0 unknown. */
static int pattn_occupancy(const void *kernel, int (&known)[64])
{
	int dev = 0, n = 0;

	if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
		(void)cudaGetLastError();
		return 0;
	}
	n = __atomic_load_n(&known[dev], __ATOMIC_RELAXED);
	if (n > 0)
		return n;
	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, ATTN_CORE_THREADS, 0) !=
	    cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	__atomic_store_n(&known[dev], n, __ATOMIC_RELAXED);
	return n;
}

/* One launch at the lane geometry attn_core_dispatch picks. */
template <typename T>
struct pattn_launcher {
	const struct pattn_launch *pl;
	char *msg;
	size_t len;

	template <int LPR, int EPL, bool VEC, bool MAJOR, bool EARLY>
	int launch() const
	{
		T *out = static_cast<T *>(pl->out);
		int rc = cuda_launch(pl->ctx, "bcg_paged_attention_kernel",
		                     bcg_paged_attention_kernel<T, LPR, EPL, VEC, MAJOR, EARLY>,
		                     dim3((unsigned)(pl->sh.th * pl->a.nsplit)),
		                     dim3(ATTN_CORE_THREADS), msg, len, static_cast<const T *>(pl->q),
		                     static_cast<const T *>(pl->k), static_cast<const T *>(pl->v), out,
		                     pl->sc, pl->counters, pl->a);
		return rc ? rc : attn_core_launch_merge<T>(pl->ctx, pl->sc, pl->counters, out,
		                                          pl->sh.th, pl->a.nsplit, pl->sh.D, msg, len);
	}

	/* Split-major where the pairs are few (pattn_split_major), and in
	 * either order the metadata read before the PDL wait when it is in
	 * place: split-major so was measured faster at 16 and 32 requests
	 * (eighteenth session), pair-major at 64 (thirty-fifth session,
	 * bench/RESULTS.md: on a variant, the serving step 0.978 of the same
	 * kernel reading after its wait, the trace 1.018 times the tokens a
	 * second). */
	template <int LPR, int EPL, bool VEC>
	int run() const
	{
		static int occupancy[64];
		const int per_sm = pattn_occupancy(
			(const void *)bcg_paged_attention_kernel<T, LPR, EPL, VEC, false, false>, occupancy);

		if (!pattn_split_major(pl->sh.th, (int64_t)per_sm * pl->ctx->sm_count))
			return pl->early ? launch<LPR, EPL, VEC, false, true>()
			                 : launch<LPR, EPL, VEC, false, false>();
		if (pl->early)
			return launch<LPR, EPL, VEC, true, true>();
		return launch<LPR, EPL, VEC, true, false>();
	}
};

template <typename T>
static int pattn_launch_typed(const struct pattn_launch *pl, char *msg, size_t len)
{
	const pattn_launcher<T> l = { pl, msg, len };

	return attn_core_dispatch<T>(pl->sh.D, attn_core_aligned(pl->sh.D, sizeof(T), pl->q, pl->k,
	                                                         pl->v), l);
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
	pl.a.bs_shift = -1;
	for (int b = 0; b < 31; b++)
		if (pl.sh.BS == (int64_t)1 << b)
			pl.a.bs_shift = b;
	pl.a.D = (int)pl.sh.D;
	pl.early = ((call->ready_in >> PATTN_TABLE) & (call->ready_in >> PATTN_SEQ_LENS) &
	            (call->ready_in >> PATTN_QUERY_START) & 1u) != 0;
	pl.a.scale = scale == 0.0 ? 1.0f / sqrtf((float)pl.sh.D) : (float)scale;
	/* Graph-safe: the bound of every batch; eager: this batch's longest
	 * sequence, which bounds every row's length. */
	L = pl.sh.cap;
	if (!call->graph_safe && call->batch != NULL && (int64_t)call->batch->max_seq_len < L)
		L = call->batch->max_seq_len;
	attn_core_plan(L, pl.sh.th, attn_core_target(ctx->sm_count), &pl.a.nsplit, &pl.a.chunk,
	               PATTN_MAX_CHUNK);

	need = cuda_scratch_with_counters(attn_core_scratch_for(pl.sh.th, pl.a.nsplit, pl.sh.D));
	if (need > 0) {
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "paged_attention: needs %zu bytes of scratch, the "
			                 "context has %zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "paged_attention: scratch is not 16-byte aligned");
		char *data = static_cast<char *>(cuda_scratch_data(ctx));
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
