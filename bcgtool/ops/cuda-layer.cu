/*
 * cuda-layer.cu - decoder_layer on CUDA: a whole Llama-style decoder layer
 * (op.h) in one op, with two implementations.
 *
 * "persistent" runs the layer as one kernel of one block a multiprocessor,
 * the phases of the layer separated by grid barriers:
 *
 *   norm + q|k|v + rope + KV write | attention | o + residual |
 *   norm + gate|up + SiLU*up       | down + residual
 *
 * Each block owns a fixed, contiguous share of every product's "units"
 * (a row, or a pair of rows whose results meet in the epilogue: the two
 * halves of a rope pair, a gate row and its up row). A unit's rows are cut
 * into slices of at most DL_PIECE_VECS 16-byte vectors; a slice of one
 * unit is a piece, and warp w of the block takes pieces w, w + 16, ...,
 * issuing every load of a piece (streamed past L1) before its first
 * product and asking L2 (cp.async.bulk.prefetch) for the piece two rounds
 * on. The warps never wait for one another inside a phase; one barrier of
 * the block ends it, and a thread a unit sums the unit's slices in slice
 * order and runs the epilogue. Before each grid barrier every warp asks
 * L2 for its first pieces of the next phase, and before the PDL wait for
 * its first pieces of q|k|v: the weights do not depend on the
 * activations, so the HBM streams while the blocks wait for one another
 * and for the layer before. That is the point of the kernel: the kernel
 * boundaries of the op-by-op step (ramp, tail, launch: about 3 us a
 * product on an H100, bench/RESULTS.md) become grid barriers that the
 * prefetched pieces cover.
 *
 * Every sum has one order (a piece's lanes by a warp sum, the slices in
 * order), so the results are the same bits at every launch, eager or
 * replayed. Intermediates are rounded to the dtype where the unfused
 * sequence stores them (op.h).
 *
 * Attention at one token: items (kv head, chunk of positions), a chunk per
 * block, (m, l, acc) partials in the scratch; the last block of a kv head
 * (cuda_last_block) merges its chunks. The length comes from the var's
 * device mirror in the graph-safe form, from the host's value in the
 * eager form, and the chunking follows it on the device: one launch
 * serves every kv_len.
 *
 * The grid barrier counts arrivals in a scratch counter; the arrival that
 * makes them k x gridDim.x stores k in a flag of its own line, which the
 * other blocks poll (dl_grid_sync); the last block to finish sets both
 * back to zero (cuda.h's rule). It needs every block resident at once:
 * the launch asks for one block a multiprocessor and refuses when the
 * occupancy calculator says one does not fit. A block that waits longer
 * than DL_BARRIER_NS traps (a kernel fault with a message) instead of
 * hanging the device.
 *
 * Measured on an H100 (bench/RESULTS.md, seventh session), persistent
 * loses to split: the Llama-3.2-1B-shaped step at T=1 takes 1.61 ms with
 * it against 1.18 with split, llama-decode 1.56 against 0.93. Its
 * products stream at 2.1 to 2.5 TB/s, close to the separate kernels',
 * but each layer spends about 27 us outside them (the four grid barriers
 * 2.7 to 4.9 us each, attention 5, the two norms with their reloads 3
 * each), more than the op-by-op step's boundaries cost under PDL. So
 * split is the default (cuda_impl_default) and the tuner times both.
 *
 * "persistent" runs one token (T = 1), f16 or bf16, on sm_90, with
 * head_dim 64 or 128, at most 4 query heads a kv head, H and F multiples
 * of 8 whose vectors fit its shared memory. "split" runs any shape: the
 * existing kernels one op after another (rmsnorm_matmul_rope_kv_write,
 * attention, matmul_add, rmsnorm_matmul with silu_mul, matmul_add), the
 * intermediates in the scratch.
 */
#include "config.h"

#include <limits.h>

#include "cuda-internal.h"
#include "cuda-rope.h"

/* --- shapes ----------------------------------------------------------------- */

#define DL_THREADS    512
#define DL_WARPS      (DL_THREADS / 32)
#define DL_MAX_NQ     4               /* query heads a kv head */
#define DL_MAX_CHUNKS 256             /* attention chunks a kv head */
#define DL_MIN_CHUNK  16              /* positions a chunk at least */
#define DL_BARRIER_NS 2000000000ull   /* a grid barrier's wait before a trap */

/* The sizes of a call, read from its operands (checked by the registry). */
struct dl_shape {
	int64_t T, H, F, NH, KVH, D, S, QKV;
};

static void dl_shape_of(const struct op_call *call, struct dl_shape *s)
{
	const struct op_tensor *x = &call->in[DL_X], *gu = &call->in[DL_W_GATE_UP];

	s->T = x->rank == 2 ? x->dim[0] : 0;
	s->H = x->rank == 2 ? x->dim[1] : 0;
	s->F = gu->rank == 2 ? gu->dim[0] / 2 : 0;
	s->NH = call->attr[RKV_HEADS].i;
	s->KVH = call->attr[RKV_KV_HEADS].i;
	s->D = call->attr[RKV_HEAD_DIM].i;
	s->S = cuda_rows(&call->out[DL_K_CACHE]);
	s->QKV = (s->NH + 2 * s->KVH) * s->D;
}

static size_t dl_align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

/* --- the sub-calls of "split" ------------------------------------------------ */

/* rmsnorm_matmul_rope_kv_write (x, attn_norm, w_qkv, pos) -> q, caches. Its
 * attributes are decoder_layer's first 14 (rope_kv_write's and eps at
 * RRK_EPS == DL_EPS), with trans_b. */
