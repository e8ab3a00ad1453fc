/*
 * cuda-pack.cu - weights in another layout than the checkpoint's: copies
 * made once, outside any capture, for the implementations that read them
 * so, and kept in the context's struct cuda_packs until it is closed.
 *
 * Three layouts: the one "mma_packed" reads (CUDA_PACK_MMA, below: the mma
 * kernel of cuda-smallm.cu on packed weights), the one "wgmma" and
 * "wgmma_whole" read (CUDA_PACK_WGMMA, described and made in
 * cuda-wgmma.cu), and rmsnorm_matmul's "rows_scaled" copy (CUDA_PACK_SCALED:
 * the weight as it is, [rows, K], each column k times the norm's weight
 * k, rounded to the weight's dtype; bcg_pack_scale_kernel). The norm's
 * weights then cost the fold nothing: no loads, no registers. mma_packed's: a product's weight b [NB, K] is cut
 * in HALVES (2 for matmul_silu_mul: gate rows [0, N), up rows [N, 2N);
 * else 1) of NH = NB / HALVES rows, each half in tiles of 16 rows
 * (T = ceil(NH / 16) a half) and units of 32 k (U = ceil(K / 32)). The
 * 512 elements of one tile and unit lie next to each other in the order
 * the mma kernel's lanes load them: for row half h (rows 8h .. 8h + 7 of
 * the tile) and lane l, g = l / 4, q = l % 4, the 8 elements k 32u + 8q
 * .. 32u + 8q + 7 of row 16t + 8h + g. So element j of that lane sits at
 *
 *   (((half * T + t) * U + u) * 2 + h) * 256 + l * 8 + j
 *
 * and one warp load instruction reads 512 contiguous bytes, where on
 * [N, K] it reads 64 bytes from each of 8 rows. Rows past NH and k past K
 * are zeros. The lanes get the same elements in both layouts. On the 1B
 * sample with every product forced to one or the other, mma_packed's step
 * took 0.90, 0.87 and 0.85 of mma's at 8, 16 and 32 tokens on an H100
 * (bench/RESULTS.md, fourteenth session).
 *
 * A copy is keyed by its weight's address, shape, dtype, halves and
 * layout, and a scaled one by its scale's address too: it is correct only
 * while the weight's (and the scale's) bytes are those it was packed
 * from. The engine writes weights once, when it opens, and no op
 * may write one (script/check.c), so a copy made after that never goes
 * stale.
 */
#include "config.h"

#include <stdlib.h>

#include "cuda-internal.h"

struct cuda_pack {
	const void *src;        /* the weight */
	const void *scale;      /* CUDA_PACK_SCALED: its columns' factors; else NULL */
	int64_t     rows, K;    /* its [rows, K] */
	int         halves;
	int         dtype;
	int         layout;     /* CUDA_PACK_* */
	void       *dst;        /* the packed copy */
	size_t      bytes;
	int         kept;       /* some call prepared with KEEP asked for it */
};

struct cuda_packs {
	struct cuda_pack *v;
	size_t            n, cap;
};

/* Packed [rows, K] of HALVES, 8 elements (one 16-byte vector) a thread:
 * NH rows a half, KV vectors a row; vector o of the copy is lane (o % 32)'s piece of row half (o / 32) % 2
 * of unit (o / 64) % U of tile (o / 64 / U) % T of half o / (64 U T). */
__global__ void bcg_pack_mma_kernel(const uint4 *src, uint4 *dst, int64_t nh, int64_t kv,
                                    int64_t T, int64_t U, int64_t vectors)
{
	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < vectors;
	     o += (int64_t)gridDim.x * blockDim.x) {
		const int64_t lane = o % 32, h = (o / 32) % 2, u = (o / 64) % U;
		const int64_t t = (o / 64 / U) % T, half = o / (64 * U * T);
		const int64_t r = 16 * t + 8 * h + lane / 4, kvec = 4 * u + lane % 4;
		uint4 v = make_uint4(0u, 0u, 0u, 0u);
		if (r < nh && kvec < kv)
			v = src[(half * nh + r) * kv + kvec];
		dst[o] = v;
	}
}

/* CUDA_PACK_SCALED: dst [rows, K] = src [rows, K] with column k times
 * scale[k], the product rounded once to T. */