static void dl_qkv_call(const struct op_call *call, void *q, struct op_call *c)
{
	const struct op_tensor *x = &call->in[DL_X];

	memset(c, 0, sizeof *c);
	c->nin = 4;
	c->nout = 3;
	c->in[RRK_X] = *x;
	c->in[RRK_W] = call->in[DL_ATTN_NORM];
	c->in[RRK_B] = call->in[DL_W_QKV];
	c->in[RRK_POS] = call->in[DL_POS];
	c->out[0].dtype = x->dtype;
	c->out[0].rank = 2;
	c->out[0].dim[0] = x->rank == 2 ? x->dim[0] : 0;
	c->out[0].dim[1] = call->attr[RKV_HEADS].i * call->attr[RKV_HEAD_DIM].i;
	c->out[0].data = q;
	c->out[1] = call->out[DL_K_CACHE];
	c->out[2] = call->out[DL_V_CACHE];
	for (int a = 0; a < DL_EPS; a++)
		c->attr[a] = call->attr[a];
	c->attr[RRK_EPS] = call->attr[DL_EPS];
	c->attr[RRK_TRANS_B].i = 1;
	c->const_in = cuda_const_bit(call, DL_ATTN_NORM, RRK_W) |
	              cuda_const_bit(call, DL_W_QKV, RRK_B);
	c->graph_safe = call->graph_safe;
	c->batch = call->batch;
	c->name = call->name;
	c->impl = cuda_impl_usable_id(OP_RMSNORM_MATMUL_ROPE_KV_WRITE, c, CUDA_IMPL_RRK_GEMV)
	          ? CUDA_IMPL_RRK_GEMV : CUDA_IMPL_RRK_SPLIT;
}

/* attention (q, k_cache, v_cache) -> att. */
static void dl_attention_call(const struct op_call *call, const struct op_tensor *q, void *att,
                              struct op_call *c)
{
	memset(c, 0, sizeof *c);
	c->nin = 3;
	c->nout = 1;
	c->in[0] = *q;
	c->in[1] = call->out[DL_K_CACHE];
	c->in[2] = call->out[DL_V_CACHE];
	c->out[0] = *q;
	c->out[0].data = att;
	c->attr[ATTN_HEADS] = call->attr[RKV_HEADS];
	c->attr[ATTN_KV_HEADS] = call->attr[RKV_KV_HEADS];
	c->attr[ATTN_HEAD_DIM] = call->attr[RKV_HEAD_DIM];
	c->attr[ATTN_KV_LEN] = call->attr[DL_KV_LEN];
	c->attr_dev[ATTN_KV_LEN] = call->attr_dev[DL_KV_LEN];
	c->attr[ATTN_SCALE] = call->attr[DL_SCALE];
	c->attr[ATTN_CAUSAL] = call->attr[DL_CAUSAL];
	c->graph_safe = call->graph_safe;
	c->batch = call->batch;
	c->name = call->name;
	c->impl = cuda_impl_usable_id(OP_ATTENTION, c, CUDA_IMPL_ATTN_SPLIT)
	          ? CUDA_IMPL_ATTN_SPLIT : CUDA_IMPL_ATTN_TWOPASS;
}

/* matmul_add (res, a, w) -> out with w [N, K] transposed, at
 * cuda_product_pick's implementation. */
static void dl_residual_call(const struct op_call *call, const struct op_tensor *res,
                             const struct op_tensor *a, int w_in, struct op_call *c)
{
	const struct op_tensor *w = &call->in[w_in];

	memset(c, 0, sizeof *c);
	c->nin = 3;
	c->nout = 1;
	c->in[0] = *res;
	c->in[1] = *a;
	c->in[2] = *w;
	c->out[0] = call->out[DL_OUT];
	c->attr[MATMUL_TRANS_A].i = 0;
	c->attr[MATMUL_TRANS_B].i = 1;
	c->const_in = cuda_const_bit(call, w_in, 2);
	c->graph_safe = call->graph_safe;
	c->batch = call->batch;
	c->name = call->name;
	c->impl = cuda_product_pick(OP_MATMUL_ADD, c);
}

/* rmsnorm_matmul (out, ffn_norm, w_gate_up) -> act, epilogue silu_mul:
 * "split" (rmsnorm, then the product), which the tuner measured faster
 * than the folded gemv at every decode size (bench/RESULTS.md, fourth
 * session; at one token against the rows kernel's fold too, 28.8 against
 * 39.4 us isolated, eighth session), else the folded one. */
static void dl_gate_up_call(const struct op_call *call, void *act, struct op_call *c)
{
	const struct op_tensor *out = &call->out[DL_OUT];

	memset(c, 0, sizeof *c);
	c->nin = 3;
	c->nout = 1;
	c->in[0] = *out;
	c->in[1] = call->in[DL_FFN_NORM];
	c->in[2] = call->in[DL_W_GATE_UP];
	c->out[0] = *out;
	c->out[0].dim[1] = call->in[DL_W_GATE_UP].rank == 2 ? call->in[DL_W_GATE_UP].dim[0] / 2 : 0;
	c->out[0].data = act;
	c->attr[RNM_EPS] = call->attr[DL_EPS];
	c->attr[RNM_TRANS_B].i = 1;
	c->attr[RNM_EPILOGUE].i = RNM_EPI_SILU_MUL;
	c->const_in = cuda_const_bit(call, DL_FFN_NORM, 1) | cuda_const_bit(call, DL_W_GATE_UP, 2);
	c->graph_safe = call->graph_safe;
	c->batch = call->batch;
	c->name = call->name;
	c->impl = cuda_impl_usable_id(OP_RMSNORM_MATMUL, c, CUDA_IMPL_RNM_SPLIT)
	          ? CUDA_IMPL_RNM_SPLIT : CUDA_IMPL_RNM_GEMV;
}

/* The five calls of "split", with q, att and act at Q, ATT, ACT. */
struct dl_calls {
	struct op_call qkv, attn, o, gate_up, down;
	struct op_tensor q, act;
};

static void dl_calls_fill(const struct op_call *call, void *q, void *att, void *act,
                          struct dl_calls *k)
{
	const struct op_tensor *out = &call->out[DL_OUT];

	dl_qkv_call(call, q, &k->qkv);
	k->q = k->qkv.out[0];
	dl_attention_call(call, &k->q, att, &k->attn);
	dl_residual_call(call, &call->in[DL_X], &k->attn.out[0], DL_W_O, &k->o);
	dl_gate_up_call(call, act, &k->gate_up);
	k->act = k->gate_up.out[0];
	dl_residual_call(call, out, &k->act, DL_W_DOWN, &k->down);
}

/* The most scratch any of the five needs (counters included). */
static size_t dl_split_sub_bytes(const struct dl_calls *k)
{
	size_t b[5] = {
		cuda_rmsnorm_matmul_rope_kv_write_scratch_bytes(&k->qkv),
		cuda_attention_scratch_bytes(&k->attn),
		cuda_product_scratch_bytes(OP_MATMUL_ADD, &k->o),
		cuda_rmsnorm_matmul_scratch_bytes(&k->gate_up),
		cuda_product_scratch_bytes(OP_MATMUL_ADD, &k->down),
	};
	size_t m = CUDA_OP_SCRATCH_COUNTER_BYTES;

	for (int i = 0; i < 5; i++)
		if (b[i] > m)
			m = b[i];
	return dl_align256(m);
}