template <typename T>
__global__ void bcg_pack_scale_kernel(const T *src, const T *scale, T *dst, int64_t rows,
                                      int64_t K)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * K;
	     i += (int64_t)gridDim.x * blockDim.x)
		dst[i] = cuda_from_f32<T>(__fmul_rn(cuda_to_f32(src[i]), cuda_to_f32(scale[i % K])));
}

/* The copy's geometry for weight B [NB, K] of HALVES. */
static void pack_geometry(int64_t rows, int64_t K, int halves, int64_t *T, int64_t *U,
                          int64_t *vectors)
{
	*T = (rows / halves + 15) / 16;
	*U = (K + 31) / 32;
	*vectors = (int64_t)halves * *T * *U * 64;
}

static struct cuda_pack *pack_lookup(const struct cuda_packs *packs, const void *src,
                                     const void *scale, int64_t rows, int64_t K, int halves,
                                     int dtype, int layout)
{
	if (packs == NULL)
		return NULL;
	for (size_t i = 0; i < packs->n; i++) {
		struct cuda_pack *p = &packs->v[i];
		if (p->src == src && p->scale == scale && p->rows == rows && p->K == K &&
		    p->halves == halves && p->dtype == dtype && p->layout == layout)
			return p;
	}
	return NULL;
}

const void *cuda_pack_find(const struct cuda_packs *packs, const struct op_tensor *b,
                           const struct op_tensor *scale, int halves, int layout)
{
	const struct cuda_pack *p = pack_lookup(packs, b->data, scale ? scale->data : NULL,
	                                        b->dim[0], b->dim[1], halves, b->dtype, layout);

	return p ? p->dst : NULL;
}

int cuda_pack_make(struct cuda_packs *packs, const struct op_tensor *b,
                   const struct op_tensor *scale, int halves, int layout, int keep,
                   cudaStream_t stream, char *msg, size_t len)
{
	const int64_t rows = b->dim[0], K = b->dim[1];
	const void *sdata = scale ? scale->data : NULL;
	struct cuda_pack *p = pack_lookup(packs, b->data, sdata, rows, K, halves, b->dtype, layout);
	int64_t T, U, vectors;
	cudaStreamCaptureStatus cs;
	size_t mfree = 0, mtotal = 0;
	cudaError_t err;

	if (p != NULL) {
		p->kept |= keep;
		return 0;
	}
	if (b->rank != 2 || rows % halves != 0 || K % 8 != 0 || cuda_dtype_size(b->dtype) != 2 ||
	    (uintptr_t)b->data % 16 != 0)
		return cuda_fail(msg, len, "a weight must be a 16-byte aligned [rows, K] of f16 or "
		                 "bf16, K a multiple of 8, to be packed");
	if ((layout == CUDA_PACK_SCALED) != (scale != NULL) ||
	    (scale != NULL && (scale->dtype != b->dtype || cuda_numel(scale) != K)))
		return cuda_fail(msg, len, "a scaled copy takes a scale of the weight's dtype with "
		                 "K elements, and no other layout takes one");
	if ((err = cudaStreamIsCapturing(stream, &cs)) != cudaSuccess)
		return cuda_fail(msg, len, "cudaStreamIsCapturing: %s", cudaGetErrorString(err));
	if (cs != cudaStreamCaptureStatusNone)
		return cuda_fail(msg, len, "a weight cannot be packed while its stream is captured");
	if (packs->n == packs->cap) {
		size_t cap = packs->cap ? 2 * packs->cap : 16;
		struct cuda_pack *v = static_cast<struct cuda_pack *>(
			realloc(packs->v, cap * sizeof *v));
		if (v == NULL)
			return cuda_fail(msg, len, "out of memory");
		packs->v = v;
		packs->cap = cap;
	}
	pack_geometry(rows, K, halves, &T, &U, &vectors);
	p = &packs->v[packs->n];
	memset(p, 0, sizeof *p);
	p->bytes = layout == CUDA_PACK_WGMMA ? (size_t)cuda_wgmma_pack_bytes(rows, K, halves)
	           : layout == CUDA_PACK_SCALED ? (size_t)(rows * K) * 2
	           : (size_t)vectors * 16;
	if ((err = cudaMalloc(&p->dst, p->bytes)) != cudaSuccess) {
		(void)cudaGetLastError();       /* not sticky: the next call's status is its own */
		cudaMemGetInfo(&mfree, &mtotal);
		return cuda_fail(msg, len, "packing [%lld, %lld] %s needs %.1f MB of device memory, "
		                 "%.1f MB free: %s", (long long)rows, (long long)K,
		                 cuda_dtype_name(b->dtype), p->bytes / 1e6, mfree / 1e6,
		                 cudaGetErrorString(err));
	}
	int rc;
	if (layout == CUDA_PACK_WGMMA) {
		rc = cuda_wgmma_pack(b->data, p->dst, rows, K, halves, stream, msg, len);
	} else if (layout == CUDA_PACK_SCALED) {
		int64_t blocks = (rows * K + 255) / 256;
		const unsigned g = (unsigned)(blocks < 65536 ? blocks : 65536);
		if (b->dtype == PLAN_DTYPE_F16)
			bcg_pack_scale_kernel<__half><<<g, 256, 0, stream>>>(
				static_cast<const __half *>(b->data),
				static_cast<const __half *>(sdata), static_cast<__half *>(p->dst),
				rows, K);
		else
			bcg_pack_scale_kernel<__nv_bfloat16><<<g, 256, 0, stream>>>(
				static_cast<const __nv_bfloat16 *>(b->data),
				static_cast<const __nv_bfloat16 *>(sdata),
				static_cast<__nv_bfloat16 *>(p->dst), rows, K);
		rc = cuda_check_launch("bcg_pack_scale_kernel", msg, len);
	} else {
		int64_t blocks = (vectors + 255) / 256;
		bcg_pack_mma_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0,
		                      stream>>>(static_cast<const uint4 *>(b->data),
		                                static_cast<uint4 *>(p->dst), rows / halves, K / 8, T,
		                                U, vectors);
		rc = cuda_check_launch("bcg_pack_mma_kernel", msg, len);
	}
	if (rc != 0) {
		cudaFree(p->dst);
		return -1;
	}
	p->src = b->data;
	p->scale = sdata;
	p->rows = rows;
	p->K = K;
	p->halves = halves;
	p->dtype = b->dtype;
	p->layout = layout;
	p->kept = keep;
	packs->n++;
	return 0;
}