/* --- the persistent kernel ---------------------------------------------------- */

/* The phases with a product, in the layer's order. */
enum { DLP_QKV = 0, DLP_O = 1, DLP_GU = 2, DLP_DOWN = 3 };

struct dl_args {
	const void *x, *attn_norm, *w_qkv, *w_o, *ffn_norm, *w_gate_up, *w_down;
	const int32_t *pos;
	void *out, *kc, *vc;
	void *q, *att, *act;            /* scratch vectors */
	float *part;                    /* attention partials [KVH][DL_MAX_CHUNKS][NQ][D + 2] */
	unsigned *bar;                  /* scratch counters: [0] arrivals, [1] finished
	                                   blocks, [DL_BAR_GEN] the last barrier passed,
	                                   [DL_BAR_HEADS + g] kv head g's chunks */
	unsigned long long *stamps;     /* block 0's clock at each step (DL_STAMPS) */
	const int32_t *kv_len_dev;      /* graph-safe: the var's device mirror; else NULL */
	long long kv_len;               /* the host's value */
	int H, F, NH, KVH, D, S;
	float eps, scale;
	struct rope_freqs freqs;
};

/* Units of phase P in all; the row of unit U's row J in its matrix. */
__device__ __forceinline__ int dl_units(const dl_args &a, int p)
{
	switch (p) {
	case DLP_QKV:
		return (a.NH + 2 * a.KVH) * (a.D / 2);
	case DLP_GU:
		return a.F;
	default:
		return a.H;
	}
}

__device__ __forceinline__ int64_t dl_unit_row(const dl_args &a, int p, int u, int j)
{
	switch (p) {
	case DLP_QKV: {
		const int half = a.D / 2;
		return (int64_t)(u / half) * a.D + u % half + j * half;
	}
	case DLP_GU:
		return (int64_t)u + (int64_t)j * a.F;
	default:
		return u;
	}
}

template <typename T>
__device__ __forceinline__ const T *dl_weights(const dl_args &a, int p)
{
	switch (p) {
	case DLP_QKV:
		return static_cast<const T *>(a.w_qkv);
	case DLP_O:
		return static_cast<const T *>(a.w_o);
	case DLP_GU:
		return static_cast<const T *>(a.w_gate_up);
	default:
		return static_cast<const T *>(a.w_down);
	}
}

/* The K of phase P's rows. */
__device__ __forceinline__ int dl_phase_k(const dl_args &a, int p)
{
	return p == DLP_O ? a.NH * a.D : p == DLP_DOWN ? a.F : a.H;
}

/* Ask L2 for BYTES (a multiple of 16) of weights at P: a bulk prefetch,
 * no register, no completion to wait for. */
__device__ __forceinline__ void dl_prefetch_l2(const void *p, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
#endif
}

/* --- the grid barrier --- */

__device__ __forceinline__ unsigned dl_ld_acquire(const unsigned *p)
{
	unsigned v;
	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ unsigned long long dl_now_ns(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
	return t;
}

/* Barrier K (1, 2, ...) of the launch: every block's stores before it are
 * visible to every block after it. Arrivals count in COUNT[0]; the block
 * that makes them K x gridDim.x stores K in COUNT[DL_BAR_GEN], a line of
 * its own, which the others poll, so that the polling does not queue
 * behind the arrivals. */
#define DL_BAR_GEN   32               /* unsigned: 128 bytes behind COUNT[0] */
#define DL_BAR_HEADS 64               /* the kv heads' counters from here */
__device__ __forceinline__ void dl_grid_sync(unsigned *count, unsigned k)
{
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned old;
		/* acq_rel: the block's stores (ordered before by the block
		 * barrier) go with the arrival, and the last arrival takes the
		 * others' with it into its release of the flag. */
		asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(count)
		             : "memory");
		if (old == k * gridDim.x - 1) {
			asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(count + DL_BAR_GEN),
			             "r"(k) : "memory");
		} else if (dl_ld_acquire(count + DL_BAR_GEN) < k) {
			const unsigned long long t0 = dl_now_ns();
			while (dl_ld_acquire(count + DL_BAR_GEN) < k)
				if (dl_now_ns() - t0 > DL_BARRIER_NS) {
					printf("bcgtool: decoder_layer: block %u waited %.1f s at grid "
					       "barrier %u (%u of %u arrivals): not every block is "
					       "resident\n", blockIdx.x, DL_BARRIER_NS / 1e9, k,
					       dl_ld_acquire(count), k * gridDim.x);
					__trap();
				}
		}
	}
	__syncthreads();
}

/* --- a phase's products ---------------------------------------------------------- */

/* A phase of one block: its units [u0, u0 + nu) of the phase's (a
 * contiguous share of the grid's), rows a unit, the row length in 16-byte
 * vectors, and the slices KS each row is cut into. A piece is one slice
 * of one unit's rows, at most DL_PIECE_VECS vectors a row: a warp's work. */
#define DL_PIECE_VECS 128             /* 4 a lane */
#define DL_PART_CAP   4096            /* floats of a phase's piece sums */
struct dl_phase {
	int u0, nu, rpu, kv, ks;
};

__device__ __forceinline__ dl_phase dl_phase_of(const dl_args &a, int p, int esize)
{
	dl_phase ph;
	const int n = dl_units(a, p);

	ph.u0 = (int)((int64_t)n * blockIdx.x / gridDim.x);
	ph.nu = (int)((int64_t)n * (blockIdx.x + 1) / gridDim.x) - ph.u0;
	ph.rpu = p == DLP_QKV || p == DLP_GU ? 2 : 1;
	ph.kv = dl_phase_k(a, p) * esize / 16;
	ph.ks = (ph.kv + DL_PIECE_VECS - 1) / DL_PIECE_VECS;
	/* More slices while the warps would have too few pieces to share
	 * evenly and a slice keeps two vectors a lane. */
	while (ph.nu * ph.ks < 4 * DL_WARPS && ph.kv / (2 * ph.ks) >= 64)
		ph.ks *= 2;
	return ph;
}

/* Slice K's first vector and length in its rows. */
__device__ __forceinline__ void dl_slice(const dl_phase &ph, int k, int *v0, int *n)
{
	*v0 = (int)((int64_t)ph.kv * k / ph.ks);
	*n = (int)((int64_t)ph.kv * (k + 1) / ph.ks) - *v0;
}

/* Ask L2 for piece PC of phase P (its rows' slices). */
template <typename T>
__device__ __forceinline__ void dl_prefetch_piece(const dl_args &a, int p, const dl_phase &ph,
                                                  int pc)
{
	if (pc >= ph.nu * ph.ks)
		return;
	int v0, n;
	const int u = ph.u0 + pc / ph.ks;
	dl_slice(ph, pc % ph.ks, &v0, &n);
	const char *w = reinterpret_cast<const char *>(dl_weights<T>(a, p));
	for (int j = 0; j < ph.rpu; j++)
		dl_prefetch_l2(w + (dl_unit_row(a, p, u, j) * ph.kv + v0) * 16, (unsigned)n * 16u);
}

/* Each warp's first two pieces of phase P, asked of L2: before a grid
 * barrier, so that the HBM streams while the blocks wait. */
template <typename T>
__device__ void dl_prefetch_phase(const dl_args &a, int p)
{
	const dl_phase ph = dl_phase_of(a, p, (int)sizeof(T));

	if ((threadIdx.x & 31) == 0)
		for (int r = 0; r < 2; r++)
			dl_prefetch_piece<T>(a, p, ph, (int)(threadIdx.x >> 5) + r * DL_WARPS);
}

/* Phase P: the dot products of its rows with the activation VS (the row
 * length of T in shared memory), piece by piece, warp by warp (warp w
 * takes pieces w, w + DL_WARPS, ...: every load of a piece issued before
 * its first product, the piece two rounds on asked of L2), each piece's
 * sum into PART; then, a thread a unit, the unit's rows' slices summed in
 * slice order and EPI(unit, row 0's sum, row 1's sum). The same order at
 * every launch: the same bits. */
template <typename T, typename Epi>
__device__ void dl_phase_run(const dl_args &a, int p, const T *vs, float *part, Epi epi)
{
	constexpr int V = 16 / (int)sizeof(T);
	constexpr int PL = DL_PIECE_VECS / 32;    /* vectors a lane a row */
	const dl_phase ph = dl_phase_of(a, p, (int)sizeof(T));
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int pieces = ph.nu * ph.ks;
	const uint4 *x4 = reinterpret_cast<const uint4 *>(vs);
	const uint4 *w4 = reinterpret_cast<const uint4 *>(dl_weights<T>(a, p));
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);

	for (int pc = warp; pc < pieces; pc += DL_WARPS) {
		const int ui = pc / ph.ks, k = pc % ph.ks;
		int v0, n;
		dl_slice(ph, k, &v0, &n);
		if (lane == 0)
			dl_prefetch_piece<T>(a, p, ph, pc + 2 * DL_WARPS);
		uint4 wv[2][PL];
#pragma unroll
		for (int j = 0; j < 2; j++) {
			const uint4 *wr = w4 + dl_unit_row(a, p, ph.u0 + ui, j < ph.rpu ? j : 0) * ph.kv + v0;
#pragma unroll
			for (int i = 0; i < PL; i++) {
				const int v = lane + 32 * i;
				wv[j][i] = j < ph.rpu && v < n ? cuda_ld_stream(wr + v) : zero;
			}
		}
		float acc[2] = { 0.0f, 0.0f };
#pragma unroll
		for (int i = 0; i < PL; i++) {
			const int v = lane + 32 * i;
			if (v < n) {
				float xf[V];
				cuda_widen16<T>(x4[v0 + v], xf);
#pragma unroll
				for (int j = 0; j < 2; j++) {
					float wf[V];
					cuda_widen16<T>(wv[j][i], wf);
#pragma unroll
					for (int e = 0; e < V; e++)
						acc[j] = fmaf(wf[e], xf[e], acc[j]);
				}
			}
		}
#pragma unroll
		for (int j = 0; j < 2; j++) {
			const float sum = cuda_warp_sum(acc[j]);
			if (lane == 0 && j < ph.rpu)
				part[(ui * ph.rpu + j) * ph.ks + k] = sum;
		}
	}
	__syncthreads();
	for (int ui = threadIdx.x; ui < ph.nu; ui += DL_THREADS) {
		float s[2] = { 0.0f, 0.0f };
		for (int j = 0; j < ph.rpu; j++)
			for (int k = 0; k < ph.ks; k++)
				s[j] += part[(ui * ph.rpu + j) * ph.ks + k];
		epi(ph.u0 + ui, s[0], s[1]);
	}
}

/* The static shared memory of a block. */
struct dl_smem {
	float red[DL_WARPS];            /* block sums */
	float qf[DL_MAX_NQ * 128];      /* attention: the item's q heads */
	int flag;
};

/* rmsnorm of the H elements of XS (T, shared) with weight W into VS:
 * x / sqrt(mean(x^2) + eps) * w, rounded to T, as the host computes. */
template <typename T>
__device__ void dl_norm(const dl_args &a, const T *xs, const void *w, T *vs, float *red)
{
	float sq = 0.0f;

	for (int j = threadIdx.x; j < a.H; j += DL_THREADS) {
		const float v = cuda_to_f32(xs[j]);
		sq = fmaf(v, v, sq);
	}
	sq = cuda_block_sum(sq, red);
	const float rms = sqrtf(sq / (float)a.H + a.eps);
	const T *wt = static_cast<const T *>(w);
	for (int j = threadIdx.x; j < a.H; j += DL_THREADS)
		vs[j] = cuda_from_f32<T>(cuda_to_f32(xs[j]) / rms * cuda_to_f32(wt[j]));
	__syncthreads();
}

/* N elements of SRC (global, written by other blocks of this launch: read
 * through L2) into DST (shared). */
template <typename T>
__device__ void dl_load_vec(T *dst, const void *src, int n)
{
	constexpr int V = 16 / (int)sizeof(T);
	const uint4 *s4 = static_cast<const uint4 *>(src);
	uint4 *d4 = reinterpret_cast<uint4 *>(dst);

	for (int i = threadIdx.x; i < n / V; i += DL_THREADS)
		d4[i] = __ldcg(s4 + i);
	__syncthreads();
}