extern "C" struct cuda_packs *cuda_packs_new(void)
{
	return static_cast<struct cuda_packs *>(calloc(1, sizeof(struct cuda_packs)));
}

/* Frees copies whose KEEP says so; cudaFree waits for the work that may
 * still read them. */
static void packs_drop(struct cuda_packs *packs, int all)
{
	size_t n = 0;

	for (size_t i = 0; i < packs->n; i++) {
		if (all || !packs->v[i].kept)
			cudaFree(packs->v[i].dst);
		else
			packs->v[n++] = packs->v[i];
	}
	packs->n = n;
}

extern "C" void cuda_packs_free(struct cuda_packs *packs)
{
	if (packs == NULL)
		return;
	packs_drop(packs, 1);
	free(packs->v);
	free(packs);
}

extern "C" void cuda_packs_trim(struct cuda_packs *packs)
{
	if (packs != NULL)
		packs_drop(packs, 0);
}

extern "C" uint64_t cuda_packs_bytes(const struct cuda_packs *packs)
{
	uint64_t n = 0;

	for (size_t i = 0; packs != NULL && i < packs->n; i++)
		n += packs->v[i].bytes;
	return n;
}

extern "C" int cuda_op_prepare(const struct op_call *call, const struct cuda_op_ctx *ctx,
                               int keep, char *msg, size_t len)
{
	if (call->kind == NULL)
		return 0;
	switch (call->kind->id) {
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
		return cuda_product_prepare(call->kind->id, call, ctx, keep, msg, len);
	case OP_RMSNORM_MATMUL:
		return cuda_rmsnorm_matmul_prepare(call, ctx, keep, msg, len);
	case OP_RMSNORM_MATMUL_ROPE_KV_WRITE:
		return cuda_rmsnorm_matmul_rope_kv_write_prepare(call, ctx, keep, msg, len);
	default:
		return 0;
	}
}