/* Chunks a kv head's L positions are cut into: at least one a block of
 * the grid's share (blocks / kv heads, at most DL_MAX_CHUNKS), at least
 * DL_MIN_CHUNK positions each, and at most one round of the block's warps
 * (DL_WARPS x 32 / (D / 8) positions) each. */
__host__ __device__ __forceinline__ int dl_attention_chunks(int L, int D, int kvh, int blocks)
{
	const int round = DL_WARPS * (32 / (D / 8));
	int nc = blocks / kvh;

	if (nc > DL_MAX_CHUNKS)
		nc = DL_MAX_CHUNKS;
	if (nc > (L + DL_MIN_CHUNK - 1) / DL_MIN_CHUNK)
		nc = (L + DL_MIN_CHUNK - 1) / DL_MIN_CHUNK;
	if (nc < (L + round - 1) / round)
		nc = (L + round - 1) / round;
	return nc < 1 ? 1 : nc;
}

/* Merge (m2, l2, acc2) into (m, l, acc): the softmax state of two sets of
 * positions; an empty set has m = -inf. */
__device__ __forceinline__ void dl_merge(float &m, float &l, float *acc, float m2, float l2,
                                         const float *acc2, int n)
{
	const float mm = fmaxf(m, m2);
	const float f1 = m == -INFINITY ? 0.0f : __expf(m - mm);
	const float f2 = m2 == -INFINITY ? 0.0f : __expf(m2 - mm);
	l = l * f1 + l2 * f2;
	for (int i = 0; i < n; i++)
		acc[i] = acc[i] * f1 + acc2[i] * f2;
	m = mm;
}

/* Attention of the one token: items (kv head g, chunk c) over the grid.
 * A chunk is at most one round of the block's warps (DL_WARPS x PW
 * positions), so each lane loads its K and V pieces once, with no state
 * carried from round to round: for each query head of g in turn, the
 * warp's scores, their maximum, weights and weighted values are summed
 * over its position groups by shuffles; the block's warps are then
 * merged in warp order into the item's partial. */
template <typename T, int D>
__device__ void dl_attention(const dl_args &a, dl_smem &sm, float *wpart)
{
	constexpr int LP = D / 8;                 /* lanes a position: 8 elements each */
	constexpr int PW = 32 / LP;               /* positions a warp */
	const int nq = a.NH / a.KVH, kvw = a.KVH * D;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, seg = lane % LP;
	const long long Lh = a.kv_len_dev ? (long long)*a.kv_len_dev : a.kv_len;
	const int L = Lh < 0 ? 0 : Lh > a.S ? a.S : (int)Lh;
	const int nc = dl_attention_chunks(L, D, a.KVH, (int)gridDim.x);
	const int chunk = (L + nc - 1) / nc;
	const T *kc = static_cast<const T *>(a.kc), *vc = static_cast<const T *>(a.vc);
	const T *q = static_cast<const T *>(a.q);
	const int ws = DL_MAX_NQ * (D + 2);       /* a warp's partial */

	for (int item = blockIdx.x; item < a.KVH * nc; item += gridDim.x) {
		const int g = item / nc, c = item % nc;
		const int p0 = min(c * chunk, L), p1 = min(p0 + chunk, L);
		const int j = p0 + warp * PW + lane / LP;
		const bool in = j < p1;
		float kf[8], vf[8];

		for (int i = threadIdx.x; i < nq * D; i += DL_THREADS)
			sm.qf[i] = cuda_to_f32(__ldcg(q + (int64_t)g * nq * D + i));
		if (in) {
			const int64_t off = (int64_t)j * kvw + (int64_t)g * D + seg * 8;
			cuda_widen16<T>(__ldcg(reinterpret_cast<const uint4 *>(kc + off)), kf);
			cuda_widen16<T>(__ldcg(reinterpret_cast<const uint4 *>(vc + off)), vf);
		}
		__syncthreads();
		for (int h = 0; h < nq; h++) {
			float s = 0.0f;
			if (in)
#pragma unroll
				for (int e = 0; e < 8; e++)
					s = fmaf(sm.qf[h * D + seg * 8 + e], kf[e], s);
#pragma unroll
			for (int o = LP / 2; o > 0; o >>= 1)
				s += __shfl_xor_sync(0xffffffffu, s, o);
			s = in ? s * a.scale : -INFINITY;
			float m = s;
			for (int o = LP; o < 32; o <<= 1)
				m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
			const float pe = in ? __expf(s - m) : 0.0f;
			float l = pe, acc[8];
#pragma unroll
			for (int e = 0; e < 8; e++)
				acc[e] = pe * (in ? vf[e] : 0.0f);
			for (int o = LP; o < 32; o <<= 1) {
				l += __shfl_xor_sync(0xffffffffu, l, o);
#pragma unroll
				for (int e = 0; e < 8; e++)
					acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], o);
			}
			if (lane < LP) {
				float *wp = wpart + warp * ws + h * (D + 2);
#pragma unroll
				for (int e = 0; e < 8; e++)
					wp[seg * 8 + e] = acc[e];
				if (lane == 0) {
					wp[D] = m;
					wp[D + 1] = l;
				}
			}
		}
		__syncthreads();
		/* The block's warps merged in warp order: the item's partial. */
		float *part = a.part + ((int64_t)g * DL_MAX_CHUNKS + c) * nq * (D + 2);
		for (int i = threadIdx.x; i < nq * D; i += DL_THREADS) {
			const int h = i / D, d = i % D;
			float mt = -INFINITY, lt = 0.0f, at = 0.0f;
			for (int w = 0; w < DL_WARPS; w++) {
				const float *wp = wpart + w * ws + h * (D + 2);
				dl_merge(mt, lt, &at, wp[D], wp[D + 1], &wp[d], 1);
			}
			part[h * (D + 2) + d] = at;
			if (d == 0) {
				part[h * (D + 2) + D] = mt;
				part[h * (D + 2) + D + 1] = lt;
			}
		}
		/* The last chunk of kv head g to finish merges them in chunk
		 * order: first the largest m, then the weighted sums, each loop's
		 * loads independent of one another. */
		if (cuda_last_block(&a.bar[DL_BAR_HEADS + g], (unsigned)nc, &sm.flag)) {
			const float *pg = a.part + (int64_t)g * DL_MAX_CHUNKS * nq * (D + 2);
			T *att = static_cast<T *>(a.att);
			for (int i = threadIdx.x; i < nq * D; i += DL_THREADS) {
				const int h = i / D, d = i % D;
				const float *ph = pg + h * (D + 2);
				const int64_t cs = (int64_t)nq * (D + 2);
				float mt = -INFINITY, lt = 0.0f, at = 0.0f;
#pragma unroll 8
				for (int cc = 0; cc < nc; cc++)
					mt = fmaxf(mt, __ldcg(ph + cc * cs + D));
#pragma unroll 8
				for (int cc = 0; cc < nc; cc++) {
					const float mc = __ldcg(ph + cc * cs + D);
					const float f = mc == -INFINITY ? 0.0f : __expf(mc - mt);
					lt = fmaf(__ldcg(ph + cc * cs + D + 1), f, lt);
					at = fmaf(__ldcg(ph + cc * cs + d), f, at);
				}
				att[(int64_t)g * nq * D + i] = cuda_from_f32<T>(lt > 0.0f ? at / lt : 0.0f);
			}
		}
		__syncthreads();
	}
}

/* Block 0's clock (%globaltimer, ns) at each step of the layer, into the
 * scratch behind the partials: what `bcgtool` never reads, but the tests
 * print (t/unit/cuda-ops), to tell where a layer's time goes. */
enum { DLS_START, DLS_WAITED, DLS_NORM, DLS_QKV, DLS_BAR1, DLS_ATTN, DLS_BAR2, DLS_O,
       DLS_BAR3, DLS_GU, DLS_BAR4, DLS_DOWN, DL_STAMPS };

__device__ __forceinline__ void dl_stamp(const dl_args &a, int i)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		a.stamps[i] = dl_now_ns();
}

template <typename T, int D>
__global__ void __launch_bounds__(DL_THREADS, 1) bcg_decoder_layer_kernel(dl_args a)
{
	extern __shared__ __align__(128) char dl_dyn[];
	__shared__ dl_smem sm;
	float *part = reinterpret_cast<float *>(dl_dyn);
	T *xs = reinterpret_cast<T *>(dl_dyn + DL_PART_CAP * sizeof(float));
	T *vs = xs + a.H;

	dl_stamp(a, DLS_START);
	/* The weights only, before the wait (cuda-internal.h's rule). */
	dl_prefetch_phase<T>(a, DLP_QKV);
	cuda_pdl_begin();
	dl_stamp(a, DLS_WAITED);

	const int32_t pos = a.pos[0];
	T *q = static_cast<T *>(a.q), *kc = static_cast<T *>(a.kc), *vc = static_cast<T *>(a.vc);
	T *out = static_cast<T *>(a.out), *act = static_cast<T *>(a.act);
	const int half = D / 2, kvw = a.KVH * D;
	const bool pos_in = pos >= 0 && pos < a.S;

	/* norm, q|k|v, rope, KV write */
	dl_load_vec<T>(xs, a.x, a.H);
	dl_norm<T>(a, xs, a.attn_norm, vs, sm.red);
	dl_stamp(a, DLS_NORM);
	dl_phase_run<T>(a, DLP_QKV, vs, part, [&](int u, float s1, float s2) {
		const int head = u / half, i = u % half;
		const float v1 = cuda_to_f32(cuda_from_f32<T>(s1));
		const float v2 = cuda_to_f32(cuda_from_f32<T>(s2));
		if (head >= a.NH + a.KVH) {
			if (pos_in) {
				T *row = vc + (int64_t)pos * kvw + (int64_t)(head - a.NH - a.KVH) * D;
				row[i] = cuda_from_f32<T>(v1);
				row[i + half] = cuda_from_f32<T>(v2);
			}
			return;
		}
		float c, s;
		rope_angle(a.freqs, pos, i, &c, &s);
		const float o1 = __fsub_rn(__fmul_rn(v1, c), __fmul_rn(v2, s));
		const float o2 = __fadd_rn(__fmul_rn(v2, c), __fmul_rn(v1, s));
		T *row = head < a.NH ? q + (int64_t)head * D
		       : pos_in ? kc + (int64_t)pos * kvw + (int64_t)(head - a.NH) * D : NULL;
		if (row) {
			row[i] = cuda_from_f32<T>(o1);
			row[i + half] = cuda_from_f32<T>(o2);
		}
	});
	dl_stamp(a, DLS_QKV);
	dl_prefetch_phase<T>(a, DLP_O);
	dl_grid_sync(a.bar, 1);
	dl_stamp(a, DLS_BAR1);

	/* attention, its warp partials over vs */
	dl_attention<T, D>(a, sm, reinterpret_cast<float *>(vs));
	dl_stamp(a, DLS_ATTN);
	dl_grid_sync(a.bar, 2);
	dl_stamp(a, DLS_BAR2);

	/* o + residual: out = x + att @ w_o^T */
	dl_load_vec<T>(vs, a.att, a.NH * D);
	dl_phase_run<T>(a, DLP_O, vs, part, [&](int n, float s1, float) {
		const float y = cuda_to_f32(cuda_from_f32<T>(s1));
		out[n] = cuda_from_f32<T>(cuda_to_f32(xs[n]) + y);
	});
	dl_stamp(a, DLS_O);
	dl_prefetch_phase<T>(a, DLP_GU);
	dl_grid_sync(a.bar, 3);
	dl_stamp(a, DLS_BAR3);

	/* norm, gate|up, SiLU * up */
	dl_load_vec<T>(xs, a.out, a.H);
	dl_norm<T>(a, xs, a.ffn_norm, vs, sm.red);
	dl_phase_run<T>(a, DLP_GU, vs, part, [&](int j, float s1, float s2) {
		const float g = cuda_to_f32(cuda_from_f32<T>(s1));
		const float u = cuda_to_f32(cuda_from_f32<T>(s2));
		act[j] = cuda_from_f32<T>(g / (1.0f + expf(-g)) * u);
	});
	dl_stamp(a, DLS_GU);
	dl_prefetch_phase<T>(a, DLP_DOWN);
	dl_grid_sync(a.bar, 4);
	dl_stamp(a, DLS_BAR4);

	/* down + residual: out = x1 + act @ w_down^T */
	dl_load_vec<T>(vs, a.act, a.F);
	dl_phase_run<T>(a, DLP_DOWN, vs, part, [&](int n, float s1, float) {
		const float y = cuda_to_f32(cuda_from_f32<T>(s1));
		out[n] = cuda_from_f32<T>(cuda_to_f32(xs[n]) + y);
	});
	dl_stamp(a, DLS_DOWN);

	/* The last block out sets the counters back to zero. */
	if (cuda_last_block(&a.bar[1], gridDim.x, &sm.flag) && threadIdx.x == 0) {
		a.bar[0] = 0u;
		a.bar[DL_BAR_GEN] = 0u;
	}
}

/* --- the host side ------------------------------------------------------------ */

/* The scratch, both implementations alike: what "split"'s five calls need
 * (counters included), then q, att and act [T, .] of x's dtype, then the
 * persistent kernel's attention partials. */
struct dl_layout {
	size_t q, att, act, part, stamps, total;
};

static void dl_layout_of(const struct op_call *call, struct dl_layout *lo)
{
	struct dl_shape s;
	struct dl_calls k;

	dl_shape_of(call, &s);
	dl_calls_fill(call, NULL, NULL, NULL, &k);
	const size_t es = cuda_dtype_size(call->in[DL_X].dtype);
	const size_t T = (size_t)(s.T > 0 ? s.T : 0);
	const size_t nq = s.KVH > 0 && s.NH > 0 ? (size_t)(s.NH / s.KVH) : 0;
	lo->q = dl_split_sub_bytes(&k);
	lo->att = lo->q + dl_align256(T * (size_t)(s.NH * s.D) * es);
	lo->act = lo->att + dl_align256(T * (size_t)(s.NH * s.D) * es);
	lo->part = lo->act + dl_align256(T * (size_t)s.F * es);
	lo->stamps = lo->part + dl_align256((size_t)s.KVH * DL_MAX_CHUNKS * nq *
	                                    (size_t)(s.D + 2) * sizeof(float));
	lo->total = lo->stamps + 256;
}

extern "C" size_t cuda_decoder_layer_scratch_bytes(const struct op_call *call)
{
	struct dl_layout lo;

	if (call->nin != 8 || call->nout != 3 || call->in[DL_X].rank != 2 ||
	    call->in[DL_W_GATE_UP].rank != 2)
		return 0;
	dl_layout_of(call, &lo);
	return lo.total;
}

static int dl_aligned(const struct op_tensor *t)
{
	return t->data == NULL || (uintptr_t)t->data % 16 == 0;
}

/* The dynamic shared memory of the persistent kernel. */
/* The dynamic shared memory of the persistent kernel: the piece sums,
 * x, and the activation (or the attention's warp partials). */
static size_t dl_smem_bytes(const struct dl_shape *s, size_t es)
{
	size_t v = (size_t)s->H;

	if ((size_t)(s->NH * s->D) > v)
		v = (size_t)(s->NH * s->D);
	if ((size_t)s->F > v)
		v = (size_t)s->F;
	v *= es;
	const size_t wpart = (size_t)DL_WARPS * DL_MAX_NQ * (size_t)(s->D + 2) * sizeof(float);
	return DL_PART_CAP * sizeof(float) + (size_t)s->H * es + (v > wpart ? v : wpart);
}

/* The piece sums of a phase of N units of RPU rows of KV vectors fit
 * DL_PART_CAP on a grid of BLOCKS (dl_phase_of's slices: a unit's
 * ceil(KV / DL_PIECE_VECS), more only while the block has fewer than 64
 * pieces). */
static int dl_parts_fit(int64_t n, int rpu, int64_t kv, int64_t blocks)
{
	const int64_t nu = (n + blocks - 1) / blocks;
	const int64_t ks = (kv + DL_PIECE_VECS - 1) / DL_PIECE_VECS;

	return nu * rpu * ks <= DL_PART_CAP && 4 * DL_WARPS * rpu <= DL_PART_CAP;
}

static int dl_persistent_ok(const struct op_call *call)
{
	struct dl_shape s;
	const int dt = call->in[DL_X].dtype;

	dl_shape_of(call, &s);
	if (s.T != 1 || (dt != PLAN_DTYPE_BF16 && dt != PLAN_DTYPE_F16))
		return 0;
	if ((s.D != 64 && s.D != 128) || s.KVH < 1 || s.NH % s.KVH != 0 ||
	    s.NH / s.KVH > DL_MAX_NQ || s.KVH + DL_BAR_HEADS > CUDA_SCRATCH_COUNTERS ||
	    s.S > (int64_t)DL_MAX_CHUNKS * DL_WARPS * (32 / (s.D / 8)))
		return 0;
	const int64_t es = (int64_t)cuda_dtype_size(dt);
	if (s.H % 8 != 0 || s.F % 8 != 0 || s.S > INT_MAX || s.H > INT_MAX / 16 ||
	    s.F > INT_MAX / 16 || dl_smem_bytes(&s, (size_t)es) > 200 * 1024)
		return 0;
	for (int i = 0; i < call->nin; i++)
		if (!dl_aligned(&call->in[i]))
			return 0;
	for (int i = 0; i < call->nout; i++)
		if (!dl_aligned(&call->out[i]))
			return 0;
	return 1;
}

int cuda_decoder_layer_usable(const struct op_call *call, int impl)
{
	struct dl_calls k;

	if (call->nin != 8 || call->nout != 3 || call->in[DL_X].rank != 2 ||
	    call->in[DL_W_GATE_UP].rank != 2)
		return 0;
	switch (impl) {
	case CUDA_IMPL_DL_PERSISTENT:
		return dl_persistent_ok(call) && cuda_device_sm90();
	case CUDA_IMPL_DL_SPLIT:
		dl_calls_fill(call, NULL, NULL, NULL, &k);
		return cuda_rmsnorm_matmul_rope_kv_write_usable(&k.qkv, k.qkv.impl) &&
		       cuda_attention_usable(&k.attn, k.attn.impl) && k.o.impl >= 0 &&
		       cuda_rmsnorm_matmul_usable(&k.gate_up, k.gate_up.impl) && k.down.impl >= 0;
	}
	return 0;
}

template <typename T, int D>
static int dl_launch_typed(const struct cuda_op_ctx *ctx, const dl_args &args,
                           const struct dl_shape *s, char *msg, size_t len)
{
	void (*kernel)(dl_args) = bcg_decoder_layer_kernel<T, D>;
	const size_t smem = dl_smem_bytes(s, sizeof(T));
	int dev = 0, sms = ctx->sm_count, per_sm = 0;
	cudaError_t err;

	if (sms <= 0 && (cudaGetDevice(&dev) != cudaSuccess ||
	                 cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
	                 cudaSuccess))
		sms = 0;
	err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
	if (err == cudaSuccess)
		err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, DL_THREADS, smem);
	if (err != cudaSuccess)
		return cuda_fail(msg, len, "decoder_layer: %zu bytes of shared memory a block: %s (%s)",
		                 smem, cudaGetErrorString(err), cudaGetErrorName(err));
	if (per_sm < 1 || sms < 1)
		return cuda_fail(msg, len, "decoder_layer: persistent: no block of %d threads and %zu "
		                 "bytes of shared memory fits a multiprocessor", DL_THREADS, smem);
	const int64_t es = (int64_t)sizeof(T);
	if (!dl_parts_fit((s->NH + 2 * s->KVH) * (s->D / 2), 2, s->H * es / 16, sms) ||
	    !dl_parts_fit(s->H, 1, s->NH * s->D * es / 16, sms) ||
	    !dl_parts_fit(s->F, 2, s->H * es / 16, sms) || !dl_parts_fit(s->H, 1, s->F * es / 16, sms))
		return cuda_fail(msg, len, "decoder_layer: persistent: a block's share of a product "
		                 "on %d multiprocessors is above its %d sums", sms, DL_PART_CAP);
	/* One block a multiprocessor: all resident at once, as the grid
	 * barriers need. */
	return cuda_launch_smem(ctx, "bcg_decoder_layer_kernel", kernel, dim3((unsigned)sms),
	                        dim3(DL_THREADS), smem, msg, len, args);
}

static int dl_run_persistent(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             const struct dl_layout *lo, char *msg, size_t len)
{
	struct dl_shape s;
	dl_args a;
	char *data = static_cast<char *>(ctx->scratch);
	const int dt = call->in[DL_X].dtype;

	dl_shape_of(call, &s);
	memset(&a, 0, sizeof a);
	a.x = call->in[DL_X].data;
	a.attn_norm = call->in[DL_ATTN_NORM].data;
	a.w_qkv = call->in[DL_W_QKV].data;
	a.w_o = call->in[DL_W_O].data;
	a.ffn_norm = call->in[DL_FFN_NORM].data;
	a.w_gate_up = call->in[DL_W_GATE_UP].data;
	a.w_down = call->in[DL_W_DOWN].data;
	a.pos = static_cast<const int32_t *>(call->in[DL_POS].data);
	a.out = call->out[DL_OUT].data;
	a.kc = call->out[DL_K_CACHE].data;
	a.vc = call->out[DL_V_CACHE].data;
	a.q = data + lo->q;
	a.att = data + lo->att;
	a.act = data + lo->act;
	a.part = reinterpret_cast<float *>(data + lo->part);
	a.bar = cuda_scratch_counters(ctx);
	a.stamps = reinterpret_cast<unsigned long long *>(data + lo->stamps);
	a.kv_len = (long long)call->attr[DL_KV_LEN].i;
	/* A literal kv_len has no device mirror; the host's value serves. */
	a.kv_len_dev = call->graph_safe ? call->attr_dev[DL_KV_LEN] : NULL;
	a.H = (int)s.H;
	a.F = (int)s.F;
	a.NH = (int)s.NH;
	a.KVH = (int)s.KVH;
	a.D = (int)s.D;
	a.S = (int)s.S;
	a.eps = (float)call->attr[DL_EPS].f;
	a.scale = call->attr[DL_SCALE].f == 0.0 ? 1.0f / sqrtf((float)s.D)
	                                        : (float)call->attr[DL_SCALE].f;
	rope_freqs_fill(&a.freqs, call->attr[RKV_THETA].f, s.D, &call->attr[RKV_SCALING]);

	if (dt == PLAN_DTYPE_F16)
		return s.D == 64 ? dl_launch_typed<__half, 64>(ctx, a, &s, msg, len)
		                 : dl_launch_typed<__half, 128>(ctx, a, &s, msg, len);
	return s.D == 64 ? dl_launch_typed<__nv_bfloat16, 64>(ctx, a, &s, msg, len)
	                 : dl_launch_typed<__nv_bfloat16, 128>(ctx, a, &s, msg, len);
}

/* decoder_layer (x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down, pos)
 * -> out, k_cache, v_cache: "persistent" or "split" (the top of this file). */
extern "C" int cuda_run_decoder_layer(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                      char *msg, size_t len)
{
	const char *who = "decoder_layer";
	struct dl_layout lo;

	if (call->impl != CUDA_IMPL_DL_PERSISTENT && call->impl != CUDA_IMPL_DL_SPLIT)
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, call->impl);
	if (!cuda_decoder_layer_usable(call, call->impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run these operands%s", who,
		                 call->impl == CUDA_IMPL_DL_PERSISTENT ? "persistent" : "split",
		                 call->impl == CUDA_IMPL_DL_PERSISTENT
		                 ? " (it takes one token, f16 or bf16, head_dim 64 or 128, at most 4 "
		                   "query heads a kv head, H and the FFN size multiples of 8 within "
		                   "its shared memory, 16-byte aligned operands, on sm_90 or later)"
		                 : "");
	if (call->in[DL_X].dim[0] <= 0)
		return 0;
	dl_layout_of(call, &lo);
	if (!ctx->scratch || ctx->scratch_bytes < lo.total)
		return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu", who,
		                 lo.total, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
	if ((uintptr_t)ctx->scratch % 16 != 0)
		return cuda_fail(msg, len, "%s: scratch is not 16-byte aligned", who);
	if (call->impl == CUDA_IMPL_DL_PERSISTENT)
		return dl_run_persistent(call, ctx, &lo, msg, len);

	/* split: the five calls, their own scratch the part before q */
	char *data = static_cast<char *>(ctx->scratch);
	struct dl_calls k;
	struct cuda_op_ctx sub = *ctx;
	dl_calls_fill(call, data + lo.q, data + lo.att, data + lo.act, &k);
	sub.scratch_bytes = lo.q;
	if (cuda_run_rmsnorm_matmul_rope_kv_write(&k.qkv, &sub, msg, len) ||
	    cuda_run_attention(&k.attn, &sub, msg, len) ||
	    cuda_run_matmul_add(&k.o, &sub, msg, len) ||
	    cuda_run_rmsnorm_matmul(&k.gate_up, &sub, msg, len))
		return -1;
	return cuda_run_matmul_add(&k.down, &sub, msg, len);
}
